package io.kvidx.daemon.writer;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.client.tiers.TierMapDescriptor;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.ingest.EngineDecoders;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.vllm.VllmPayloads;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.agrona.concurrent.SystemEpochClock;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Stores and removals of the capture's blocks on random media (GPU, CPU, DISK, none given) against a plain model:
 * a block stays indexed while some medium holds it, and the host tier map records its media, except for a block
 * held on the GPU alone, which may have no entry (a missing entry reads as GPU). Runs the writer agent by hand (no
 * thread).
 */
class MediaPropertyTest {
    private static final String[] MEDIA = {null, "GPU", "CPU", "DISK"};

    record Op(boolean store, int from, int to, int medium) {
    }

    @Provide
    Arbitrary<List<Op>> ops() {
        return Combinators.combine(Arbitraries.of(true, false), Arbitraries.integers().between(0, 24),
            Arbitraries.integers().between(1, 25), Arbitraries.integers().between(0, 3))
            .as((s, a, len, m) -> new Op(s, a, Math.min(25, a + len), m)).list().ofMaxSize(12);
    }

    @Property(tries = 40)
    void shouldKeepABlockWhileAnyMediumHoldsIt(@ForAll("ops") final List<Op> ops) throws Exception {
        final Capture c = Capture.load("kv_event_base.json");
        final Path dir = Files.createTempDirectory("kvidx-media");
        try (IndexWriter index = IndexWriter.create(new IndexWriterContext().dir(dir).shardCount(16)
                .capacityBlocks(4096).deleteOnClose(true));
            IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir));
            IngestCounters counters = IngestCounters.local()) {
            final PodDirectory directory = new PodDirectory(4);
            final int pod = directory.podNumber("p", "m");
            final WriterPool pool = new WriterPool(1, 1 << 16, index, directory, counters, new IngestErrors(),
                SystemEpochClock.INSTANCE, 0, org.agrona.concurrent.NoOpIdleStrategy::new,
                org.agrona.concurrent.NoOpIdleStrategy::new, EngineDecoders.standard());
            final WriterAgent agent = pool.agents()[0];
            final List<Set<Integer>> model = new ArrayList<>();
            for (int i = 0; i < 25; i++) {
                model.add(new HashSet<>());
            }
            for (final Op op : ops) {
                final int medium = op.medium() == 0 ? 1 : op.medium();
                final VllmPayloads p = new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.UINT64);
                if (op.store()) {
                    p.stored(c.blockHashes(), null, c.tokenIds(), 16, null, MEDIA[op.medium()]);
                    model.forEach(s -> s.add(medium));
                } else {
                    p.removed(Arrays.copyOfRange(c.blockHashes(), op.from(), op.to()), MEDIA[op.medium()]);
                    for (int i = op.from(); i < op.to(); i++) {
                        model.get(i).remove(medium);
                    }
                }
                final byte[] b = p.batch(0);
                pool.offer(pod, WriterMessages.VLLM_BATCH, new UnsafeBuffer(b), 0, b.length);
                agent.doWork();
                int expected = 0;
                while (expected < 25 && !model.get(expected).isEmpty()) {
                    expected++;
                }
                assertEquals(expected, depth(reader, c), "after " + op);
                assertTiers(index, c, model, op);
            }
            pool.close();
        }
        try (var files = Files.walk(dir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        }
    }

    private static void assertTiers(final IndexWriter index, final Capture c, final List<Set<Integer>> model,
        final Op op) {
        final int slot = index.slotOf("p");
        if (slot < 0) {
            return;
        }
        final long[] keys = keys(c);
        for (int i = 0; i < 25; i++) {
            int media = 0;
            for (final int m : model.get(i)) {
                media |= m == 1 ? TierMapDescriptor.MEDIUM_GPU : m == 2 ? TierMapDescriptor.MEDIUM_CPU
                    : TierMapDescriptor.MEDIUM_DISK;
            }
            final int bits = index.tiers().tierBits(slot, keys[i]);
            if (bits < 0) {
                assertEquals(0, media & ~TierMapDescriptor.MEDIUM_GPU, "block " + i + " has no tier entry after "
                    + op + ", yet is held on " + media);
            } else {
                assertEquals(media, bits & TierMapDescriptor.MEDIA_MASK, "block " + i + " after " + op);
            }
        }
    }

    private static long[] keys(final Capture c) {
        final long[] keys = new long[25];
        new RouterKeyHasher(16).keys(RouterKeyHasher.chainSeed("m", null, null), c.tokenIds(), c.tokenIds().length,
            keys);
        return keys;
    }

    private static int depth(final IndexReader reader, final Capture c) {
        final long[] keys = new long[25];
        final int n = new RouterKeyHasher(16).keys(RouterKeyHasher.chainSeed("m", null, null), c.tokenIds(),
            c.tokenIds().length, keys);
        final PrefixResult r = new PrefixResult();
        return reader.queryExact(keys, n, null, r);
    }
}
