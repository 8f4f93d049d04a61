package io.kvidx.epp;

import io.envoyproxy.envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode;
import io.envoyproxy.envoy.service.ext_proc.v3.ProcessingResponse;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.index.TestIndexes;
import io.kvidx.daemon.ingest.vllm.VllmPayloads;
import io.kvidx.daemon.ingest.zmq.JavaVllmPublisherAccess;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import io.kvidx.discovery.ApiServerDouble;
import io.kvidx.discovery.DiscoveryContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Three pickers, each with its own daemon, as three pods of the picker's Deployment would run: the daemons find the
 * engines on the API server (fabric8's double, over HTTP with watches) and index the real vLLM events the engines
 * publish (one ZeroMQ publisher per "pod IP", 127.0.0.2 and up); the pickers learn each pod's URL from their daemon's
 * discovery. Checked: for the same request the three answer the same pod (prompts held to various depths, and fresh
 * prompts whose scores tie); a pod re-created at a new IP is answered there by all three; a replica that restarts
 * with an empty index catches up from a peer's snapshot ({@code --peer}) before its daemon reports ready, and agrees
 * at once, with no event published meanwhile.
 */
@Timeout(240)
class EppFleetTest {
    private static final String NS = "fleet";
    private static final String MODEL = "Qwen/Qwen3-0.6B";
    private static final int BLOCK = 16;
    private static final int PODS = 4;
    private static final int REPLICAS = 3;
    private static final int PROMPTS = 12;
    private static final int PROMPT_BLOCKS = 8;

    @TempDir
    Path dir;

    private final List<AutoCloseable> open = new ArrayList<>();
    private final KvidxDaemon[] daemons = new KvidxDaemon[REPLICAS];
    private final EppServer[] pickers = new EppServer[REPLICAS];
    private final ManagedChannel[] channels = new ManagedChannel[REPLICAS];
    private final IndexReader[] readers = new IndexReader[REPLICAS];
    private final JavaVllmPublisherAccess[] engines = new JavaVllmPublisherAccess[PODS];
    private final String[] ips = new String[PODS];
    private final int[][] prompts = new int[PROMPTS][];
    /** Per pod, the batches it published (replayed to a re-created pod's new publisher). */
    private final List<List<byte[]>> batches = new ArrayList<>();
    /** Per prompt and pod, the depth (blocks) the pod holds. */
    private final int[][] depth = new int[PROMPTS][PODS];
    private ApiServerDouble api;
    private Path kubeconfig;

    @AfterEach
    void stop() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            try {
                open.get(i).close();
            } catch (final Exception ex) {
                // keep closing the rest
            }
        }
    }

    @Test
    void replicasWithTheirOwnDaemonsPickAlikeFollowANewIpAndCatchUpBeforeReady() throws Exception {
        api = new ApiServerDouble();
        open.add(api);
        kubeconfig = dir.resolve("kubeconfig");
        Files.writeString(kubeconfig, api.kubeconfig(NS));
        final SplittableRandom random = new SplittableRandom(34);
        for (int p = 0; p < PODS; p++) {
            ips[p] = "127.0.0." + (2 + p);
            engines[p] = JavaVllmPublisherAccess.at("", ips[p]);
            open.add(engines[p]);
            batches.add(new ArrayList<>());
            api.put(pod(p, engines[p]));
        }
        // Prompt k: whole on pod k % 4, its first k % 8 blocks on pod (k + 1) % 4.
        for (int k = 0; k < PROMPTS; k++) {
            prompts[k] = tokens(random, PROMPT_BLOCKS * BLOCK);
            store(k % PODS, k, PROMPT_BLOCKS, random);
            if (k % PROMPT_BLOCKS > 0) {
                store((k + 1) % PODS, k, k % PROMPT_BLOCKS, random);
            }
        }
        for (int r = 0; r < REPLICAS; r++) {
            startReplica(r, dir.resolve("replica-" + r), null);
        }
        await("every replica's daemon indexed every engine's events", () -> {
            publishAll();
            return indexedEverywhere();
        });
        await("every picker knows the four pods' URLs", () -> {
            for (final EppServer e : pickers) {
                if (e.book.ready() != PODS) {
                    return false;
                }
            }
            return true;
        });

        // The same pick on every replica: held prompts go to their deepest holder; fresh prompts tie and still agree.
        final List<int[]> asked = new ArrayList<>();
        for (int k = 0; k < PROMPTS; k++) {
            asked.add(prompts[k]);
            assertEquals(ips[k % PODS] + ":8000", agreedPick(prompts[k]), "prompt " + k + ": its deepest holder");
        }
        final java.util.Set<String> tiedPicks = new java.util.TreeSet<>();
        for (int i = 0; i < 40; i++) {
            final int[] fresh = tokens(random, (1 + random.nextInt(12)) * BLOCK + random.nextInt(BLOCK));
            asked.add(fresh);
            tiedPicks.add(agreedPick(fresh));
        }
        assertEquals(PODS, tiedPicks.size(), "fresh prompts spread over every pod: " + tiedPicks);

        // Pod 0 is re-created at a new IP: all three answer it there once its new engine's events arrived.
        final JavaVllmPublisherAccess moved = JavaVllmPublisherAccess.at("", "127.0.0.9");
        open.add(moved);
        engines[0].close();
        engines[0] = moved;
        ips[0] = "127.0.0.9";
        api.put(pod(0, moved));
        await("the re-created pod indexed from its new IP on every replica", () -> {
            publishAll();
            return indexedEverywhere();
        });
        await("every picker answers the pod at its new IP", () -> {
            for (int r = 0; r < REPLICAS; r++) {
                if (!"127.0.0.9:8000".equals(pickQuietly(r, prompts[0]))) {
                    return false;
                }
            }
            return true;
        });
        for (int k = 0; k < PROMPTS; k++) {
            assertEquals(ips[k % PODS] + ":8000", agreedPick(prompts[k]), "prompt " + k + " after the move");
        }

        // Replica 2 restarts with an empty index: its daemon loads replica 0's snapshot before it reports ready.
        final int peerPort = daemons[0].httpPort();
        pickers[2].close();
        daemons[2].close();
        readers[2].close();
        startReplica(2, dir.resolve("replica-2-restarted"), "http://127.0.0.1:" + peerPort);
        await("the restarted daemon reports ready", () -> health(daemons[2]) == 200);
        assertTrue(indexedEverywhere(), "caught up before ready, with no event published since");
        await("the restarted picker knows the pods", () -> pickers[2].book.ready() == PODS);
        for (final int[] prompt : asked) {
            agreedPick(prompt);
        }
    }

    private void startReplica(final int r, final Path cellParent, final String peer) throws Exception {
        final DaemonContext ctx = new DaemonContext().dir(cellParent).shardCount(16).capacityBlocks(8192)
            .podTimeoutMs(0).heartbeatIntervalMs(50).idleStrategy("backoff");
        ctx.serving().http("127.0.0.1:0");
        ctx.discovery().kubeconfig(kubeconfig).namespace(NS).selector("app=vllm").model(MODEL).resyncMs(0);
        if (peer != null) {
            ctx.snapshots().peer(peer);
        }
        daemons[r] = KvidxDaemon.start(ctx);
        open.add(daemons[r]);
        readers[r] = IndexReader.attach(new IndexReaderContext().dir(cellParent));
        open.add(readers[r]);
        final EppConfig c = new EppConfig();
        c.dir = cellParent.toString();
        c.listen = "127.0.0.1:0";
        c.metrics = "off";
        pickers[r] = EppServer.start(c);
        open.add(pickers[r]);
        channels[r] = NettyChannelBuilder.forAddress("127.0.0.1", pickers[r].port()).usePlaintext().build();
        final ManagedChannel ch = channels[r];
        open.add(() -> ch.shutdownNow().awaitTermination(2, TimeUnit.SECONDS));
    }

    /** Publishes a BlockStored of the prompt's first {@code blocks} blocks on the pod's engine (kept for replays). */
    private void store(final int pod, final int prompt, final int blocks, final SplittableRandom random) {
        final long[] hashes = new long[blocks];
        for (int i = 0; i < blocks; i++) {
            hashes[i] = random.nextLong();
        }
        final int[] tokens = java.util.Arrays.copyOf(prompts[prompt], blocks * BLOCK);
        batches.get(pod).add(new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64)
            .stored(hashes, null, tokens, BLOCK, null, "GPU").batch(0));
        depth[prompt][pod] = blocks;
    }

    /** Every engine publishes its batches again (ZeroMQ drops what a subscriber not yet joined would have got). */
    private void publishAll() {
        for (int p = 0; p < PODS; p++) {
            for (final byte[] b : batches.get(p)) {
                engines[p].publish(b);
            }
        }
    }

    private boolean indexedEverywhere() {
        final RouterKeyHasher hasher = new RouterKeyHasher(BLOCK);
        final long[] keys = new long[PROMPT_BLOCKS];
        for (int k = 0; k < PROMPTS; k++) {
            final int n = hasher.keys(RouterKeyHasher.chainSeed(MODEL, null, null), prompts[k], prompts[k].length,
                keys);
            for (final IndexReader reader : readers) {
                for (int p = 0; p < PODS; p++) {
                    if (TestIndexes.depthOf(reader, "vllm-" + p, keys, n) != depth[k][p]) {
                        return false;
                    }
                }
            }
        }
        return true;
    }

    /** Asks every replica; they must answer the same endpoint. */
    private String agreedPick(final int[] prompt) throws Exception {
        final String first = pick(0, prompt);
        for (int r = 1; r < REPLICAS; r++) {
            assertEquals(first, pick(r, prompt), "replica " + r + " picks as replica 0 (" + prompt.length
                + " tokens)");
        }
        return first;
    }

    /** One request through replica r's picker, as Envoy sends it in BUFFERED mode. */
    private String pick(final int r, final int[] prompt) throws Exception {
        final Envoy.Stream s = new Envoy.Stream(channels[r]);
        s.send(Envoy.post("/v1/completions", BodySendMode.BUFFERED, null));
        s.send(Envoy.body(EppTest.completion(prompt).replace("\"m\"", "\"" + MODEL + "\""), true));
        final List<ProcessingResponse> rs = s.take(2);
        final String picked = EppTest.pickOf(rs.get(1), false);
        s.requests.onCompleted();
        return picked;
    }

    private String pickQuietly(final int r, final int[] prompt) {
        try {
            return pick(r, prompt);
        } catch (final Exception ex) {
            throw new IllegalStateException(ex);
        }
    }

    private static int[] tokens(final SplittableRandom random, final int n) {
        final int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = random.nextInt(150_000);
        }
        return t;
    }

    private io.fabric8.kubernetes.api.model.Pod pod(final int p, final JavaVllmPublisherAccess engine) {
        final URI pub = URI.create(engine.endpoint());
        final URI replay = URI.create(engine.replayEndpoint());
        return ApiServerDouble.pod(NS, "vllm-" + p, pub.getHost(), true, Map.of("app", "vllm"),
            Map.of(DiscoveryContext.KV_EVENTS_PORT_ANNOTATION, Integer.toString(pub.getPort()),
                DiscoveryContext.KV_REPLAY_PORT_ANNOTATION, Integer.toString(replay.getPort())));
    }

    private static int health(final KvidxDaemon daemon) {
        try (HttpClient client = HttpClient.newHttpClient()) {
            return client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + daemon.httpPort()
                + "/health")).build(), HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (final Exception ex) {
            return -1;
        }
    }

    private static void await(final String what, final BooleanSupplier condition) throws InterruptedException {
        final long deadline = System.currentTimeMillis() + 60_000;
        while (!condition.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                fail("timed out waiting: " + what);
            }
            Thread.sleep(100);
        }
    }
}
