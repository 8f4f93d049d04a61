package io.kvidx.daemon.writer;

import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A writer that parks for 30 s whenever its queue is empty still takes each message as it comes: the producer's wake
 * ({@link WakeableBackoff#wake}) is never lost, whether it lands before, during or after the writer's announcement
 * that it parks. Messages are offered one at a time, each after a random pause of 0-20 µs, so that the offers fall at
 * every point of the writer's way from its last read to its park. A lost wake leaves the message unread for the
 * park's 30 s; each round trip is allowed 10 s. Without the writer's second look at its queue after its
 * announcement, this test fails (checked when the class was written: the 2,324th message's wake was lost).
 */
class WakeableBackoffTest {
    private static final int ROUND_TRIPS = 5_000;
    private static final long PARK_NS = TimeUnit.SECONDS.toNanos(30);

    @Test
    @Timeout(120)
    void shouldNeverLoseAWakeWhateverTheMomentOfTheOffer() throws Exception {
        final ManyToOneRingBuffer queue = new ManyToOneRingBuffer(new UnsafeBuffer(ByteBuffer.allocateDirect(
            4096 + RingBufferDescriptor.TRAILER_LENGTH)));
        // No spins, no yields: an empty queue parks at once, for 30 s unless woken.
        final WakeableBackoff idle = new WakeableBackoff(queue, new long[] {0, 0, PARK_NS, PARK_NS});
        final AtomicLong read = new AtomicLong();
        final Thread writer = new Thread(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                idle.idle(queue.read((type, buffer, index, length) -> read.incrementAndGet()));
            }
        }, "wakeable-writer");
        writer.setDaemon(true);
        writer.start();
        final SplittableRandom rnd = new SplittableRandom(7);
        final UnsafeBuffer message = new UnsafeBuffer(new byte[8]);
        try {
            for (int i = 1; i <= ROUND_TRIPS; i++) {
                final long pauseEnd = System.nanoTime() + rnd.nextInt(20_000);
                while (System.nanoTime() < pauseEnd) {
                    Thread.onSpinWait();
                }
                assertTrue(queue.write(1, message, 0, message.capacity()), "queued");
                idle.wake();
                final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (read.get() < i) {
                    assertTrue(System.nanoTime() < deadline, "message " + i + " unread after 10 s: its wake was lost");
                    Thread.onSpinWait();
                }
            }
        } finally {
            // An interrupt ends the writer's park, and then its loop.
            writer.interrupt();
            writer.join(TimeUnit.SECONDS.toMillis(5));
        }
    }
}
