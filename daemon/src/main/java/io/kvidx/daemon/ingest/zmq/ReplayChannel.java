package io.kvidx.daemon.ingest.zmq;

import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.OneToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;

import java.nio.ByteBuffer;

/**
 * The two queues between the ZeroMQ ingest thread and the replay thread (Agrona one-to-one ring buffers), and
 * their message layouts (little-endian, offsets from the message start).
 *
 * <pre>
 * requests (ingest -&gt; replay)            replies (replay -&gt; ingest)
 *   REQUEST  0 publisher i32                BATCH    0 publisher i32 | 4 replay id i32 | 8 seq i64
 *            4 replay id i32                         16 topic length i32 | 20 topic | payload (the rest)
 *            8 start seq i64                END      0 publisher i32 | 4 replay id i32 | 8 status i32
 *   CANCEL   0 publisher i32                SKIPPED  0 publisher i32 | 4 replay id i32 | 8 seq i64
 *            4 replay id i32
 * </pre>
 *
 * A replay id names one request of one publisher; the ingest thread ignores replies of any other id, so a request
 * it gave up on or replaced can never mix into the current one.
 *
 * <p><b>Note:</b> {@link #requests} has one producer, the ingest thread, and one consumer, the replay thread;
 * {@link #replies} the other way round.
 */
final class ReplayChannel {
    /** Request: replay a publisher from a sequence (replaces its replay in flight, if any). */
    static final int REQUEST = 1;
    /** Request: stop a publisher's replay. */
    static final int CANCEL = 2;
    /** Reply: one replayed batch. */
    static final int BATCH = 1;
    /** Reply: the replay ended (status {@link #COMPLETE} or {@link #NO_END_MARKER}). */
    static final int END = 2;
    /** Reply: a replayed batch too large for the replies queue was dropped (counted, logged). */
    static final int SKIPPED = 3;

    /** End status: the engine sent its end marker. */
    static final int COMPLETE = 0;
    /** End status: every attempt timed out before the end marker. */
    static final int NO_END_MARKER = 1;

    static final int PUBLISHER_OFFSET = 0;
    static final int REPLAY_ID_OFFSET = 4;
    static final int SEQ_OFFSET = 8;
    static final int STATUS_OFFSET = 8;
    static final int TOPIC_LENGTH_OFFSET = 16;
    static final int TOPIC_OFFSET = 20;
    static final int REQUEST_LENGTH = 16;
    static final int CANCEL_LENGTH = 8;
    static final int END_LENGTH = 12;
    static final int SKIPPED_LENGTH = 16;

    /** Requests queue: far more than one request per publisher. */
    static final int REQUESTS_LENGTH = 64 * 1024;
    /** Replies queue: 8 MiB, so a batch of up to 1 MiB (the default writer queue's largest message) passes. */
    static final int REPLIES_LENGTH = 8 << 20;

    final OneToOneRingBuffer requests = ring(REQUESTS_LENGTH);
    final OneToOneRingBuffer replies = ring(REPLIES_LENGTH);

    private static OneToOneRingBuffer ring(final int length) {
        return new OneToOneRingBuffer(new UnsafeBuffer(ByteBuffer.allocateDirect(
            length + RingBufferDescriptor.TRAILER_LENGTH)));
    }
}
