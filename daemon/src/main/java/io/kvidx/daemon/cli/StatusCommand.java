package io.kvidx.daemon.cli;

import io.kvidx.client.json.MiniJson;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ops.CellStatus;
import io.kvidx.daemon.ops.DiscoveryStatusFile;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code kvidx status}: what a cell's shared files say about its daemon, read-only: writer pid and heartbeat age,
 * layout version, epoch, index fill (entries; per-shard min, median, max), evictions, and one row per pod (id, slot,
 * generation, state, blocks held, age of its last event, events per second).
 */
@Command(name = "status", mixinStandardHelpOptions = true,
    description = "Print a cell's daemon and pods, read from its shared files.")
public final class StatusCommand implements Callable<Integer> {
    @Mixin
    private CellOptions where = new CellOptions();

    @Option(names = "--json", description = "Print one JSON object instead of a table.")
    private boolean json;

    @Option(names = "--watch", description = "Refresh the table every second until interrupted.")
    private boolean watch;

    @Override
    public Integer call() throws InterruptedException {
        if (!watch) {
            print(CellStatus.read(where.dir(), where.cell()), System.out);
            return 0;
        }
        while (!Thread.currentThread().isInterrupted()) {
            final CellStatus status = CellStatus.read(where.dir(), where.cell());
            // Clear the terminal and home the cursor, then the table.
            System.out.print("\u001b[H\u001b[2J");
            print(status, System.out);
            System.out.flush();
            Thread.sleep(1000);
        }
        return 0;
    }

    private void print(final CellStatus status, final PrintStream out) {
        out.print(json ? json(status) + "\n" : table(status));
    }

    /**
     * @param s a status.
     * @return it as a table.
     */
    static String table(final CellStatus s) {
        final StringBuilder b = new StringBuilder();
        b.append(String.format("cell %s  (%s)%n", s.cell(), s.indexFile()));
        b.append(String.format("writer    pid %d %s, heartbeat %s ago%n", s.writerPid(),
            s.writerRunning() ? "running" : "NOT RUNNING", age(s.heartbeatAgeMs())));
        b.append(String.format("index     layout %s, epoch %d, block size %d%n", s.layout(), s.epoch(),
            s.blockSize()));
        b.append(String.format("fill      %,d of %,d entries (%.1f %%); per shard min %,d, median %,d, max %,d%n",
            s.entries(), s.capacity(), 100.0 * s.entries() / s.capacity(), s.shardEntries()[0], s.shardEntries()[1],
            s.shardEntries()[2]));
        b.append(String.format("evictions %,d", s.evictions()));
        final Long errors = s.counters().get(CounterType.AGENT_ERRORS);
        if (errors != null) {
            b.append(String.format(", agent errors %,d", errors));
        }
        b.append(String.format(", pods %d alive, %d draining, %d suspect", s.pods().stream().filter(
            CellStatus.Pod::alive).count(), s.pods().stream().filter(p -> !p.alive()).count(),
            s.pods().stream().filter(CellStatus.Pod::suspect).count()));
        final Map<String, Object> d = DiscoveryStatusFile.read(s.indexFile().getParent());
        if (d != null) {
            b.append(String.format("%ndiscovery %s, selector %s, pods %s seen / %s ready, %s engines, %s rejected, "
                + "%s watch restarts, last sync %s", Boolean.TRUE.equals(d.get("synced")) ? "synced" : "NOT SYNCED",
                d.get("selector"), d.get("pods_seen"), d.get("pods_ready"), d.get("engines"), d.get("pods_rejected"),
                d.get("watch_restarts"), d.get("last_sync_ms") instanceof Number n && n.longValue() > 0
                    ? age(System.currentTimeMillis() - n.longValue()) + " ago" : "never"));
            if (d.get("last_error") != null) {
                b.append(", last error: ").append(d.get("last_error"));
            }
        }
        b.append(String.format("%n%n%-24s %4s %4s %-16s %10s %11s %9s  %s%n", "POD", "SLOT", "GEN", "STATE",
            "BLOCKS", "LAST EVENT", "EVENTS/S", "MODEL"));
        for (final CellStatus.Pod p : s.pods()) {
            b.append(String.format("%-24s %4d %4d %-16s %10s %11s %9.1f  %s%n", p.id(), p.slot(), p.generation(),
                p.state() + (p.suspect() ? ",suspect" : ""), p.blocks() < 0 ? "-" : String.format("%,d", p.blocks()),
                p.lastEventAgeMs() < 0 ? "-" : age(p.lastEventAgeMs()), p.eventsPerSecond(), p.model()));
        }
        if (s.pods().isEmpty()) {
            b.append("(no pods)\n");
        }
        return b.toString();
    }

    private static String age(final long ms) {
        if (ms < 1000) {
            return ms + " ms";
        }
        if (ms < 120_000) {
            return String.format("%.1f s", ms / 1000.0);
        }
        return String.format("%d min", ms / 60_000);
    }

    /**
     * @param s a status.
     * @return it as one JSON object (written by the project's one JSON implementation, {@link MiniJson}).
     */
    static String json(final CellStatus s) {
        final Map<String, Object> o = new LinkedHashMap<>();
        o.put("cell", s.cell());
        o.put("index_file", s.indexFile().toString());
        o.put("writer", ordered("pid", s.writerPid(), "running", s.writerRunning(), "heartbeat_age_ms",
            s.heartbeatAgeMs()));
        o.put("layout", s.layout());
        o.put("epoch", s.epoch());
        o.put("block_size", s.blockSize());
        o.put("index", ordered("entries", s.entries(), "capacity", s.capacity(), "fill",
            (double) s.entries() / s.capacity(), "shard_entries", ordered("min", s.shardEntries()[0], "median",
                s.shardEntries()[1], "max", s.shardEntries()[2]), "evictions", s.evictions()));
        final Map<String, Object> counters = new LinkedHashMap<>();
        for (final Map.Entry<CounterType, Long> e : s.counters().entrySet()) {
            counters.put(e.getKey().name().toLowerCase(Locale.ROOT), e.getValue());
        }
        o.put("counters", counters);
        final List<Object> pods = new ArrayList<>();
        for (final CellStatus.Pod p : s.pods()) {
            pods.add(ordered("id", p.id(), "model", p.model(), "slot", p.slot(), "generation", p.generation(),
                "alive", p.alive(), "state", p.state(), "suspect", p.suspect(), "blocks", p.blocks(),
                "last_event_age_ms", p.lastEventAgeMs(), "events_per_s", p.eventsPerSecond(), "events", p.events()));
        }
        o.put("pods", pods);
        final Map<String, Object> d = DiscoveryStatusFile.read(s.indexFile().getParent());
        if (d != null) {
            o.put("discovery", d);
        }
        return MiniJson.write(o);
    }

    private static Map<String, Object> ordered(final Object... keysAndValues) {
        final Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < keysAndValues.length; i += 2) {
            m.put((String) keysAndValues[i], keysAndValues[i + 1]);
        }
        return m;
    }
}
