package io.kvidx.bench;

import java.util.Locale;

/**
 * Says whether an index file fits in the last-level cache, for the line every query figure carries: a query on an
 * index that fits is bound by the CPU's work, one on an index that does not by its dependent memory loads.
 *
 * <p>The cache size is the development VM's 32 MiB L3 (docs/perf.md) unless {@code -Dkvidx.bench.llc.mib=N} says
 * otherwise: guests report the host's whole L3 (this VM's {@code getconf} says 508 MiB), not the slice one core
 * can use, so the operating system's figure is not trusted.
 */
public final class CacheFit {
    /** The last-level cache assumed, MiB. */
    public static final long LLC_MIB = Long.getLong("kvidx.bench.llc.mib", 32);

    private CacheFit() {
    }

    /**
     * @param indexBytes the index file's length.
     * @return true when the file is larger than the last-level cache.
     */
    public static boolean outOfCache(final long indexBytes) {
        return indexBytes > LLC_MIB << 20;
    }

    /**
     * @param indexBytes the index file's length.
     * @return e.g. {@code "index 128.1 MiB: not in cache (> 32 MiB L3)"}.
     */
    public static String describe(final long indexBytes) {
        return String.format(Locale.ROOT, "index %.1f MiB: %s (%s %d MiB L3)", indexBytes / 1048576.0,
            outOfCache(indexBytes) ? "not in cache" : "fits in cache", outOfCache(indexBytes) ? ">" : "<=", LLC_MIB);
    }
}
