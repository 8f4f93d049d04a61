package io.kvidx.daemon.writer;

import io.kvidx.client.keys.RequestExtras;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.client.keys.vllm.MultiModalFeature;
import io.kvidx.client.keys.vllm.VllmExtraKeys;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.vllm.VllmPayloads;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.math.BigInteger;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * BlockStored events with vLLM's {@code extra_keys} (vllm#33304) applied by a real writer agent to a real index, in
 * both event shapes: salts separate tenants, image identifiers separate identical placeholder tokens, the daemon's
 * keys are the router's ({@link RouterKeyHasher} with {@link RequestExtras}), and every kind of bad value drops its
 * event only, counted and logged once per pod.
 */
@Timeout(60)
class ExtraKeysTest {
    static final String MODEL = "Qwen/Qwen2.5-VL-3B";
    static final int BS = 16;
    static final int PLACEHOLDER = 151_655;

    @TempDir
    Path dir;
    private HandWriter w;

    @BeforeEach
    void setUp() {
        w = new HandWriter(dir, BS, MODEL);
    }

    @AfterEach
    void tearDown() {
        w.close();
    }

    /** The extra_keys vLLM sends for blocks {@code [first, first + n)} of a request, built by vLLM's rule. */
    static List<Object> vllmExtraKeys(final int bs, final int first, final int n, final String lora,
        final String salt, final List<MultiModalFeature> mm, final byte[][] digests) {
        final VllmExtraKeys rule = new VllmExtraKeys(lora, salt, mm, VllmExtraKeys.MultiModalKeyStyle
            .IDENTIFIER_AND_OFFSET);
        final List<Object> entries = new ArrayList<>();
        for (int b = first; b < first + n; b++) {
            final Object[] t = rule.forBlock(b * bs, (b + 1) * bs);
            final List<Object> entry = new ArrayList<>(t == null ? List.of() : Arrays.asList(t));
            if (digests != null && b < digests.length) {
                entry.add(digests[b]);
            }
            entries.add(entry.isEmpty() ? null : entry);
        }
        return entries;
    }

    static long[] routerKeys(final int bs, final String model, final String lora, final String salt,
        final int[] tokens, final List<MultiModalFeature> mm, final byte[][] digests) {
        final RequestExtras extras = new RequestExtras();
        mm.forEach(f -> extras.addMultiModal(f.identifier(), f.offset(), f.length()));
        if (digests != null) {
            final byte[] all = new byte[32 * digests.length];
            for (int i = 0; i < digests.length; i++) {
                System.arraycopy(digests[i], 0, all, 32 * i, 32);
            }
            extras.promptEmbedsDigests(all, 0, digests.length);
        }
        final long[] keys = new long[tokens.length / bs];
        new RouterKeyHasher(bs).keys(RouterKeyHasher.chainSeed(model, lora, salt), tokens, tokens.length, extras,
            keys);
        return keys;
    }

    static long[] hashes(final long base, final int n) {
        final long[] h = new long[n];
        for (int i = 0; i < n; i++) {
            h[i] = base * 1_000_003L + i * 7919L + 1;
        }
        return h;
    }

    static int[] tokens(final int n, final long seed) {
        return new SplittableRandom(seed).ints(n, 0, 150_000).toArray();
    }

    private static VllmPayloads payloads(final VllmPayloads.Shape shape) {
        return new VllmPayloads(shape, VllmPayloads.HashWidth.UINT64);
    }

