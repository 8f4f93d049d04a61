package io.kvidx.ffm;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.BitSet;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The libc downcalls against the kernel: a thread pinned through {@code sched_setaffinity} reads the same mask back
 * through {@code sched_getaffinity} and in {@code /proc/thread-self/status}; a CPU the machine does not have fails
 * with {@code EINVAL} and leaves the mask alone; {@code mlock} locks pages (or says why not).
 */
@Timeout(30)
class PosixNativeTest {
    private static final int EINVAL = 22;

    @Test
    void shouldPinTheCallingThreadToEachAllowedCpu() throws Exception {
        final BitSet allowed = PosixNative.threadAffinity(0);
        assertNotNull(allowed, "sched_getaffinity");
        assertEquals(allowedFromProc(), allowed, "same mask as /proc");
        for (int cpu = allowed.nextSetBit(0); cpu >= 0; cpu = allowed.nextSetBit(cpu + 1)) {
            final int target = cpu;
            final Object[] result = onNewThread(() -> new Object[] {PosixNative.pinCurrentThread(target),
                PosixNative.threadAffinity(0), uncheckedAllowedFromProc()});
            final BitSet only = new BitSet();
            only.set(target);
            assertEquals(0, result[0], "pinned to " + target);
            assertEquals(only, result[1], "sched_getaffinity after pinning to " + target);
            assertEquals(only, result[2], "/proc after pinning to " + target);
        }
        assertEquals(allowed, PosixNative.threadAffinity(0), "only the pinned threads changed");
    }

    @Test
    void shouldReportEinvalForACpuTheMachineDoesNotHave() throws Exception {
        final Object[] result = onNewThread(() -> new Object[] {PosixNative.pinCurrentThread(4096),
            PosixNative.threadAffinity(0)});
        assertEquals(EINVAL, result[0]);
        assertEquals(PosixNative.threadAffinity(0), result[1], "mask unchanged");
        assertEquals("EINVAL (22)", PosixNative.errnoName(EINVAL));
        assertThrows(IllegalArgumentException.class, () -> PosixNative.pinCurrentThread(PosixNative.MAX_CPUS));
        assertThrows(IllegalArgumentException.class, () -> PosixNative.pinCurrentThread(-1));
    }

    @Test
    void shouldLockPagesOrSayWhyNot() throws Exception {
        try (Arena arena = Arena.ofConfined()) {
            final MemorySegment segment = arena.allocate(1 << 20, 4096);
            final long before = lockedKb();
            final int errno = PosixNative.mlock(segment);
            if (errno == 0) {
                assertTrue(lockedKb() >= before + 1024, "VmLck grew by the segment");
            } else {
                assertTrue(errno == 1 || errno == 12, "EPERM or ENOMEM when RLIMIT_MEMLOCK is too small: " + errno);
            }
        }
    }

    private static Object[] onNewThread(final Supplier<Object[]> body) throws InterruptedException {
        final AtomicReference<Object[]> result = new AtomicReference<>();
        final Thread t = Thread.ofPlatform().start(() -> result.set(body.get()));
        t.join();
        return result.get();
    }

    private static BitSet uncheckedAllowedFromProc() {
        try {
            return allowedFromProc();
        } catch (final IOException ex) {
            throw new IllegalStateException(ex);
        }
    }

    /** The calling thread's Cpus_allowed_list, e.g. "0-1,4". */
    private static BitSet allowedFromProc() throws IOException {
        final BitSet cpus = new BitSet();
        for (final String line : Files.readAllLines(Path.of("/proc/thread-self/status"))) {
            if (line.startsWith("Cpus_allowed_list:")) {
                for (final String range : line.substring(line.indexOf(':') + 1).trim().split(",")) {
                    final String[] ends = range.split("-");
                    cpus.set(Integer.parseInt(ends[0]), Integer.parseInt(ends[ends.length - 1]) + 1);
                }
            }
        }
        return cpus;
    }

    private static long lockedKb() throws IOException {
        for (final String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmLck:")) {
                return Long.parseLong(line.replaceAll("\\D", ""));
            }
        }
        return -1;
    }
}
