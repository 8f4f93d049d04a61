package io.kvidx.ffm;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

/**
 * The only class in kvidx that makes restricted (native) calls: libc's {@code sched_setaffinity}, {@code mlock}
 * and {@code madvise} through Panama downcalls.
 *
 * <p>Everything here is optional tuning: when the JVM runs without {@code --enable-native-access} the calls still
 * work (with a JDK warning), and when libc or a symbol is missing each method reports {@code false} instead of
 * failing. The router's read path never calls this class.
 */
@SuppressWarnings("restricted") // the one class allowed restricted calls (STYLE.md)
public final class PosixNative {
    /** {@code madvise} advice: expect random access (no read-ahead). */
    public static final int MADV_RANDOM = 1;
    /** {@code madvise} advice: will need these pages soon. */
    public static final int MADV_WILLNEED = 3;
    /** {@code madvise} advice: back with transparent huge pages where possible. */
    public static final int MADV_HUGEPAGE = 14;

    private static final MethodHandle SCHED_SETAFFINITY;
    private static final MethodHandle MLOCK;
    private static final MethodHandle MADVISE;

    static {
        MethodHandle setAffinity = null;
        MethodHandle mlock = null;
        MethodHandle madvise = null;
        try {
            final Linker linker = Linker.nativeLinker();
            final SymbolLookup libc = linker.defaultLookup();
            setAffinity = find(linker, libc, "sched_setaffinity", FunctionDescriptor.of(ValueLayout.JAVA_INT,
                ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));
            mlock = find(linker, libc, "mlock",
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
            madvise = find(linker, libc, "madvise", FunctionDescriptor.of(ValueLayout.JAVA_INT,
                ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
        } catch (final RuntimeException ignore) {
            // No native linker on this platform: every call reports false.
        }
        SCHED_SETAFFINITY = setAffinity;
        MLOCK = mlock;
        MADVISE = madvise;
    }

    private PosixNative() {
    }

    private static MethodHandle find(final Linker linker, final SymbolLookup lookup, final String name,
        final FunctionDescriptor descriptor) {
        final Optional<MemorySegment> symbol = lookup.find(name);
        return symbol.map(s -> linker.downcallHandle(s, descriptor)).orElse(null);
    }

    /**
     * Pins the calling thread to one CPU. Call it from inside the thread, after it started (threads inherit
     * the mask of the thread that starts them).
     *
     * @param cpu zero-based CPU number, below 1024.
     * @return true when the kernel accepted the mask.
     */
    public static boolean pinCurrentThread(final int cpu) {
        if (cpu < 0 || cpu >= 1024) {
            throw new IllegalArgumentException("cpu must be in [0, 1024): " + cpu);
        }
        if (SCHED_SETAFFINITY == null) {
            return false;
        }
        try (Arena arena = Arena.ofConfined()) {
            final MemorySegment mask = arena.allocate(128, 8);
            final long word = mask.get(ValueLayout.JAVA_LONG, (cpu / 64) * 8L);
            mask.set(ValueLayout.JAVA_LONG, (cpu / 64) * 8L, word | (1L << (cpu % 64)));
            return (int) SCHED_SETAFFINITY.invokeExact(0, 128L, mask) == 0;
        } catch (final Throwable ex) {
            return false;
        }
    }

    /**
     * Locks the pages of a mapped segment into RAM so that the hot path never takes a major fault.
     *
     * @param segment a native segment.
     * @return true on success (may fail on RLIMIT_MEMLOCK).
     */
    public static boolean mlock(final MemorySegment segment) {
        if (MLOCK == null) {
            return false;
        }
        try {
            return (int) MLOCK.invokeExact(segment, segment.byteSize()) == 0;
        } catch (final Throwable ex) {
            return false;
        }
    }

    /**
     * Gives the kernel advice about a mapped segment, e.g. {@link #MADV_RANDOM} or {@link #MADV_HUGEPAGE}.
     *
     * @param segment a page-aligned native segment.
     * @param advice  one of the {@code MADV_*} constants.
     * @return true on success.
     */
    public static boolean madvise(final MemorySegment segment, final int advice) {
        if (MADVISE == null) {
            return false;
        }
        try {
            return (int) MADVISE.invokeExact(segment, segment.byteSize(), advice) == 0;
        } catch (final Throwable ex) {
            return false;
        }
    }
}
