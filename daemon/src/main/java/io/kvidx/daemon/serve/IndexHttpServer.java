package io.kvidx.daemon.serve;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.tiers.TierMap;
import io.kvidx.client.tiers.TierMapReader;
import io.kvidx.daemon.ops.PodStatsFile;
import io.kvidx.serve.BearerAuth;
import io.kvidx.serve.ErrorShape;
import io.kvidx.serve.HttpPipeline;
import io.kvidx.serve.NettyServer;
import io.kvidx.serve.ServeContext;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.Set;

/**
 * The daemon's indexer HTTP API ({@code --http HOST:PORT}): the serving layer's HTTP/1.1 server
 * ({@link NettyServer}, {@link HttpPipeline}) with {@link ApiHandler}, which answers every endpoint. A thin adapter:
 * queries run the same {@link IndexReader} search as an in-process router, changes go through the daemon's
 * membership table.
 *
 * <p>Bounds: request line 4 KiB, headers 8 KiB, body {@code maxBodyBytes} (413 with a JSON error beyond, and the
 * connection closed), a connection with nothing in flight that stays silent for {@link #IDLE_TIMEOUT_S} seconds is
 * closed, pipelined requests are answered in order, JSON depth, number and string lengths as {@link RequestBody}
 * says; at most {@link Guards#maxConnections} connections, each request whole within {@link Guards#requestReadMs}
 * of its first byte, and, with a token file, {@code Authorization: Bearer <token>} on every request but
 * {@code /health} (401 without).
 *
 * <p><b>Note:</b> started and closed by the daemon's thread; requests run on the event loops.
 */
public final class IndexHttpServer implements AutoCloseable {
    /** Seconds a connection with nothing in flight may stay silent before it is closed. */
    public static final int IDLE_TIMEOUT_S = ServeContext.IDLE_TIMEOUT_S_DEFAULT;
    /** Largest header block. */
    static final int MAX_HEADER_BYTES = 8192;
    /** The one path served without a token (the kubelet's probes carry none). */
    public static final String OPEN_PATH = "/health";

    /**
     * The API's guards.
     *
     * @param maxConnections connections open at once.
     * @param requestReadMs  time a client may take to send one whole request.
     * @param tokenFile      the bearer token's file, or null for none.
     * @param adminTokenFile the file of the token {@link #ADMIN_PATHS} need instead, or null (the one token opens
     *                       all).
     * @param tls            TLS, optionally mutual, or null for plain HTTP.
     */
    public record Guards(int maxConnections, int requestReadMs, Path tokenFile, Path adminTokenFile,
        io.kvidx.serve.ServerTls tls) {
        /**
         * @param maxConnections connections open at once.
         * @param requestReadMs  time a client may take to send one whole request.
         * @param tokenFile      the bearer token's file, or null for none.
         * @param adminTokenFile the admin token's file, or null.
         */
        public Guards(final int maxConnections, final int requestReadMs, final Path tokenFile,
            final Path adminTokenFile) {
            this(maxConnections, requestReadMs, tokenFile, adminTokenFile, null);
        }

        /**
         * @param maxConnections connections open at once.
         * @param requestReadMs  time a client may take to send one whole request.
         * @param tokenFile      the bearer token's file, or null for none.
         */
        public Guards(final int maxConnections, final int requestReadMs, final Path tokenFile) {
            this(maxConnections, requestReadMs, tokenFile, null);
        }
    }

    /** The paths an admin token guards when one is given. */
    public static final Set<String> ADMIN_PATHS = Set.of("/dump", "/metrics");

    private final NettyServer server;
    private final HttpPipeline pipeline;
    private final IndexReader reader;
    private final TierMap tiers;
    private final PodStatsFile stats;
    private final IndexFileWatch file;
    private final QueryPool queries;

    private IndexHttpServer(final NettyServer server, final HttpPipeline pipeline, final IndexReader reader,
        final TierMap tiers, final PodStatsFile stats, final IndexFileWatch file, final QueryPool queries) {
        this.queries = queries;
        this.server = server;
        this.pipeline = pipeline;
        this.reader = reader;
        this.tiers = tiers;
        this.stats = stats;
        this.file = file;
    }

