package io.kvidx.daemon.serve;

import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.daemon.membership.Membership;

import java.io.OutputStream;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The rest of a daemon, as an HTTP API test needs it without one: a membership whose subscriptions complete at once
 * (no ZeroMQ), no snapshots, no metrics.
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
        return new FleetApi() {
            @Override
            public Membership membership() {
                return membership;
            }

            @Override
            public CompletableFuture<byte[]> snapshot() {
                return CompletableFuture.failedFuture(new IllegalStateException("no snapshots here"));
            }

            @Override
            public void scrapeMetrics(final OutputStream out) {
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
