package io.kvidx.daemon.ingest.zmq;

import org.agrona.DirectBuffer;
import org.agrona.ExpandableArrayBuffer;

/**
 * A publisher's live batches held while its replay is in flight, in arrival (sequence) order, so that they are
 * applied after the replayed batches that precede them. Bounded: a batch that does not fit is refused (the caller
 * counts it and fetches it by a follow-up replay). The buffer is allocated at the first hold and grows by doubling
 * up to its capacity, then stays: holding allocates nothing once it has reached its working size.
 *
 * <pre>
 * record: 0 seq i64 | 8 pod i32 | 12 payload length i32 | 16 payload
 * </pre>
 *
 * <p><b>Note:</b> owned by the ZeroMQ ingest thread.
 */
final class HeldBatches {
    private static final int SEQ_OFFSET = 0;
    private static final int POD_OFFSET = 8;
    private static final int LENGTH_OFFSET = 12;
    private static final int HEADER_LENGTH = 16;
    private static final int INITIAL_LENGTH = 64 * 1024;

    private final int capacity;
    private ExpandableArrayBuffer buffer;
    private int end;

    /**
     * @param capacity most bytes held (payloads plus 16 bytes each).
     */
    HeldBatches(final int capacity) {
        this.capacity = capacity;
    }

    /**
     * @return false when the batch does not fit (nothing is held then).
     */
    boolean add(final long seq, final int pod, final byte[] payload) {
        final int length = HEADER_LENGTH + payload.length;
        if (length > capacity - end) {
            return false;
        }
        if (buffer == null) {
            buffer = new ExpandableArrayBuffer(Math.min(capacity, Math.max(INITIAL_LENGTH, length)));
        }
        buffer.putLong(end + SEQ_OFFSET, seq);
        buffer.putInt(end + POD_OFFSET, pod);
        buffer.putInt(end + LENGTH_OFFSET, payload.length);
        buffer.putBytes(end + HEADER_LENGTH, payload);
        end += length;
        return true;
    }

    /**
     * @return the position after the last record (records start at 0).
     */
    int end() {
        return end;
    }

    boolean isEmpty() {
        return end == 0;
    }

    long seq(final int position) {
        return buffer.getLong(position + SEQ_OFFSET);
    }

    int pod(final int position) {
        return buffer.getInt(position + POD_OFFSET);
    }

    int payloadOffset(final int position) {
        return position + HEADER_LENGTH;
    }

    int payloadLength(final int position) {
        return buffer.getInt(position + LENGTH_OFFSET);
    }

    /**
     * @return the position of the record after the one at {@code position}.
     */
    int next(final int position) {
        return position + HEADER_LENGTH + payloadLength(position);
    }

    DirectBuffer buffer() {
        return buffer;
    }

    /** Drops the records before {@code position} (applied), moving the rest to the front. */
    void dropBefore(final int position) {
        if (position > 0) {
            System.arraycopy(buffer.byteArray(), position, buffer.byteArray(), 0, end - position);
            end -= position;
        }
    }

    void clear() {
        end = 0;
    }
}
