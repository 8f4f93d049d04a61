package io.kvidx.ffm;

import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * Layout constants and alignment arithmetic for shared-memory regions.
 *
 * <p>Regions that different threads or processes write are padded to {@link #PADDED_LINE_LENGTH} (two cache
 * lines) because adjacent-line prefetchers pull lines in pairs on x86; entries that one probe must read in full
 * are aligned to one {@link #CACHE_LINE_LENGTH}.
 */
public final class Layouts {
    /** Length of a cache line on the platforms kvidx targets. */
    public static final int CACHE_LINE_LENGTH = 64;
    /** Two cache lines: the stride used between regions written by different parties. */
    public static final int PADDED_LINE_LENGTH = 128;
    /** Page size used to align large tables (madvise and hugepage friendly). */
    public static final int PAGE_LENGTH = 4096;

    /**
     * VarHandle for aligned 64-bit access into a {@link java.lang.foreign.MemorySegment} with coordinates
     * {@code (MemorySegment segment, long offset)}; supports plain, opaque, acquire/release, CAS and bitwise
     * atomic modes on native segments.
     */
    public static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    /** VarHandle for aligned 32-bit access, coordinates {@code (MemorySegment segment, long offset)}. */
    public static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();

    private Layouts() {
    }

    /**
     * Rounds {@code value} up to a multiple of {@code alignment}.
     *
     * @param value     a non-negative value.
     * @param alignment a power of two.
     * @return the smallest multiple of alignment that is {@code >= value}.
     */
    public static long align(final long value, final long alignment) {
        if (alignment <= 0 || Long.bitCount(alignment) != 1) {
            throw new IllegalArgumentException("alignment must be a power of two: " + alignment);
        }
        if (value < 0) {
            throw new IllegalArgumentException("value must be >= 0: " + value);
        }
        return (value + alignment - 1) & -alignment;
    }

    /**
     * @param value a value.
     * @return true when value is a positive power of two.
     */
    public static boolean isPowerOfTwo(final long value) {
        return value > 0 && Long.bitCount(value) == 1;
    }
}
