package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
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
 * The pod table repair of a re-attaching writer: a pod entry a killed writer left odd (with garbage in it) is
 * cleared and taken down, and the repair publishes in the writer's order: the pod table version is incremented
 * before any alive bit is set (a reader that loads the alive words, then the version, never sees a bit the repair
 * set under the old version).
 */
@Timeout(30)
class PodTableRepairTest {
    private static final int MAX_PODS = 256;

    @TempDir
    Path dir;

    private IndexWriterContext context() {
        return new IndexWriterContext().dir(dir).cell("repair").shardCount(4).slotsPerShard(64).maxChainLength(64)
            .maxPods(MAX_PODS);
    }

    private MappedRegion mapFile() throws Exception {
        return MappedRegion.mapReadWrite(context().conclude().indexFile(), IndexDescriptor.fileLength(MAX_PODS, 4, 64));
    }

    /** Registers pods a, b and c, closes the writer, and returns their slots. */
    private int[] threePods() {
        try (IndexWriter writer = IndexWriter.open(context())) {
            return new int[] {writer.registerPod("pod-a", "m"), writer.registerPod("pod-b", "m"),
                writer.registerPod("pod-c", "m")};
        }
    }

    /** A writer killed inside a change of the slot's entry: seqlock odd, every field garbage, state alive. */
    private static void tear(final MemorySegment s, final int slot) {
        final long base = IndexDescriptor.podEntryOffset(slot);
        final long seq = s.get(ValueLayout.JAVA_LONG, base + IndexDescriptor.POD_SEQ_OFFSET);
        s.asSlice(base + IndexDescriptor.POD_STATE_OFFSET,
            IndexDescriptor.POD_ENTRY_LENGTH - IndexDescriptor.POD_STATE_OFFSET).fill((byte) 0x5A);
        s.set(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_STATE_OFFSET, IndexDescriptor.POD_STATE_ALIVE);
        s.set(ValueLayout.JAVA_LONG, base + IndexDescriptor.POD_SEQ_OFFSET, seq | 1);
    }

    private static boolean aliveBit(final MemorySegment s, final int slot) {
        return ((long) Layouts.LONG.getAcquire(s, PodTable.aliveWordOffset(slot)) & (1L << slot)) != 0;
    }

    private static long podTableVersion(final MemorySegment s) {
        return (long) Layouts.LONG.getAcquire(s, (long) IndexDescriptor.POD_TABLE_VERSION_OFFSET);
    }

