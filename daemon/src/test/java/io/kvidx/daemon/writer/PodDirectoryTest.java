package io.kvidx.daemon.writer;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(30)
class PodDirectoryTest {
    private static final String MODEL = "m";

    @Test
    void shouldGiveTheSameHandleToAPodUntilItsNumberIsFreed() {
        final PodDirectory directory = new PodDirectory(8);
        final int a = directory.podNumber("pod-a", null);
        final int b = directory.podNumber("pod-b", MODEL);
        assertEquals(a, directory.podNumber("pod-a", MODEL));
        assertEquals(0, PodDirectory.number(a));
        assertEquals(1, PodDirectory.number(b));
        assertEquals("pod-a", directory.podId(a));
        assertEquals(MODEL, directory.model(a), "the first non-null model wins");
        assertEquals(MODEL, directory.model(b));
        assertTrue(directory.isCurrent(a));
        assertEquals(2, directory.count());
    }

    @Test
    void shouldReuseAFreedNumberWithANewGeneration() {
        final PodDirectory directory = new PodDirectory(8);
        final int a = directory.podNumber("pod-a", MODEL);
        assertTrue(directory.release(a));
        assertFalse(directory.isCurrent(a), "a released handle is stale");
        assertFalse(directory.release(a), "released once");
        assertNull(directory.podId(a));
        assertEquals(0, directory.count());

        final int b = directory.podNumber("pod-b", MODEL);
        assertEquals(PodDirectory.number(a), PodDirectory.number(b), "the number is reused");
        assertEquals(PodDirectory.generation(a) + 1, PodDirectory.generation(b));
        assertNotEquals(a, b);
        assertFalse(directory.isCurrent(a), "the old handle stays stale while the number belongs to another pod");
        assertTrue(directory.isCurrent(b));
        assertEquals("pod-b", directory.podId(b));

        final int again = directory.podNumber("pod-a", MODEL);
        assertTrue(directory.isCurrent(again), "a returning name gets a fresh handle");
        assertNotEquals(a, again);
        assertEquals(2, directory.count());
    }

    @Test
    void shouldReuseFreedNumbersFirstInFirstOut() {
        final PodDirectory directory = new PodDirectory(8);
        final int[] h = new int[4];
        for (int i = 0; i < h.length; i++) {
            h[i] = directory.podNumber("pod-" + i, MODEL);
        }
        directory.release(h[2]);
        directory.release(h[0]);
        assertEquals(2, PodDirectory.number(directory.podNumber("x", MODEL)));
        assertEquals(0, PodDirectory.number(directory.podNumber("y", MODEL)));
        assertEquals(4, PodDirectory.number(directory.podNumber("z", MODEL)), "no free number: the next one");
    }

    @Test
    void shouldKeepAPinnedPodsNumberUntilItIsUnpinned() {
        final PodDirectory directory = new PodDirectory(8);
        final int pinned = directory.pin("engine-a", MODEL);
        assertEquals(pinned, directory.pin("engine-a", MODEL));
        assertEquals(pinned, directory.podNumber("engine-a", MODEL));
        assertFalse(directory.release(pinned));
        directory.unpin(pinned);
        assertFalse(directory.release(pinned), "pinned twice, unpinned once");
        assertTrue(directory.isCurrent(pinned));
        directory.unpin(pinned);
        assertTrue(directory.release(pinned));
        directory.unpin(pinned);
        assertFalse(directory.isCurrent(pinned));

        final int other = directory.podNumber("other", MODEL);
        assertTrue(directory.release(other), "an unpin of a stale handle does not pin the number's next pod");
    }

    @Test
    void shouldBoundTheLivePodsNotTheNamesSeen() {
        final PodDirectory directory = new PodDirectory(4);
        final int[] live = new int[4];
        for (int i = 0; i < 4; i++) {
            live[i] = directory.podNumber("pod-" + i, MODEL);
        }
        assertEquals(-1, directory.podNumber("one-too-many", MODEL));
        for (int i = 4; i < 100_000; i++) {
            assertTrue(directory.release(live[i % 4]));
            live[i % 4] = directory.podNumber("pod-" + i, MODEL);
            assertTrue(live[i % 4] >= 0, "pod " + i);
        }
        assertEquals(4, directory.count());
        assertEquals(4, directory.numbersHandedOut(), "numbers grow only with the pods live at once");
        for (final int h : live) {
            assertTrue(directory.isCurrent(h));
            assertTrue(PodDirectory.number(h) < 4);
        }
    }

