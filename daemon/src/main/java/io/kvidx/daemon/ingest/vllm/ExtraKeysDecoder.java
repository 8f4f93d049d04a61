package io.kvidx.daemon.ingest.vllm;

import io.kvidx.daemon.event.BlockEvent;
import io.kvidx.daemon.event.BlockExtraKeys;

import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_ARRAY;
import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_BIN;
import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_INT;
import static io.kvidx.daemon.ingest.vllm.MsgpackCursor.TYPE_STR;

/**
 * Decodes a BlockStored's {@code extra_keys} (vllm#33304): one entry per block, each nil or an array of str, bin and
 * {@code [str, int]} elements, kept as element spans in the event's {@link BlockExtraKeys} (their meaning is the
 * applier's). A bad shape, an element of another type or more than the limits marks the event with a
 * {@code PROBLEM_EXTRA_KEYS_*} problem and skips the rest of the value, so the next field and event decode normally.
 * Allocates nothing once the event's arrays have grown to the largest extra keys seen.
 *
 * <p><b>Note:</b> not thread safe; owned by one {@link VllmEventDecoder}.
 */
final class ExtraKeysDecoder {
    /** Limit of {@code extra_keys} elements of one block (vLLM: LoRA, salt, digest and the items it overlaps). */
    static final int MAX_EXTRA_KEYS_PER_BLOCK = 1024;
    /** Limit of one {@code extra_keys} str or bin (a LoRA name, salt, identifier or digest), in bytes. */
    static final int MAX_EXTRA_KEY_BYTES = 1 << 16;
    /** Limit of the {@code extra_keys} payload bytes of one event. */
    static final int MAX_EXTRA_BYTES_PER_EVENT = 1 << 24;

    private MsgpackCursor in;

    /**
     * Reads the {@code extra_keys} value at the cursor (not nil) into the event.
     *
     * @param cursor    positioned at the value; left after it.
     * @param e         the event being decoded.
     * @param maxBlocks largest number of entries accepted (the decoder's hash limit).
     */
    void decode(final MsgpackCursor cursor, final BlockEvent e, final int maxBlocks) {
        in = cursor;
        if (in.peekType() != TYPE_ARRAY) {
            e.problem(BlockEvent.PROBLEM_EXTRA_KEYS_TYPE);
            in.skipValue();
            return;
        }
        final int n = in.readArrayHeader();
        if (n > maxBlocks) {
            e.problem(BlockEvent.PROBLEM_EXTRA_KEYS_TOO_LARGE);
            in.skipValues(n);
            return;
        }
        final BlockExtraKeys x = e.extraKeys();
        x.begin(n);
        for (int b = 0; b < n; b++) {
            if (!in.tryReadNil()) {
                if (in.peekType() != TYPE_ARRAY) {
                    e.problem(BlockEvent.PROBLEM_EXTRA_KEYS_TYPE);
                    in.skipValue();
                } else {
                    final int m = in.readArrayHeader();
                    if (m > MAX_EXTRA_KEYS_PER_BLOCK) {
                        e.problem(BlockEvent.PROBLEM_EXTRA_KEYS_TOO_LARGE);
                        in.skipValues(m);
                    } else {
                        for (int j = 0; j < m; j++) {
                            element(e);
                        }
                    }
                }
            }
            x.endBlock(b);
        }
    }

    private void element(final BlockEvent e) {
        final int t = in.peekType();
        if (t == TYPE_STR || t == TYPE_BIN) {
            final int len = in.readRawHeader();
            copy(e, t == TYPE_STR ? BlockExtraKeys.KIND_STR : BlockExtraKeys.KIND_BIN, len, 0);
            return;
        }
        if (t != TYPE_ARRAY) {
            e.problem(BlockEvent.PROBLEM_EXTRA_KEYS_TYPE);
            in.skipValue();
            return;
        }
        final int k = in.readArrayHeader();
        if (k != 2 || in.peekType() != TYPE_STR) {
            e.problem(BlockEvent.PROBLEM_EXTRA_KEYS_TYPE);
            in.skipValues(k);
            return;
        }
        final int len = in.readRawHeader();
        final int start = in.position();
        in.skipBytes(len);
        if (in.peekType() != TYPE_INT) {
            e.problem(BlockEvent.PROBLEM_EXTRA_KEYS_TYPE);
            in.skipValue();
            return;
        }
        final boolean unsigned = in.peekUint64();
        final long offset = in.readLong();
        final int end = in.position();
        in.position(start);
        // An unsigned value above Long.MAX_VALUE is out of any offset's range: keep it so the applier rejects it.
        copy(e, BlockExtraKeys.KIND_MM, len, unsigned && offset < 0 ? Long.MAX_VALUE : offset);
        in.position(end);
    }

    /** Copies a str/bin payload of {@code len} bytes at the cursor into the event (or marks it too large). */
    private void copy(final BlockEvent e, final int kind, final int len, final long value) {
        if (len > MAX_EXTRA_KEY_BYTES || e.extraKeys().bytesLength() + len > MAX_EXTRA_BYTES_PER_EVENT) {
            e.problem(BlockEvent.PROBLEM_EXTRA_KEYS_TOO_LARGE);
            in.skipBytes(len);
            return;
        }
        e.extraKeys().append(kind, in.buffer(), in.position(), len, value);
        in.skipBytes(len);
    }
}