    @ParameterizedTest
    @EnumSource(VllmPayloads.Shape.class)
    void shouldMatchTenantsOnlyWithTheirOwnSalt(final VllmPayloads.Shape shape) {
        final int[] t = tokens(8 * BS, 1);
        final int a = w.pod("pod-a");
        final int b = w.pod("pod-b");
        // Same tokens, different salts: vLLM gives them different engine hashes and the salt on block 0.
        w.apply(a, payloads(shape).storedWithExtraKeys(hashes(1, 8), null, t, BS, null,
            vllmExtraKeys(BS, 0, 8, null, "tenant-a", List.of(), null)).batch(0));
        w.apply(b, payloads(shape).storedWithExtraKeys(hashes(2, 8), null, t, BS, null,
            vllmExtraKeys(BS, 0, 8, null, "tenant-b", List.of(), null)).batch(0));
        final long[] saltA = routerKeys(BS, MODEL, null, "tenant-a", t, List.of(), null);
        final long[] saltB = routerKeys(BS, MODEL, null, "tenant-b", t, List.of(), null);
        final long[] unsalted = routerKeys(BS, MODEL, null, null, t, List.of(), null);
        assertEquals(8, w.depth("pod-a", saltA, 8));
        assertEquals(0, w.depth("pod-b", saltA, 8));
        assertEquals(8, w.depth("pod-b", saltB, 8));
        assertEquals(0, w.depth("pod-a", saltB, 8));
        assertEquals(0, w.depth("pod-a", unsalted, 8));
        assertEquals(0, w.depth("pod-b", unsalted, 8));
        assertEquals(16, w.count(CounterType.BLOCKS_STORED));

        // A follow-up event of tenant a (parent = its block 7) extends its salted chain: no salt on later blocks.
        final int[] more = tokens(12 * BS, 1);
        System.arraycopy(t, 0, more, 0, t.length);
        w.apply(a, payloads(shape).storedWithExtraKeys(hashes(3, 4), hashes(1, 8)[7],
            Arrays.copyOfRange(more, 8 * BS, 12 * BS), BS, null,
            vllmExtraKeys(BS, 8, 4, null, "tenant-a", List.of(), null)).batch(0));
        assertEquals(12, w.depth("pod-a", routerKeys(BS, MODEL, null, "tenant-a", more, List.of(), null), 12));
        assertEquals(0, w.count(CounterType.BAD_EXTRA_KEYS));
    }

    @ParameterizedTest
    @EnumSource(VllmPayloads.Shape.class)
    void shouldNeverMatchOneImageWithAnotherBehindTheSamePlaceholders(final VllmPayloads.Shape shape) {
        // Two text blocks, an image of 40 placeholder tokens from token 36 (blocks 2..4), two more text blocks.
        final int[] t = tokens(7 * BS, 2);
        Arrays.fill(t, 36, 76, PLACEHOLDER);
        final List<MultiModalFeature> imageA = List.of(new MultiModalFeature("sha-image-a", 36, 40));
        final List<MultiModalFeature> imageB = List.of(new MultiModalFeature("sha-image-b", 36, 40));
        w.apply(w.pod("pod-a"), payloads(shape).storedWithExtraKeys(hashes(4, 7), null, t, BS, null,
            vllmExtraKeys(BS, 0, 7, null, null, imageA, null)).batch(0));
        w.apply(w.pod("pod-b"), payloads(shape).storedWithExtraKeys(hashes(5, 7), null, t, BS, null,
            vllmExtraKeys(BS, 0, 7, null, null, imageB, null)).batch(0));
        final long[] queryA = routerKeys(BS, MODEL, null, null, t, imageA, null);
        final long[] queryB = routerKeys(BS, MODEL, null, null, t, imageB, null);
        assertEquals(7, w.depth("pod-a", queryA, 7));
        assertEquals(2, w.depth("pod-b", queryA, 7), "only the text blocks before the image are shared");
        assertEquals(7, w.depth("pod-b", queryB, 7));
        assertEquals(2, w.depth("pod-a", queryB, 7));
        // A text-only router (no items) matches the text prefix only: blocks without items keep v1 keys.
        assertEquals(2, w.depth("pod-a", routerKeys(BS, MODEL, null, null, t, List.of(), null), 7));
    }

    @ParameterizedTest
    @EnumSource(VllmPayloads.Shape.class)
    void shouldKeyLoraItemsSaltAndDigestsAsTheRouterDoes(final VllmPayloads.Shape shape) {
        final int[] t = tokens(6 * BS, 3);
        final List<MultiModalFeature> mm = List.of(new MultiModalFeature("img-1", 3, 5),
            new MultiModalFeature("img-2", 8, 30), new MultiModalFeature("audio", 70, 1));
        final byte[][] digests = new byte[6][32];
        for (int i = 0; i < digests.length; i++) {
            new SplittableRandom(i).nextBytes(digests[i]);
        }
        final long[] h = hashes(6, 6);
        // Two events: blocks 0..2, then 3..5 with block 2 as parent.
        w.apply(w.pod("pod-a"), payloads(shape)
            .storedWithExtraKeys(Arrays.copyOfRange(h, 0, 3), null, Arrays.copyOfRange(t, 0, 3 * BS), BS, "Alice",
                vllmExtraKeys(BS, 0, 3, "Alice", "s1", mm, digests))
            .storedWithExtraKeys(Arrays.copyOfRange(h, 3, 6), h[2], Arrays.copyOfRange(t, 3 * BS, 6 * BS), BS,
                "Alice", vllmExtraKeys(BS, 3, 3, "Alice", "s1", mm, digests))
            .batch(0));
        assertEquals(6, w.depth("pod-a", routerKeys(BS, MODEL, "Alice", "s1", t, mm, digests), 6));
        assertEquals(0, w.depth("pod-a", routerKeys(BS, MODEL, "Alice", null, t, mm, digests), 6));
        assertEquals(0, w.depth("pod-a", routerKeys(BS, MODEL, null, "s1", t, mm, digests), 6));
        assertEquals(0, w.count(CounterType.BAD_EXTRA_KEYS));
        assertEquals(6, w.count(CounterType.BLOCKS_STORED));
    }

