package io.kvidx.daemon.ingest.vllm;

import io.kvidx.daemon.event.BlockEvent;

import java.nio.ByteOrder;

import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_ARRAY;
import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_BIN;
import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_INT;
import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_STR;

/**
 * The event fields vLLM and SGLang send alike, decoded from a batch decoder's cursor into its {@link BlockEvent}:
 * block hashes, parent hash, block size, LoRA id and name, token ids (with SGLang's bigram pairs when asked), the
 * names of the media, and the problems each records. One mapping for both engines, so that the same wire value means
 * the same to either.
 *
 * <p><b>Note:</b> not thread safe; owned by one {@link KvBatchDecoder}, on its writer's thread.
 */
public final class KvFieldDecoder {
    private static final byte[] M_GPU = KvBatchDecoder.ascii("GPU");
    private static final byte[] M_CPU = KvBatchDecoder.ascii("CPU");
    private static final byte[] M_DISK = KvBatchDecoder.ascii("DISK");
    private static final byte[][] M_CPU_ALIASES = {KvBatchDecoder.ascii("CPU_PINNED"),
        KvBatchDecoder.ascii("CPU_TIER1")};
    private static final byte[][] M_DISK_ALIASES = {KvBatchDecoder.ascii("STORAGE"), KvBatchDecoder.ascii("FS"),
        KvBatchDecoder.ascii("OBJ"), KvBatchDecoder.ascii("CPU_TIER2")};

    private final MsgpackCursor in;
    private final int maxHashes;
    private final int maxTokens;

    KvFieldDecoder(final MsgpackCursor in, final int maxHashes, final int maxTokens) {
        this.in = in;
        this.maxHashes = maxHashes;
        this.maxTokens = maxTokens;
    }

    /**
     * Decodes a field both engines send alike: block hashes, parent hash, block size, LoRA id and LoRA name. The
     * cursor is at the field's value, not nil, of msgpack type {@code t}. A value of the wrong type or out of range
     * records a problem (the event is dropped) and is skipped.
     *
     * @param e     the event.
     * @param field a field code.
     * @param t     the value's msgpack type ({@link MsgpackCursor#peekType()}).
     * @return false, reading nothing, for a field this does not decode (tokens, medium, the engine's own fields).
     */
    public boolean decodeShared(final BlockEvent e, final int field, final int t) {
        switch (field) {
            case KvBatchDecoder.F_HASHES -> decodeHashes(e);
            case KvBatchDecoder.F_PARENT -> {
                if (t == TYPE_INT || t == TYPE_BIN) {
                    final long h = readHash(e);
                    if (e.problem() == BlockEvent.PROBLEM_NONE) {
                        e.parent(true, h);
                    }
                } else {
                    fieldTypeProblem(e);
                }
            }
            case KvBatchDecoder.F_BLOCK_SIZE -> {
                final int v = readCount(e, t);
                if (v >= 0) {
                    e.blockSize(v);
                }
            }
            case KvBatchDecoder.F_LORA_ID -> {
                if (t == TYPE_INT) {
                    e.loraId(in.readLong());
                } else {
                    fieldTypeProblem(e);
                }
            }
            case KvBatchDecoder.F_LORA_NAME -> {
                if (t == TYPE_STR) {
                    final int len = in.readRawHeader();
                    in.buffer().getBytes(in.position(), e.loraNameForWrite(len), 0, len);
                    in.skipBytes(len);
                } else {
                    fieldTypeProblem(e);
                }
            }
            default -> {
                return false;
            }
        }
        return true;
    }

    /**
     * Reads a non-negative int field (block size, group index) of msgpack type {@code t}.
     *
     * @param e the event, which gets the problem when the value is not an int in [0, 2^31).
     * @param t the value's msgpack type.
     * @return the value, or -1 (problem recorded, value consumed).
     */
    public int readCount(final BlockEvent e, final int t) {
        if (t != TYPE_INT) {
            fieldTypeProblem(e);
            return -1;
        }
        final long v = in.readLong();
        if (v < 0 || v > Integer.MAX_VALUE) {
            e.problem(BlockEvent.PROBLEM_FIELD_TYPE);
            return -1;
        }
        return (int) v;
    }

