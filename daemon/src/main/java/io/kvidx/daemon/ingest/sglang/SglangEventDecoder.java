package io.kvidx.daemon.ingest.sglang;

import io.kvidx.daemon.ingest.vllm.VllmDecodeException;
import io.kvidx.daemon.ingest.vllm.VllmEvent;
import io.kvidx.daemon.ingest.vllm.KvBatchDecoder;
import io.kvidx.daemon.ingest.vllm.VllmEventDecoder;

import java.nio.ByteOrder;

import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_ARRAY;
import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_BIN;
import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_INT;
import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_MAP;
import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_STR;

/**
 * Decodes the msgpack payload of an SGLang {@code KVEventBatch} ({@code python/sglang/srt/disaggregation/
 * kv_events.py}, see docs/ingestion.md) into the same {@link VllmEvent} view the vLLM decoder fills, so that the
 * same appliers apply it:
 * <ul>
 *   <li>outer batch: the positional array {@code [ts, [events...], attn_dp_rank]} (rank nil or absent), or a map
 *   with keys {@code ts}, {@code events}, {@code attn_dp_rank} (or {@code data_parallel_rank});</li>
 *   <li>array events (SGLang before the tagged maps of sglang#37482): {@code ["BlockStored", block_hashes,
 *   parent_block_hash, token_ids, block_size, lora_id, medium, metadata]}, the trailing {@code metadata} map
 *   ({@code {"cache_salt": ..., "session_id": ...}}, sglang#30827) present only for salted stores;
 *   {@code ["BlockRemoved", block_hashes, medium]}; {@code ["AllBlocksCleared"]};</li>
 *   <li>map events (sglang#37482): the tag under {@code "type"} and the fields by name, {@code cache_salt},
 *   {@code session_id} and {@code lora_name} among them, or a nested {@code metadata} map;</li>
 *   <li>block hashes as any msgpack integer (SGLang sends signed 64-bit values) or a bin of 8, 16 or 32 bytes;</li>
 *   <li>token ids as integers, or as pairs {@code [token, next_token]} (EAGLE's bigram keys): the first of each pair
 *   is the block's token;</li>
 *   <li>media {@code GPU}; {@code CPU_PINNED}, {@code CPU}, {@code CPU_TIER1} as CPU; {@code DISK},
 *   {@code CPU_TIER2} as disk; any other as other.</li>
 * </ul>
 * The event-level {@code cache_salt} is recorded in the view ({@link VllmEvent#cacheSaltBytes()}); a salt of the
 * wrong type drops the event (keying it unsalted would let other tenants match it). {@code session_id} is not
 * used by the index and is skipped, as are unknown fields. Malformed framing throws {@link VllmDecodeException}.
 * Allocation-free once the view's arrays have grown to the largest event seen.
 *
 * <p><b>Note:</b> not thread safe; one decoder per writer thread.
 */
public final class SglangEventDecoder extends KvBatchDecoder {
    private static final byte[] K_CACHE_SALT = ascii("cache_salt");
    private static final byte[] K_METADATA = ascii("metadata");
    private static final byte[] M_GPU = ascii("GPU");
    private static final byte[] M_CPU_PINNED = ascii("CPU_PINNED");
    private static final byte[] M_CPU = ascii("CPU");
    private static final byte[] M_CPU_TIER1 = ascii("CPU_TIER1");
    private static final byte[] M_CPU_TIER2 = ascii("CPU_TIER2");
    private static final byte[] M_DISK = ascii("DISK");

    private static final int F_CACHE_SALT = 8;
    private static final int F_METADATA = 9;


    /**
     * A decoder with the vLLM decoder's default limits.
     */
    public SglangEventDecoder() {
        this(VllmEventDecoder.MAX_HASHES_DEFAULT, VllmEventDecoder.MAX_TOKENS_DEFAULT);
    }

