package io.kvidx.daemon.state;

import io.kvidx.ffm.MappedRegion;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A pod's engine-hash map agrees with a plain map, never holds more than its bound, survives a re-open by the
 * same pod and generation, starts empty for another, and repairs a backward shift a crash left half done.
 */
@Timeout(30)
class PodBlockMapTest {
    @TempDir
    Path dir;

    @Test
    void shouldKeepTheMainKvCacheGroupAcrossGrowthAndReopen() {
        final Path file = dir.resolve("g.blocks");
        try (PodBlockMap map = PodBlockMap.open(file, "pod-g", 1, 100_000)) {
            assertEquals(-1, map.mainGroup(), "not learned in a new map");
            map.mainGroup(2);
            for (long h = 1; h <= 10_000; h++) {
                map.store(h, h + 1, 1);
            }
        }
        try (PodBlockMap map = PodBlockMap.open(file, "pod-g", 1, 100_000)) {
            assertTrue(map.restored());
            assertEquals(10_000, map.size(), "the map grew past its first 4,096 slots");
            assertEquals(2, map.mainGroup());
        }
        try (PodBlockMap map = PodBlockMap.open(file, "pod-g", 2, 100_000)) {
            assertEquals(-1, map.mainGroup(), "the slot's next pod starts over");
        }
    }

    @Test
    void shouldGrowOnceToAReservedSizeAndKeepItsMappings() {
        try (PodBlockMap map = PodBlockMap.open(dir.resolve("r.blocks"), "pod-r", 1, 100_000)) {
            for (long h = 1; h <= 100; h++) {
                map.store(h, h + 1, 1);
            }
            assertEquals(4_096, map.slots(), "starts at 4,096 slots");
            map.reserve(10_000);
            assertEquals(PodBlockMap.slotsFor(10_000), map.slots(), "one grow to the reserved size");
            map.reserve(10); // never shrinks
            assertEquals(PodBlockMap.slotsFor(10_000), map.slots());
            for (long h = 101; h <= 10_000; h++) {
                map.store(h, h + 1, 1);
            }
            assertEquals(PodBlockMap.slotsFor(10_000), map.slots(), "no grow while filling the reservation");
            for (long h = 1; h <= 10_000; h++) {
                assertEquals(h + 1, map.get(h));
            }
            map.reserve(1_000_000); // capped at the map's bound
            assertEquals(PodBlockMap.slotsFor(100_000), map.slots());
            assertEquals(10_000, map.size());
        }
    }

    @Test
    void shouldAgreeWithAPlainMapAndStayWithinItsBound() {
        final int max = 1000;
        try (PodBlockMap map = PodBlockMap.open(dir.resolve("p.blocks"), "pod-a", 1, max)) {
            final Map<Long, Long> model = new HashMap<>();
            final SplittableRandom random = new SplittableRandom(3);
            long evicted = 0;
            for (int i = 0; i < 20_000; i++) {
                final long hash = random.nextInt(3_000) + 1;
                if (random.nextInt(3) == 0) {
                    final long key = map.release(hash, 1);
                    assertEquals(model.getOrDefault(hash, 0L), key);
                    model.remove(hash);
                } else {
                    if (map.get(hash) == 0 && map.isFull()) {
                        final long key = map.evictOldest();
                        assertEquals(model.remove(map.evictedHash()), key);
                        evicted++;
                    }
                    map.store(hash, hash * 7 + 1, 1);
                    model.put(hash, hash * 7 + 1);
                }
                assertTrue(map.size() <= max);
                assertEquals(model.size(), map.size());
            }
            assertTrue(evicted > 0, "the bound was reached");
            for (final Map.Entry<Long, Long> e : model.entrySet()) {
                assertEquals(e.getValue(), map.get(e.getKey()));
            }
        }
    }

    @Test
    void shouldKeepABlockUntilEveryMediumReleasedIt() {
        try (PodBlockMap map = PodBlockMap.open(dir.resolve("p.blocks"), "pod-a", 1, 16)) {
            map.store(5, 50, 1);
            map.store(5, 50, 2);
            assertEquals(50, map.release(5, 1));
            assertFalse(map.lastReleaseRemoved(), "still held on the second medium");
            assertEquals(2, map.media(5));
            assertEquals(50, map.release(5, 2));
            assertTrue(map.lastReleaseRemoved());
            assertEquals(0, map.release(5, 2));
        }
    }

    @Test
    void shouldKeepTheTierMarkOutOfTheMediaAndAcrossGrowthAndReopen() {
        final Path file = dir.resolve("t.blocks");
        try (PodBlockMap map = PodBlockMap.open(file, "pod-a", 1, 1 << 16)) {
            for (long h = 1; h <= 10_000; h++) {
                map.store(h, h + 100, 1);
                assertFalse(map.lastTiered(), "a new mapping has no tier entry");
                if (h % 3 == 0) {
                    map.markTiered(true);
                }
            }
            map.store(3, 103, 2);
            assertTrue(map.lastTiered());
            assertEquals(3, map.lastMedia(), "the mark is not a medium");
            assertEquals(3, map.media(3));
            assertEquals(103, map.release(3, 1));
            assertTrue(map.lastTiered());
            assertFalse(map.lastReleaseRemoved());
            assertEquals(2, map.lastMedia());
            assertEquals(103, map.keyIfLastMedium(3, 2), "only the mark is left besides the medium");
            assertEquals(103, map.release(3, 2));
            assertTrue(map.lastReleaseRemoved(), "the mark alone does not keep a mapping");
            assertEquals(0, map.lastMedia());
        }
        try (PodBlockMap map = PodBlockMap.open(file, "pod-a", 1, 1 << 16)) {
            assertTrue(map.restored());
            final int[] marked = new int[1];
            map.forEach((hash, key, media) -> assertEquals(1, media, "forEach gives media without the mark"));
            map.retier((hash, key, media) -> {
                marked[0]++;
                return hash % 2 == 0;
            });
            assertEquals(9_999, marked[0]);
            map.store(4, 104, 1);
            assertTrue(map.lastTiered(), "retier marked the even hashes");
            map.store(5, 105, 1);
            assertFalse(map.lastTiered());
        }
    }

