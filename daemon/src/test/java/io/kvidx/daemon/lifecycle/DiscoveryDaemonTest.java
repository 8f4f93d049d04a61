package io.kvidx.daemon.lifecycle;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.DiscoveredPods;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.cli.CliRun;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.index.TestIndexes;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.vllm.VllmPayloads;
import io.kvidx.daemon.ingest.zmq.JavaVllmPublisherAccess;
import io.kvidx.daemon.membership.Engine;
import io.kvidx.daemon.ops.DiscoveryStatusFile;
import io.kvidx.discovery.ApiServerDouble;
import io.kvidx.discovery.DiscoveryContext;
import io.kvidx.discovery.DiscoveryStatus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * A real daemon whose engines come from the API server (fabric8's double, over HTTP with watches, reached through a
 * kubeconfig file as a pod's daemon would): real ZeroMQ publishers send vLLM events for the pods discovery made
 * engines of. A pod that becomes Ready is subscribed and its blocks are indexed; one that loses readiness is taken
 * down (its blocks leave every answer); re-created with a new endpoint it is subscribed there; deleted, it is gone.
 * {@code /health} is not ready until discovery has listed the pods, and reports discovery's state, as
 * {@code kvidx status} does from the cell's state file; the cell's pod directory gives routers each Ready pod's URL
 * and location, and forgets the pod when it leaves.
 */
@Timeout(120)
class DiscoveryDaemonTest {
    private static final String NS = "fleet";
    private static final String MODEL = "Qwen/Qwen3-0.6B";

    @TempDir
    Path dir;

    @Test
    void shouldIndexTheEnginesOfReadyPodsAndFollowThemAway() throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final byte[] store = new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64)
            .stored(base.blockHashes(), null, base.tokenIds(), 16, null, "GPU").batch(0);
        try (ApiServerDouble api = new ApiServerDouble();
            JavaVllmPublisherAccess first = JavaVllmPublisherAccess.create("");
            JavaVllmPublisherAccess second = JavaVllmPublisherAccess.create("")) {
            final Path kubeconfig = dir.resolve("kubeconfig");
            Files.writeString(kubeconfig, api.kubeconfig(NS));
            final DaemonContext ctx = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(8192)
                .podTimeoutMs(0).heartbeatIntervalMs(50).idleStrategy("backoff");
            ctx.serving().http("127.0.0.1:0");
            ctx.discovery().kubeconfig(kubeconfig).namespace(NS).selector("app=vllm").model(MODEL).resyncMs(0);
            try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
                await("discovery listed the pods", () -> status(daemon).synced());
                assertEquals(200, health(daemon).statusCode());
                assertTrue(health(daemon).body().contains("\"discovery\":{\"synced\":true,\"selector\":\"app=vllm\""),
                    health(daemon).body());

                api.put(pod("vllm-0", first, true));
                await("subscribed", () -> engine(daemon, "vllm-0") != null);
                assertEquals(first.endpoint(), engine(daemon, "vllm-0").endpoint());
                await("kvidx status shows discovery", () -> CliRun.of("status", "--dir", dir.toString()).out()
                    .contains("discovery synced, selector app=vllm, pods 1 seen / 1 ready, 1 engines, 0 rejected"));
                assertTrue(CliRun.of("status", "--dir", dir.toString(), "--json").out()
                    .contains("\"discovery\":{\"synced\":true,\"selector\":\"app=vllm\""));
                assertEquals(Engine.Source.DISCOVERY, engine(daemon, "vllm-0").source());
                await("the pod's URL and location recorded for routers", () -> Map.of("vllm-0",
                    new DiscoveredPods.Pod("vllm-0", "http://127.0.0.1:8000", MODEL, "node-a", "zone-1"))
                    .equals(directory()));
                await("indexed", () -> {
                    first.publish(store);
                    return depth(reader, "vllm-0", base) == 25;
                });

                api.put(pod("vllm-0", first, false));
                await("readiness lost: out of every answer", () -> depth(reader, "vllm-0", base) == 0
                    && engine(daemon, "vllm-0") == null);
                await("and out of the routers' directory", () -> Map.of().equals(directory()));

                api.put(pod("vllm-0", second, true));
                await("back at a new endpoint", () -> engine(daemon, "vllm-0") != null
                    && engine(daemon, "vllm-0").endpoint().equals(second.endpoint()));
                await("indexed from the new endpoint", () -> {
                    second.publish(store);
                    return depth(reader, "vllm-0", base) == 25;
                });

                api.client().pods().inNamespace(NS).withName("vllm-0").delete();
                await("deleted", () -> depth(reader, "vllm-0", base) == 0 && engine(daemon, "vllm-0") == null);
                final DiscoveryStatus s = status(daemon);
                assertEquals(0, s.podsSeen());
                assertEquals(0, s.engines());
            }
            assertTrue(Files.notExists(dir.resolve("default").resolve(DiscoveryStatusFile.FILE_NAME)),
                "the state file goes with the daemon");
            assertTrue(Files.notExists(dir.resolve("default").resolve(DiscoveredPods.FILE_NAME)),
                "the pod directory goes with the daemon");
        }
    }

    private static io.fabric8.kubernetes.api.model.Pod pod(final String name, final JavaVllmPublisherAccess publisher,
        final boolean ready) {
        final URI pub = URI.create(publisher.endpoint());
        final URI replay = URI.create(publisher.replayEndpoint());
        return ApiServerDouble.pod(NS, name, pub.getHost(), ready, Map.of("app", "vllm"),
            Map.of(DiscoveryContext.KV_EVENTS_PORT_ANNOTATION, Integer.toString(pub.getPort()),
                DiscoveryContext.KV_REPLAY_PORT_ANNOTATION, Integer.toString(replay.getPort())));
    }

    private Map<String, DiscoveredPods.Pod> directory() {
        try {
            return DiscoveredPods.parse(Files.readString(dir.resolve("default").resolve(DiscoveredPods.FILE_NAME)));
        } catch (final java.io.IOException ex) {
            return null;
        }
    }

    private static Engine engine(final KvidxDaemon daemon, final String pod) {
        return daemon.membership().engines().get(pod);
    }

    private static DiscoveryStatus status(final KvidxDaemon daemon) {
        return daemon.discoveryStatus();
    }

    private static HttpResponse<String> health(final KvidxDaemon daemon) throws Exception {
        try (HttpClient client = HttpClient.newHttpClient()) {
            return client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + daemon.httpPort() + "/health"))
                .build(), HttpResponse.BodyHandlers.ofString());
        }
    }

    private static int depth(final IndexReader reader, final String podId, final Capture capture) {
        final long[] keys = new long[64];
        final int n = new RouterKeyHasher(16).keys(RouterKeyHasher.chainSeed(MODEL, null, null), capture.tokenIds(),
            capture.tokenIds().length, keys);
        return TestIndexes.depthOf(reader, podId, keys, n);
    }

    private static void await(final String what, final BooleanSupplier condition) throws InterruptedException {
        final long deadline = System.currentTimeMillis() + 30_000;
        while (!condition.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                fail("timed out waiting: " + what);
            }
            Thread.sleep(50);
        }
    }
}
