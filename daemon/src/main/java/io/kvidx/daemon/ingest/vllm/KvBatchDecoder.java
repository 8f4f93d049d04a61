package io.kvidx.daemon.ingest.vllm;

import io.kvidx.daemon.event.BlockEvent;
import io.kvidx.daemon.event.BlockEventListener;
import io.kvidx.daemon.event.EventDecoder;
import org.agrona.DirectBuffer;

import java.nio.charset.StandardCharsets;

import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_ARRAY;
import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_FLOAT;
import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_INT;
import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_MAP;
import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_STR;

/**
 * The KV event batch envelope vLLM and SGLang share, {@code [ts, [events...], rank]} or a map {@code {ts, events,
 * <rank key>}}, and the loop that decodes its events into one reusable {@link BlockEvent} and delivers them in
 * order. Subclasses decode one event of their engine's format ({@link #decodeArrayEvent}, {@link #decodeMapEvent}).
 *
 * <p>Safety: the bounded {@link MsgpackCursor} checks every length against the bytes left; a payload that is not a
 * well-formed batch ends in {@link VllmDecodeException}; events decoded before are delivered, the rest of the batch
 * is dropped. Allocation-free per batch.
 *
 * <p><b>Note:</b> not thread safe; one per writer agent.
 */
public abstract class KvBatchDecoder implements EventDecoder {
    /** Default largest number of block hashes in one event. */
    public static final int MAX_HASHES_DEFAULT = 1 << 16;
    /** Default largest number of token ids in one event. */
    public static final int MAX_TOKENS_DEFAULT = 1 << 22;
    private static final byte[] K_TS = ascii("ts");
    private static final byte[] K_EVENTS = ascii("events");
    private static final byte[] BLOCK_STORED = ascii("BlockStored");
    private static final byte[] BLOCK_REMOVED = ascii("BlockRemoved");
    private static final byte[] ALL_BLOCKS_CLEARED = ascii("AllBlocksCleared");

    /** The payload being decoded. */
    protected final MsgpackCursor in = new MsgpackCursor();
    /** The event view filled for each event. */
    protected final BlockEvent event = new BlockEvent();
    /** Largest number of block hashes accepted in one event. */
    protected final int maxHashes;
    /** Decodes the fields both engines send alike, from {@link #in}. */
    protected final KvFieldDecoder fields;
    private final byte[][] rankKeys;

    /**
     * @param maxHashes largest number of block hashes accepted in one event.
     * @param maxTokens largest number of token ids accepted in one event.
     * @param rankKeys  the keys of a map-shaped batch that hold the data-parallel rank.
     */
    protected KvBatchDecoder(final int maxHashes, final int maxTokens, final String... rankKeys) {
        if (maxHashes < 1 || maxTokens < 1) {
            throw new IllegalArgumentException("limits must be >= 1: " + maxHashes + ", " + maxTokens);
        }
        this.maxHashes = maxHashes;
        this.fields = new KvFieldDecoder(in, maxHashes, maxTokens);
        this.rankKeys = new byte[rankKeys.length][];
        for (int i = 0; i < rankKeys.length; i++) {
            this.rankKeys[i] = ascii(rankKeys[i]);
        }
    }

    /**
     * Decodes one batch and delivers its events in order, then {@link BlockEventListener#onBatchEnd}.
     *
     * @param buffer   the payload's buffer.
     * @param offset   first byte.
     * @param length   payload length.
     * @param listener receives the events.
     * @return number of events in the batch (delivered or dropped).
     * @throws VllmDecodeException when the payload is not a well-formed batch.
     */
    @Override
    public final int decode(final DirectBuffer buffer, final int offset, final int length,
        final BlockEventListener listener) {
        in.wrap(buffer, offset, length);
        final int events;
        double ts = Double.NaN;
        int rank = -1;
        final int outer = in.peekType();
        if (outer == TYPE_ARRAY) {
            final int n = in.readArrayHeader();
            if (n < 2) {
                throw new VllmDecodeException("batch array has " + n + " elements, expected at least 2");
            }
            ts = readTimestamp();
            events = decodeEvents(listener);
            if (n >= 3) {
                rank = readRank();
            }
            for (int i = 3; i < n; i++) {
                in.skipValue();
            }
        } else if (outer == TYPE_MAP) {
            final int n = in.readMapHeader();
            int count = -1;
            for (int i = 0; i < n; i++) {
                if (in.peekType() != TYPE_STR) {
                    in.skipValue();
                    in.skipValue();
                    continue;
                }
                final int len = in.readRawHeader();
                final boolean isEvents = in.payloadEquals(len, K_EVENTS);
                final boolean isTs = in.payloadEquals(len, K_TS);
                final boolean isRank = isRankKey(len);
                in.skipBytes(len);
                if (isEvents) {
                    count = decodeEvents(listener);
                } else if (isTs) {
                    ts = readTimestamp();
                } else if (isRank) {
                    rank = readRank();
                } else {
                    in.skipValue();
                }
            }
            if (count < 0) {
                throw new VllmDecodeException("batch map has no 'events' entry");
            }
            events = count;
        } else {
            throw new VllmDecodeException("batch is neither an array nor a map (msgpack type " + outer + ")");
        }
        if (in.remaining() != 0) {
            throw new VllmDecodeException(in.remaining() + " trailing bytes after the batch");
        }
        listener.onBatchEnd(ts, rank);
        return events;
    }

