package io.kvidx.ffm;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.BitSet;
import java.util.Optional;

/**
 * The only class in kvidx that makes restricted (native) calls: libc's {@code sched_setaffinity},
 * {@code sched_getaffinity}, {@code mlock} and {@code madvise} through Panama downcalls.
 *
 * <p>Everything here is optional tuning: when the JVM runs without {@code --enable-native-access} the calls still
 * work (with a JDK warning), and when libc or a symbol is missing each method reports a failure ({@link #ENOSYS}
 * or {@code false}) instead of throwing. Calls that can fail for a reason an operator must see return the C
 * {@code errno} (captured by the downcall, so no other call can overwrite it); {@link #errnoName(int)} names it.
 * The router's read path never calls this class.
 */
@SuppressWarnings("restricted") // the one class allowed restricted calls (STYLE.md)
public final class PosixNative {
    /** {@code madvise} advice: expect random access (no read-ahead). */
    public static final int MADV_RANDOM = 1;
    /** {@code madvise} advice: will need these pages soon. */
    public static final int MADV_WILLNEED = 3;
    /** {@code madvise} advice: back with transparent huge pages where possible. */
    public static final int MADV_HUGEPAGE = 14;
    /**
     * {@code madvise} advice: fault every page of the range in, writable, as a first write would, without writing
     * (Linux 5.14 and later; older kernels refuse it with {@code EINVAL}). Content is unchanged, so it may run while
     * other threads read and write the range.
     */
    public static final int MADV_POPULATE_WRITE = 23;
    /**
     * CPUs a mask passed to the kernel can name: 8192, Linux's largest {@code NR_CPUS} (x86-64 {@code MAXSMP}). A
     * CPU below this that the machine does not have is refused by the kernel ({@code EINVAL}), not here.
     */
    public static final int MAX_CPUS = 8192;
    /** {@code errno} returned when libc or the symbol cannot be reached from Java (function not implemented). */
    public static final int ENOSYS = 38;

    private static final int MASK_BYTES = MAX_CPUS / 8;
    private static final StructLayout CALL_STATE;
    private static final VarHandle ERRNO;
    private static final MethodHandle SCHED_SETAFFINITY;
    private static final MethodHandle SCHED_GETAFFINITY;
    private static final MethodHandle MLOCK;
    private static final MethodHandle MADVISE;

    static {
        StructLayout callState = null;
        VarHandle errno = null;
        MethodHandle setAffinity = null;
        MethodHandle getAffinity = null;
        MethodHandle mlock = null;
        MethodHandle madvise = null;
        try {
            final Linker linker = Linker.nativeLinker();
            final SymbolLookup libc = linker.defaultLookup();
            callState = Linker.Option.captureStateLayout();
            errno = callState.varHandle(MemoryLayout.PathElement.groupElement("errno"));
            final Linker.Option captureErrno = Linker.Option.captureCallState("errno");
            final FunctionDescriptor affinity = FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
                ValueLayout.JAVA_LONG, ValueLayout.ADDRESS);
            setAffinity = find(linker, libc, "sched_setaffinity", affinity, captureErrno);
            getAffinity = find(linker, libc, "sched_getaffinity", affinity, captureErrno);
            mlock = find(linker, libc, "mlock",
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG), captureErrno);
            madvise = find(linker, libc, "madvise", FunctionDescriptor.of(ValueLayout.JAVA_INT,
                ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
        } catch (final RuntimeException ignore) {
            // No native linker on this platform: every call reports a failure.
        }
        CALL_STATE = callState;
        ERRNO = errno;
        SCHED_SETAFFINITY = setAffinity;
        SCHED_GETAFFINITY = getAffinity;
        MLOCK = mlock;
        MADVISE = madvise;
    }

    private PosixNative() {
    }

    private static MethodHandle find(final Linker linker, final SymbolLookup lookup, final String name,
        final FunctionDescriptor descriptor, final Linker.Option... options) {
        final Optional<MemorySegment> symbol = lookup.find(name);
        return symbol.map(s -> linker.downcallHandle(s, descriptor, options)).orElse(null);
    }

