package io.kvidx.daemon.serve;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.tiers.TierMap;
import io.kvidx.client.tiers.TierMapReader;
import io.kvidx.daemon.ops.PodStatsFile;
import io.kvidx.serve.HttpPipeline;
import io.kvidx.serve.NettyServer;
import io.kvidx.serve.ServeContext;

import java.net.InetSocketAddress;
import java.nio.file.Path;

/**
 * The daemon's indexer HTTP API ({@code --http HOST:PORT}): the serving layer's HTTP/1.1 server
 * ({@link NettyServer}, {@link HttpPipeline}) with {@link ApiHandler}, which answers every endpoint. A thin adapter:
 * queries run the same {@link IndexReader} search as an in-process router, changes go through the daemon's
 * membership table.
 *
 * <p>Bounds: request line 4 KiB, headers 8 KiB, body {@code maxBodyBytes} (413 with a JSON error beyond, and the
 * connection closed), a connection with nothing in flight that stays silent for {@link #IDLE_TIMEOUT_S} seconds is
 * closed, pipelined requests are answered in order, JSON depth, number and string lengths as {@link RequestBody}
 * says.
 *
 * <p><b>Note:</b> started and closed by the daemon's thread; requests run on the event loops.
 */
public final class IndexHttpServer implements AutoCloseable {
    /** Seconds a connection with nothing in flight may stay silent before it is closed. */
    public static final int IDLE_TIMEOUT_S = ServeContext.IDLE_TIMEOUT_S_DEFAULT;
    /** Largest header block. */
    static final int MAX_HEADER_BYTES = 8192;

    private final NettyServer server;
    private final IndexReader reader;
    private final TierMap tiers;
    private final PodStatsFile stats;
    private final IndexFileWatch file;

    private IndexHttpServer(final NettyServer server, final IndexReader reader, final TierMap tiers,
        final PodStatsFile stats, final IndexFileWatch file) {
        this.server = server;
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
     * @param reader       the cell's index, read-only (closed with the server).
     * @param tierMapFile  the cell's tier map file (followed when it appears or is replaced), or null for none.
     * @param stats        the cell's pod statistics, or null (closed with the server).
     * @param fleet        the rest of the daemon.
     * @return the running server.
     * @throws IllegalStateException when the address cannot be bound.
     */
    public static IndexHttpServer start(final InetSocketAddress address, final int threads, final boolean busySpin,
        final int maxBodyBytes, final IndexReader reader, final Path tierMapFile, final PodStatsFile stats,
        final FleetApi fleet) {
        final PodTableView.Source pods = new PodTableView.Source(reader, fleet.membership());
        // Tier lookups name the slot's generation as the pod table view saw it (no pod table read per lookup).
        final TierMap tiers = tierMapFile == null ? null : new TierMap(tierMapFile, pods::generation,
            TierMap.RETRY_INTERVAL_MS_DEFAULT, TierMapReader.READ_BOUND_NS_DEFAULT, reader::isWriterStale);
        final IndexFileWatch file = new IndexFileWatch(reader);
        final ApiHandler api = new ApiHandler(reader, fleet, pods, tiers, stats, file, maxBodyBytes);
        final ServeContext context = new ServeContext().listen(address).threads(threads).busySpin(busySpin)
            .threadName("kvidx-http").idleTimeoutS(IDLE_TIMEOUT_S).maxHeaderBytes(MAX_HEADER_BYTES)
            .maxBodyBytes(maxBodyBytes);
        try {
            return new IndexHttpServer(NettyServer.start(context, HttpPipeline.of(context, () -> api)), reader,
                tiers, stats, file);
        } catch (final RuntimeException ex) {
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
     * @return the port the server listens on (useful with port 0).
     */
    public int port() {
        return server.port();
    }

    @Override
    public void close() {
        server.close();
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