    /**
     * @param maxHashes largest number of block hashes accepted in one event.
     * @param maxTokens largest number of token ids accepted in one event.
     */
    public SglangEventDecoder(final int maxHashes, final int maxTokens) {
        super(maxHashes, maxTokens, "attn_dp_rank", "data_parallel_rank");
    }




    @Override
    protected int arrayField(final int type, final int position) {
        if (type == VllmEvent.TYPE_BLOCK_STORED) {
            return switch (position) {
                case 1 -> F_HASHES;
                case 2 -> F_PARENT;
                case 3 -> F_TOKENS;
                case 4 -> F_BLOCK_SIZE;
                case 5 -> F_LORA_ID;
                case 6 -> F_MEDIUM;
                case 7 -> F_METADATA;
                default -> F_SKIP;
            };
        }
        if (type == VllmEvent.TYPE_BLOCK_REMOVED) {
            return switch (position) {
                case 1 -> F_HASHES;
                case 2 -> F_MEDIUM;
                default -> F_SKIP;
            };
        }
        return F_SKIP;
    }

    @Override
    protected int mapField(final VllmEvent e, final int len) {
        int field = sharedMapField(len);
        if (field != F_SKIP) {
            return field;
        }
        if (in.payloadEquals(len, K_CACHE_SALT)) {
            field = F_CACHE_SALT;
        } else if (in.payloadEquals(len, K_METADATA)) {
            field = F_METADATA;
        } else {
            field = F_SKIP;
        }
        return field;
    }

    @Override
    protected void decodeField(final VllmEvent e, final int field) {
        if (field == F_SKIP) {
            in.skipValue();
            return;
        }
        if (in.tryReadNil()) {
            return;
        }
        final int t = in.peekType();
        switch (field) {
            case F_HASHES -> decodeHashes(e);
            case F_PARENT -> {
                if (t == TYPE_INT || t == TYPE_BIN) {
                    final long h = readHash(e);
                    if (e.problem() == VllmEvent.PROBLEM_NONE) {
                        e.parent(true, h);
                    }
                } else {
                    fieldTypeProblem(e);
                }
            }
            case F_TOKENS -> decodeTokens(e);
            case F_BLOCK_SIZE -> {
                if (t == TYPE_INT) {
                    final long v = in.readLong();
                    if (v < 0 || v > Integer.MAX_VALUE) {
                        e.problem(VllmEvent.PROBLEM_FIELD_TYPE);
                    } else {
                        e.blockSize((int) v);
                    }
                } else {
                    fieldTypeProblem(e);
                }
            }
            case F_LORA_ID -> {
                if (t == TYPE_INT) {
                    e.loraId(in.readLong());
                } else {
                    fieldTypeProblem(e);
                }
            }
            case F_MEDIUM -> {
                if (t == TYPE_STR) {
                    e.medium(readMedium());
                } else {
                    fieldTypeProblem(e);
                }
            }
            case F_LORA_NAME -> {
                if (t == TYPE_STR) {
                    final int len = in.readRawHeader();
                    in.buffer().getBytes(in.position(), e.loraNameForWrite(len), 0, len);
                    in.skipBytes(len);
                } else {
                    fieldTypeProblem(e);
                }
            }
            case F_CACHE_SALT -> readSalt(e);
            case F_METADATA -> {
                if (t == TYPE_MAP) {
                    decodeMetadata(e);
                } else if (t == TYPE_STR) {
                    // A vLLM-shaped stream on an SGLang endpoint: position 7 is vLLM's lora_name.
                    decodeField(e, F_LORA_NAME);
                } else {
                    fieldTypeProblem(e);
                }
            }
            default -> in.skipValue();
        }
    }

    /** {@code BlockStoredMetadata}: {@code cache_salt} and {@code session_id}; other keys skipped. */
    private void decodeMetadata(final VllmEvent e) {
        final int n = in.readMapHeader();
        for (int i = 0; i < n; i++) {
            if (in.peekType() != TYPE_STR) {
                in.skipValue();
                in.skipValue();
                continue;
            }
            final int len = in.readRawHeader();
            final boolean salt = in.payloadEquals(len, K_CACHE_SALT);
            in.skipBytes(len);
            if (salt && !in.tryReadNil()) {
                readSalt(e);
            } else if (!salt) {
                in.skipValue();
            }
        }
    }