    @Test
    void shouldClearAPodEntryLeftOddWithGarbageAndTakeItsSlotDown() throws Exception {
        final int[] slots = threePods();
        final int torn = slots[1];
        final int generation;
        try (MappedRegion region = mapFile()) {
            final MemorySegment s = region.segment();
            generation = s.get(ValueLayout.JAVA_INT, IndexDescriptor.podEntryOffset(torn)
                + IndexDescriptor.POD_GENERATION_OFFSET);
            tear(s, torn);
            assertTrue(aliveBit(s, torn));
        }
        try (IndexWriter writer = IndexWriter.open(context());
             IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir).cell("repair")
                 .attachTimeoutMs(1_000).heartbeatTimeoutMs(0));
             MappedRegion region = mapFile()) {
            assertTrue(writer.attached(), writer.openReason());
            assertTrue(writer.repairSummary().contains("1 pod entries repaired"), writer.repairSummary());
            final MemorySegment s = region.segment();
            final long base = IndexDescriptor.podEntryOffset(torn);
            assertEquals(0, s.get(ValueLayout.JAVA_LONG, base + IndexDescriptor.POD_SEQ_OFFSET) & 1, "seqlock even");
            assertEquals(generation, s.get(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_GENERATION_OFFSET),
                "generation kept: the slot's next pod gets a new one");
            for (long offset = IndexDescriptor.POD_STATE_OFFSET + 4; offset < IndexDescriptor.POD_ENTRY_LENGTH;
                offset++) {
                assertEquals(0, s.get(ValueLayout.JAVA_BYTE, base + offset), "byte " + offset + " cleared");
            }
            assertFalse(aliveBit(s, torn));
            assertFalse(reader.isAlive(torn));
            final IndexReader.PodInfo info = reader.pod(torn);
            assertEquals(IndexDescriptor.POD_STATE_DRAINING, info.state(), "owner unknown: swept, then freed");
            assertEquals("", info.podId());
            assertEquals("", info.model());
            assertFalse(info.suspect());
            assertTrue(reader.isAlive(slots[0]));
            assertTrue(reader.isAlive(slots[2]));
            while (writer.sweepStep() > 0) {
                assertTrue(writer.isSweeping() || writer.podState(torn) == IndexDescriptor.POD_STATE_FREE);
            }
            assertEquals(IndexDescriptor.POD_STATE_FREE, writer.podState(torn));
        }
    }

    /** Repair driven step by step: the version moves in the first step, alive bits are set only in the second. */
    @Test
    void shouldIncrementThePodTableVersionBeforeSettingAnyAliveBit() throws Exception {
        final int[] slots = threePods();
        try (MappedRegion region = mapFile()) {
            final MemorySegment s = region.segment();
            final int unset = slots[0];
            final int torn = slots[2];
            // Killed after registering pod-a's entry and before setting its alive bit; killed inside pod-c's entry.
            Layouts.LONG.getAndBitwiseAnd(s, PodTable.aliveWordOffset(unset), ~(1L << unset));
            tear(s, torn);
            final long before = podTableVersion(s);

            final IndexRepair.Report report = new IndexRepair.Report();
            assertTrue(IndexRepair.repairPodEntries(s, MAX_PODS, report));
            assertEquals(before + 1, podTableVersion(s), "the version moves first");
            assertFalse(aliveBit(s, unset), "no alive bit set before the version moved");
            assertFalse(aliveBit(s, torn), "a torn entry's bit is cleared at once");
            assertTrue(aliveBit(s, slots[1]), "an alive pod keeps its bit throughout");
            assertEquals(1, report.podEntriesRepaired);
            assertEquals(1, report.aliveBitsFixed);

            IndexRepair.setAliveBits(s, MAX_PODS, report);
            assertTrue(aliveBit(s, unset));
            assertFalse(aliveBit(s, torn));
            assertEquals(before + 1, podTableVersion(s), "setting the bit does not move the version again");
            assertEquals(2, report.aliveBitsFixed);

            final IndexRepair.Report clean = new IndexRepair.Report();
            assertFalse(IndexRepair.repairPodEntries(s, MAX_PODS, clean), "a consistent table is left alone");
            IndexRepair.setAliveBits(s, MAX_PODS, clean);
            assertEquals(before + 1, podTableVersion(s));
            assertTrue(clean.clean());
        }
    }

    /** Only an alive bit missing: the version still moves before the bit is set. */
    @Test
    void shouldIncrementTheVersionWhenOnlyAnAliveBitIsMissing() throws Exception {
        final int[] slots = threePods();
        try (MappedRegion region = mapFile()) {
            final MemorySegment s = region.segment();
            Layouts.LONG.getAndBitwiseAnd(s, PodTable.aliveWordOffset(slots[1]), ~(1L << slots[1]));
            final long before = podTableVersion(s);
            final IndexRepair.Report report = new IndexRepair.Report();
            assertTrue(IndexRepair.repairPodEntries(s, MAX_PODS, report));
            assertEquals(before + 1, podTableVersion(s));
            assertFalse(aliveBit(s, slots[1]));
            IndexRepair.setAliveBits(s, MAX_PODS, report);
            assertTrue(aliveBit(s, slots[1]));
            assertEquals(1, report.aliveBitsFixed);
        }
    }
}
