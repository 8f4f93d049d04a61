package io.kvidx.client.index;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Pins the effect of each named step of the seqlock on the version word: odd from {@link Seqlock#beginWrite} to
 * {@link Seqlock#endWrite}, even after, two more per write; a repair ends a torn write; a reader validates only an
 * unchanged version, and the readers' loop (as {@code IndexReader.pod}, {@code KeyLookup} and
 * {@code TierMapReader.tierBits} spell it) retries after a moved version and gives up at its read bound while the
 * version stays odd.
 */
@Timeout(10)
class SeqlockTest {
    /** Not at 0, so that the steps are seen to use the offset. */
    private static final long VERSION = 8;
    private static final long DATA = 16;

    private Arena arena;
    private MemorySegment s;

    @BeforeEach
    void setUp() {
        arena = Arena.ofConfined();
        s = arena.allocate(32, 8);
    }

    @AfterEach
    void tearDown() {
        arena.close();
    }

    @Test
    void shouldHoldTheVersionOddDuringAWriteAndEvenAfterIt() {
        s.set(ValueLayout.JAVA_LONG, VERSION, 40L);
        final long odd = Seqlock.beginWrite(s, VERSION);
        assertEquals(41, odd);
        assertEquals(41, version());
        assertTrue(Seqlock.isWriting(version()));
        Seqlock.endWrite(s, VERSION, odd);
        assertEquals(42, version());
        assertFalse(Seqlock.isWriting(version()));
        assertEquals(0, s.get(ValueLayout.JAVA_LONG, 0), "the neighbouring words are untouched");
        assertEquals(0, s.get(ValueLayout.JAVA_LONG, DATA));
    }

    @Test
    void shouldAddTwoPerWrite() {
        for (int write = 1; write <= 5; write++) {
            final long odd = Seqlock.beginWrite(s, VERSION);
            assertEquals(2L * write - 1, odd);
            Seqlock.endWrite(s, VERSION, odd);
            assertEquals(2L * write, version());
        }
    }

    @Test
    void shouldRepairATornWriteWhateverTheVersionWasLeftAt() {
        s.set(ValueLayout.JAVA_LONG, VERSION, 7L);
        assertEquals(7, Seqlock.beginRepair(s, VERSION), "a torn (odd) version stays as it is");
        assertEquals(7, version());
        Seqlock.endWrite(s, VERSION, 7);
        assertEquals(8, version());

        assertEquals(9, Seqlock.beginRepair(s, VERSION), "an even version becomes odd");
        assertEquals(9, version());
        Seqlock.endWrite(s, VERSION, 9);
        assertEquals(10, version());
    }

    @Test
    void shouldValidateOnlyTheVersionTheReadBeganWith() {
        s.set(ValueLayout.JAVA_LONG, VERSION, 4L);
        final long v = Seqlock.beginRead(s, VERSION);
        assertEquals(4, v);
        assertFalse(Seqlock.isWriting(v));
        assertTrue(Seqlock.validate(s, VERSION, v));
        assertTrue(Seqlock.validateUnchecked(s, VERSION, v));

        final long odd = Seqlock.beginWrite(s, VERSION);
        assertTrue(Seqlock.isWriting(Seqlock.beginRead(s, VERSION)));
        assertTrue(Seqlock.isWriting(Seqlock.beginReadUnchecked(s, VERSION)));
        assertFalse(Seqlock.validate(s, VERSION, v), "a write began after the read");
        assertFalse(Seqlock.validateUnchecked(s, VERSION, v));
        Seqlock.endWrite(s, VERSION, odd);
        assertFalse(Seqlock.validate(s, VERSION, v), "a whole write happened during the read");
        assertFalse(Seqlock.validateUnchecked(s, VERSION, v));

        final long again = Seqlock.beginReadUnchecked(s, VERSION);
        assertEquals(6, again);
        assertTrue(Seqlock.validate(s, VERSION, again));
        assertTrue(Seqlock.validateUnchecked(s, VERSION, again));
    }

    @Test
    void shouldRetryAReadThatAWriteMovedUnder() {
        s.set(ValueLayout.JAVA_LONG, DATA, 1L);
        final ReadWait wait = new ReadWait(TimeUnit.SECONDS.toNanos(5), () -> false);
        final int[] tries = new int[1];
        final long read = read(wait, () -> {
            if (tries[0] == 1) {
                final long odd = Seqlock.beginWrite(s, VERSION);
                s.set(ValueLayout.JAVA_LONG, DATA, 2L);
                Seqlock.endWrite(s, VERSION, odd);
            }
        }, tries);
        assertEquals(2, read, "the data of the first try was read under a moved version: read again");
        assertEquals(2, tries[0]);
        assertEquals(0, wait.busyCount());
    }

    @Test
    void shouldGiveUpBusyWhileTheVersionStaysOdd() {
        s.set(ValueLayout.JAVA_LONG, DATA, 1L);
        Seqlock.beginWrite(s, VERSION);
        final ReadWait wait = new ReadWait(TimeUnit.MILLISECONDS.toNanos(1), () -> false);
        final int[] tries = new int[1];
        assertEquals(ReadWait.BUSY, read(wait, () -> { }, tries));
        assertEquals(0, tries[0], "no data is read under an odd version");
        assertEquals(1, wait.busyCount());
    }

    @Test
    void shouldGiveUpStaleWhileTheVersionStaysOddAndTheWriterIsGone() {
        Seqlock.beginWrite(s, VERSION);
        final ReadWait wait = new ReadWait(TimeUnit.SECONDS.toNanos(60), () -> true);
        assertEquals(ReadWait.STALE, read(wait, () -> { }, new int[1]));
        assertEquals(0, wait.busyCount(), "a stale writer is not a busy one");
    }

    /**
     * The readers' loop over one guarded word: begin, skip an odd version, read, validate; spin, asking the wait
     * every {@value ReadWait#SPINS_PER_CLOCK_CHECK} spins.
     *
     * @return the word, or {@link ReadWait#BUSY} / {@link ReadWait#STALE}.
     */
    private long read(final ReadWait wait, final Runnable duringRead, final int[] tries) {
        int spins = 0;
        long waitStartNs = 0;
        while (true) {
            final long v = Seqlock.beginRead(s, VERSION);
            if (!Seqlock.isWriting(v)) {
                tries[0]++;
                duringRead.run();
                final long data = s.get(ValueLayout.JAVA_LONG, DATA);
                if (Seqlock.validate(s, VERSION, v)) {
                    return data;
                }
            }
            Thread.onSpinWait();
            if ((++spins & (ReadWait.SPINS_PER_CLOCK_CHECK - 1)) == 0) {
                waitStartNs = wait.poll(waitStartNs, spins);
                if (waitStartNs < 0) {
                    return waitStartNs;
                }
            }
        }
    }

    private long version() {
        return s.get(ValueLayout.JAVA_LONG, VERSION);
    }
}