    /**
     * Decodes the {@code token_ids} array (at most the decoder's token limit).
     *
     * @param e     the event.
     * @param pairs whether an element may be a pair {@code [token, next_token]} (EAGLE's bigram keys, sent by
     *              SGLang), of which the block holds the first.
     */
    public void decodeTokens(final BlockEvent e, final boolean pairs) {
        final int n = arrayWithin(e, maxTokens);
        if (n < 0) {
            return;
        }
        final int[] tokens = e.tokensForWrite(n);
        // The common forms in bulk; any other form (negative, int64, pairs, a bad type) and the last few bytes of
        // the payload one by one below, with their checks.
        for (int i = in.readUnsignedInts(tokens, 0, n); i < n; i++) {
            final int t = in.peekType();
            if (t == TYPE_INT) {
                tokens[i] = readToken(e);
            } else if (pairs && t == TYPE_ARRAY) {
                final int pair = in.readArrayHeader();
                if (pair == 0 || in.peekType() != TYPE_INT) {
                    e.problem(BlockEvent.PROBLEM_FIELD_TYPE);
                    in.skipValues(pair);
                    continue;
                }
                tokens[i] = readToken(e);
                in.skipValues(pair - 1);
            } else {
                fieldTypeProblem(e);
            }
        }
    }

    /**
     * Reads a medium's name (a str at the cursor): {@code GPU}; {@code CPU} and its aliases {@code CPU_PINNED},
     * {@code CPU_TIER1}; {@code DISK} and its aliases {@code STORAGE}, {@code FS}, {@code OBJ}, {@code CPU_TIER2}
     * (vLLM's offloading tiers, SGLang's HiCache, Dynamo's names).
     *
     * @return one of {@code BlockEvent.MEDIUM_GPU}, {@code _CPU}, {@code _DISK}; -1 for another name.
     */
    public int readMediumName() {
        final int len = in.readRawHeader();
        final int medium;
        if (in.payloadEquals(len, M_GPU)) {
            medium = BlockEvent.MEDIUM_GPU;
        } else if (in.payloadEquals(len, M_CPU) || anyEquals(len, M_CPU_ALIASES)) {
            medium = BlockEvent.MEDIUM_CPU;
        } else if (in.payloadEquals(len, M_DISK) || anyEquals(len, M_DISK_ALIASES)) {
            medium = BlockEvent.MEDIUM_DISK;
        } else {
            medium = -1;
        }
        in.skipBytes(len);
        return medium;
    }

    /**
     * Records a field of the wrong type (the event is dropped) and skips the value.
     *
     * @param e the event.
     */
    public void fieldTypeProblem(final BlockEvent e) {
        e.problem(BlockEvent.PROBLEM_FIELD_TYPE);
        in.skipValue();
    }

    /**
     * Reads the header of an array of at most {@code limit} elements.
     *
     * @return its length, or -1 when the value is not an array or is longer (the problem recorded, the value
     * consumed).
     */
    private int arrayWithin(final BlockEvent e, final int limit) {
        if (in.peekType() != TYPE_ARRAY) {
            fieldTypeProblem(e);
            return -1;
        }
        final int n = in.readArrayHeader();
        if (n > limit) {
            e.problem(BlockEvent.PROBLEM_TOO_LARGE);
            in.skipValues(n);
            return -1;
        }
        return n;
    }

    private void decodeHashes(final BlockEvent e) {
        final int n = arrayWithin(e, maxHashes);
        if (n < 0) {
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

    /** A block hash: any msgpack integer, or a bin of 8, 16 or 32 bytes (its last 8 bytes, big-endian). */
    private long readHash(final BlockEvent e) {
        if (in.peekType() == TYPE_INT) {
            return in.readLong();
        }
        final int len = in.readRawHeader();
        if (len != 8 && len != 16 && len != 32) {
            e.problem(BlockEvent.PROBLEM_HASH_WIDTH);
            in.skipBytes(len);
            return 0;
        }
        final long v = in.buffer().getLong(in.position() + len - 8, ByteOrder.BIG_ENDIAN);
        in.skipBytes(len);
        return v;
    }

    private int readToken(final BlockEvent e) {
        final long v = in.readLong();
        if (v < Integer.MIN_VALUE || v > 0xFFFF_FFFFL) {
            e.problem(BlockEvent.PROBLEM_TOKEN_RANGE);
        }
        return (int) v;
    }

    private boolean anyEquals(final int len, final byte[][] names) {
        for (final byte[] name : names) {
            if (in.payloadEquals(len, name)) {
                return true;
            }
        }
        return false;
    }
}
