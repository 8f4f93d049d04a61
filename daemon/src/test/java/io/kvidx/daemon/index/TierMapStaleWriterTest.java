package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.tiers.TierMap;
import io.kvidx.client.tiers.TierMapDescriptor;
import io.kvidx.client.tiers.TierMapReader;
import io.kvidx.ffm.Layouts;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A tier map lookup on a region the writer holds locked (its version made odd through a writable mapping, as a
 * writer stopped mid-change would leave it) follows the index's rule: {@link TierMapReader#BUSY} after the read
 * bound while the writer's heartbeat (the index's) is fresh, {@link TierMapReader#STALE} once it has stopped. Each
 * waiting lookup runs on another thread with a timeout far above the bound, so a lookup that waits for the writer
 * fails the test instead of hanging it.
 */
@Timeout(30)
class TierMapStaleWriterTest {
    private static final long READ_BOUND_NS = 1_000_000;
    private static final long GIVE_UP_WITHIN_MS = 2_000;
    private static final long KEY = 77;

    @TempDir
    Path dir;

    @Test
    void shouldAnswerBusyWhileTheWriterIsAliveAndStaleOnceItsHeartbeatStopped() throws Exception {
        try (IndexWriter index = IndexWriter.create(TestIndexes.small(dir).tierMapBlocks(64));
             IndexReader reader = IndexReader.attach(TestIndexes.reader(dir).heartbeatTimeoutMs(1_000));
             TierMapReader tiers = TierMapReader.attach(index.tiers().path(), READ_BOUND_NS, reader::isWriterStale);
             TierMap map = new TierMap(index.tiers().path(), s -> index.generation(s), 0, READ_BOUND_NS,
                 reader::isWriterStale);
             Arena arena = Arena.ofShared()) {
            final int slot = index.registerPod("p", "m");
            final int generation = index.generation(slot);
            index.store(slot, new long[] {KEY}, 0, 1);
            index.tiers().update(slot, KEY, TierMapDescriptor.MEDIUM_CPU, 0, 0);
            assertEquals(TierMapDescriptor.MEDIUM_CPU, tiers.tierBits(slot, generation, KEY));
            assertEquals(TierMapDescriptor.MEDIUM_CPU, map.tierBits(slot, KEY));

            final MemorySegment rw = SeqlockProtocolTest.mapReadWrite(index.tiers().path(), arena);
            final long version = TierMapDescriptor.regionOffset(slot, tiers.slotsPerRegion())
                + TierMapDescriptor.REGION_VERSION_OFFSET;
            final long even = (long) Layouts.LONG.getAcquire(rw, version);
            Layouts.LONG.setRelease(rw, version, even + 1);

            index.heartbeat(System.currentTimeMillis());
            assertFalse(reader.isWriterStale());
            assertEquals(TierMapReader.BUSY, bounded(() -> tiers.tierBits(slot, generation, KEY)));
            assertEquals(TierMapReader.BUSY, bounded(() -> map.tierBits(slot, KEY)));
            assertEquals(1, tiers.busyCount());

            index.heartbeat(System.currentTimeMillis() - 60_000);
            assertTrue(reader.isWriterStale());
            assertEquals(TierMapReader.STALE, bounded(() -> tiers.tierBits(slot, generation, KEY)));
            assertEquals(TierMapReader.STALE, bounded(() -> map.tierBits(slot, KEY)));
            assertEquals(TierMap.GPU, TierMap.tierOf(TierMapReader.STALE), "a stale answer is an unknown tier");
            assertEquals(1, tiers.busyCount(), "a stale writer is not counted as busy");

            Layouts.LONG.setRelease(rw, version, even + 2);
            assertEquals(TierMapDescriptor.MEDIUM_CPU, tiers.tierBits(slot, generation, KEY),
                "answers again once the region is even, stale heartbeat or not");
        }
    }

    @Test
    void shouldKeepAnsweringBusyWithoutAStaleWriterCheck() throws Exception {
        try (IndexWriter index = IndexWriter.create(TestIndexes.small(dir).tierMapBlocks(64));
             TierMapReader tiers = TierMapReader.attach(index.tiers().path(), READ_BOUND_NS);
             Arena arena = Arena.ofShared()) {
            final int slot = index.registerPod("p", "m");
            final int generation = index.generation(slot);
            final MemorySegment rw = SeqlockProtocolTest.mapReadWrite(index.tiers().path(), arena);
            final long version = TierMapDescriptor.regionOffset(slot, tiers.slotsPerRegion())
                + TierMapDescriptor.REGION_VERSION_OFFSET;
            Layouts.LONG.setRelease(rw, version, (long) Layouts.LONG.getAcquire(rw, version) + 1);
            index.heartbeat(System.currentTimeMillis() - 60_000);
            assertEquals(TierMapReader.BUSY, bounded(() -> tiers.tierBits(slot, generation, KEY)));
        }
    }

    private static int bounded(final IntSupplier lookup) throws Exception {
        return CompletableFuture.supplyAsync(lookup::getAsInt).get(GIVE_UP_WITHIN_MS, TimeUnit.MILLISECONDS);
    }
}