    /**
     * Binds and starts serving.
     *
     * @param address      where to listen.
     * @param threads      event-loop threads.
     * @param busySpin     true: the event loops poll their sockets without sleeping (a core each); false: they block
     *                     in the selector until a request comes.
     * @param maxBodyBytes largest request body.
     * @param guards       the connection bound, the request read deadline and the bearer token file (or null).
     * @param reader       the cell's index, read-only (closed with the server).
     * @param tierMapFile  the cell's tier map file (followed when it appears or is replaced), or null for none.
     * @param stats        the cell's pod statistics, or null (closed with the server).
     * @param fleet        the rest of the daemon.
     * @return the running server.
     * @throws IllegalStateException when the address cannot be bound.
     */
    public static IndexHttpServer start(final InetSocketAddress address, final int threads, final boolean busySpin,
        final int maxBodyBytes, final Guards guards, final IndexReader reader, final Path tierMapFile,
        final PodStatsFile stats, final FleetApi fleet) {
        final PodTableView.Source pods = new PodTableView.Source(reader, fleet.membership());
        // Tier lookups name the slot's generation as the pod table view saw it (no pod table read per lookup).
        final TierMap tiers = tierMapFile == null ? null : new TierMap(tierMapFile, pods::generation,
            TierMap.RETRY_INTERVAL_MS_DEFAULT, TierMapReader.READ_BOUND_NS_DEFAULT, reader::isWriterStale);
        final IndexFileWatch file = new IndexFileWatch(reader);
        final QueryPool queries = new QueryPool();
        final ApiHandler api = new ApiHandler(reader, fleet, pods, tiers, stats, file, maxBodyBytes, queries);
        final ServeContext context = new ServeContext().listen(address).threads(threads).busySpin(busySpin)
            .threadName("kvidx-http").idleTimeoutS(IDLE_TIMEOUT_S).maxHeaderBytes(MAX_HEADER_BYTES)
            .maxBodyBytes(maxBodyBytes).maxConnections(guards.maxConnections()).requestReadMs(guards.requestReadMs())
            .tls(guards.tls());
        try {
            if (guards.tokenFile() != null) {
                context.auth(new BearerAuth(BearerAuth.readToken(guards.tokenFile()), Set.of(OPEN_PATH),
                    guards.adminTokenFile() == null ? null : BearerAuth.readToken(guards.adminTokenFile()), ADMIN_PATHS,
                    ErrorShape.FLAT));
            }
            final HttpPipeline pipeline = HttpPipeline.of(context, () -> api);
            return new IndexHttpServer(NettyServer.start(context, pipeline), pipeline, reader, tiers, stats, file,
                queries);
        } catch (final RuntimeException ex) {
            queries.close();
            file.close();
            if (tiers != null) {
                tiers.close();
            }
            final Throwable cause = ex.getCause() != null ? ex.getCause() : ex;
            throw new IllegalStateException("cannot serve the HTTP API on " + address.getHostString() + ":"
                + address.getPort() + ": " + cause.getMessage(), ex);
        }
    }

    /**
     * @return the connections' pipeline: what the guards refused, for metrics.
     */
    public HttpPipeline pipeline() {
        return pipeline;
    }

    /**
     * @return the port the server listens on (useful with port 0).
     */
    public int port() {
        return server.port();
    }

    /**
     * @return queries answered on the query threads instead of an event loop, since start (metrics).
     */
    public long queriesOffloaded() {
        return queries.offloaded();
    }

    /**
     * @return queries refused (503) because the query threads were busy, since start (metrics).
     */
    public long queriesRefused() {
        return queries.refused();
    }

    @Override
    public void close() {
        server.close();
        queries.close();
        file.close();
        if (tiers != null) {
            tiers.close();
        }
        if (stats != null) {
            stats.close();
        }
        reader.close();
    }
}
