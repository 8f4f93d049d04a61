package io.kvidx.serve;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import io.kvidx.client.json.TokenIdsFastPath;
import io.netty.buffer.ByteBuf;

import java.io.IOException;

/**
 * What the router reads from an OpenAI completion or chat request body, with jackson-core's streaming parser (the
 * body itself is forwarded unchanged): {@code model}, {@code stream}, {@code cache_salt}, and the prompt as token
 * ids ({@code prompt: [ids]}, or the first of {@code prompt: [[ids], ...]}), as text ({@code prompt: "..."}, or the
 * first of {@code prompt: ["...", ...]}), or as a chat ({@code messages}: the whole body goes to the chat template).
 * A batch of prompts is routed on its first one. The body is read by the serving layer's {@link JsonBodyReader}: a
 * top-level {@code prompt} of plain token ids by {@link TokenIdsFastPath} (about 2 ns per id, against jackson's 20:
 * ADR 0013) and jackson the rest of the body with {@code []} in its place; anything the scan does not read exactly
 * goes to jackson whole.
 *
 * <p>Bounds: nesting depth {@link #MAX_DEPTH}, numbers {@link #MAX_NUMBER_CHARS} characters, token ids
 * {@link #MAX_TOKENS}, and the body limit the server applies before this runs. Anything outside them, or not JSON,
 * or a token id outside 0..2^31-1, is an {@link HttpError} 400 ({@code invalid_request_error}).
 *
 * <p>Moved here from the router so that {@code kvidx router} and {@code kvidx epp} read bodies the same way.
 *
 * <p><b>Note:</b> one instance per thread, reused: {@link #parse} overwrites it (the token buffer grows once).
 */
public final class OpenAiRequest {
    /** Deepest nesting accepted. */
    public static final int MAX_DEPTH = 64;
    /** Longest number accepted. */
    public static final int MAX_NUMBER_CHARS = 32;
    /** Most prompt token ids read. */
    public static final int MAX_TOKENS = 1 << 21;

    /** The error type of a body the router refuses (OpenAI's). */
    public static final String INVALID = "invalid_request_error";

    private static final StreamReadConstraints BOUNDS = StreamReadConstraints.builder().maxNestingDepth(MAX_DEPTH)
        .maxNumberLength(MAX_NUMBER_CHARS).build();

    /** The {@code model} field, or null. */
    public String model;
    /** The {@code stream} field. */
    public boolean stream;
    /** The {@code cache_salt} field, or null. */
    public String cacheSalt;
    /** The prompt text, or null. */
    public String text;
    /** True when the body is a chat ({@code messages}). */
    public boolean chat;
    /** The prompt's token ids (the first {@link #tokenCount}). */
    public int[] tokens;
    /** Token ids read, or -1 when the prompt is not given as ids. */
    public int tokenCount;
    private final JsonBodyReader reader = new JsonBodyReader(BOUNDS, "prompt", MAX_TOKENS, true, INVALID);
    private final JsonBodyReader.Fields fields = this::field;
    private boolean promptSeen;

    /** A reader (one per thread). */
    public OpenAiRequest() {
        tokens = reader.tokens();
    }

    /**
     * @param body   the body (not consumed).
     * @param isChat true for {@code /v1/chat/completions} (which needs {@code messages}).
     * @throws HttpError 400 when the body is not a request the router can route.
     */
    public void parse(final ByteBuf body, final boolean isChat) {
        model = null;
        stream = false;
        cacheSalt = null;
        text = null;
        chat = false;
        tokenCount = -1;
        promptSeen = false;
        try {
            reader.read(body, fields);
        } finally {
            tokens = reader.tokens();
        }
        if (isChat && !chat) {
            throw bad("a chat completion needs 'messages'");
        }
        if (!isChat && !promptSeen) {
            throw bad("a completion needs 'prompt'");
        }
        if (!isChat) {
            chat = false;
        }
    }

    private void field(final JsonParser p, final String name) throws IOException {
        final JsonToken v = p.currentToken();
        switch (name) {
            case "model" -> model = string(p, v, "model");
            case "stream" -> {
                if (v != JsonToken.VALUE_TRUE && v != JsonToken.VALUE_FALSE && v != JsonToken.VALUE_NULL) {
                    throw bad("'stream' must be true or false");
                }
                stream = v == JsonToken.VALUE_TRUE;
            }
            case "cache_salt" -> cacheSalt = v == JsonToken.VALUE_NULL ? null : string(p, v, "cache_salt");
            case "messages" -> {
                if (v != JsonToken.START_ARRAY) {
                    throw bad("'messages' must be an array");
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

    private void prompt(final JsonParser p, final JsonToken v) throws IOException {
        if (v == JsonToken.VALUE_STRING) {
            text = p.getText();
            return;
        }
        if (v != JsonToken.START_ARRAY) {
            throw bad("'prompt' must be a string, an array of token ids, or an array of those");
        }
        final JsonToken first = p.nextToken();
        if (first == JsonToken.END_ARRAY) {
            if (reader.preparsed() && reader.preparsedCount() > 0) {
                tokenCount = reader.preparsedCount(); // the ids were read by the scan
                return;
            }
            throw bad("'prompt' is empty");
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
    private void readIds(final JsonParser p, final JsonToken firstToken) throws IOException {
        int n = 0;
        JsonToken t = firstToken;
        while (t != JsonToken.END_ARRAY) {
            if (t != JsonToken.VALUE_NUMBER_INT) {
                throw bad("'prompt' token ids must be integers");
            }
            final long id = p.getLongValue();
            if (id < 0 || id > Integer.MAX_VALUE) {
                throw bad("'prompt' token id out of range: " + id);
            }
            if (n == MAX_TOKENS) {
                throw bad("'prompt' has more than " + MAX_TOKENS + " token ids");
            }
            int[] ids = reader.tokens();
            if (n == ids.length) {
                ids = reader.growTokens();
            }
            ids[n++] = (int) id;
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

    private static String string(final JsonParser p, final JsonToken v, final String name) throws IOException {
        if (v != JsonToken.VALUE_STRING) {
            throw bad("'" + name + "' must be a string");
        }
        return p.getText();
    }

    private static HttpError bad(final String message) {
        return new HttpError(400, INVALID, message);
    }
}
