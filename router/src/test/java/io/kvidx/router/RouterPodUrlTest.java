package io.kvidx.router;

import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.index.TestHeartbeat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Pod ids reach the index from the wire (a topic on a bound ZeroMQ socket names its pod): whoever publishes chooses
 * them. The router pastes an unlisted pod's id into {@code pod-url-template} only onto hosts the template may reach,
 * so a publisher cannot make it send requests and health checks to the cloud metadata server or to a host of its
 * choosing. Fails with PodLocator using the template's URL unchecked (four pods routable, none refused).
 */
@Timeout(30)
class RouterPodUrlTest {
    @TempDir
    Path work;

    @Test
    void shouldRouteOnlyToPodsWhoseTemplateUrlIsOnAnAllowedHost() throws Exception {
        final Path dir = work.resolve("index");
        try (IndexWriter writer = IndexWriter.create(new IndexWriterContext().dir(dir).cell("c").shardCount(4)
            .slotsPerShard(64).maxChainLength(64).deleteOnClose(true));
             TestHeartbeat _ = new TestHeartbeat(writer)) {
            for (final String pod : List.of("10.0.0.7", "127.0.0.1", "169.254.169.254", "evil.example")) {
                writer.registerPod(pod, "m");
            }
            final RouterConfig c = Routers.config(work);
            c.dir = dir.toString();
            c.cell = "c";
            c.healthIntervalMs = 0;
            c.urlTemplate = "http://{pod}:8000";
            try (RouterServer router = RouterServer.start(c.validate())) {
                Routers.await("the index's pods", 10_000, () -> router.index.isAvailable()
                    && router.pods.routable() == 2);
                Thread.sleep(300); // another refresh or two: still two
                assertEquals(2, router.pods.routable());
                assertEquals(2, Metrics.value(Routers.metrics(router), "kvidx_router_pod_urls_refused_total"));
            }
            // pod-url-hosts replaces the default: only its hosts.
            final RouterConfig listed = Routers.config(work);
            listed.dir = dir.toString();
            listed.cell = "c";
            listed.healthIntervalMs = 0;
            listed.urlTemplate = "http://{pod}:8000";
            listed.urlHosts(List.of("127.0.0.0/8"));
            try (RouterServer router = RouterServer.start(listed.validate())) {
                Routers.await("the index's pods", 10_000, () -> router.index.isAvailable()
                    && router.pods.routable() == 1);
                assertEquals(3, Metrics.value(Routers.metrics(router), "kvidx_router_pod_urls_refused_total"));
            }
        }
    }
}
