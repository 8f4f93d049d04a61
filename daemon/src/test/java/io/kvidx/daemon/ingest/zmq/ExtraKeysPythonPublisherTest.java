package io.kvidx.daemon.ingest.zmq;

import io.kvidx.client.index.IndexBusyException;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.client.keys.RequestExtras;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.StringJoiner;

import static io.kvidx.daemon.ingest.zmq.ZmqIngestTest.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * vLLM's {@code extra_keys} (vllm#33304) from a real Python publisher (pyzmq + msgpack, vLLM's extra-keys rule and
 * sha256 block hashing in {@code vllm_publisher.py}) into the real daemon over loopback TCP, in both event shapes:
 * two tenants storing the same tokens under different cache salts each match only their own salted query and not
 * an unsalted one; two images behind identical placeholder tokens never match each other; LoRA, multimodal items,
 * salt and prompt-embeds digests over two chained events give the router's keys; a bad extra_keys value drops its
 * event only.
 */
@Timeout(90)
class ExtraKeysPythonPublisherTest {
    private static final String MODEL = "Qwen/Qwen2.5-VL-3B";
    private static final int BS = 16;
    private static final int PLACEHOLDER = 151_655;

    @TempDir
    Path dir;

    @BeforeAll
    static void requirePython() throws Exception {
        PythonPublisherTest.requirePython();
    }

    record Item(String id, int offset, int length) {
    }

    private static int[] tokens(final int n, final long seed) {
        return new SplittableRandom(seed).ints(n, 0, 150_000).toArray();
    }

    /** One storex request as JSON. */
    private static String request(final int[] tokens, final String lora, final String salt, final String embeds,
        final Integer first, final Integer last, final String badExtraKeys, final Item... mm) {
        final StringJoiner t = new StringJoiner(",", "[", "]");
        Arrays.stream(tokens).forEach(v -> t.add(Integer.toString(v)));
        final StringJoiner items = new StringJoiner(",", "[", "]");
        for (final Item i : mm) {
            items.add("[\"" + i.id() + "\"," + i.offset() + "," + i.length() + "]");
        }
        return "{\"tokens\":" + t + ",\"block_size\":" + BS + ",\"lora_name\":" + str(lora) + ",\"salt\":"
            + str(salt) + ",\"embeds\":" + str(embeds) + ",\"mm\":" + items
            + (first == null ? "" : ",\"first\":" + first) + (last == null ? "" : ",\"last\":" + last)
            + (badExtraKeys == null ? "" : ",\"bad_extra_keys\":" + badExtraKeys) + "}";
    }

    private static String str(final String s) {
        return s == null ? "null" : "\"" + s + "\"";
    }

    private static String storex(final String pod, final String... requests) {
        return "storex {\"topic\":\"kv@" + pod + "@" + MODEL + "\",\"events\":[" + String.join(",", requests) + "]}";
    }

    private static long[] routerKeys(final int[] tokens, final String lora, final String salt, final String embeds,
        final Item... mm) {
        final RequestExtras extras = new RequestExtras();
        for (final Item i : mm) {
            extras.addMultiModal(i.id(), i.offset(), i.length());
        }
        final int blocks = tokens.length / BS;
        if (embeds != null) {
            final byte[] digests = new byte[32 * blocks];
            for (int b = 0; b < blocks; b++) {
                final byte[] d = sha256((embeds + ":" + b).getBytes(StandardCharsets.UTF_8));
                System.arraycopy(d, 0, digests, 32 * b, 32);
            }
            extras.promptEmbedsDigests(digests, 0, blocks);
        }
        final long[] keys = new long[blocks];
        new RouterKeyHasher(BS).keys(RouterKeyHasher.chainSeed(MODEL, lora, salt), tokens, tokens.length, extras,
            keys);
        return keys;
    }

