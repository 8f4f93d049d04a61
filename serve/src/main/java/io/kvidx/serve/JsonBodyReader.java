package io.kvidx.serve;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import io.kvidx.client.json.TokenIdsFastPath;
import io.netty.buffer.ByteBuf;

import java.io.IOException;
import java.util.Arrays;

/**
 * Reads a request body that is one flat JSON object, field by field, into the caller's reused storage: the body is
 * copied into a reused array, its top-level array of token ids (the field named at construction) is read by
 * {@link TokenIdsFastPath} (about 2 ns per id against jackson's 20: ADR 0013) into a reused {@code int[]}, and
 * jackson-core's streaming parser reads the rest, with {@code []} in the ids' place, under the caller's
 * {@link StreamReadConstraints}; anything the scan does not read exactly goes to jackson whole. The caller's
 * {@link Fields} reads each top-level field's value; for the ids field it asks {@link #takePreparsed()} whether the
 * scan already read them.
 *
 * <p>A body that is not one JSON object, breaks a bound, or is not JSON is an {@link HttpError} 400 with the code
 * given at construction; what the fields' reader throws passes through.
 *
 * <p><b>Note:</b> one per thread, reused: {@link #read} overwrites what the previous body left.
 */
public final class JsonBodyReader {
    /** Reads one top-level field: the parser stands on the field's value. */
    @FunctionalInterface
    public interface Fields {
        /**
         * @param p    the parser, on the value's first token.
         * @param name the field's name.
         * @throws IOException when the value cannot be read.
         */
        void field(JsonParser p, String name) throws IOException;
    }

    private final JsonFactory factory;
    private final TokenIdsFastPath fastPath;
    private final int maxIds;
    private final String badJsonCode;
    private byte[] bytes = new byte[4096];
    private int[] tokens = new int[1024];
    private boolean preparsed;
    private int preparsedCount;

    /**
     * @param constraints the parser's bounds (nesting, number and string lengths).
     * @param idsField    the top-level field holding token ids, or null for none.
     * @param maxIds      most token ids the array grows to.
     * @param fastPath    whether the ids are read by the scan (false: by the caller's jackson reading alone, the
     *                    reference the tests compare it with).
     * @param badJsonCode the {@link HttpError#code()} of a body that is not a JSON object within the bounds.
     */
    public JsonBodyReader(final StreamReadConstraints constraints, final String idsField, final int maxIds,
        final boolean fastPath, final String badJsonCode) {
        this.factory = JsonFactory.builder().streamReadConstraints(constraints).build();
        this.fastPath = fastPath && idsField != null ? new TokenIdsFastPath(idsField) : null;
        this.maxIds = maxIds;
        this.badJsonCode = badJsonCode;
    }

    /**
     * Reads a body.
     *
     * @param content the body (not consumed).
     * @param fields  reads each top-level field.
     * @throws HttpError 400 for a body that is not one JSON object within the bounds, or what {@code fields} throws.
     */
    public void read(final ByteBuf content, final Fields fields) {
        final int length = content.readableBytes();
        if (length > bytes.length) {
            bytes = new byte[Math.max(length, 2 * bytes.length)];
        }
        // Copied into a reused array: jackson's byte-array parser reads it in place, without an InputStream's copies.
        content.getBytes(content.readerIndex(), bytes, 0, length);
        byte[] json = bytes;
        int jsonLength = length;
        preparsed = false;
        preparsedCount = 0;
        if (fastPath != null) {
            final int room = Math.min(maxIds, length / 2 + 1);
            if (tokens.length < room) {
                tokens = new int[Math.max(room, Math.min(maxIds, 2 * tokens.length))];
            }
            final int spliced = fastPath.splice(bytes, length, tokens);
            if (spliced >= 0) {
                json = fastPath.rest();
                jsonLength = spliced;
                preparsed = true;
                preparsedCount = fastPath.count();
            }
        }
        try (JsonParser p = factory.createParser(json, 0, jsonLength)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw bad("the body must be a JSON object");
            }
            JsonToken t;
            while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                final String name = p.currentName();
                p.nextToken();
                fields.field(p, name);
            }
            if (t != JsonToken.END_OBJECT) {
                throw bad("the body must be one JSON object");
            }
            if (p.nextToken() != null) {
                throw bad("trailing data after the JSON object");
            }
        } catch (final StreamConstraintsException ex) {
            throw bad("the body exceeds a JSON bound: " + ex.getOriginalMessage());
        } catch (final IOException ex) {
            throw bad("the body is not valid JSON: " + firstLine(ex.getMessage()));
        }
    }

    /**
     * @return true when the scan read the ids of this body (whether or not they were taken).
     */
    public boolean preparsed() {
        return preparsed;
    }

    /**
     * Takes the ids the scan read, once: the ids field's value the parser stands on is then the {@code []} left in
     * their place.
     *
     * @return true the first time it is asked after the scan read the ids, false otherwise.
     */
    public boolean takePreparsed() {
        final boolean taken = preparsed;
        preparsed = false;
        return taken;
    }

    /**
     * @return how many ids the scan read (in {@link #tokens()}).
     */
    public int preparsedCount() {
        return preparsedCount;
    }

    /**
     * @return the token id array (the scan's, and the caller's jackson reading's), reused between bodies.
     */
    public int[] tokens() {
        return tokens;
    }

    /**
     * Doubles the token id array, keeping its contents, up to the most ids.
     *
     * @return the grown array.
     */
    public int[] growTokens() {
        tokens = Arrays.copyOf(tokens, Math.min(maxIds, Math.max(1, tokens.length * 2)));
        return tokens;
    }

    private HttpError bad(final String message) {
        return new HttpError(400, badJsonCode, message);
    }

    private static String firstLine(final String s) {
        if (s == null) {
            return "";
        }
        final int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