    @ParameterizedTest
    @EnumSource(VllmPayloads.Shape.class)
    void shouldKeyEventsWithoutOrWithNilExtraKeysAsBefore(final VllmPayloads.Shape shape) {
        final int[] t = tokens(4 * BS, 4);
        w.apply(w.pod("pod-a"), payloads(shape).storedWithExtraKeys(hashes(7, 4), null, t, BS, "Alice", null)
            .storedWithExtraKeys(hashes(8, 4), null, t, BS, null, Collections.nCopies(4, null))
            .stored(hashes(9, 4), null, t, BS, null, "CPU").batch(0));
        assertEquals(4, w.depth("pod-a", routerKeys(BS, MODEL, "Alice", null, t, List.of(), null), 4));
        assertEquals(4, w.depth("pod-a", routerKeys(BS, MODEL, null, null, t, List.of(), null), 4));
        // nil entries in a LoRA event (engines that fill the field with placeholders): the LoRA alone.
        w.apply(w.pod("pod-b"), payloads(shape).storedWithExtraKeys(hashes(10, 4), null, t, BS, "Bob",
            Collections.nCopies(4, null)).batch(0));
        assertEquals(4, w.depth("pod-b", routerKeys(BS, MODEL, "Bob", null, t, List.of(), null), 4));
        assertEquals(0, w.count(CounterType.BAD_EXTRA_KEYS));
        assertEquals(0, w.count(CounterType.EVENTS_DROPPED));
    }