    private boolean isRankKey(final int len) {
        for (final byte[] k : rankKeys) {
            if (in.payloadEquals(len, k)) {
                return true;
            }
        }
        return false;
    }

    private double readTimestamp() {
        final int t = in.peekType();
        if (t == TYPE_FLOAT || t == TYPE_INT) {
            return in.readDouble();
        }
        in.skipValue();
        return Double.NaN;
    }

    private int readRank() {
        if (in.peekType() == TYPE_INT) {
            final long v = in.readLong();
            return v >= 0 && v <= Integer.MAX_VALUE ? (int) v : -1;
        }
        in.skipValue();
        return -1;
    }

    private int decodeEvents(final BlockEventListener listener) {
        final int n = in.readArrayHeader();
        for (int i = 0; i < n; i++) {
            final BlockEvent e = event.prepare(BlockEvent.TYPE_UNKNOWN);
            final int shape = in.peekType();
            if (shape == TYPE_ARRAY) {
                decodeArrayEvent(e);
            } else if (shape == TYPE_MAP) {
                decodeMapEvent(e);
            } else {
                in.skipValue();
                e.problem(BlockEvent.PROBLEM_EVENT_SHAPE);
            }
            if (e.type() == BlockEvent.TYPE_UNKNOWN) {
                e.problem(BlockEvent.PROBLEM_UNKNOWN_TYPE);
            }
            check(e);
            if (e.problem() != BlockEvent.PROBLEM_NONE) {
                listener.onDropped(e);
            } else {
                switch (e.type()) {
                    case BlockEvent.TYPE_BLOCK_STORED -> listener.onBlockStored(e);
                    case BlockEvent.TYPE_BLOCK_REMOVED -> listener.onBlockRemoved(e);
                    default -> listener.onAllBlocksCleared(e);
                }
            }
        }
        return n;
    }

    /** Field code of a value to skip. */
    protected static final int F_SKIP = 0;
    /** Field codes both engines' events share (subclasses number their own fields from 8). */
    protected static final int F_HASHES = 1;
    /** Parent block hash. */
    protected static final int F_PARENT = 2;
    /** Token ids. */
    protected static final int F_TOKENS = 3;
    /** Tokens per block. */
    protected static final int F_BLOCK_SIZE = 4;
    /** LoRA adapter id. */
    protected static final int F_LORA_ID = 5;
    /** Medium. */
    protected static final int F_MEDIUM = 6;
    /** LoRA adapter name. */
    protected static final int F_LORA_NAME = 7;
    private static final byte[] K_BLOCK_HASHES = ascii("block_hashes");
    private static final byte[] K_PARENT = ascii("parent_block_hash");
    private static final byte[] K_TOKEN_IDS = ascii("token_ids");
    private static final byte[] K_BLOCK_SIZE = ascii("block_size");
    private static final byte[] K_LORA_ID = ascii("lora_id");
    private static final byte[] K_LORA_NAME = ascii("lora_name");
    private static final byte[] K_MEDIUM = ascii("medium");
    private static final byte[] K_TYPE = ascii("type");

    /**
     * Decodes one array-shaped event (the cursor is at its array header: the type tag, then the fields by position)
     * into {@code e}.
     */
    private void decodeArrayEvent(final BlockEvent e) {
        final int n = in.readArrayHeader();
        if (n == 0) {
            return;
        }
        e.type(readType());
        final int type = e.type();
        for (int i = 1; i < n; i++) {
            decodeField(e, type == BlockEvent.TYPE_UNKNOWN ? F_SKIP : arrayField(type, i));
        }
    }

