package io.kvidx.daemon.serve;

import io.kvidx.daemon.membership.Membership;

import java.io.IOException;
import java.io.OutputStream;
import java.util.concurrent.CompletableFuture;

/**
 * What the HTTP API asks of the daemon besides the index it reads: the membership table, snapshots and metrics.
 * The daemon implements it; tests may give their own.
 */
public interface FleetApi {
    /**
     * @return the daemon's table of engines.
     */
    Membership membership();

    /**
     * Takes a snapshot a peer can load ({@code --peer}); never blocks the caller.
     *
     * @return the snapshot's bytes, once taken.
     */
    CompletableFuture<byte[]> snapshot();

    /**
     * Writes the Prometheus text exposition of the daemon's metrics.
     *
     * @param out where to write.
     * @throws IOException when writing fails.
     */
    void scrapeMetrics(OutputStream out) throws IOException;

    /**
     * @return the largest heartbeat age (ms) at which {@code /health} still answers 200.
     */
    long healthMaxHeartbeatAgeMs();

    /**
     * @return how long {@code POST /unregister} waits for the instance's pods to be taken down to readers before it
     * answers 503 (the answer waits on a future, never on an event loop).
     */
    default long changeTimeoutMs() {
        return CHANGE_TIMEOUT_MS_DEFAULT;
    }

    /** Default of {@link #changeTimeoutMs()}. */
    long CHANGE_TIMEOUT_MS_DEFAULT = 10_000;

    /**
     * @return what pod discovery knows now, or null when the daemon does not discover pods ({@code /health} is not
     * ready until discovery has listed the pods once).
     */
    default io.kvidx.discovery.DiscoveryStatus discovery() {
        return null;
    }

    /**
     * @return why the index may miss events of the JetStream stream it consumes (messages the stream no longer held),
     * or null when it misses none or the daemon consumes no stream ({@code /health} is not ready while non-null).
     */
    default String jetstreamProblem() {
        return null;
    }

    /**
     * @return how long a {@code /dump} snapshot is served to every caller after it was taken
     * ({@code httpDumpMinIntervalMs}): the writers take at most one snapshot per interval.
     */
    default long dumpMinIntervalMs() {
        return DUMP_MIN_INTERVAL_MS_DEFAULT;
    }

    /** Default of {@link #dumpMinIntervalMs()}. */
    long DUMP_MIN_INTERVAL_MS_DEFAULT = 10_000;

    /**
     * @return the hosts a registration's endpoints may name ({@code httpRegisterHosts}); every host by default.
     */
    default io.kvidx.client.net.HostPatterns registerHosts() {
        return ALL_HOSTS;
    }

    /** Every host: an empty {@link io.kvidx.client.net.HostPatterns}. */
    io.kvidx.client.net.HostPatterns ALL_HOSTS = new io.kvidx.client.net.HostPatterns(
        java.util.List.of());
}
