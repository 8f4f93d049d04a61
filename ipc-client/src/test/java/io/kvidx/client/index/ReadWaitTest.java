package io.kvidx.client.index;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The one bounded wait of a read, both faces: {@link ReadWait#poll} (codes, the tier map's) and
 * {@link ReadWait#check} (exceptions, the index's) start the clock at the first check, keep the start while the bound
 * has not passed, then give up busy (counted); a stopped heartbeat gives up stale at once, at any check.
 */
@Timeout(10)
class ReadWaitTest {
    private static final int CHECK = ReadWait.SPINS_PER_CLOCK_CHECK;

    @Test
    void shouldKeepOneClockCheckConstantForEveryReader() {
        assertEquals(64, ReadWait.SPINS_PER_CLOCK_CHECK);
        assertEquals(1, Integer.bitCount(ReadWait.SPINS_PER_CLOCK_CHECK), "spins are masked: a power of two");
    }

    @Test
    void shouldStartTheClockAtTheFirstCheckAndKeepItWithinTheBound() {
        final ReadWait wait = new ReadWait(TimeUnit.SECONDS.toNanos(60), () -> false);
        final long start = wait.poll(12345L, CHECK);
        assertTrue(start >= 0, "the first check starts the wait, whatever it was given: " + start);
        assertEquals(start, wait.poll(start, 2 * CHECK));
        assertEquals(start, wait.poll(start, 3 * CHECK));
        assertEquals(0, wait.busyCount());
    }

    @Test
    void shouldGiveUpBusyOnceTheBoundHasPassed() {
        final ReadWait wait = new ReadWait(1, () -> false);
        final long start = wait.poll(0, CHECK);
        long outcome = start;
        for (int spins = 2 * CHECK; outcome == start; spins += CHECK) {
            outcome = wait.poll(start, spins);
        }
        assertEquals(ReadWait.BUSY, outcome);
        assertEquals(1, wait.busyCount());
    }

    @Test
    void shouldGiveUpStaleAtAnyCheckOnceTheWriterIsGone() {
        final AtomicBoolean stale = new AtomicBoolean();
        final ReadWait wait = new ReadWait(TimeUnit.SECONDS.toNanos(60), stale::get);
        final long start = wait.poll(0, CHECK);
        assertFalse(wait.isWriterStale());
        stale.set(true);
        assertTrue(wait.isWriterStale());
        assertEquals(ReadWait.STALE, wait.poll(start, 2 * CHECK));
        assertEquals(ReadWait.STALE, new ReadWait(1, stale::get).poll(0, CHECK), "even at the first check");
        assertEquals(0, wait.busyCount());
    }

    @Test
    void shouldThrowWhereTheIndexReadGivesUp() {
        try (Arena arena = Arena.ofConfined()) {
            final MemorySegment header = arena.allocate(IndexDescriptor.HEADER_LENGTH, 8);
            final Path path = Path.of("cell", "index");
            header.set(ValueLayout.JAVA_LONG, IndexDescriptor.HEARTBEAT_OFFSET, System.currentTimeMillis());
            final ReadWait busy = new ReadWait(header, path, 60_000, 1);
            final long start = busy.check(0, CHECK, 3, -1);
            final IndexBusyException ex = assertThrows(IndexBusyException.class, () -> {
                for (int spins = 2 * CHECK; ; spins += CHECK) {
                    busy.check(start, spins, 3, -1);
                }
            });
            assertTrue(ex.getMessage().startsWith("shard 3 of " + path + " stayed locked"), ex.getMessage());
            assertEquals(1, busy.busyCount());

            header.set(ValueLayout.JAVA_LONG, IndexDescriptor.HEARTBEAT_OFFSET, System.currentTimeMillis() - 10_000);
            final ReadWait stale = new ReadWait(header, path, 100, TimeUnit.SECONDS.toNanos(60));
            final StaleWriterException st = assertThrows(StaleWriterException.class,
                () -> stale.check(0, CHECK, -1, 5));
            assertTrue(st.getMessage().startsWith("pod table entry 5 of " + path + " stays locked"), st.getMessage());
            assertEquals(0, stale.busyCount());
        }
    }
}