    @Test
    void shouldReuseAFileOfTheFirstLayoutAndRewriteItsMagic() throws Exception {
        final Path file = dir.resolve("v1.blocks");
        try (PodBlockMap map = PodBlockMap.open(file, "pod-a", 2, 64)) {
            map.store(7, 70, 1);
        }
        try (MappedRegion r = MappedRegion.mapReadWrite(file, Files.size(file))) {
            r.segment().set(ValueLayout.JAVA_LONG_UNALIGNED, 0, PodBlockMapDescriptor.MAGIC_V1);
        }
        try (PodBlockMap map = PodBlockMap.open(file, "pod-a", 2, 64)) {
            assertTrue(map.restored());
            assertEquals(70, map.get(7));
        }
        try (MappedRegion r = MappedRegion.mapReadWrite(file, Files.size(file))) {
            assertEquals(PodBlockMapDescriptor.MAGIC, r.segment().get(ValueLayout.JAVA_LONG_UNALIGNED, 0));
        }
    }

    @Test
    void shouldSurviveAReopenByTheSamePodAndGenerationOnly() {
        final Path file = dir.resolve("p.blocks");
        try (PodBlockMap map = PodBlockMap.open(file, "pod-a", 3, 64)) {
            for (long h = 1; h <= 40; h++) {
                map.store(h, h + 100, 1);
            }
        }
        try (PodBlockMap map = PodBlockMap.open(file, "pod-a", 3, 64)) {
            assertTrue(map.restored());
            assertEquals(40, map.size());
            assertEquals(117, map.get(17));
        }
        try (PodBlockMap map = PodBlockMap.open(file, "pod-a", 4, 64)) {
            assertFalse(map.restored(), "a new generation of the slot: another owner");
            assertEquals(0, map.size());
        }
    }

    @Test
    void shouldRepairABackwardShiftACrashLeftHalfDone() throws Exception {
        final Path file = dir.resolve("p.blocks");
        final int max = 64;
        try (PodBlockMap map = PodBlockMap.open(file, "pod-a", 1, max)) {
            for (long h = 1; h <= 40; h++) {
                map.store(h, h + 100, 1);
            }
        }
        // A shift killed after copying an entry into the hole and before clearing its old place: a key twice.
        final long length = Files.size(file);
        try (MappedRegion region = MappedRegion.mapReadWrite(file, length)) {
            final MemorySegment s = region.segment();
            int full = -1;
            int empty = -1;
            for (int i = 0; i < PodBlockMap.slotsFor(max); i++) {
                final long key = s.get(ValueLayout.JAVA_LONG, PodBlockMapDescriptor.entry(i) + 8);
                if (key != 0 && full < 0) {
                    full = i;
                } else if (key == 0 && full >= 0 && empty < 0) {
                    empty = i;
                }
            }
            MemorySegment.copy(s, PodBlockMapDescriptor.entry(full), s, PodBlockMapDescriptor.entry(empty), 32);
            s.set(ValueLayout.JAVA_INT, 136, 41);
        }
        try (PodBlockMap map = PodBlockMap.open(file, "pod-a", 1, max)) {
            assertEquals(40, map.size(), "the duplicate is dropped");
            for (long h = 1; h <= 40; h++) {
                assertEquals(h + 100, map.get(h));
                assertEquals(h + 100, map.remove(h));
            }
            assertEquals(0, map.size());
        }
    }

    @Test
    void shouldStartSmallAndGrowWithThePodsBlocksAcrossAReopen() throws Exception {
        final Path file = dir.resolve("p.blocks");
        try (PodBlockMap map = PodBlockMap.open(file, "pod-a", 1, 100_000)) {
            assertEquals(PodBlockMapDescriptor.length(4096), Files.size(file),
                "a new map is small");
            for (long h = 1; h <= 10_000; h++) {
                map.store(h, h + 7, 1);
            }
            assertEquals(PodBlockMapDescriptor.length(16_384), Files.size(file),
                "doubled twice for 10,000 blocks at a load of at most 0.7");
        }
        try (PodBlockMap map = PodBlockMap.open(file, "pod-a", 1, 100_000)) {
            assertTrue(map.restored());
            assertEquals(10_000, map.size());
            for (long h = 1; h <= 10_000; h++) {
                assertEquals(h + 7, map.get(h));
            }
            assertFalse(Files.exists(dir.resolve("p.blocks.grow")), "no temporary file left");
        }
    }
}