    private void readSalt(final VllmEvent e) {
        if (in.peekType() != TYPE_STR) {
            fieldTypeProblem(e);
            return;
        }
        final int len = in.readRawHeader();
        in.buffer().getBytes(in.position(), e.cacheSaltForWrite(len), 0, len);
        in.skipBytes(len);
    }

    private int readMedium() {
        final int len = in.readRawHeader();
        final int medium;
        if (in.payloadEquals(len, M_GPU)) {
            medium = VllmEvent.MEDIUM_GPU;
        } else if (in.payloadEquals(len, M_CPU_PINNED) || in.payloadEquals(len, M_CPU)
            || in.payloadEquals(len, M_CPU_TIER1)) {
            medium = VllmEvent.MEDIUM_CPU;
        } else if (in.payloadEquals(len, M_DISK) || in.payloadEquals(len, M_CPU_TIER2)) {
            medium = VllmEvent.MEDIUM_DISK;
        } else {
            medium = VllmEvent.MEDIUM_OTHER;
        }
        in.skipBytes(len);
        return medium;
    }

    private void decodeHashes(final VllmEvent e) {
        if (in.peekType() != TYPE_ARRAY) {
            fieldTypeProblem(e);
            return;
        }
        final int n = in.readArrayHeader();
        if (n > maxHashes) {
            e.problem(VllmEvent.PROBLEM_TOO_LARGE);
            skipElements(n);
            return;
        }
        final long[] hashes = e.hashesForWrite(n);
        for (int i = 0; i < n; i++) {
            final int t = in.peekType();
            if (t == TYPE_INT || t == TYPE_BIN) {
                hashes[i] = readHash(e);
            } else {
                fieldTypeProblem(e);
            }
        }
    }

    private void decodeTokens(final VllmEvent e) {
        if (in.peekType() != TYPE_ARRAY) {
            fieldTypeProblem(e);
            return;
        }
        final int n = in.readArrayHeader();
        if (n > maxTokens) {
            e.problem(VllmEvent.PROBLEM_TOO_LARGE);
            skipElements(n);
            return;
        }
        final int[] tokens = e.tokensForWrite(n);
        for (int i = 0; i < n; i++) {
            final int t = in.peekType();
            if (t == TYPE_INT) {
                tokens[i] = readToken(e);
            } else if (t == TYPE_ARRAY) {
                // EAGLE's bigram key: [token, next_token]; the block holds the first.
                final int pair = in.readArrayHeader();
                if (pair == 0 || in.peekType() != TYPE_INT) {
                    e.problem(VllmEvent.PROBLEM_FIELD_TYPE);
                    skipElements(pair);
                    continue;
                }
                tokens[i] = readToken(e);
                skipElements(pair - 1);
            } else {
                fieldTypeProblem(e);
            }
        }
    }

    private int readToken(final VllmEvent e) {
        final long v = in.readLong();
        if (v < Integer.MIN_VALUE || v > 0xFFFF_FFFFL) {
            e.problem(VllmEvent.PROBLEM_TOKEN_RANGE);
        }
        return (int) v;
    }


    private long readHash(final VllmEvent e) {
        if (in.peekType() == TYPE_INT) {
            return in.readLong();
        }
        final int len = in.readRawHeader();
        if (len != 8 && len != 16 && len != 32) {
            e.problem(VllmEvent.PROBLEM_HASH_WIDTH);
            in.skipBytes(len);
            return 0;
        }
        final long v = in.buffer().getLong(in.position() + len - 8, ByteOrder.BIG_ENDIAN);
        in.skipBytes(len);
        return v;
    }


    private void fieldTypeProblem(final VllmEvent e) {
        e.problem(VllmEvent.PROBLEM_FIELD_TYPE);
        in.skipValue();
    }

}
