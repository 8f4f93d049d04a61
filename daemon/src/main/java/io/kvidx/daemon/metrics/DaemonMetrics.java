package io.kvidx.daemon.metrics;

import io.kvidx.client.index.IndexReader;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ops.CellStatus;
import io.kvidx.daemon.writer.ApplyObserver;
import io.kvidx.daemon.writer.WriterPool;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The daemon's Prometheus endpoint ({@code --metrics HOST:PORT}, off by default), served by the Prometheus Java
 * client's HTTP server at {@code /metrics}:
 * <ul>
 *   <li>every daemon counter as {@code kvidx_<name>_total} (e.g. {@code kvidx_blocks_stored_total}), except
 *   {@code kvidx_pods_alive} and {@code kvidx_suspect_pods}, gauges;</li>
 *   <li>per pod ({@code pod}, {@code slot} labels): {@code kvidx_pod_blocks}, {@code kvidx_pod_events_total},
 *   {@code kvidx_pod_last_event_age_seconds}, {@code kvidx_pod_alive} (0 while draining),
 *   {@code kvidx_pod_suspect};</li>
 *   <li>index: {@code kvidx_index_entries}, {@code kvidx_index_capacity_entries}, {@code kvidx_index_fill_ratio},
 *   {@code kvidx_index_evictions_total}, {@code kvidx_writer_heartbeat_age_seconds};</li>
 *   <li>writer lag: {@code kvidx_writer_queue_bytes{writer}}, bytes queued and not yet applied;</li>
 *   <li>histograms, a batch's stages on its way into the index: {@code kvidx_batch_ingest_seconds} (transport
 *   receive to the writer's queue: sequencing and the batch's rank, on the transport thread),
 *   {@code kvidx_batch_queue_seconds} (waiting in the writer's queue), {@code kvidx_batch_apply_seconds} (decode and
 *   apply of one batch, after which its blocks are visible) and {@code kvidx_event_to_visible_seconds} (engine batch timestamp to visible in the index; engine and daemon
 *   clocks must agree; live ZeroMQ batches only: replayed batches are not observed, and SBE events carry no
 *   timestamp).</li>
 * </ul>
 * Values are read at scrape time from the cell's shared files ({@link CellStatus}), the same figures
 * {@code kvidx status} prints.
 *
 * <p><b>Note:</b> the histograms are observed by writer threads (thread safe, no allocation); scrapes run on the
 * HTTP server's thread.
 */
public final class DaemonMetrics implements AutoCloseable {
    /** Counters exported as gauges (they go up and down). */
    private static final Set<CounterType> GAUGES = Set.of(CounterType.PODS_ALIVE, CounterType.SUSPECT_PODS,
        CounterType.JETSTREAM_LAG, CounterType.JETSTREAM_SNAPSHOT_BYTES,
        CounterType.JETSTREAM_SNAPSHOT_TIMESTAMP_SECONDS, CounterType.JETSTREAM_LEASES_HELD,
        CounterType.JETSTREAM_STANDBY_MESSAGES);

    private static final io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter TEXT_FORMAT =
        io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter.create();

    /** Bucket bounds of the per-batch stage histograms: 1 µs to 1 s. */
    private static final double[] STAGE_BOUNDS = {1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4,
        1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 1};

    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final Histogram ingestSeconds;
    private final Histogram queueSeconds;
    private final Histogram applySeconds;
    private final Histogram eventToVisibleSeconds;
    private HTTPServer server;
    private IndexReader reader;

