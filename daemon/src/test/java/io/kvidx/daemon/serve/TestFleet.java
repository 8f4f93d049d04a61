package io.kvidx.daemon.serve;

import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.daemon.membership.Membership;

import java.io.OutputStream;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The rest of a daemon, as an HTTP API test needs it without one: a membership whose subscriptions complete at once
 * (no ZeroMQ), a fixed snapshot or none, a fixed metrics page.
 */
final class TestFleet {
    /** Subscriptions that complete at once. */
    static final Membership.Subscriptions INSTANT = new Membership.Subscriptions() {
        @Override
        public CompletableFuture<Void> subscribe(final ZmqEndpoint endpoint) {
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletableFuture<Void> unsubscribe(final ZmqEndpoint endpoint) {
            return CompletableFuture.completedFuture(null);
        }
    };

    private TestFleet() {
    }

    /**
     * @return a started membership with {@link #INSTANT} subscriptions and nothing configured (close it).
     */
    static Membership instantMembership() {
        final Membership m = new Membership(null, INSTANT);
        m.start(List.of());
        return m;
    }

    /**
     * @param membership      the membership the API changes.
     * @param changeTimeoutMs how long a registration or removal may take before 503.
     * @return a fleet with that membership, failing snapshots and an empty metrics page.
     */
    static FleetApi of(final Membership membership, final long changeTimeoutMs) {
        return of(membership, changeTimeoutMs, null, "");
    }

    /**
     * @param membership      the membership the API changes.
     * @param changeTimeoutMs how long a registration or removal may take before 503.
     * @param snapshot        what every snapshot is, or null for snapshots that fail.
     * @param metrics         the metrics page.
     * @return a fleet with that membership, snapshot and metrics page.
     */
    static FleetApi of(final Membership membership, final long changeTimeoutMs, final byte[] snapshot,
        final String metrics) {
        return new FleetApi() {
            @Override
            public Membership membership() {
                return membership;
            }

            @Override
            public CompletableFuture<byte[]> snapshot() {
                return snapshot == null ? CompletableFuture.failedFuture(new IllegalStateException("no snapshots here"))
                    : CompletableFuture.completedFuture(snapshot);
            }

            @Override
            public void scrapeMetrics(final OutputStream out) throws java.io.IOException {
                out.write(metrics.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            }

            @Override
            public long healthMaxHeartbeatAgeMs() {
                return 60_000;
            }

            @Override
            public long changeTimeoutMs() {
                return changeTimeoutMs;
            }
        };
    }
}
