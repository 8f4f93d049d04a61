package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.PodSet;
import io.kvidx.client.index.PrefixResult;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.lifecycle.AfterProperty;
import net.jqwik.api.lifecycle.BeforeProperty;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.BitSet;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The reader's prefix queries on chains of every length the index takes (1..8,192 blocks: short chains searched
 * depth first over a whole-chain prefetch, long ones level by level with prefetches that follow the probes) must
 * answer exactly as a naive per-key reference over a plain map of key to holders: {@code query} as the same binary
 * search written plainly, {@code queryExact} as the walk from block 0, both for every pod, with prefetching on (a
 * fresh result's bulk loads, and a result whose recent searches were narrow) and
 * off, in direct (64-pod) and general (128-pod) cells, on random holdings: prefixes to a few shared depths (so that
 * blocks gather more than 7 holders and use overflow bitmaps) and to random ones, with holes, dead pods and
 * candidate subsets.
 */
class ChainSearchPropertyTest {
    private static final int MAX_CHAIN = 8192;
    /** The primer chain: every pod holds it whole, so a search of it makes 7 probes of the 64 a bulk load brings. */
    private static final int PRIMER_LENGTH = 64;
    /** Primer queries that turn a fresh result's recent searches narrow (about 14 at 7 probes in 64). */
    private static final int PRIMER_QUERIES = 24;
    private static final int BULK = 0;
    private static final int NARROW = 1;
    private static final int NO_PREFETCH = 2;
    private static final String[] MODES = {"prefetch, bulk", "prefetch, narrow", "no prefetch"};

    private Path dir;

    @BeforeProperty
    void createDir() throws IOException {
        dir = Files.createTempDirectory("kvidx-chain-prop");
    }

    @AfterProperty
    void deleteDir() throws IOException {
        try (var files = Files.walk(dir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    /** Every length, weighted towards the ends and the boundary between whole-chain and level-by-level search. */
    @Provide
    Arbitrary<Integer> lengths() {
        return Arbitraries.frequencyOf(
            net.jqwik.api.Tuple.of(3, Arbitraries.integers().between(1, MAX_CHAIN)),
            net.jqwik.api.Tuple.of(2, Arbitraries.of(1, 2, 3, 31, 32, 33, 63, 64, 65, 66, 67, 127, 128, 129, 750,
                4096, 8191, MAX_CHAIN)),
            net.jqwik.api.Tuple.of(2, Arbitraries.integers().between(60, 300)));
    }

    @Property(tries = 40)
    void shouldAnswerAsTheNaiveReferenceInAGeneralCell(@ForAll("lengths") final int length,
        @ForAll @IntRange(min = 65, max = 128) final int pods, @ForAll final boolean holes,
        @ForAll final long seed) {
        check(length, pods, 256, holes, seed);
    }

    @Property(tries = 40)
    void shouldAnswerAsTheNaiveReferenceInADirectCell(@ForAll("lengths") final int length,
        @ForAll @IntRange(min = 1, max = 64) final int pods, @ForAll final boolean holes,
        @ForAll final long seed) {
        check(length, pods, 64, holes, seed);
    }

    private void check(final int length, final int pods, final int maxPods, final boolean holes, final long seed) {
        final SplittableRandom rnd = new SplittableRandom(seed);
        final Path cellDir = dir.resolve(Long.toHexString(rnd.nextLong()));
        final long[] keys = new long[length];
        for (int i = 0; i < length; i++) {
            keys[i] = rnd.nextLong();
        }
        final Map<Long, BitSet> holders = new HashMap<>();
        final BitSet alive = new BitSet();
        try (IndexWriter writer = IndexWriter.create(new IndexWriterContext().dir(cellDir).cell("test")
            .shardCount(16).slotsPerShard(8192).maxPods(maxPods).maxChainLength(MAX_CHAIN).deleteOnClose(true))) {
            // A few depths that many pods share (turns of a conversation), and pods at depths of their own.
            final int[] shared = new int[1 + rnd.nextInt(4)];
            for (int i = 0; i < shared.length; i++) {
                shared[i] = rnd.nextInt(length + 1);
            }
            for (int p = 0; p < pods; p++) {
                final int slot = writer.registerPod("pod-" + p, "m");
                alive.set(slot);
                final int depth = rnd.nextInt(3) == 0 ? rnd.nextInt(length + 1) : shared[rnd.nextInt(shared.length)];
                if (depth > 0) {
                    writer.store(slot, keys, 0, depth);
                    for (int i = 0; i < depth; i++) {
                        holders.computeIfAbsent(keys[i], k -> new BitSet()).set(slot);
                    }
                }
                if (holes && rnd.nextBoolean()) {
                    // Blocks past the pod's prefix (and gaps in it): the binary search then reports a drop-off point.
                    for (int n = rnd.nextInt(8); n > 0; n--) {
                        final int i = rnd.nextInt(length);
                        writer.store(slot, keys, i, 1);
                        holders.computeIfAbsent(keys[i], k -> new BitSet()).set(slot);
                    }
                    if (depth > 1 && rnd.nextBoolean()) {
                        final int i = 1 + rnd.nextInt(depth - 1);
                        writer.remove(slot, keys, i, 1);
                        holders.get(keys[i]).clear(slot);
                    }
                }
            }
            // A chain every pod holds whole (one depth: a search of a handful of probes), to turn a result's recent
            // searches narrow: the reader then loads only what the next levels may probe (PrefixResult#bulkPays).
            final long[] primer = new long[PRIMER_LENGTH];
            for (int i = 0; i < primer.length; i++) {
                primer[i] = rnd.nextLong();
            }
            alive.stream().forEach(slot -> writer.store(slot, primer, 0, primer.length));
            if (rnd.nextInt(4) == 0) {
                final int down = rnd.nextInt(pods);
                writer.podDown(down);
                alive.clear(down);
            }
            assertEquals(0, writer.evictions(), "evictions");
            assertEquals(0, writer.holdersRefused(), "holders refused");
            writer.heartbeat(System.currentTimeMillis());
            final PodSet candidates = rnd.nextBoolean() ? null : randomSet(rnd, pods);
            for (final int mode : new int[] {BULK, NARROW, NO_PREFETCH}) {
                final boolean prefetch = mode != NO_PREFETCH;
                try (IndexReader reader = IndexReader.attach(TestIndexes.reader(cellDir).prefetch(prefetch))) {
                    final PrefixResult result = new PrefixResult();
                    if (mode == NARROW) {
                        for (int i = 0; i < PRIMER_QUERIES; i++) {
                            reader.query(primer, primer.length, null, result);
                        }
                    }
                    final int[] expected = new int[maxPods];
                    final BitSet start = (BitSet) alive.clone();
                    if (candidates != null) {
                        start.and(toBitSet(candidates, maxPods));
                    }
                    // A narrow search probes first where most pods stopped last time: the primer's whole length.
                    bisect(keys, length, start, holders, expected, mode == NARROW ? PRIMER_LENGTH : 0);
                    final int max = reader.query(keys, length, candidates, result);
                    assertAnswer("query (" + MODES[mode] + ")", expected, max, result, maxPods);
                    walk(keys, length, start, holders, expected);
                    final int exactMax = reader.queryExact(keys, length, candidates, result);
                    assertAnswer("queryExact (" + MODES[mode] + ")", expected, exactMax, result, maxPods);
                }
            }
        }
    }

    private static PodSet randomSet(final SplittableRandom rnd, final int pods) {
        final PodSet set = new PodSet();
        for (int p = 0; p < pods; p++) {
            if (rnd.nextInt(4) != 0) {
                set.add(p);
            }
        }
        return set;
    }

    private static BitSet toBitSet(final PodSet set, final int maxPods) {
        final BitSet b = new BitSet();
        for (int p = 0; p < maxPods; p++) {
            if (set.contains(p)) {
                b.set(p);
            }
        }
        return b;
    }

    private static void assertAnswer(final String what, final int[] expected, final int max,
        final PrefixResult result, final int maxPods) {
        int expectedMax = 0;
        int holding = 0;
        for (int p = 0; p < maxPods; p++) {
            assertEquals(expected[p], result.depthOf(p), what + ": depth of slot " + p);
            expectedMax = Math.max(expectedMax, expected[p]);
            holding += expected[p] > 0 ? 1 : 0;
        }
        assertEquals(expectedMax, max, what + ": max depth");
        assertEquals(holding, result.count(), what + ": pods listed");
    }

    private static BitSet holdersOf(final Map<Long, BitSet> holders, final long key) {
        final BitSet b = holders.get(key);
        return b == null ? new BitSet() : b;
    }

    /**
     * The binary search written plainly: block 0, then the middle of [1, N], recursing into both halves. With a guess
     * g in [2, N - 1] (a narrow search's common depth of the last answer), blocks g and g - 1 come first instead: the
     * pods without block g - 1 search [1, g - 1], those with it and without block g stop at g, those with both search
     * [g + 1, N]. (With holes, the guess can change where a pod's search stops.)
     */
    private static void bisect(final long[] keys, final int length, final BitSet start,
        final Map<Long, BitSet> holders, final int[] depths, final int guess) {
        java.util.Arrays.fill(depths, 0);
        if (length == 0) {
            return;
        }
        final BitSet held = (BitSet) start.clone();
        held.and(holdersOf(holders, keys[0]));
        if (guess < 2 || guess >= length) {
            bisect(keys, 1, length, held, holders, depths);
            return;
        }
        final BitSet before = (BitSet) held.clone();
        before.and(holdersOf(holders, keys[guess - 1]));
        final BitSet low = (BitSet) held.clone();
        low.andNot(before);
        final BitSet high = (BitSet) before.clone();
        high.and(holdersOf(holders, keys[guess]));
        final BitSet exact = (BitSet) before.clone();
        exact.andNot(high);
        bisect(keys, 1, guess - 1, low, holders, depths);
        exact.stream().forEach(p -> depths[p] = guess);
        bisect(keys, guess + 1, length, high, holders, depths);
    }

    private static void bisect(final long[] keys, final int lo, final int hi, final BitSet pods,
        final Map<Long, BitSet> holders, final int[] depths) {
        if (pods.isEmpty()) {
            return;
        }
        if (lo == hi) {
            pods.stream().forEach(p -> depths[p] = lo);
            return;
        }
        final int mid = (lo + hi) >>> 1;
        final BitSet high = (BitSet) pods.clone();
        high.and(holdersOf(holders, keys[mid]));
        final BitSet low = (BitSet) pods.clone();
        low.andNot(high);
        bisect(keys, lo, mid, low, holders, depths);
        bisect(keys, mid + 1, hi, high, holders, depths);
    }

    /** Per pod, the blocks held from block 0 on without a gap. */
    private static void walk(final long[] keys, final int length, final BitSet start,
        final Map<Long, BitSet> holders, final int[] depths) {
        java.util.Arrays.fill(depths, 0);
        start.stream().forEach(p -> {
            int d = 0;
            while (d < length && holdersOf(holders, keys[d]).get(p)) {
                d++;
            }
            depths[p] = d;
        });
    }
}
