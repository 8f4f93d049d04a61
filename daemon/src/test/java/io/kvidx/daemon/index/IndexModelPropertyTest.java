package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterProperty;
import net.jqwik.api.lifecycle.BeforeProperty;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The index must agree with a naive map of sets on random sequences of stores, removes, clears, pod downs (with
 * partial sweeps and slot reuse); with evictions it must stay sound (never report a block the model lacks).
 */
class IndexModelPropertyTest {
    private static final int CHAINS = 6;
    private static final int CHAIN_LENGTH = 24;
    private static final String[] PODS = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o",
        "p", "q", "r", "s", "t"};

    private Path dir;

    @BeforeProperty
    void createDir() throws IOException {
        dir = Files.createTempDirectory("kvidx-prop");
    }

    @AfterProperty
    void deleteDir() throws IOException {
        try (var files = Files.walk(dir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    enum Kind { STORE_PREFIX, STORE_RANDOM, REMOVE_TAIL, REMOVE_RANDOM, CLEAR, DOWN, SWEEP }

    record Op(Kind kind, int pod, int chain, int from, int length) {
    }

    @Provide
    Arbitrary<List<Op>> ops() {
        final Arbitrary<Op> op = Combinators.combine(
            Arbitraries.of(Kind.class),
            Arbitraries.integers().between(0, PODS.length - 1),
            Arbitraries.integers().between(0, CHAINS - 1),
            Arbitraries.integers().between(0, CHAIN_LENGTH - 1),
            Arbitraries.integers().between(1, CHAIN_LENGTH)).as(Op::new);
        return op.list().ofMinSize(1).ofMaxSize(80);
    }

    /**
     * Few chains and mostly stores: blocks gather more than 7 holders, so entries move to overflow bitmaps and
     * back out through removes, clears, pod downs and sweeps.
     */
    @Provide
    Arbitrary<List<Op>> crowdedOps() {
        final Arbitrary<Kind> kinds = Arbitraries.frequency(
            net.jqwik.api.Tuple.of(8, Kind.STORE_PREFIX), net.jqwik.api.Tuple.of(2, Kind.STORE_RANDOM),
            net.jqwik.api.Tuple.of(1, Kind.REMOVE_TAIL), net.jqwik.api.Tuple.of(1, Kind.REMOVE_RANDOM),
            net.jqwik.api.Tuple.of(1, Kind.CLEAR), net.jqwik.api.Tuple.of(1, Kind.DOWN),
            net.jqwik.api.Tuple.of(1, Kind.SWEEP));
        final Arbitrary<Op> op = Combinators.combine(kinds,
            Arbitraries.integers().between(0, PODS.length - 1),
            Arbitraries.integers().between(0, 1),
            Arbitraries.integers().between(0, CHAIN_LENGTH - 1),
            Arbitraries.integers().between(1, CHAIN_LENGTH)).as(Op::new);
        return op.list().ofMinSize(10).ofMaxSize(80);
    }

    @Property(tries = 150)
    void shouldAgreeWithTheReferenceModelWhenBlocksHaveManyHolders(@ForAll("crowdedOps") final List<Op> ops) {
        run(ops, 4096, true);
    }

    @Property(tries = 100)
    void shouldStaySoundWhenTheOverflowPoolRunsOut(@ForAll("crowdedOps") final List<Op> ops) {
        run(ops, 24, false);
    }

    @Property(tries = 150)
    void shouldAgreeWithTheReferenceModel(@ForAll("ops") final List<Op> ops) {
        run(ops, 4096, true);
    }

    @Property(tries = 100)
    void shouldStaySoundUnderEvictions(@ForAll("ops") final List<Op> ops) {
        run(ops, 24, false);
    }

    @Property(tries = 150)
    void shouldAgreeWithTheReferenceModelInADirectCell(@ForAll("ops") final List<Op> ops) {
        run(ops, 4096, true, IndexDescriptor.DIRECT_MAX_PODS);
    }

    @Property(tries = 100)
    void shouldStaySoundUnderEvictionsInADirectCell(@ForAll("crowdedOps") final List<Op> ops) {
        run(ops, 24, false, IndexDescriptor.DIRECT_MAX_PODS);
    }

    private void run(final List<Op> ops, final int capacity, final boolean exact) {
        run(ops, capacity, exact, IndexDescriptor.MAX_PODS);
    }

    private void run(final List<Op> ops, final int capacity, final boolean exact, final int maxPods) {
        final IndexWriterContext ctx = new IndexWriterContext().dir(dir).cell("prop").shardCount(2)
            .capacityBlocks(capacity).maxLoadFactor(0.75).maxChainLength(CHAIN_LENGTH).maxPods(maxPods)
            .deleteOnClose(true);
        try (IndexWriter writer = IndexWriter.create(ctx);
             IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir).cell("prop")
                 .attachTimeoutMs(1_000).heartbeatTimeoutMs(0))) {
            final Map<Long, Set<String>> model = new HashMap<>();
            final Map<String, Integer> slots = new HashMap<>();
            final java.util.Random random = new java.util.Random(ops.size());
            for (final Op op : ops) {
                apply(writer, model, slots, op, random);
                check(reader, writer, model, slots, exact);
            }
        }
    }

    private static void apply(final IndexWriter writer, final Map<Long, Set<String>> model,
        final Map<String, Integer> slots, final Op op, final java.util.Random random) {
        final String pod = PODS[op.pod()];
        final long[] keys = TestIndexes.chain(op.chain(), CHAIN_LENGTH);
        switch (op.kind()) {
            case STORE_PREFIX, STORE_RANDOM -> {
                final int slot = slots.computeIfAbsent(pod, p -> writer.registerPod(p, "model"));
                final int from = op.kind() == Kind.STORE_PREFIX ? 0 : op.from();
                final int n = Math.min(op.length(), CHAIN_LENGTH - from);
                writer.store(slot, keys, from, n);
                for (int i = from; i < from + n; i++) {
                    model.computeIfAbsent(keys[i], k -> new HashSet<>()).add(pod);
                }
            }
            case REMOVE_TAIL, REMOVE_RANDOM -> {
                final Integer slot = slots.get(pod);
                if (slot == null) {
                    return;
                }
                final List<Long> removed = new ArrayList<>();
                if (op.kind() == Kind.REMOVE_TAIL) {
                    for (int i = op.from(); i < CHAIN_LENGTH; i++) {
                        removed.add(keys[i]);
                    }
                } else {
                    for (int i = 0; i < CHAIN_LENGTH; i++) {
                        if (random.nextInt(3) == 0) {
                            removed.add(keys[i]);
                        }
                    }
                }
                final long[] batch = removed.stream().mapToLong(Long::longValue).toArray();
                writer.remove(slot, batch, 0, batch.length);
                for (final long key : batch) {
                    final Set<String> holders = model.get(key);
                    if (holders != null) {
                        holders.remove(pod);
                    }
                }
            }
            case CLEAR -> {
                final Integer slot = slots.get(pod);
                if (slot != null) {
                    writer.clearPod(slot);
                    model.values().forEach(s -> s.remove(pod));
                }
            }
            case DOWN -> {
                final Integer slot = slots.remove(pod);
                if (slot != null) {
                    writer.podDown(slot);
                    model.values().forEach(s -> s.remove(pod));
                }
            }
            case SWEEP -> {
                for (int i = 0; i < op.length() % 3; i++) {
                    writer.sweepStep();
                }
            }
            default -> throw new IllegalStateException();
        }
    }

    private static void check(final IndexReader reader, final IndexWriter writer, final Map<Long, Set<String>> model,
        final Map<String, Integer> slots, final boolean exact) {
        assertTrue(writer.entryCount() <= writer.capacity());
        final PrefixResult binary = new PrefixResult();
        final PrefixResult linear = new PrefixResult();
        for (int c = 0; c < CHAINS; c++) {
            final long[] keys = TestIndexes.chain(c, CHAIN_LENGTH);
            reader.query(keys, CHAIN_LENGTH, null, binary);
            reader.queryExact(keys, CHAIN_LENGTH, null, linear);
            for (final Map.Entry<String, Integer> pod : slots.entrySet()) {
                final int slot = pod.getValue();
                final int expected = modelDepth(model, keys, pod.getKey());
                final boolean contiguous = isContiguous(model, keys, pod.getKey());
                if (exact) {
                    assertEquals(expected, linear.depthOf(slot), "exact depth of " + pod.getKey() + " chain " + c);
                    if (contiguous) {
                        assertEquals(expected, binary.depthOf(slot), "binary depth of " + pod.getKey());
                    } else {
                        assertDropOff(model, keys, pod.getKey(), binary.depthOf(slot));
                    }
                } else {
                    assertTrue(linear.depthOf(slot) <= expected, "evictions only lose blocks");
                    for (int i = 0; i < linear.depthOf(slot); i++) {
                        assertTrue(holds(model, keys[i], pod.getKey()), "reported block the model lacks");
                    }
                    final int d = binary.depthOf(slot);
                    assertTrue(d == 0 || holds(model, keys[d - 1], pod.getKey()), "binary drop-off is sound");
                }
            }
            for (int i = 0; i < binary.count(); i++) {
                assertTrue(slots.containsValue(binary.slot(i)), "only alive pods are answered");
            }
        }
    }

    private static void assertDropOff(final Map<Long, Set<String>> model, final long[] keys, final String pod,
        final int d) {
        assertTrue(d == 0 || holds(model, keys[d - 1], pod), "pod holds block d-1");
        assertTrue(d == keys.length || !holds(model, keys[d], pod), "pod lacks block d");
    }

    private static int modelDepth(final Map<Long, Set<String>> model, final long[] keys, final String pod) {
        int d = 0;
        while (d < keys.length && holds(model, keys[d], pod)) {
            d++;
        }
        return d;
    }

    private static boolean isContiguous(final Map<Long, Set<String>> model, final long[] keys, final String pod) {
        final int d = modelDepth(model, keys, pod);
        for (int i = d; i < keys.length; i++) {
            if (holds(model, keys[i], pod)) {
                return false;
            }
        }
        return true;
    }

    private static boolean holds(final Map<Long, Set<String>> model, final long key, final String pod) {
        final Set<String> holders = model.get(key);
        return holders != null && holders.contains(pod);
    }
}
