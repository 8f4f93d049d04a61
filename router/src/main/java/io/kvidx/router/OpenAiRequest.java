package io.kvidx.router;

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
 * What the router reads from an OpenAI completion or chat request body, with jackson-core's streaming parser (the
 * body itself is forwarded unchanged): {@code model}, {@code stream}, {@code cache_salt}, and the prompt as token
 * ids ({@code prompt: [ids]}, or the first of {@code prompt: [[ids], ...]}), as text ({@code prompt: "..."}, or the
 * first of {@code prompt: ["...", ...]}), or as a chat ({@code messages}: the whole body goes to the chat template).
 * A batch of prompts is routed on its first one. A top-level {@code prompt} of plain token ids is read by
 * {@link TokenIdsFastPath} (about 2 ns per id, against jackson's 20: ADR 0013) and jackson reads the rest of the
 * body with {@code []} in its place; anything the scan does not read exactly goes to jackson whole.
 *
 * <p>Bounds: nesting depth {@link #MAX_DEPTH}, numbers {@link #MAX_NUMBER_CHARS} characters, token ids
 * {@link #MAX_TOKENS}, and the body limit the server applies before this runs. Anything outside them, or not JSON,
 * or a token id outside 0..2^31-1, is a {@link BadRequest}.
 *
 * <p><b>Note:</b> one instance per thread, reused: {@link #parse} overwrites it (the token buffer grows once).
 */
final class OpenAiRequest {
    /** Deepest nesting accepted. */
    static final int MAX_DEPTH = 64;
    /** Longest number accepted. */
    static final int MAX_NUMBER_CHARS = 32;
    /** Most prompt token ids read. */
    static final int MAX_TOKENS = 1 << 21;

    private static final JsonFactory FACTORY = JsonFactory.builder()
        .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MAX_DEPTH)
            .maxNumberLength(MAX_NUMBER_CHARS).build())
        .build();

    /** A request body the router refuses (400). */
    static final class BadRequest extends Exception {
        private static final long serialVersionUID = 1L;

        BadRequest(final String message) {
            super(message, null, false, false);
        }
    }

    String model;
    boolean stream;
    String cacheSalt;
    /** The prompt text, or null. */
    String text;
    /** True when the body is a chat ({@code messages}). */
    boolean chat;
    int[] tokens = new int[1024];
    /** Token ids read, or -1 when the prompt is not given as ids. */
    int tokenCount;
    private final TokenIdsFastPath fastPath = new TokenIdsFastPath("prompt");
    private byte[] bytes = new byte[4096];
    private boolean preparsed;

    /**
     * @param body   the body (not consumed).
     * @param isChat true for {@code /v1/chat/completions} (which needs {@code messages}).
     * @throws BadRequest when the body is not a request the router can route.
     */
    void parse(final ByteBuf body, final boolean isChat) throws BadRequest {
        final int length = body.readableBytes();
        model = null;
        stream = false;
        cacheSalt = null;
        text = null;
        chat = false;
        tokenCount = -1;
        boolean promptSeen = false;
        if (length > bytes.length) {
            bytes = new byte[Math.max(length, 2 * bytes.length)];
        }
        body.getBytes(body.readerIndex(), bytes, 0, length);
        byte[] json = bytes;
        int jsonLength = length;
        preparsed = false;
        final int room = Math.min(MAX_TOKENS, length / 2 + 1);
        if (tokens.length < room) {
            tokens = new int[Math.max(room, Math.min(MAX_TOKENS, 2 * tokens.length))];
        }
        final int spliced = fastPath.splice(bytes, length, tokens);
        if (spliced >= 0) {
            json = fastPath.rest();
            jsonLength = spliced;
            preparsed = true;
            tokenCount = fastPath.count();
        }
        try (JsonParser p = FACTORY.createParser(json, 0, jsonLength)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw new BadRequest("the body must be a JSON object");
            }
            JsonToken t;
            while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                final String name = p.currentName();
                final JsonToken v = p.nextToken();
                switch (name) {
                    case "model" -> model = string(p, v, "model");
                    case "stream" -> {
                        if (v != JsonToken.VALUE_TRUE && v != JsonToken.VALUE_FALSE && v != JsonToken.VALUE_NULL) {
                            throw new BadRequest("'stream' must be true or false");
                        }
                        stream = v == JsonToken.VALUE_TRUE;
                    }
                    case "cache_salt" -> cacheSalt = v == JsonToken.VALUE_NULL ? null : string(p, v, "cache_salt");
                    case "messages" -> {
                        if (v != JsonToken.START_ARRAY) {
                            throw new BadRequest("'messages' must be an array");
                        }
                        chat = true;
                        p.skipChildren();
                    }
                    case "prompt" -> {
                        promptSeen = true;
                        prompt(p, v);
                    }
                    default -> p.skipChildren();
                }
            }
            if (t != JsonToken.END_OBJECT || p.nextToken() != null) {
                throw new BadRequest("the body must be one JSON object");
            }
        } catch (final StreamConstraintsException ex) {
            throw new BadRequest("the body exceeds a JSON bound: " + ex.getOriginalMessage());
        } catch (final IOException ex) {
            throw new BadRequest("the body is not valid JSON: " + firstLine(ex.getMessage()));
        }
        if (isChat && !chat) {
            throw new BadRequest("a chat completion needs 'messages'");
        }
        if (!isChat && !promptSeen) {
            throw new BadRequest("a completion needs 'prompt'");
        }
        if (!isChat) {
            chat = false;
        }
    }

    private void prompt(final JsonParser p, final JsonToken v) throws IOException, BadRequest {
        if (v == JsonToken.VALUE_STRING) {
            text = p.getText();
            return;
        }
        if (v != JsonToken.START_ARRAY) {
            throw new BadRequest("'prompt' must be a string, an array of token ids, or an array of those");
        }
        final JsonToken first = p.nextToken();
        if (first == JsonToken.END_ARRAY) {
            if (preparsed && tokenCount > 0) {
                return; // the ids were read by the scan
            }
            throw new BadRequest("'prompt' is empty");
        }
        if (first == JsonToken.VALUE_STRING) {
            text = p.getText();
            skipRest(p);
            return;
        }
        if (first == JsonToken.START_ARRAY) {
            readIds(p, p.nextToken());
            skipRest(p);
            return;
        }
        readIds(p, first);
    }

    /** Reads ids from {@code t} up to the array's end. */
    private void readIds(final JsonParser p, final JsonToken firstToken) throws IOException, BadRequest {
        int n = 0;
        JsonToken t = firstToken;
        while (t != JsonToken.END_ARRAY) {
            if (t != JsonToken.VALUE_NUMBER_INT) {
                throw new BadRequest("'prompt' token ids must be integers");
            }
            final long id = p.getLongValue();
            if (id < 0 || id > Integer.MAX_VALUE) {
                throw new BadRequest("'prompt' token id out of range: " + id);
            }
            if (n == MAX_TOKENS) {
                throw new BadRequest("'prompt' has more than " + MAX_TOKENS + " token ids");
            }
            if (n == tokens.length) {
                tokens = Arrays.copyOf(tokens, Math.min(MAX_TOKENS, tokens.length * 2));
            }
            tokens[n++] = (int) id;
            t = p.nextToken();
        }
        tokenCount = n;
    }

    private static void skipRest(final JsonParser p) throws IOException {
        JsonToken t;
        while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
            if (t == null) {
                return;
            }
            p.skipChildren();
        }
    }

    private static String string(final JsonParser p, final JsonToken v, final String name) throws IOException,
        BadRequest {
        if (v != JsonToken.VALUE_STRING) {
            throw new BadRequest("'" + name + "' must be a string");
        }
        return p.getText();
    }

    private static String firstLine(final String s) {
        if (s == null) {
            return "";
        }
        final int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
