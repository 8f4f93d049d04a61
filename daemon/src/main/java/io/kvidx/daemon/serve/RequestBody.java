package io.kvidx.daemon.serve;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import io.kvidx.serve.HttpError;
import io.kvidx.serve.JsonBodyReader;
import io.netty.buffer.ByteBuf;

import java.io.IOException;
import java.math.BigInteger;

/**
 * The fields of one API request body, read by the serving layer's {@link JsonBodyReader} (the token-id fast path,
 * then jackson-core's streaming parser) into reused storage: the token ids (or block hashes) land in arrays that grow
 * to the largest body seen and are then reused, so a query allocates nothing that grows with its prompt. Every
 * endpoint's body is a flat JSON object; the fields of all endpoints are read by this one reader and each handler
 * checks the ones it needs. Unknown fields are skipped (peers add fields
 * over time). Bounds: the body's size (the server's aggregator), nesting depth {@value #MAX_DEPTH}, numbers of at
 * most {@value #MAX_NUMBER_DIGITS} digits, strings of at most {@value #MAX_STRING_CHARS} characters.
 *
 * <p>Field names follow Dynamo's standalone indexer and Mooncake's indexer API; where the two differ both are
 * accepted ({@code routing_group} and {@code tenant_id}; {@code model_name} and {@code model}).
 *
 * <p><b>Note:</b> one instance per event-loop thread; not thread safe.
 */
final class RequestBody {
    /** {@code router_keys} or {@code hashes}: the cell's own keys, whatever its key scheme. */
    static final int CELL_KEYS = 0;
    /** {@code block_hashes}: Dynamo's per-block (unchained) XXH3-64 hashes. */
    static final int DYNAMO_PER_BLOCK = 1;
    /** {@code seq_hashes} or {@code block_hash}: Mooncake's chained standard hashes. */
    static final int CHAINED_XXH3 = 2;

    static final int MAX_DEPTH = 8;
    static final int MAX_NUMBER_DIGITS = 24;
    static final int MAX_STRING_CHARS = 4096;

    private static final StreamReadConstraints BOUNDS = StreamReadConstraints.builder()
        .maxNestingDepth(MAX_DEPTH)
        .maxNumberLength(MAX_NUMBER_DIGITS)
        .maxStringLength(MAX_STRING_CHARS)
        .maxNameLength(256)
        .build();

