package io.kvidx.epp;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.kvidx.testing.SlowLmCacheController;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code kvidx epp} with the LMCache scorer's prefix lookup, which waits for the controller's {@code POST /lookup}
 * (a real HTTP controller answering after 1.2 s): those decisions run on the picker's bounded deciding pool, so with
 * more lookups pending than gRPC has event loops, gRPC health (served on those loops) still answers at once, and every
 * pick follows the lookup's answer. Fails when such picks decide where the call arrives.
 */
@Timeout(60)
class EppBlockingScorerTest {
    /**
     * Long enough that health answering within half of it is not luck on a loaded machine, short enough that the last
     * of the streams (three rounds on two deciding threads) is answered within the test client's 5 s.
     */
    private static final long LOOKUP_MS = 1_200;

    @Test
    void shouldDecideOffTheGrpcExecutorWhenAScorerMayWait() throws Exception {
        final SlowLmCacheController controller = new SlowLmCacheController(LOOKUP_MS);
        try {
            final EppConfig c = EppConfig.fromYaml("index: {dir: /nonexistent/kvidx-epp-blocking, cell: x}\n"
                + "pods:\n  - {id: pod-a, url: 'http://10.0.0.1:8000', model: m}\n"
                + "  - {id: pod-b, url: 'http://10.0.0.2:8000', model: m}\n"
                + "profiles:\n  lm:\n    score:\n      - {type: lmcache, lookup-mode: prefix-lookup, controller: "
                + "\"" + controller.url() + "\", timeout-ms: 5000, key-weight: 1.0}\n"
                + "    pick: max-score\nworkflow: {type: single, profile: lm}\n"
                + "epp: {listen: '127.0.0.1:0', metrics: 'off'}\n", null);
            try (EppServer epp = EppServer.start(c)) {
                final ManagedChannel ch = NettyChannelBuilder.forAddress("127.0.0.1", epp.port()).usePlaintext()
                    .build();
                try {
                    final int streams = 2 * Runtime.getRuntime().availableProcessors() + 2; // beyond gRPC's event loops
                    final List<Envoy.Stream> pending = new ArrayList<>();
                    for (int i = 0; i < streams; i++) {
                        final Envoy.Stream s = new Envoy.Stream(ch);
                        s.send(Envoy.post("/v1/completions", BodySendMode.BUFFERED, null),
                            Envoy.body("{\"model\":\"m\",\"prompt\":[" + (i + 1) + ",2,3,4,5,6,7,8,9,10]}", true));
                        pending.add(s);
                    }
                    final long deadline = System.currentTimeMillis() + 5_000;
                    while (controller.lookups() < 2 && System.currentTimeMillis() < deadline) {
                        Thread.sleep(10);
                    }
                    final long start = System.nanoTime();
                    HealthGrpc.newBlockingStub(ch).withDeadlineAfter(5, TimeUnit.SECONDS)
                        .check(HealthCheckRequest.getDefaultInstance());
                    final long healthMs = (System.nanoTime() - start) / 1_000_000;
                    assertTrue(healthMs < LOOKUP_MS / 2, "gRPC health waited " + healthMs + " ms behind the lookups");
                    for (final Envoy.Stream s : pending) {
                        final List<ProcessingResponse> rs = s.take(2);
                        assertEquals("10.0.0.2:8000", EppTest.pickOf(rs.get(1), false), "picked by the lookup");
                        s.requests.onCompleted();
                    }
                    assertEquals(streams, controller.lookups(), "one lookup per request");
                } finally {
                    ch.shutdownNow().awaitTermination(2, TimeUnit.SECONDS);
                }
            }
        } finally {
            controller.close();
        }
    }
}
