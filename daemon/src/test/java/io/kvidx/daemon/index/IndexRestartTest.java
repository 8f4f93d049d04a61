package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.ffm.Layouts;
import io.kvidx.ffm.MappedRegion;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A writer that re-opens an index re-attaches to it (same epoch, slots and entries) when the geometry matches,
 * re-creates it (keeping pods' slots) when not, and repairs what a writer killed in the middle of a change left.
 */
@Timeout(30)
class IndexRestartTest {
    @TempDir
    Path dir;

    private IndexWriterContext context() {
        return new IndexWriterContext().dir(dir).cell("restart").shardCount(4).slotsPerShard(64).maxChainLength(64);
    }

    private IndexReader reader() {
        return IndexReader.attach(new IndexReaderContext().dir(dir).cell("restart").attachTimeoutMs(1_000)
            .heartbeatTimeoutMs(0));
    }

    @Test
    void shouldReattachKeepingEpochSlotsGenerationsAndEntries() {
        final long[] keys = TestIndexes.chain(3, 20);
        final long epoch;
        final int a;
        final int b;
        try (IndexWriter writer = IndexWriter.open(context())) {
            assertFalse(writer.attached());
            a = writer.registerPod("pod-a", "m");
            b = writer.registerPod("pod-b", "m");
            writer.store(a, keys, 0, 20);
            writer.store(b, keys, 0, 7);
            epoch = writer.epoch();
        }
        try (IndexReader early = reader(); IndexWriter writer = IndexWriter.open(context())) {
            assertTrue(writer.attached(), writer.openReason());
            assertTrue(writer.repairClean(), writer.repairSummary());
            assertEquals(epoch, writer.epoch(), "readers need not re-map");
            assertEquals(epoch, early.epoch());
            // Whatever order the pods come back in, they keep their slots and generations.
            assertEquals(b, writer.registerPod("pod-b", "m"));
            assertEquals(a, writer.registerPod("pod-a", "m"));
            assertEquals(1, writer.generation(a));
            final PrefixResult result = new PrefixResult();
            early.query(keys, 20, null, result);
            assertEquals(20, result.depthOf(a));
            assertEquals(7, result.depthOf(b));
            assertEquals(20, writer.entryCount());
            // The re-attached writer goes on writing the same entries (its free lists and clocks were rebuilt).
            writer.remove(a, keys, 10, 10);
            early.query(keys, 20, null, result);
            assertEquals(10, result.depthOf(a));
        }
    }

    @Test
    void shouldRecreateWithAReasonWhenTheGeometryDiffersAndGivePodsTheirSlotsBack() {
        final int a;
        final int b;
        try (IndexWriter writer = IndexWriter.open(context())) {
            a = writer.registerPod("pod-a", "m");
            b = writer.registerPod("pod-b", "m");
            writer.store(a, TestIndexes.chain(1, 4), 0, 4);
        }
        try (IndexWriter writer = IndexWriter.open(context().slotsPerShard(128))) {
            assertFalse(writer.attached());
            assertTrue(writer.openReason().contains("slots per shard 64 -> 128"), writer.openReason());
            assertEquals(0, writer.entryCount());
            assertEquals(b, writer.registerPod("pod-b", "m"), "pod-b comes back first and still gets its slot");
            assertEquals(a, writer.registerPod("pod-a", "m"));
            assertEquals(2, writer.generation(a), "a new file: readers must re-learn the slot");
        }
    }

    @Test
    void shouldRepairAShardAndAPodEntryThatAKilledWriterLeftHalfChanged() throws Exception {
        final long[] keys = TestIndexes.chain(5, 24);
        final int a;
        try (IndexWriter writer = IndexWriter.open(context())) {
            a = writer.registerPod("pod-a", "m");
            writer.registerPod("pod-b", "m");
            writer.store(a, keys, 0, 24);
        }
        final Path file = context().conclude().indexFile();
        final IndexGeometry g = new IndexGeometry(4, 64, 256, 0.75);
        final long length = IndexDescriptor.fileLength(256, 4, 64);
        final int shard;
        try (MappedRegion region = MappedRegion.mapReadWrite(file, length)) {
            final MemorySegment s = region.segment();
            // Killed inside a backward shift: shard version odd, the first occupied entry copied into an empty one
            // further on (a key twice) and a half-inserted entry (pods word written, key not).
            final long h = IndexDescriptor.spread(IndexDescriptor.storedKey(keys[0]));
            shard = g.shardOf(h);
            final long header = g.shardHeader(shard);
            Layouts.LONG.setRelease(s, header + IndexDescriptor.SHARD_VERSION_OFFSET,
                s.get(ValueLayout.JAVA_LONG, header + IndexDescriptor.SHARD_VERSION_OFFSET) + 1);
            final long table = g.table(shard);
            int occupied = -1;
            int empty = -1;
            for (int i = 0; i < 64; i++) {
                final long key = s.get(ValueLayout.JAVA_LONG, g.entry(table, i));
                if (key != 0 && occupied < 0) {
                    occupied = i;
                } else if (key == 0 && occupied >= 0 && empty < 0) {
                    empty = i;
                }
            }
            MemorySegment.copy(s, g.entry(table, occupied), s, g.entry(table, empty), 16);
            for (int i = empty + 1; i < 64; i++) {
                if (s.get(ValueLayout.JAVA_LONG, g.entry(table, i)) == 0) {
                    s.set(ValueLayout.JAVA_LONG, g.entry(table, i) + 8, 0x0100_0000_0000_0005L);
                    break;
                }
            }
            // Killed while registering pod-b: its pod entry's seqlock is odd.
            final long pod = IndexDescriptor.podEntryOffset(1);
            s.set(ValueLayout.JAVA_LONG, pod, s.get(ValueLayout.JAVA_LONG, pod) + 1);
        }
        try (IndexReader reader = reader(); IndexWriter writer = IndexWriter.open(context())) {
            assertTrue(writer.attached());
            assertFalse(writer.repairClean());
            assertTrue(writer.repairSummary().contains("1 shards rebuilt"), writer.repairSummary());
            assertTrue(writer.repairSummary().contains("1 pod entries repaired"), writer.repairSummary());
            assertEquals(24, writer.entryCount(), "the duplicate and the half-inserted entry are gone");
            try (MappedRegion view = MappedRegion.mapReadOnly(file, length)) {
                final long version = view.segment().get(ValueLayout.JAVA_LONG,
                    g.shardHeader(shard) + IndexDescriptor.SHARD_VERSION_OFFSET);
                assertEquals(0, version & 1, "the shard is even again");
            }
            final PrefixResult result = new PrefixResult();
            reader.query(keys, 24, null, result);
            assertEquals(24, result.depthOf(a), "nothing lost");
            assertEquals(IndexDescriptor.POD_STATE_DRAINING, writer.podState(1), "a half-registered pod is swept");
            assertFalse(reader.isAlive(1));
            while (writer.sweepStep() > 0) {
                assertTrue(writer.isSweeping() || writer.podState(1) == IndexDescriptor.POD_STATE_FREE);
            }
            assertEquals(IndexDescriptor.POD_STATE_FREE, writer.podState(1));
            writer.remove(a, keys, 0, 24);
            assertEquals(0, writer.entryCount());
        }
    }

    @Test
    void shouldLeaveNoShardOddWhenAWriterThreadFailsInTheMiddleOfAChange() {
        final long[] keys = TestIndexes.chain(9, 16);
        try (IndexWriter writer = IndexWriter.open(context()); IndexReader reader = reader()) {
            final int a = writer.registerPod("pod-a", "m");
            writer.store(a, keys, 0, 16);
            writer.deleteFault(() -> {
                throw new IllegalStateException("injected: writer failed inside a deletion");
            });
            final IllegalStateException ex = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
                () -> writer.remove(a, keys, 8, 1));
            assertTrue(ex.getMessage().startsWith("injected"));
            writer.deleteFault(null);
            // The shard was rebuilt before the exception left the writer: readers answer at once, nothing lost.
            final PrefixResult result = new PrefixResult();
            final long start = System.nanoTime();
            reader.query(keys, 16, null, result);
            assertTrue(System.nanoTime() - start < 1_000_000_000L, "a reader never waits on a failed writer");
            assertEquals(16, result.depthOf(a), "the failed deletion did not happen");
            writer.remove(a, keys, 8, 8);
            reader.query(keys, 16, null, result);
            assertEquals(8, result.depthOf(a), "the writer goes on");
        }
    }
}