    /**
     * Creates the histograms (before the writers start, so that they observe from the first batch).
     */
    public DaemonMetrics() {
        this.ingestSeconds = Histogram.builder().name("kvidx_batch_ingest_seconds")
            .help("From the transport thread receiving a batch to its commit to the writer's queue")
            .classicOnly().classicUpperBounds(STAGE_BOUNDS).register(registry);
        this.queueSeconds = Histogram.builder().name("kvidx_batch_queue_seconds")
            .help("Time a batch waited in its writer's queue")
            .classicOnly().classicUpperBounds(STAGE_BOUNDS).register(registry);
        this.applySeconds = Histogram.builder().name("kvidx_batch_apply_seconds")
            .help("Time a writer took to decode and apply one batch of events")
            .classicOnly().classicUpperBounds(STAGE_BOUNDS).register(registry);
        this.eventToVisibleSeconds = Histogram.builder().name("kvidx_event_to_visible_seconds")
            .help("From the engine's batch timestamp to the batch being visible in the index; live vLLM/SGLang "
                + "batches only (replayed batches are not observed; SBE events carry no timestamp)")
            .classicOnly().classicUpperBounds(1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25,
                0.5, 1, 2.5, 5, 10)
            .register(registry);
    }

    /**
     * @return the observer the writers feed the histograms through.
     */
    public ApplyObserver observer() {
        return (ingestNanos, queueNanos, applyNanos, eventToVisibleMs) -> {
            ingestSeconds.observe(ingestNanos / 1e9);
            queueSeconds.observe(queueNanos / 1e9);
            applySeconds.observe(applyNanos / 1e9);
            if (eventToVisibleMs >= 0) {
                eventToVisibleSeconds.observe(eventToVisibleMs / 1e3);
            }
        };
    }