    @ParameterizedTest
    @EnumSource(VllmPayloads.Shape.class)
    void shouldApplyExtraKeysWithoutAllocating(final VllmPayloads.Shape shape) {
        // Two tenants with LoRA adapters take turns on one pod (the seed cache misses every time), with images and
        // prompt-embeds digests on every block: decode, seeds and keys must not allocate once warm.
        final int[] t = tokens(8 * BS, 7);
        final List<MultiModalFeature> mm = List.of(new MultiModalFeature("sha256:0123456789abcdef", 5, 50),
            new MultiModalFeature("sha256:fedcba9876543210", 70, 40));
        final byte[][] digests = new byte[8][32];
        final org.agrona.concurrent.UnsafeBuffer[] batches = new org.agrona.concurrent.UnsafeBuffer[2];
        final int[] lengths = new int[2];
        for (int i = 0; i < 2; i++) {
            final String lora = i == 0 ? "Alice" : "Bob";
            final String salt = "tenant-" + i;
            final byte[] b = payloads(shape).storedWithExtraKeys(hashes(20 + i, 8), null, t, BS, lora,
                vllmExtraKeys(BS, 0, 8, lora, salt, mm, digests)).batch(0);
            batches[i] = new org.agrona.concurrent.UnsafeBuffer(b);
            lengths[i] = b.length;
        }
        final int pod = w.pod("pod-a");
        final com.sun.management.ThreadMXBean mx =
            (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        final long tid = Thread.currentThread().threadId();
        long allocated = -1;
        for (int round = 0; round < 3; round++) {
            final long before = mx.getThreadAllocatedBytes(tid);
            for (int i = 0; i < 2_000; i++) {
                w.apply(pod, batches[i & 1], lengths[i & 1]);
            }
            allocated = mx.getThreadAllocatedBytes(tid) - before;
        }
        // 2,000 events of 8 blocks: anything per event would be >= 16 kB.
        assertTrue(allocated < 8 * 1024, "allocated " + allocated + " bytes applying 2,000 events");
        assertEquals(8, w.depth("pod-a", routerKeys(BS, MODEL, "Bob", "tenant-1", t, mm, digests), 8));
        assertEquals(0, w.count(CounterType.BAD_EXTRA_KEYS));
    }

    /** One bad value of every kind, each between two good events of the same batch. */
    @ParameterizedTest
    @EnumSource(VllmPayloads.Shape.class)
    void shouldDropEventsWithBadExtraKeysCountLogOnceAndLoseNothingElse(final VllmPayloads.Shape shape) {
        final int[] t = tokens(2 * BS, 5);
        final String[] text = new String[1];
        final List<Object> good = vllmExtraKeys(BS, 0, 2, "Alice", "salt", List.of(), null);
        final Object[][] bad = {
            {"not an array", "x"},
            {"a map", Map.of("a", 1)},
            {"too few entries", List.of(List.of("Alice", "salt"))},
            {"too many entries", List.of(List.of("Alice", "salt"), List.of("Alice"), List.of("Alice"))},
            {"an entry that is a str", List.of("Alice", List.of("Alice"))},
            {"an int element", List.of(List.of("Alice", 7), List.of("Alice"))},
            {"a float element", List.of(List.of("Alice", 1.5), List.of("Alice"))},
            {"a bool element", List.of(List.of("Alice", true), List.of("Alice"))},
            {"an item of three", List.of(List.of("Alice", List.of("img", 0, 1)), List.of("Alice"))},
            {"an item [int, str]", List.of(List.of("Alice", List.of(0, "img")), List.of("Alice"))},
            {"an item [str, str]", List.of(List.of("Alice", List.of("img", "0")), List.of("Alice"))},
            {"no LoRA name", List.of(List.of("salt"), List.of("Alice"))},
            {"another LoRA name", List.of(List.of("Bob", "salt"), List.of("Bob"))},
            {"a salt on block 1", List.of(List.of("Alice", "salt"), List.of("Alice", "salt"))},
            {"a bare identifier", List.of(List.of("Alice"), List.of("Alice", "sha-image"))},
            {"an item after the salt", List.of(List.of("Alice", "salt", List.of("img", 0)), List.of("Alice"))},
            {"an offset past the block", List.of(List.of("Alice", List.of("img", BS)), List.of("Alice"))},
            {"a uint64 offset", List.of(List.of("Alice", List.of("img", new BigInteger("18446744073709551615"))),
                List.of("Alice"))},
            {"a 16-byte digest", List.of(List.of("Alice", new byte[16]), List.of("Alice"))},
            {"two digests", List.of(List.of("Alice", new byte[32], new byte[32]), List.of("Alice"))},
            {"a 70,000-byte identifier", List.of(List.of("Alice", List.of("i".repeat(70_000), 0)),
                List.of("Alice"))},
            {"1,025 elements", List.of(Collections.nCopies(1025, "Alice"), List.of("Alice"))},
        };
        final int a = w.pod("pod-a");
        long stored = 0;
        for (int i = 0; i < bad.length; i++) {
            text[0] = (String) bad[i][0];
            w.apply(a, payloads(shape)
                .storedWithExtraKeys(hashes(100 + 3L * i, 2), null, t, BS, "Alice", good)
                .storedWithExtraKeys(hashes(101 + 3L * i, 2), null, t, BS, "Alice", bad[i][1])
                .storedWithExtraKeys(hashes(102 + 3L * i, 2), null, t, BS, "Alice", good)
                .batch(0));
            stored += 4;
            assertEquals(i + 1, w.count(CounterType.BAD_EXTRA_KEYS), text[0]);
            assertEquals(stored, w.count(CounterType.BLOCKS_STORED) + w.count(CounterType.DUPLICATE_BLOCKS),
                "the good events around " + text[0] + " apply");
        }
        assertEquals(2, w.depth("pod-a", routerKeys(BS, MODEL, "Alice", "salt", t, List.of(), null), 2));
        assertEquals(0, w.count(CounterType.EVENTS_DROPPED));
        // Logged once per kind: the same bad value again adds a count, not a log entry.
        final int logged = w.errors.distinctCount();
        w.apply(a, payloads(shape).storedWithExtraKeys(hashes(999, 2), null, t, BS, "Alice", bad[0][1]).batch(0));
        assertEquals(logged, w.errors.distinctCount());
        assertEquals(bad.length + 1, w.count(CounterType.BAD_EXTRA_KEYS));
        assertTrue(w.errors.dump().contains("extra_keys"), w.errors.dump());
        // Kinds: decoder shape/type, count, size; applier LoRA, string, offset, digest, order.
        assertEquals(8, logged, w.errors.dump());
    }
}