    private static final BigInteger U64_MAX = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);

    private final int maxArrayLength;
    private final JsonBodyReader reader;
    private final JsonBodyReader.Fields fields = this::field;
    int[] tokens;
    int tokenCount;
    boolean hasTokens;
    long[] hashes = new long[64];
    int hashCount;
    boolean hasHashes;
    /** Which hashes {@link #hashes} holds: {@link #CELL_KEYS}, {@link #DYNAMO_PER_BLOCK} or {@link #CHAINED_XXH3}. */
    int hashKind;
    /** The name of the field they came in. */
    String hashField;
    String model;
    String lora;
    String salt;
    String group;
    String instanceId;
    String endpoint;
    String replayEndpoint;
    String type;
    String additionalSalt;
    int blockSize;
    int dpRank;

    /**
     * @param maxArrayLength most elements of {@code token_ids} or {@code block_hashes}.
     */
    RequestBody(final int maxArrayLength) {
        this(maxArrayLength, true);
    }

    /**
     * @param maxArrayLength most elements of {@code token_ids} or {@code block_hashes}.
     * @param fastPath       whether token ids are read by {@link TokenIdsFastPath} (false: by jackson alone, the
     *                       reference the tests compare it with).
     */
    RequestBody(final int maxArrayLength, final boolean fastPath) {
        this.maxArrayLength = maxArrayLength;
        this.reader = new JsonBodyReader(BOUNDS, "token_ids", maxArrayLength, fastPath, ApiException.BAD_JSON);
        this.tokens = reader.tokens();
    }

    /**
     * Reads a body, replacing what the previous one left.
     *
     * @param content the body.
     * @throws ApiException 400 for anything but a JSON object of the expected field types.
     */
    void read(final ByteBuf content) {
        reset();
        if (!content.isReadable()) {
            throw ApiException.badJson("empty body; expected a JSON object");
        }
        try {
            reader.read(content, fields);
        } catch (final ApiException ex) {
            throw ex;
        } catch (final HttpError ex) {
            throw new ApiException(ex.status(), ex.code(), ex.getMessage());
        } finally {
            tokens = reader.tokens();
        }
    }

    private void field(final JsonParser p, final String name) throws IOException {
        switch (name) {
            case "token_ids" -> {
                if (p.currentToken() == JsonToken.START_ARRAY && reader.takePreparsed()) {
                    // The [] left in the fast path's place: the ids are those it read.
                    p.skipChildren();
                    tokenCount = reader.preparsedCount();
                } else {
                    readTokens(p, name);
                }
                hasTokens = true;
            }
            case "block_hashes", "seq_hashes", "block_hash", "hashes", "router_keys" -> {
                readHashes(p, name);
                hasHashes = true;
                // Dynamo sends per-block hashes as block_hashes; Mooncake sends chained ones as seq_hashes (block_hash
                // its legacy name); router_keys (hashes) are the cell's own keys.
                hashKind = switch (name) {
                    case "block_hashes" -> DYNAMO_PER_BLOCK;
                    case "seq_hashes", "block_hash" -> CHAINED_XXH3;
                    default -> CELL_KEYS;
                };
                hashField = name;
            }
            case "model_name", "modelname", "model" -> model = string(p, name);
            case "lora_name" -> lora = string(p, name);
            case "cache_salt" -> salt = string(p, name);
            case "routing_group", "tenant_id" -> group = string(p, name);
            case "instance_id", "worker_id" -> instanceId = id(p, name);
            case "endpoint" -> endpoint = string(p, name);
            case "replay_endpoint" -> replayEndpoint = string(p, name);
            case "type", "engine" -> type = string(p, name);
            case "additional_salt", "additionalsalt" -> additionalSalt = string(p, name);
            case "block_size" -> blockSize = smallInt(p, name, 1, 1 << 20);
            case "dp_rank" -> dpRank = smallInt(p, name, 0, io.kvidx.client.index.DataParallelRanks.MAX_RANK);
            default -> p.skipChildren();
        }
    }

    private void readTokens(final JsonParser p, final String name) throws IOException {
        if (p.currentToken() != JsonToken.START_ARRAY) {
            throw ApiException.invalid(name, "must be an array of token ids");
        }
        int n = 0;
        int[] t = reader.tokens();
        while (true) {
            final int v;
            try {
                // One call per element: the token and its int value, without asking for the number's type.
                v = p.nextIntValue(-1);
            } catch (final com.fasterxml.jackson.core.exc.InputCoercionException ex) {
                throw ApiException.invalid(name, "must hold integers in [0, 2^31)");
            }
            if (v < 0) {
                if (p.currentToken() == JsonToken.END_ARRAY) {
                    break;
                }
                throw ApiException.invalid(name, "must hold integers in [0, 2^31)"
                    + (p.currentToken() == JsonToken.VALUE_NUMBER_INT ? ", got " + p.getText() : ""));
            }
            if (n == t.length) {
                if (n >= maxArrayLength) {
                    throw new ApiException(413, ApiException.TOO_MANY_TOKENS, "more than " + maxArrayLength
                        + " elements in '" + name + "'");
                }
                t = reader.growTokens();
            }
            t[n++] = v;
        }
        tokenCount = n;
    }

    private void readHashes(final JsonParser p, final String name) throws IOException {
        if (p.currentToken() != JsonToken.START_ARRAY) {
            throw ApiException.invalid(name, "must be an array of 64-bit block hashes");
        }
        int n = 0;
        JsonToken t;
        while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
            final long v;
            if (t == JsonToken.VALUE_NUMBER_INT) {
                v = u64(p, name);
            } else if (t == JsonToken.VALUE_STRING) {
                v = hexOrDecimal(p.getText(), name);
            } else {
                throw ApiException.invalid(name, "must hold 64-bit integers (signed or unsigned) or their "
                    + "decimal or 0x-hex strings");
            }
            if (n == hashes.length) {
                if (n >= maxArrayLength) {
                    throw new ApiException(413, ApiException.TOO_MANY_TOKENS, "more than " + maxArrayLength
                        + " elements in '" + name + "'");
                }
                hashes = java.util.Arrays.copyOf(hashes, Math.min(maxArrayLength, n * 2));
            }
            hashes[n++] = v;
        }
        hashCount = n;
    }

    private static long u64(final JsonParser p, final String name) throws IOException {
        return switch (p.getNumberType()) {
            case INT, LONG -> p.getLongValue();
            default -> {
                final BigInteger b = p.getBigIntegerValue();
                if (b.signum() < 0 || b.compareTo(U64_MAX) > 0) {
                    throw ApiException.invalid(name, "holds a number outside the 64-bit range: " + b);
                }
                yield b.longValue();
            }
        };
    }

    private static long hexOrDecimal(final String s, final String name) {
        try {
            if (s.startsWith("0x") || s.startsWith("0X")) {
                return Long.parseUnsignedLong(s.substring(2), 16);
            }
            return s.startsWith("-") ? Long.parseLong(s) : Long.parseUnsignedLong(s);
        } catch (final NumberFormatException ex) {
            throw ApiException.invalid(name, "holds a string that is not a 64-bit number: '" + s + "'");
        }
    }

    private static String string(final JsonParser p, final String name) throws IOException {
        final JsonToken t = p.currentToken();
        if (t == JsonToken.VALUE_NULL) {
            return null;
        }
        if (t != JsonToken.VALUE_STRING) {
            throw ApiException.invalid(name, "must be a string");
        }
        return p.getText();
    }

    private static String id(final JsonParser p, final String name) throws IOException {
        final JsonToken t = p.currentToken();
        if (t == JsonToken.VALUE_NUMBER_INT) {
            return Long.toUnsignedString(u64(p, name));
        }
        if (t == JsonToken.VALUE_STRING) {
            if (p.getText().isEmpty()) {
                // Well typed, refused by the pod id rule as any other string outside it is.
                throw ApiException.refused(name, "must be a non-negative integer or a non-empty string");
            }
            return p.getText();
        }
        throw ApiException.invalid(name, "must be a non-negative integer or a non-empty string");
    }

    private static int smallInt(final JsonParser p, final String name, final int min, final int max)
        throws IOException {
        if (p.currentToken() == JsonToken.VALUE_NULL) {
            return -1;
        }
        if (p.currentToken() != JsonToken.VALUE_NUMBER_INT || p.getNumberType() != JsonParser.NumberType.INT) {
            throw ApiException.invalid(name, "must be an integer in [" + min + ", " + max + "]");
        }
        final int v = p.getIntValue();
        if (v < min || v > max) {
            throw ApiException.invalid(name, "must be an integer in [" + min + ", " + max + "], got " + v);
        }
        return v;
    }

    private void reset() {
        tokenCount = 0;
        hasTokens = false;
        hashCount = 0;
        hasHashes = false;
        hashKind = CELL_KEYS;
        hashField = null;
        model = null;
        lora = null;
        salt = null;
        group = null;
        instanceId = null;
        endpoint = null;
        replayEndpoint = null;
        type = null;
        additionalSalt = null;
        blockSize = -1;
        dpRank = -1;
    }
}