    @Test
    void shouldWrapTheGenerationWithoutEverMakingANegativeHandle() {
        final PodDirectory directory = new PodDirectory(1);
        for (int i = 0; i < 40_000; i++) {
            final int h = directory.podNumber("pod-" + i, MODEL);
            assertTrue(h >= 0, "handle " + h);
            assertTrue(directory.release(h));
        }
        assertFalse(directory.isCurrent(-1));
        assertFalse(directory.release(-1));
        assertNull(directory.podId(-1));
    }

    @Test
    void shouldRejectAMaximumOutsideTheNumbers() {
        assertThrows(IllegalArgumentException.class, () -> new PodDirectory(0));
        assertThrows(IllegalArgumentException.class, () -> new PodDirectory(PodDirectory.MAX_NUMBERS + 1));
        assertEquals(PodDirectory.MAX_NUMBERS, new PodDirectory(PodDirectory.MAX_PODS_DEFAULT).maxPods());
    }

    @Test
    void shouldNeverHandOneNumberToTwoLivePodsWhileOthersRelease() throws Exception {
        final PodDirectory directory = new PodDirectory(512);
        final int threads = 4;
        final int perThread = 50_000;
        final AtomicBoolean done = new AtomicBoolean();
        final CountDownLatch start = new CountDownLatch(1);
        final ExecutorService pool = Executors.newFixedThreadPool(threads + 1);
        try {
            final List<Future<Integer>> assigners = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                final int thread = t;
                assigners.add(pool.submit(() -> {
                    start.await();
                    int assigned = 0;
                    for (int i = 0; i < perThread; i++) {
                        final String id = "t" + thread + "-" + (i % 1_000);
                        final int h = directory.podNumber(id, MODEL);
                        if (h >= 0) {
                            assigned++;
                            // While the handle is current, its number is this pod's and nobody else's.
                            final String holder = directory.podId(h);
                            if (directory.isCurrent(h) && holder != null && !holder.equals(id)) {
                                throw new AssertionError(id + " holds " + PodDirectory.number(h) + ", named "
                                    + holder);
                            }
                        }
                    }
                    return assigned;
                }));
            }
            final Future<Integer> releaser = pool.submit(() -> {
                start.await();
                int released = 0;
                int n = 0;
                while (!done.get()) {
                    // Release whatever holds number n now (its current handle, read back by id).
                    final String id = directory.podId(n);
                    if (id != null) {
                        final int h = directory.podNumber(id, MODEL);
                        if (directory.release(h)) {
                            released++;
                        }
                    }
                    n = (n + 1) % 512;
                }
                return released;
            });
            start.countDown();
            int assigned = 0;
            for (final Future<Integer> f : assigners) {
                assigned += f.get(20, TimeUnit.SECONDS);
            }
            done.set(true);
            final int released = releaser.get(20, TimeUnit.SECONDS);
            assertTrue(assigned > 0 && released > 0, assigned + " assigned, " + released + " released");

            // Quiescent: every live id has its own number, and its handle is current.
            final Map<Integer, String> byNumber = new HashMap<>();
            int live = 0;
            for (int t = 0; t < threads; t++) {
                for (int i = 0; i < 1_000; i++) {
                    final String id = "t" + t + "-" + i;
                    final int before = directory.count();
                    final int h = directory.podNumber(id, MODEL);
                    if (h < 0) {
                        continue; // full: not live
                    }
                    if (directory.count() == before) {
                        live++;
                        final String previous = byNumber.put(PodDirectory.number(h), id);
                        assertNull(previous, id + " and " + previous + " share number " + PodDirectory.number(h));
                        assertTrue(directory.isCurrent(h));
                        assertEquals(id, directory.podId(h));
                    } else {
                        directory.release(h);
                    }
                }
            }
            assertEquals(live, directory.count());
            assertTrue(directory.numbersHandedOut() <= 512);
        } finally {
            pool.shutdownNow();
        }
    }
}