    private static byte[] sha256(final byte[] data) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(data);
        } catch (final java.security.NoSuchAlgorithmException ex) {
            throw new IllegalStateException(ex);
        }
    }

    private static int depth(final IndexReader reader, final String pod, final long[] keys) {
        final PrefixResult result = new PrefixResult();
        for (int attempt = 0; ; attempt++) {
            try {
                reader.queryExact(keys, keys.length, null, result);
                break;
            } catch (final IndexBusyException ex) {
                if (attempt == 1_000) {
                    throw ex;
                }
                Thread.onSpinWait();
            }
        }
        for (int slot = 0; slot < reader.maxPods(); slot++) {
            if (reader.isAlive(slot) && pod.equals(reader.pod(slot).podId())) {
                return result.depthOf(slot);
            }
        }
        return 0;
    }

    @ParameterizedTest(name = "{0} events, {1} hashes")
    @CsvSource({"array, uint", "map, bin"})
    void shouldKeyWhatARealPublisherSendsInExtraKeys(final String shape, final String hashes) throws Exception {
        try (PythonPublisherTest.Peer peer = new PythonPublisherTest.Peer("kv@unused@" + MODEL, shape, "new",
            hashes)) {
            final DaemonContext ctx = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(8192)
                .podTimeoutMs(0).heartbeatIntervalMs(50).idleStrategy("backoff");
            ctx.zmq().addEndpoint(new ZmqEndpoint(peer.endpoint, null, null, peer.replayEndpoint));
            try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
                IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
                while (daemon.counters().value(CounterType.MESSAGES_RECEIVED) == 0) {
                    peer.command("ping");
                    Thread.sleep(20);
                }
                // Tenants: the same 3 blocks (and a partial one) under two salts.
                final int[] shared = tokens(3 * BS + 5, 1);
                peer.command(storex("tenant-a", request(shared, null, "salt-a", null, null, null, null)));
                peer.command(storex("tenant-b", request(shared, null, "salt-b", null, null, null, null)));
                final int[] full = Arrays.copyOf(shared, 3 * BS);
                final long[] saltA = routerKeys(full, null, "salt-a", null);
                final long[] saltB = routerKeys(full, null, "salt-b", null);
                await("tenant a", () -> depth(reader, "tenant-a", saltA) == 3);
                await("tenant b", () -> depth(reader, "tenant-b", saltB) == 3);
                assertEquals(0, depth(reader, "tenant-a", saltB));
                assertEquals(0, depth(reader, "tenant-b", saltA));
                final long[] unsalted = routerKeys(full, null, null, null);
                assertEquals(0, depth(reader, "tenant-a", unsalted));
                assertEquals(0, depth(reader, "tenant-b", unsalted));

                // Images: 40 identical placeholder tokens from token 20 (blocks 1..3), different identifiers.
                final int[] image = tokens(5 * BS, 2);
                Arrays.fill(image, 20, 60, PLACEHOLDER);
                final Item a = new Item("sha-image-a", 20, 40);
                final Item b = new Item("sha-image-b", 20, 40);
                peer.command(storex("img-a", request(image, null, null, null, null, null, null, a)));
                peer.command(storex("img-b", request(image, null, null, null, null, null, null, b)));
                final long[] queryA = routerKeys(image, null, null, null, a);
                final long[] queryB = routerKeys(image, null, null, null, b);
                await("image a", () -> depth(reader, "img-a", queryA) == 5);
                await("image b", () -> depth(reader, "img-b", queryB) == 5);
                assertEquals(1, depth(reader, "img-b", queryA), "only the text block before the image");
                assertEquals(1, depth(reader, "img-a", queryB));

                // Everything at once over two chained events: LoRA, items (one across the events), salt, digests.
                final int[] mixed = tokens(6 * BS, 3);
                final Item[] items = {new Item("img-1", 3, 5), new Item("img-2", 30, 40), new Item("audio", 90, 2)};
                peer.command(storex("mixed",
                    request(mixed, "Alice", "s1", "emb", 0, 2, null, items),
                    request(mixed, "Alice", "s1", "emb", 2, 6, null, items)));
                final long[] mixedKeys = routerKeys(mixed, "Alice", "s1", "emb", items);
                await("mixed", () -> depth(reader, "mixed", mixedKeys) == 6);
                assertEquals(0, depth(reader, "mixed", routerKeys(mixed, "Alice", "s1", null, items)));

                // A bad extra_keys between two good events of one batch: only it is dropped.
                final int[] x = tokens(2 * BS, 4);
                final int[] y = tokens(2 * BS, 5);
                peer.command(storex("bad",
                    request(x, null, "sx", null, null, null, null),
                    request(tokens(2 * BS, 6), null, "sz", null, null, null, "[[1.5], null]"),
                    request(y, null, "sy", null, null, null, null)));
                await("good events around the bad one", () -> depth(reader, "bad", routerKeys(x, null, "sx", null))
                    == 2 && depth(reader, "bad", routerKeys(y, null, "sy", null)) == 2);
                final var c = daemon.counters();
                assertEquals(1, c.value(CounterType.BAD_EXTRA_KEYS));
                assertEquals(0, c.value(CounterType.EVENTS_DROPPED));
                assertEquals(0, c.value(CounterType.UNKNOWN_PARENTS));
            }
        }
    }
}
