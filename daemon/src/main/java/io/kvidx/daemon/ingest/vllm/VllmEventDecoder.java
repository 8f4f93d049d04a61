package io.kvidx.daemon.ingest.vllm;

import io.kvidx.daemon.event.BlockEvent;
import io.kvidx.daemon.event.BlockEventListener;

import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_STR;

/**
 * Decodes the msgpack payload of a vLLM {@code KVEventBatch} (see docs/ingestion.md and the wire notes):
 * <ul>
 *   <li>outer batch: the positional array {@code [ts, [events...], dp_rank]} ({@code dp_rank} nil or absent), or a
 *   map with keys {@code ts}, {@code events}, {@code data_parallel_rank};</li>
 *   <li>events in both generations: tagged arrays {@code ["BlockStored", hashes, parent, tokens, block_size,
 *   lora_id, medium, lora_name, extra_keys, group_idx, ...]} and maps with the tag under {@code "type"} and fields
 *   by name;</li>
 *   <li>{@code extra_keys} (vllm#33304): one entry per block, nil or an array of str / bin / {@code [str, int]},
 *   kept as spans (their meaning is the applier's); another shape, another count than {@code block_hashes} or
 *   more than the limits drop that event only;</li>
 *   <li>block hashes as any msgpack integer (uint64 read as unsigned bits, int64 accepted) or as a bin of 8, 16 or
 *   32 bytes (its last 8 bytes, big-endian);</li>
 *   <li>unknown fields and trailing positional fields are skipped; unknown event types are reported to
 *   {@link BlockEventListener#onDropped(BlockEvent)}.</li>
 * </ul>
 * Malformed framing throws {@link VllmDecodeException} and nothing else. Decoding allocates nothing once the reusable
 * arrays of {@link BlockEvent} have grown to the largest event seen.
 *
 * <p><b>Note:</b> not thread safe; one decoder per writer thread.
 */
public final class VllmEventDecoder extends KvBatchDecoder {

    private static final byte[] K_GROUP_IDX = ascii("group_idx");
    private static final byte[] K_SPEC_KIND = ascii("kv_cache_spec_kind");
    private static final byte[] KIND_FULL_ATTENTION = ascii("full_attention");
    private static final byte[] KIND_MLA_ATTENTION = ascii("mla_attention");
    private static final byte[] KIND_SINK_FULL_ATTENTION = ascii("sink_full_attention");
    private static final byte[] K_LOCALITY = ascii("locality");
    private static final byte[] K_EXTRA_KEYS = ascii("extra_keys");
    private static final byte[] L_LOCAL = ascii("LOCAL");
    private static final byte[] L_REMOTE = ascii("REMOTE");

    private final ExtraKeysDecoder extraKeys = new ExtraKeysDecoder();

    /**
     * A decoder with the default limits.
     */
    public VllmEventDecoder() {
        this(MAX_HASHES_DEFAULT, MAX_TOKENS_DEFAULT);
    }

    /**
     * @param maxHashes largest number of block hashes accepted in one event.
     * @param maxTokens largest number of token ids accepted in one event.
     */
    public VllmEventDecoder(final int maxHashes, final int maxTokens) {
        super(maxHashes, maxTokens, "data_parallel_rank");
    }

    @Override
    protected void check(final BlockEvent e) {
        if (e.problem() == BlockEvent.PROBLEM_NONE && e.type() == BlockEvent.TYPE_BLOCK_STORED
            && e.extraKeys().present() && e.extraKeys().blockCount() != e.hashCount()) {
            e.problem(BlockEvent.PROBLEM_EXTRA_KEYS_LENGTH);
        }
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
                case 7 -> F_LORA_NAME;
                case 8 -> F_EXTRA_KEYS;
                case 9 -> F_GROUP_IDX;
                case 10 -> F_SPEC_KIND;
                case 12 -> F_LOCALITY;
                default -> F_SKIP;
            };
        }
        if (type == BlockEvent.TYPE_BLOCK_REMOVED) {
            return switch (position) {
                case 1 -> F_HASHES;
                case 2 -> F_MEDIUM;
                case 3 -> F_GROUP_IDX;
                case 4 -> F_LOCALITY;
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
        if (in.payloadEquals(len, K_GROUP_IDX)) {
            field = F_GROUP_IDX;
        } else if (in.payloadEquals(len, K_SPEC_KIND)) {
            field = F_SPEC_KIND;
        } else if (in.payloadEquals(len, K_LOCALITY)) {
            field = F_LOCALITY;
        } else if (in.payloadEquals(len, K_EXTRA_KEYS)) {
            field = e.type() == BlockEvent.TYPE_BLOCK_STORED || e.type() == BlockEvent.TYPE_UNKNOWN
                ? F_EXTRA_KEYS : F_SKIP;
        } else {
            field = F_SKIP;
        }
        return field;
    }

    private static final int F_GROUP_IDX = 8;
    private static final int F_SPEC_KIND = 9;
    private static final int F_LOCALITY = 10;
    private static final int F_EXTRA_KEYS = 11;

    @Override
    protected void decodeField(final BlockEvent e, final int field) {
        if (field == F_SKIP || in.tryReadNil()) {
            if (field == F_SKIP) {
                in.skipValue();
            }
            return;
        }
        final int t = in.peekType();
        if (fields.decodeShared(e, field, t)) {
            return;
        }
        switch (field) {
            case F_TOKENS -> fields.decodeTokens(e, false);
            case F_EXTRA_KEYS -> extraKeys.decode(in, e, maxHashes);
            case F_GROUP_IDX -> {
                final int v = fields.readCount(e, t);
                if (v >= 0) {
                    e.groupIdx(v);
                }
            }
            case F_MEDIUM -> {
                final int medium = t == TYPE_STR ? fields.readMediumName() : -1;
                if (t != TYPE_STR) {
                    in.skipValue();
                }
                if (medium < 0) {
                    // Defaulted and flagged: the event's blocks are kept, on an unknown medium.
                    e.medium(BlockEvent.MEDIUM_OTHER).flag(BlockEvent.FLAG_UNKNOWN_MEDIUM);
                } else {
                    e.medium(medium);
                }
            }
            case F_LOCALITY -> {
                // A bad locality is defaulted (unspecified) and flagged, never a reason to drop the event.
                if (t == TYPE_STR) {
                    final int len = in.readRawHeader();
                    if (in.payloadEquals(len, L_LOCAL)) {
                        e.locality(BlockEvent.LOCALITY_LOCAL);
                    } else if (in.payloadEquals(len, L_REMOTE)) {
                        e.locality(BlockEvent.LOCALITY_REMOTE);
                    } else {
                        e.flag(BlockEvent.FLAG_BAD_LOCALITY);
                    }
                    in.skipBytes(len);
                } else {
                    e.flag(BlockEvent.FLAG_BAD_LOCALITY);
                    in.skipValue();
                }
            }
            case F_SPEC_KIND -> {
                if (t == TYPE_STR) {
                    final int len = in.readRawHeader();
                    final boolean full = in.payloadEquals(len, KIND_FULL_ATTENTION)
                        || in.payloadEquals(len, KIND_MLA_ATTENTION) || in.payloadEquals(len, KIND_SINK_FULL_ATTENTION);
                    e.specKind(full ? BlockEvent.SPEC_KIND_FULL_ATTENTION : BlockEvent.SPEC_KIND_OTHER);
                    in.skipBytes(len);
                } else {
                    fields.fieldTypeProblem(e);
                }
            }
            default -> in.skipValue();
        }
    }
}
