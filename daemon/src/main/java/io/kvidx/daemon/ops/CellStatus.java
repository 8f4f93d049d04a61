package io.kvidx.daemon.ops;

import io.kvidx.client.index.IndexBusyException;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.daemon.counters.CounterType;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a cell's shared files say about its daemon, read-only and without the daemon's help: the index header and
 * pod table ({@link IndexReader}), the counters ({@link CountersFile}) and per-pod activity ({@link PodStatsFile}).
 * {@code kvidx status} prints it; the metrics endpoint exports it.
 *
 * @param cell            cell name.
 * @param indexFile       the index file.
 * @param writerPid       the daemon's pid (from the index header).
 * @param writerRunning   whether that process runs.
 * @param heartbeatAgeMs  milliseconds since the writer's last heartbeat.
 * @param layoutVersion   packed layout version of the index file.
 * @param epoch           the index file's epoch.
 * @param blockSize       router block size.
 * @param entries         entries in the index.
 * @param capacity        entries the index can hold.
 * @param shardEntries    entries per shard: min, median, max.
 * @param evictions       entries evicted because a shard was full.
 * @param counters        the daemon's counters by type (absent when its counters cannot be read).
 * @param pods            one row per pod slot in use.
 */
public record CellStatus(String cell, Path indexFile, long writerPid, boolean writerRunning, long heartbeatAgeMs,
    int layoutVersion, long epoch, int blockSize, long entries, long capacity, int[] shardEntries, long evictions,
    Map<CounterType, Long> counters, List<Pod> pods) {

    /**
     * One pod slot in use.
     *
     * @param id              pod id.
     * @param model           model name.
     * @param slot            slot.
     * @param generation      slot generation.
     * @param state           {@code alive} or {@code draining}.
     * @param suspect         the daemon could not keep the pod's blocks complete (a replay gap it kept, or a
     *                        failed replay): the pod table's suspect flag.
     * @param blocks          blocks held (-1 when the daemon published no figure for this generation).
     * @param lastEventAgeMs  milliseconds since its last applied event (-1: none).
     * @param eventsPerSecond events applied per second over the last full second.
     * @param events          events applied since the pod got the slot.
     */
    public record Pod(String id, String model, int slot, int generation, String state, boolean suspect, long blocks,
        long lastEventAgeMs, double eventsPerSecond, long events) {
        /**
         * @return true when the pod is alive (not draining).
         */
        public boolean alive() {
            return "alive".equals(state);
        }
    }

    /**
     * @return the layout version as {@code major.minor.patch}.
     */
    public String layout() {
        return (layoutVersion >>> 16) + "." + ((layoutVersion >>> 8) & 0xFF) + "." + (layoutVersion & 0xFF);
    }

    /**
     * Reads a cell's status.
     *
     * @param dir  index directory.
     * @param cell cell name.
     * @return the status.
     * @throws io.kvidx.client.index.IndexUnavailableException when there is no index.
     * @throws io.kvidx.client.index.IndexAccessDeniedException when it may not be read.
     */
    public static CellStatus read(final Path dir, final String cell) {
        final IndexReaderContext context = new IndexReaderContext().dir(dir).cell(cell).attachTimeoutMs(0)
            .heartbeatTimeoutMs(0);
        try (IndexReader reader = IndexReader.attach(context)) {
            return read(reader, cell);
        }
    }

    /**
     * Reads a cell's status through an attached reader.
     *
     * @param reader the cell's index.
     * @param cell   cell name.
     * @return the status.
     */
    public static CellStatus read(final IndexReader reader, final String cell) {
        final Path cellDirectory = reader.path().getParent();
        final int shards = reader.shardCount();
        final int[] perShard = new int[shards];
        long entries = 0;
        for (int i = 0; i < shards; i++) {
            perShard[i] = reader.shardEntryCount(i);
            entries += perShard[i];
        }
        final int[] sorted = perShard.clone();
        Arrays.sort(sorted);
        final int[] spread = {sorted[0], sorted[shards / 2], sorted[shards - 1]};
        final Map<CounterType, Long> counters = new LinkedHashMap<>();
        try (CountersFile.Reader c = CountersFile.open(cellDirectory)) {
            for (final CounterType type : CounterType.values()) {
                final long v = c.value(type.typeId());
                if (v >= 0) {
                    counters.put(type, v);
                }
            }
        } catch (final CellFileException ex) {
            // A daemon of an older version, or none yet: the status shows what the index says.
        }
        final List<Pod> pods = new ArrayList<>();
        PodStatsFile stats = null;
        try {
            stats = PodStatsFile.open(cellDirectory);
        } catch (final CellFileException ex) {
            // as above
        }
        try {
            final long now = System.currentTimeMillis();
            for (int slot = 0; slot < reader.maxPods(); slot++) {
                final IndexReader.PodInfo info = podInfo(reader, slot);
                if (info == null || info.state() == 0) {
                    continue;
                }
                long blocks = -1;
                long age = -1;
                double rate = 0;
                long events = 0;
                if (stats != null && slot < stats.slots() && stats.generation(slot) == info.generation()) {
                    blocks = stats.blocks(slot);
                    final long last = stats.lastEventMs(slot);
                    age = last == 0 ? -1 : Math.max(0, now - last);
                    rate = stats.eventsPerSecond(slot);
                    events = stats.events(slot);
                }
                pods.add(new Pod(info.podId(), info.model(), slot, info.generation(),
                    info.state() == 1 ? "alive" : "draining", info.suspect(), blocks, age, rate, events));
            }
        } finally {
            if (stats != null) {
                stats.close();
            }
        }
        final long pid = reader.writerPid();
        final boolean running = ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
        return new CellStatus(cell, reader.path(), pid, running, reader.heartbeatAgeMs(), reader.layoutVersion(),
            reader.epoch(), reader.blockSize(), entries, (long) shards * reader.slotsPerShard(), spread,
            reader.evictions(), counters, List.copyOf(pods));
    }

    /** A slot's pod table entry, or null when the writer kept changing it past the read bound (try again). */
    private static IndexReader.PodInfo podInfo(final IndexReader reader, final int slot) {
        for (int attempt = 0; attempt < 100; attempt++) {
            try {
                return reader.pod(slot);
            } catch (final IndexBusyException ex) {
                Thread.onSpinWait();
            }
        }
        return null;
    }
}
