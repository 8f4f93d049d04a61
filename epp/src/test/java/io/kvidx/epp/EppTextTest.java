package io.kvidx.epp;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.router.RouterConfig;
import io.kvidx.routing.IndexReaderPodIndex;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.Router;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.RoutingPlan;
import io.kvidx.routing.yaml.YamlRouting;
import io.kvidx.tokenize.ChatRequest;
import io.kvidx.tokenize.ChatTemplate;
import io.kvidx.tokenize.HfTokenizer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Text and chat requests through the picker's tokenizing threads (Qwen3's tokenizer and chat template, the tokenize
 * module's test data): each is picked where its token ids are cached, as the router's decision layer with the same
 * tokenizer picks it.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class EppTextTest {
    private static final String MODEL = "m";

    @Test
    void picksTextAndChatsAsTheRouter() throws Exception {
        final Path qwen3 = Path.of(EppTextTest.class.getResource("/qwen3/tokenizer.json").toURI()).getParent();
        final String text = "You are a careful assistant. " + "Summarise the quarterly report in plain words. "
            .repeat(40);
        final String chatBody = "{\"model\": \"" + MODEL + "\", \"messages\": [{\"role\": \"system\", \"content\": "
            + "\"You answer in French. " + "Translate every sentence faithfully and keep the tone. ".repeat(30)
            + "\"}, {\"role\": \"user\", \"content\": \"Bonjour\"}], \"max_tokens\": 2}";
        final int[] textIds;
        final int[] chatIds;
        try (HfTokenizer completion = HfTokenizer.load(qwen3, true);
            HfTokenizer chat = HfTokenizer.load(qwen3, false)) {
            textIds = completion.encode(text);
            chatIds = chat.encode(ChatTemplate.load(qwen3).render(ChatRequest.parse(chatBody), Map.of()));
        }
        final Path shm = Path.of("/dev/shm");
        final Path dir = Files.createTempDirectory(Files.isDirectory(shm) ? shm
            : Path.of(System.getProperty("java.io.tmpdir")), "kvidx-epp-text-");
        final ScheduledExecutorService beats = Executors.newSingleThreadScheduledExecutor();
        try (IndexWriter writer = IndexWriter.create(new IndexWriterContext().dir(dir).cell("t").shardCount(16)
            .capacityBlocks(1 << 12).blockSize(16).maxPods(8).deleteOnClose(true))) {
            beats.scheduleAtFixedRate(() -> writer.heartbeat(System.currentTimeMillis()), 0, 100,
                TimeUnit.MILLISECONDS);
            final int a = writer.registerPod("pod-a", MODEL);
            final int b = writer.registerPod("pod-b", MODEL);
            final RouterKeyHasher hasher = new RouterKeyHasher(16);
            final long seed = RouterKeyHasher.chainSeed(MODEL, null, null);
            final long[] keys = new long[Math.max(textIds.length, chatIds.length) / 16 + 1];
            writer.store(a, keys, 0, hasher.keys(seed, textIds, textIds.length, keys));
            writer.store(b, keys, 0, hasher.keys(seed, chatIds, chatIds.length, keys));
            final EppConfig c = EppTest.config(dir.toString());
            c.cell = "t";
            c.tokenizer = qwen3;
            c.podSpec("pod-a=http://10.0.1.1:8000").podSpec("pod-b=http://10.0.1.2:8000");
            try (EppServer epp = EppServer.start(c);
                IndexReaderPodIndex index = new IndexReaderPodIndex(new IndexReaderContext().dir(dir).cell("t"),
                    1_000)) {
                final RouterConfig rc = RouterConfig.fromYaml("tokenizer: \"" + qwen3 + "\"\n", null).validate();
                final PodRegistry registry = new PodRegistry();
                registry.registerFromIndex(index);
                final YamlRouting.Loaded loaded = YamlRouting.parse(rc.routingDocument(), new YamlRouting
                    .Environment().index(index).registry(registry).blockSize(16), null);
                final Router router = loaded.router();
                final ManagedChannel ch = NettyChannelBuilder.forAddress("127.0.0.1", epp.port()).usePlaintext()
                    .build();
                try {
                    final String textBody = "{\"model\":\"" + MODEL + "\",\"prompt\":" + quote(text) + "}";
                    assertEquals("10.0.1.1:8000", pick(ch, "/v1/completions", textBody));
                    assertEquals("10.0.1.2:8000", pick(ch, "/v1/chat/completions", chatBody));
                    assertEquals("pod-a", registry.podId(reference(router, text, null)));
                    assertEquals("pod-b", registry.podId(reference(router, null, chatBody)));
                } finally {
                    ch.shutdownNow().awaitTermination(2, TimeUnit.SECONDS);
                    for (final var p : loaded.profiles().values()) {
                        for (final var prep : p.preparers()) {
                            if (prep instanceof AutoCloseable cl) {
                                cl.close();
                            }
                        }
                    }
                }
                assertTrue(EppTest.gauge(metrics(epp), "kvidx_epp_pods_ready").startsWith("2"));
            }
        } finally {
            beats.shutdownNow();
            org.agrona.IoUtil.delete(dir.toFile(), true); // the cell's lock file stays after the writer's close
        }
    }

    private static int reference(final Router router, final String text, final String chat) {
        final RoutingContext rc = router.newContext().reset();
        rc.request().model(MODEL);
        if (text != null) {
            rc.request().prompt(text);
        } else {
            rc.request().chat(chat);
        }
        final RoutingPlan plan = router.plan(rc);
        assertTrue(!plan.isFallback(), plan.toString());
        return plan.decodeSlot();
    }

    private static String pick(final ManagedChannel ch, final String path, final String body) throws Exception {
        final Envoy.Stream s = new Envoy.Stream(ch);
        s.send(Envoy.post(path, BodySendMode.FULL_DUPLEX_STREAMED, null));
        Envoy.chunks(body, 1000, true).forEach(s::send);
        final ProcessingResponse first = s.next();
        final String ep = EppTest.pickOf(first, true);
        s.next(); // the body sent back
        s.finish();
        return ep;
    }

    private static String quote(final String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    private static String metrics(final EppServer epp) throws Exception {
        return java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest.newBuilder(
            java.net.URI.create("http://127.0.0.1:" + epp.metricsPort() + "/metrics")).build(),
            java.net.http.HttpResponse.BodyHandlers.ofString()).body();
    }
}