    /**
     * Starts collecting the cell's figures, and serves {@code /metrics} on its own server when an address is given
     * (the indexer HTTP API serves the same registry through {@link #scrape}).
     *
     * @param address where to listen, or null for no server of its own.
     * @param index   the cell's index, read-only (its directory holds the other shared files).
     * @param cell    cell name.
     * @param writers the writer pool (queue depths).
     * @return this.
     */
    public DaemonMetrics start(final InetSocketAddress address, final IndexReader index, final String cell,
        final WriterPool writers) {
        this.reader = index;
        registry.register(new CellCollector(index, cell, writers));
        if (address == null) {
            return this;
        }
        try {
            server = HTTPServer.builder().hostname(address.getHostString()).port(address.getPort())
                .registry(registry).buildAndStart();
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot serve metrics on " + address.getHostString() + ":"
                + address.getPort() + ": " + ex.getMessage(), ex);
        }
        return this;
    }

    /**
     * Writes every metric in the Prometheus text format (0.0.4), as {@code /metrics} serves it.
     *
     * @param out where to write.
     * @throws IOException when writing fails.
     */
    public void scrape(final java.io.OutputStream out) throws IOException {
        TEXT_FORMAT.write(out, registry.scrape());
    }

    /**
     * @return the port the server listens on (useful with port 0), or -1 when not started.
     */
    public int port() {
        return server == null ? -1 : server.getPort();
    }

    @Override
    public void close() {
        if (server != null) {
            server.close();
        }
        if (reader != null) {
            reader.close();
        }
    }

    /**
     * Parses {@code HOST:PORT} (IPv6 hosts in brackets).
     *
     * @param hostPort the address.
     * @return the socket address (unresolved).
     * @throws IllegalArgumentException naming the problem.
     */
    public static InetSocketAddress parseAddress(final String hostPort) {
        final int colon = hostPort.lastIndexOf(':');
        if (colon <= 0 || colon == hostPort.length() - 1) {
            throw new IllegalArgumentException("metrics: expected HOST:PORT, got '" + hostPort + "'");
        }
        String host = hostPort.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        final int port;
        try {
            port = Integer.parseInt(hostPort.substring(colon + 1));
        } catch (final NumberFormatException ex) {
            throw new IllegalArgumentException("metrics: port must be a number in 0..65535, got '" + hostPort + "'");
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("metrics: port must be in 0..65535, got " + port);
        }
        return InetSocketAddress.createUnresolved(host, port);
    }

    /**
     * Exports pod discovery's state: {@code kvidx_discovery_synced}, {@code _pods_seen}, {@code _pods_ready},
     * {@code _engines}, {@code _pods_rejected} (gauges), {@code _watch_restarts} (counter) and
     * {@code _last_sync_timestamp_seconds}.
     *
     * @param status what discovery knows now (read at every scrape).
     * @return this.
     */
    public DaemonMetrics discovery(final java.util.function.Supplier<io.kvidx.discovery.DiscoveryStatus> status) {
        registry.register(() -> {
            final io.kvidx.discovery.DiscoveryStatus s = status.get();
            final List<MetricSnapshot> out = new ArrayList<>();
            out.add(CellCollector.gauge("kvidx_discovery_synced", "1 once pod discovery has listed the pods",
                s.synced() ? 1 : 0));
            out.add(CellCollector.gauge("kvidx_discovery_pods_seen", "Pods the discovery selector matches",
                s.podsSeen()));
            out.add(CellCollector.gauge("kvidx_discovery_pods_ready",
                "Matched pods that are Running, Ready, with an IP", s.podsReady()));
            out.add(CellCollector.gauge("kvidx_discovery_engines", "Engines discovery publishes (pods x ranks)",
                s.engines()));
            out.add(CellCollector.gauge("kvidx_discovery_pods_rejected", "Ready pods whose annotations were refused",
                s.podsRejected()));
            out.add(CellCollector.counter("kvidx_discovery_watch_restarts",
                "Watches of the API server lost and re-established", s.watchRestarts()));
            out.add(CellCollector.gauge("kvidx_discovery_last_sync_timestamp_seconds",
                "When discovery last saw a list, watch event or resync", s.lastSyncMs() / 1e3));
            return new MetricSnapshots(out);
        });
        return this;
    }

    /**
     * Exports what the HTTP API's guards refused: {@code kvidx_http_connections_open} (gauge),
     * {@code kvidx_http_connections_refused}, {@code kvidx_http_read_deadlines_expired} and
     * {@code kvidx_http_unauthorized}, {@code kvidx_http_tls_refused}, {@code kvidx_http_queries_offloaded},
     * {@code kvidx_http_queries_busy} (counters).
     *
     * @param http the API's server.
     * @return this.
     */
    public DaemonMetrics httpGuards(final io.kvidx.daemon.serve.IndexHttpServer http) {
        final io.kvidx.serve.HttpPipeline pipeline = http.pipeline();
        registry.register(() -> new MetricSnapshots(List.of(
            CellCollector.counter("kvidx_http_queries_offloaded",
                "HTTP API queries answered on a query thread: their tiers took too many lookups for an event loop",
                http.queriesOffloaded()),
            CellCollector.counter("kvidx_http_tls_refused",
                "HTTP API connections closed because TLS failed: no client certificate, one the CA did not sign, "
                + "plain HTTP on the TLS port", pipeline.tlsRefused()),
            CellCollector.counter("kvidx_http_queries_busy",
                "HTTP API queries refused (503): the query threads and their queue were full", http.queriesRefused()),
            CellCollector.gauge("kvidx_http_connections_open", "HTTP API connections open",
                pipeline.connectionsOpen()),
            CellCollector.counter("kvidx_http_connections_refused",
                "HTTP API connections closed at accept: the connection bound was reached",
                pipeline.connectionsRefused()),
            CellCollector.counter("kvidx_http_read_deadlines_expired",
                "HTTP API connections closed: a request did not arrive whole within the read deadline",
                pipeline.readDeadlinesExpired()),
            CellCollector.counter("kvidx_http_unauthorized",
                "HTTP API requests refused (401) for a missing or wrong bearer token", pipeline.unauthorized()))));
        return this;
    }

    /** Everything but the histograms, read once per scrape. */
    private static final class CellCollector implements MultiCollector {
        private final IndexReader index;
        private final String cell;
        private final WriterPool writers;

        CellCollector(final IndexReader index, final String cell, final WriterPool writers) {
            this.index = index;
            this.cell = cell;
            this.writers = writers;
        }

        @Override
        public MetricSnapshots collect() {
            final CellStatus s = CellStatus.read(index, cell);
            final List<MetricSnapshot> out = new ArrayList<>();
            for (final var e : s.counters().entrySet()) {
                final String name = "kvidx_" + e.getKey().name().toLowerCase(Locale.ROOT);
                final String help = "kvidx counter: " + e.getKey().label().substring("kvidx ".length());
                out.add(GAUGES.contains(e.getKey()) ? gauge(name, help, e.getValue())
                    : counter(name, help, e.getValue()));
            }
            out.add(gauge("kvidx_index_entries", "Entries in the index", s.entries()));
            out.add(gauge("kvidx_index_capacity_entries", "Entries the index can hold", s.capacity()));
            out.add(gauge("kvidx_index_fill_ratio", "Entries over capacity", (double) s.entries() / s.capacity()));
            out.add(counter("kvidx_index_evictions", "Entries evicted because a shard was full", s.evictions()));
            out.add(gauge("kvidx_writer_heartbeat_age_seconds", "Since the index writer's last heartbeat",
                Math.max(0, s.heartbeatAgeMs()) / 1e3));
            final GaugeSnapshot.Builder queued = GaugeSnapshot.builder().name("kvidx_writer_queue_bytes")
                .help("Bytes queued for a writer and not yet applied");
            for (int w = 0; w < writers.writerCount(); w++) {
                queued.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().value(writers.queuedBytes(w))
                    .labels(Labels.of("writer", Integer.toString(w))).build());
            }
            out.add(queued.build());
            final GaugeSnapshot.Builder blocks = GaugeSnapshot.builder().name("kvidx_pod_blocks")
                .help("Blocks a pod holds (its main KV cache group)");
            final CounterSnapshot.Builder events = CounterSnapshot.builder().name("kvidx_pod_events")
                .help("Events applied for a pod since it got its slot");
            final GaugeSnapshot.Builder age = GaugeSnapshot.builder().name("kvidx_pod_last_event_age_seconds")
                .help("Since a pod's last applied event");
            final GaugeSnapshot.Builder alive = GaugeSnapshot.builder().name("kvidx_pod_alive")
                .help("1 while a pod is alive, 0 while its blocks are being swept");
            final GaugeSnapshot.Builder suspect = GaugeSnapshot.builder().name("kvidx_pod_suspect")
                .help("1 while the daemon could not keep a pod's blocks complete (the pod table's suspect flag)");
            for (final CellStatus.Pod p : s.pods()) {
                final Labels labels = Labels.of("pod", p.id(), "slot", Integer.toString(p.slot()));
                alive.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().value(p.alive() ? 1 : 0)
                    .labels(labels).build());
                suspect.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().value(p.suspect() ? 1 : 0)
                    .labels(labels).build());
                if (p.blocks() >= 0) {
                    blocks.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().value(p.blocks())
                        .labels(labels).build());
                    events.dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder().value(p.events())
                        .labels(labels).build());
                }
                if (p.lastEventAgeMs() >= 0) {
                    age.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().value(p.lastEventAgeMs() / 1e3)
                        .labels(labels).build());
                }
            }
            out.add(alive.build());
            out.add(suspect.build());
            out.add(blocks.build());
            out.add(events.build());
            out.add(age.build());
            return new MetricSnapshots(out);
        }

        private static MetricSnapshot counter(final String name, final String help, final double value) {
            return CounterSnapshot.builder().name(name).help(help)
                .dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder().value(value).build()).build();
        }

        private static MetricSnapshot gauge(final String name, final String help, final double value) {
            return GaugeSnapshot.builder().name(name).help(help)
                .dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().value(value).build()).build();
        }
    }
}