    /**
     * Pins the calling thread to one CPU. Call it from inside the thread, after it started (threads inherit
     * the mask of the thread that starts them).
     *
     * @param cpu zero-based CPU number, below {@link #MAX_CPUS}.
     * @return 0 when the kernel accepted the mask, else the {@code errno} ({@code EINVAL} for a CPU the machine
     *         does not have or may not use, {@link #ENOSYS} when the call is unavailable).
     */
    public static int pinCurrentThread(final int cpu) {
        if (cpu < 0 || cpu >= MAX_CPUS) {
            throw new IllegalArgumentException("cpu must be in [0, " + MAX_CPUS + "): " + cpu);
        }
        if (SCHED_SETAFFINITY == null) {
            return ENOSYS;
        }
        try (Arena arena = Arena.ofConfined()) {
            final MemorySegment state = arena.allocate(CALL_STATE);
            final MemorySegment mask = arena.allocate(MASK_BYTES, 8);
            final long offset = (cpu / 64) * 8L;
            mask.set(ValueLayout.JAVA_LONG, offset, mask.get(ValueLayout.JAVA_LONG, offset) | (1L << (cpu % 64)));
            final int rc = (int) SCHED_SETAFFINITY.invokeExact(state, 0, (long) MASK_BYTES, mask);
            return rc == 0 ? 0 : (int) ERRNO.get(state, 0L);
        } catch (final Throwable ex) {
            return ENOSYS;
        }
    }

    /**
     * Reads the CPUs a thread may run on ({@code sched_getaffinity}).
     *
     * @param tid a thread id of this process (Linux {@code gettid}, as in {@code /proc/self/task}), 0 for the calling
     *            thread.
     * @return the thread's CPUs, or null when the call failed or is unavailable.
     */
    public static BitSet threadAffinity(final int tid) {
        if (SCHED_GETAFFINITY == null) {
            return null;
        }
        try (Arena arena = Arena.ofConfined()) {
            final MemorySegment state = arena.allocate(CALL_STATE);
            final MemorySegment mask = arena.allocate(MASK_BYTES, 8);
            final int rc = (int) SCHED_GETAFFINITY.invokeExact(state, tid, (long) MASK_BYTES, mask);
            return rc < 0 ? null : BitSet.valueOf(mask.toArray(ValueLayout.JAVA_LONG));
        } catch (final Throwable ex) {
            return null;
        }
    }

    /**
     * Locks the pages of a mapped segment into RAM so that the hot path never takes a major fault.
     *
     * @param segment a native segment.
     * @return 0 on success, else the {@code errno} ({@code ENOMEM} or {@code EPERM} when {@code RLIMIT_MEMLOCK}
     *         does not cover the segment, {@link #ENOSYS} when the call is unavailable).
     */
    public static int mlock(final MemorySegment segment) {
        if (MLOCK == null) {
            return ENOSYS;
        }
        try (Arena arena = Arena.ofConfined()) {
            final MemorySegment state = arena.allocate(CALL_STATE);
            final int rc = (int) MLOCK.invokeExact(state, segment, segment.byteSize());
            return rc == 0 ? 0 : (int) ERRNO.get(state, 0L);
        } catch (final Throwable ex) {
            return ENOSYS;
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

    /**
     * @param errno an {@code errno} value returned by this class.
     * @return its symbolic name and number for a log line, e.g. {@code "EINVAL (22)"}.
     */
    public static String errnoName(final int errno) {
        final String name = switch (errno) {
            case 1 -> "EPERM";
            case 3 -> "ESRCH";
            case 11 -> "EAGAIN";
            case 12 -> "ENOMEM";
            case 14 -> "EFAULT";
            case 22 -> "EINVAL";
            case ENOSYS -> "ENOSYS";
            default -> "errno";
        };
        return name + " (" + errno + ")";
    }
}
