package io.kvidx.daemon.membership;

import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The one membership table: registrations, the configuration, and what survives a restart. */
@Timeout(30)
class MembershipTest {
    @TempDir
    Path dir;

    private final List<String> calls = new ArrayList<>();

    private Membership membership(final EngineFile file) {
        return new Membership(file, new Membership.Subscriptions() {
            @Override
            public CompletableFuture<Void> subscribe(final ZmqEndpoint endpoint) {
                calls.add("+" + endpoint.podId() + "@" + endpoint.endpoint());
                return CompletableFuture.completedFuture(null);
            }

            @Override
            public CompletableFuture<Void> unsubscribe(final ZmqEndpoint endpoint) {
                calls.add("-" + endpoint.podId() + "@" + endpoint.endpoint());
                return CompletableFuture.completedFuture(null);
            }
        });
    }

    private static Engine api(final String instance, final int rank, final String endpoint) {
        return new Engine(instance, rank, endpoint, null, "m", 16, null, null, ZmqEndpoint.Engine.VLLM,
            Engine.Source.API);
    }

    @Test
    void shouldRegisterOnceRefuseAConflictAndUnregisterEveryRank() throws Exception {
        try (Membership m = membership(new EngineFile(dir))) {
            m.start(List.of());
            assertEquals(Membership.Outcome.ADDED, m.register(api("7", 0, "tcp://a:1")).get());
            assertEquals(Membership.Outcome.ADDED, m.register(api("7", 1, "tcp://a:2")).get());
            assertEquals(Membership.Outcome.UNCHANGED, m.register(api("7", 0, "tcp://a:1")).get());
            assertEquals(Membership.Outcome.CONFLICT, m.register(api("7", 0, "tcp://b:1")).get());
            assertEquals(List.of("+7@tcp://a:1", "+7#1@tcp://a:2"), calls);
            assertEquals(Membership.Outcome.REMOVED, m.unregister("7", -1).get());
            assertEquals(Membership.Outcome.UNKNOWN, m.unregister("7", -1).get());
            assertEquals(List.of("+7@tcp://a:1", "+7#1@tcp://a:2", "-7@tcp://a:1", "-7#1@tcp://a:2"), calls);
            assertTrue(m.engines().isEmpty());
        }
    }

    @Test
    void shouldKeepRegistrationsAcrossARestartButNotTheConfiguration() throws Exception {
        final ZmqEndpoint rank0 = new ZmqEndpoint("tcp://c:1", "pod-c", "m", null);
        final ZmqEndpoint rank1 = new ZmqEndpoint("tcp://c:2", "pod-c", "m", null);
        try (Membership m = membership(new EngineFile(dir))) {
            final List<Engine> started = m.start(List.of(Engine.configured(rank0), Engine.configured(rank1)));
            assertEquals(2, started.size(), "two endpoints of one pod (its ranks) are two subscriptions");
            m.register(api("9", 0, "tcp://d:1")).get();
        }
        calls.clear();
        try (Membership m = membership(new EngineFile(dir))) {
            final List<Engine> started = m.start(List.of());
            assertEquals(1, started.size());
            assertEquals("9", started.get(0).instanceId());
            // The file now lists one less configured endpoint: it is dropped, the registration stays.
            assertEquals(1, m.reconfigure(List.of(Engine.configured(rank0))).get());
            assertEquals(List.of("+pod-c@tcp://c:1"), calls);
            assertEquals(1, m.reconfigure(List.of()).get());
            assertEquals(1, m.engines().size());
        }
    }

    @Test
    void shouldNameTheFileWhenItCannotBeRead() throws Exception {
        Files.writeString(dir.resolve(EngineFile.FILE_NAME), "{not an array");
        final IllegalStateException ex = assertThrows(IllegalStateException.class, () -> new EngineFile(dir).read());
        assertTrue(ex.getMessage().contains(EngineFile.FILE_NAME), ex.getMessage());
        assertEquals(List.of(api("1", 2, "tcp://e:1")), EngineFile.decode(EngineFile.encode(
            List.of(api("1", 2, "tcp://e:1")))));
    }

    @Test
    void shouldKeepNothingWhenTheSubscriptionFailsAndTryAgainOnARetry() throws Exception {
        final List<String> subscribed = new ArrayList<>();
        final boolean[] fail = {true};
        try (Membership m = new Membership(new EngineFile(dir), new Membership.Subscriptions() {
            @Override
            public CompletableFuture<Void> subscribe(final ZmqEndpoint endpoint) {
                subscribed.add(endpoint.podId());
                return fail[0] ? CompletableFuture.failedFuture(new IllegalStateException("transport full"))
                    : CompletableFuture.completedFuture(null);
            }

            @Override
            public CompletableFuture<Void> unsubscribe(final ZmqEndpoint endpoint) {
                return CompletableFuture.completedFuture(null);
            }
        })) {
            m.start(List.of());
            final java.util.concurrent.ExecutionException failed = assertThrows(
                java.util.concurrent.ExecutionException.class, () -> m.register(api("7", 1, "tcp://a:1")).get());
            assertTrue(failed.getCause().getMessage().contains("transport full"), failed.toString());
            assertTrue(m.engines().isEmpty(), "not published");
            assertTrue(new EngineFile(dir).read().isEmpty(), "not kept");
            assertEquals(Membership.Outcome.UNKNOWN, m.unregister("7", -1).get());
            fail[0] = false;
            assertEquals(Membership.Outcome.ADDED, m.register(api("7", 1, "tcp://a:1")).get(), "a retry retries");
            assertEquals(List.of("7#1", "7#1"), subscribed);
            assertEquals(1, new EngineFile(dir).read().size());
        }
    }
}
