package io.kvidx.daemon.ingest.zmq;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The idle ingest thread's socket wait ({@link SocketWait}, {@link SocketWaitBackoff}): it returns as soon as one of the sockets it is given can be read, also after
 * the sockets changed (a subscription added), waits out its timeout when none can, and tells the caller to park when
 * there is no socket. The waits below are 20 s long: a wait that missed its socket would take that long, where a
 * socket with a message ends it at once.
 */
class SocketWaitTest {
    private static final long LONG_WAIT_MS = 20_000;
    private static final long AT_ONCE_MS = 5_000;

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldReturnAsSoonAsASocketCanBeReadEvenAfterTheSocketsChanged() throws Exception {
        final SocketWait wait = new SocketWait();
        try (ZContext context = new ZContext(1)) {
            final ZMQ.Socket pubA = context.createSocket(SocketType.PUB);
            final ZMQ.Socket pubB = context.createSocket(SocketType.PUB);
            final ZMQ.Socket subA = subscribed(context, pubA, "inproc://socket-wait-a");
            final ZMQ.Socket subB = subscribed(context, pubB, "inproc://socket-wait-b");

            assertFalse(wait.await(context, new ZMQ.Socket[0], 0, LONG_WAIT_MS), "no socket: the caller parks");

            // A short wait with nothing to read lasts its timeout.
            long start = System.nanoTime();
            assertTrue(wait.await(context, new ZMQ.Socket[] {subA}, 1, 50));
            assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(40), "returned before the timeout");

            // A message on the one socket ends a long wait at once.
            send(pubA, subA, "a1");
            start = System.nanoTime();
            assertTrue(wait.await(context, new ZMQ.Socket[] {subA}, 1, LONG_WAIT_MS));
            assertAtOnce(start);
            drain(subA);

            // A second subscription: the wait polls it too (the poller is made again), so its message ends the wait.
            send(pubB, subB, "b1");
            start = System.nanoTime();
            assertTrue(wait.await(context, new ZMQ.Socket[] {subA, subB}, 2, LONG_WAIT_MS));
            assertAtOnce(start);
            drain(subB);

            // The first subscription dropped: the wait polls the second alone, and still sees its messages.
            send(pubB, subB, "b2");
            start = System.nanoTime();
            assertTrue(wait.await(context, new ZMQ.Socket[] {subB}, 1, LONG_WAIT_MS));
            assertAtOnce(start);
            drain(subB);
            wait.close();
        }
    }

    /**
     * Only a backoff that parks 1 ms or more is replaced by the socket wait (a poll's timeout is whole milliseconds):
     * a shorter backoff was chosen for its short parks and keeps them.
     */
    @Test
    void shouldStandInOnlyForABackoffThatParksAtLeastAMillisecond() {
        final long[] backoff = {10, 20, 1_000, 1_000_000};
        final long[] shortBackoff = {10, 20, 1_000, 500_000};
        assertTrue(SocketWaitBackoff.suits(backoff));
        assertFalse(SocketWaitBackoff.suits(shortBackoff));
        assertFalse(SocketWaitBackoff.suits(null));
        final IllegalArgumentException refused = org.junit.jupiter.api.Assertions.assertThrows(
            IllegalArgumentException.class, () -> new SocketWaitBackoff(null, shortBackoff));
        assertTrue(refused.getMessage().contains("at least 1 ms"), refused.getMessage());
    }

    private static ZMQ.Socket subscribed(final ZContext context, final ZMQ.Socket pub, final String endpoint) {
        pub.bind(endpoint);
        final ZMQ.Socket sub = context.createSocket(SocketType.SUB);
        sub.subscribe(new byte[0]);
        sub.connect(endpoint);
        return sub;
    }

    /**
     * Publishes until the subscriber has the message waiting (a PUB drops what it sends before the subscription
     * reached it), without taking it: the test's wait must find it.
     */
    private static void send(final ZMQ.Socket pub, final ZMQ.Socket sub, final String message) throws Exception {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while ((sub.getEvents() & ZMQ.Poller.POLLIN) == 0) {
            assertTrue(System.nanoTime() < deadline, "the subscription never received " + message);
            pub.send(message);
            Thread.sleep(5);
        }
    }

    /** Takes every message the socket holds (at least one): it cannot end a later wait. */
    private static void drain(final ZMQ.Socket sub) {
        assertNotNull(sub.recv(ZMQ.DONTWAIT));
        while (sub.recv(ZMQ.DONTWAIT) != null) {
            // the send loop may have published more than one
        }
    }

    private static void assertAtOnce(final long start) {
        final long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(ms < AT_ONCE_MS, "the wait took " + ms + " ms: it did not poll the socket with the message");
    }
}
