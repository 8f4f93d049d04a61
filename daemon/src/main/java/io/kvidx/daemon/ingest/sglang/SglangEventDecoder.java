package io.kvidx.daemon.ingest.sglang;

import io.kvidx.daemon.event.BlockEvent;
import io.kvidx.daemon.ingest.vllm.KvBatchDecoder;
import io.kvidx.daemon.ingest.vllm.VllmDecodeException;
import io.kvidx.daemon.ingest.vllm.VllmEventDecoder;

import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_MAP;
import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_STR;

/**
 * Decodes the msgpack payload of an SGLang {@code KVEventBatch} ({@code python/sglang/srt/disaggregation/
 * kv_events.py}, see docs/ingestion.md) into the same {@link BlockEvent} view the vLLM decoder fills, so that the
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
 *   {@code CPU_TIER2}, {@code STORAGE}, {@code FS}, {@code OBJ} as disk; any other as other (the names are the
 *   vLLM decoder's, {@link io.kvidx.daemon.ingest.vllm.KvFieldDecoder#readMediumName}).</li>
 * </ul>
 * The event-level {@code cache_salt} is recorded in the view ({@link BlockEvent#cacheSaltBytes()}); a salt of the
 * wrong type drops the event (keying it unsalted would let other tenants match it). {@code session_id} is not
 * used by the index and is skipped, as are unknown fields. Malformed framing throws {@link VllmDecodeException}.
 * Allocation-free once the view's arrays have grown to the largest event seen.
 *
 * <p><b>Note:</b> not thread safe; one decoder per writer thread.
 */
public final class SglangEventDecoder extends KvBatchDecoder {
    private static final byte[] K_CACHE_SALT = ascii("cache_salt");
    private static final byte[] K_METADATA = ascii("metadata");

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
        if (type == BlockEvent.TYPE_BLOCK_STORED) {
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
        if (type == BlockEvent.TYPE_BLOCK_REMOVED) {
            return switch (position) {
                case 1 -> F_HASHES;
                case 2 -> F_MEDIUM;
                default -> F_SKIP;
            };
        }
        return F_SKIP;
    }

    @Override
    protected int mapField(final BlockEvent e, final int len) {
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
    protected void decodeField(final BlockEvent e, final int field) {
        if (field == F_SKIP) {
            in.skipValue();
            return;
        }
        if (in.tryReadNil()) {
            return;
        }
        final int t = in.peekType();
        if (fields.decodeShared(e, field, t)) {
            return;
        }
        switch (field) {
            case F_TOKENS -> fields.decodeTokens(e, true);
            case F_MEDIUM -> {
                if (t == TYPE_STR) {
                    final int medium = fields.readMediumName();
                    e.medium(medium < 0 ? BlockEvent.MEDIUM_OTHER : medium);
                } else {
                    fields.fieldTypeProblem(e);
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
                    fields.fieldTypeProblem(e);
                }
            }
            default -> in.skipValue();
        }
    }

    /** {@code BlockStoredMetadata}: {@code cache_salt} and {@code session_id}; other keys skipped. */
    private void decodeMetadata(final BlockEvent e) {
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

    private void readSalt(final BlockEvent e) {
        if (in.peekType() != TYPE_STR) {
            fields.fieldTypeProblem(e);
            return;
        }
        final int len = in.readRawHeader();
        in.buffer().getBytes(in.position(), e.cacheSaltForWrite(len), 0, len);
        in.skipBytes(len);
    }
}