    /**
     * Decodes one map-shaped event (the cursor is at its map header: the type under {@code "type"}, the fields by
     * name) into {@code e}. Unknown keys are skipped.
     */
    private void decodeMapEvent(final BlockEvent e) {
        final int n = in.readMapHeader();
        for (int i = 0; i < n; i++) {
            if (in.peekType() != TYPE_STR) {
                in.skipValue();
                in.skipValue();
                continue;
            }
            final int len = in.readRawHeader();
            if (in.payloadEquals(len, K_TYPE)) {
                in.skipBytes(len);
                if (in.peekType() == TYPE_STR) {
                    e.type(readType());
                } else {
                    in.skipValue();
                }
                continue;
            }
            final int field = mapField(e, len);
            in.skipBytes(len);
            decodeField(e, field);
        }
    }

    /**
     * @param type     the event's {@code BlockEvent.TYPE_*} (known).
     * @param position the field's position in an array-shaped event (the tag is position 0).
     * @return the field's code, or {@link #F_SKIP}.
     */
    protected abstract int arrayField(int type, int position);

    /**
     * Names the field of a map-shaped event whose key (a str of {@code keyLength} bytes) is at the cursor; the
     * cursor does not move.
     *
     * @param e         the event so far (its type may not be known yet).
     * @param keyLength the key's length.
     * @return the field's code, or {@link #F_SKIP}.
     */
    protected abstract int mapField(BlockEvent e, int keyLength);

    /**
     * Names a map key both engines' events share ({@code block_hashes}, {@code parent_block_hash},
     * {@code token_ids}, {@code block_size}, {@code medium}, {@code lora_name}, {@code lora_id}); the cursor does
     * not move.
     *
     * @param keyLength the key's length.
     * @return the field's code, or {@link #F_SKIP} for any other key.
     */
    protected final int sharedMapField(final int keyLength) {
        if (in.payloadEquals(keyLength, K_BLOCK_HASHES)) {
            return F_HASHES;
        } else if (in.payloadEquals(keyLength, K_TOKEN_IDS)) {
            return F_TOKENS;
        } else if (in.payloadEquals(keyLength, K_PARENT)) {
            return F_PARENT;
        } else if (in.payloadEquals(keyLength, K_BLOCK_SIZE)) {
            return F_BLOCK_SIZE;
        } else if (in.payloadEquals(keyLength, K_MEDIUM)) {
            return F_MEDIUM;
        } else if (in.payloadEquals(keyLength, K_LORA_NAME)) {
            return F_LORA_NAME;
        } else if (in.payloadEquals(keyLength, K_LORA_ID)) {
            return F_LORA_ID;
        }
        return F_SKIP;
    }

    /**
     * Decodes the value at the cursor as the given field into {@code e} (skips it for {@link #F_SKIP}).
     *
     * @param e     the event.
     * @param field a field code.
     */
    protected abstract void decodeField(BlockEvent e, int field);

    /**
     * Checks a decoded event as a whole before it is delivered; records a problem to drop it.
     *
     * @param e the decoded event.
     */
    protected void check(final BlockEvent e) {
    }

    /**
     * Reads an event type tag (a str) at the cursor.
     *
     * @return one of {@code BlockEvent.TYPE_*} ({@link BlockEvent#TYPE_UNKNOWN} for another value).
     */
    protected final int readType() {
        if (in.peekType() != TYPE_STR) {
            in.skipValue();
            return BlockEvent.TYPE_UNKNOWN;
        }
        final int len = in.readRawHeader();
        final int type;
        if (in.payloadEquals(len, BLOCK_STORED)) {
            type = BlockEvent.TYPE_BLOCK_STORED;
        } else if (in.payloadEquals(len, BLOCK_REMOVED)) {
            type = BlockEvent.TYPE_BLOCK_REMOVED;
        } else if (in.payloadEquals(len, ALL_BLOCKS_CLEARED)) {
            type = BlockEvent.TYPE_ALL_BLOCKS_CLEARED;
        } else {
            type = BlockEvent.TYPE_UNKNOWN;
        }
        in.skipBytes(len);
        return type;
    }

    /**
     * @param s ASCII text.
     * @return its bytes.
     */
    protected static byte[] ascii(final String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
