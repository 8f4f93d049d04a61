package io.kvidx.client.index;

import java.nio.file.Path;

/**
 * Defaults of the index, each overridable by a system property: the one place kvidx reads index properties.
 * Names end in their unit.
 */
public final class IndexConfiguration {
    /** Directory holding one sub-directory per cell. */
    public static final String DIR_PROP_NAME = "kvidx.dir";
    /** Default directory: tmpfs, so the mapping is pure shared memory. */
    public static final String DIR_DEFAULT = "/dev/shm/kvidx";
    /** Cell name: the sub-directory, one index per cell. */
    public static final String CELL_PROP_NAME = "kvidx.cell";
    /** Default cell name. */
    public static final String CELL_DEFAULT = "default";
    /** File name of the index inside its cell directory. */
    public static final String INDEX_FILE_NAME = "index";
    /** How long a reader waits for the index file to appear and become ready. */
    public static final String ATTACH_TIMEOUT_PROP_NAME = "kvidx.attach.timeout.ms";
    /** Default attach timeout. */
    public static final long ATTACH_TIMEOUT_MS_DEFAULT = 5_000;
    /** A writer heartbeat older than this makes the writer stale; 0 disables the check. */
    public static final String HEARTBEAT_TIMEOUT_PROP_NAME = "kvidx.heartbeat.timeout.ms";
    /** Default heartbeat timeout. */
    public static final long HEARTBEAT_TIMEOUT_MS_DEFAULT = 2_000;
    /** How often the writer updates its heartbeat. */
    public static final String HEARTBEAT_INTERVAL_PROP_NAME = "kvidx.heartbeat.interval.ms";
    /** Default heartbeat interval. */
    public static final long HEARTBEAT_INTERVAL_MS_DEFAULT = 500;

    /**
     * Longest a reader waits for a shard (or a pod table entry) that the writer holds locked or keeps changing
     * before it gives up with {@link IndexBusyException}: readers never hang on a writer that is slow, stopped
     * mid-change or gone.
     */
    public static final String READ_BOUND_PROP_NAME = "kvidx.read.bound.ns";
    /**
     * Default read bound: 50 us. A writer holds a shard odd for one backward-shift deletion or one shard of a sweep
     * (well under a microsecond per entry moved), so a reader that waited this long is better served by the
     * fallback than by waiting longer.
     */
    public static final long READ_BOUND_NS_DEFAULT = 50_000;

    /** Whether readers load the home entries a query will probe ahead of its probes (ADR 0023). */
    public static final String PREFETCH_PROP_NAME = "kvidx.query.prefetch";
    /** Default: prefetch (an index larger than the CPU cache is the normal case). */
    public static final boolean PREFETCH_DEFAULT = true;

    private IndexConfiguration() {
    }

    /**
     * @return the configured index directory.
     */
    public static Path dir() {
        return Path.of(System.getProperty(DIR_PROP_NAME, DIR_DEFAULT));
    }

    /**
     * @return the configured cell name.
     */
    public static String cell() {
        return System.getProperty(CELL_PROP_NAME, CELL_DEFAULT);
    }

    /**
     * @return the configured attach timeout.
     */
    public static long attachTimeoutMs() {
        return Long.getLong(ATTACH_TIMEOUT_PROP_NAME, ATTACH_TIMEOUT_MS_DEFAULT);
    }

    /**
     * @return the configured heartbeat timeout.
     */
    public static long heartbeatTimeoutMs() {
        return Long.getLong(HEARTBEAT_TIMEOUT_PROP_NAME, HEARTBEAT_TIMEOUT_MS_DEFAULT);
    }

    /**
     * @return the configured read bound.
     */
    public static long readBoundNs() {
        return Long.getLong(READ_BOUND_PROP_NAME, READ_BOUND_NS_DEFAULT);
    }

    /**
     * @return whether readers prefetch home entries.
     */
    public static boolean prefetch() {
        return Boolean.parseBoolean(System.getProperty(PREFETCH_PROP_NAME, Boolean.toString(PREFETCH_DEFAULT)));
    }

    /**
     * @return the configured heartbeat interval.
     */
    public static long heartbeatIntervalMs() {
        return Long.getLong(HEARTBEAT_INTERVAL_PROP_NAME, HEARTBEAT_INTERVAL_MS_DEFAULT);
    }

    /**
     * @param dir  index directory.
     * @param cell cell name.
     * @return the index file of that cell.
     */
    public static Path indexFile(final Path dir, final String cell) {
        if (cell == null || cell.isEmpty() || cell.contains("/") || cell.equals("..") || cell.equals(".")) {
            throw new IllegalArgumentException("cell must be a plain non-empty name: " + cell);
        }
        return dir.resolve(cell).resolve(INDEX_FILE_NAME);
    }
}
