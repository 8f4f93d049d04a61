package io.kvidx.daemon.index;

import io.kvidx.client.tiers.TierMapDescriptor;
import io.kvidx.client.tiers.TierMapReader;
import io.kvidx.ffm.SharedFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The host tier map file: every header and region offset pinned byte by byte, the writer and the reader agreeing
 * with a plain model, slot reuse (a reader never sees a previous generation's tiers), bounded memory with counted
 * eviction, and the superseded flag of a replaced file.
 */
@Timeout(60)
class TierMapTest {
    private static final long READ_BOUND_NS = 1_000_000;

    @TempDir
    Path dir;

    private Path indexFile() {
        return dir.resolve("cell").resolve("index");
    }

    private TierMapWriter create(final int maxPods, final int maxEntries) {
        return TierMapWriter.create(SharedFiles.forGroup(null), indexFile(), maxPods, maxEntries);
    }

    /** Home entry computed independently of the descriptor: the top log2(slots) bits of key x golden mod 2^64. */
    private static int home(final long key, final int slots) {
        final BigInteger product = new BigInteger(Long.toUnsignedString(key))
            .multiply(new BigInteger("9E3779B97F4A7C15", 16)).mod(BigInteger.ONE.shiftLeft(64));
        return product.shiftRight(64 - Integer.numberOfTrailingZeros(slots)).intValueExact();
    }

    @Test
    void shouldPinEveryOffsetOfTheFile() throws Exception {
        try (TierMapWriter w = create(4, 12)) {
            w.attach(1, 7);
            assertEquals(0x23, w.update(1, 42, 3, 2, 2), "GPU + CPU, CPU remote");
            final ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(w.path())).order(ByteOrder.LITTLE_ENDIAN);
            assertEquals(256 + 4 * (128 + 16 * 16), b.capacity());
            assertEquals("KVIDXTM1", new String(b.array(), 0, 8, StandardCharsets.US_ASCII));
            assertEquals(0x0001_0000, b.getInt(8), "layout 1.0.0");
            assertEquals(256, b.getInt(12));
            assertEquals(4, b.getInt(16), "max pods");
            assertEquals(16, b.getInt(20), "slots per region: 12 entries at load 0.75");
            assertEquals(12, b.getInt(24), "max entries");
            assertEquals(128, b.getInt(28), "region header length");
            assertTrue(b.getLong(32) > 0, "epoch");
            assertEquals(ProcessHandle.current().pid(), b.getLong(40));
            assertEquals(1792, b.getLong(48), "file length");
            assertEquals(0, b.getLong(56), "not superseded");
            final int region1 = 256 + 384;
            assertEquals(2, b.getLong(region1), "even version after one reset");
            assertEquals(7, b.getInt(region1 + 8), "generation");
            assertEquals(1, b.getInt(region1 + 12), "entry count");
            final int entry = region1 + 128 + 16 * home(42, 16);
            assertEquals(42, b.getLong(entry));
            assertEquals(0x23, b.getLong(entry + 8) & 0xFF, "media GPU|CPU, CPU's REMOTE flag");
            assertEquals(1, b.getLong(entry + 8) >>> 8, "store stamp");
            assertEquals(0, b.getInt(256 + 8), "region 0 unused: generation 0");
            assertEquals(PosixFilePermissions.fromString("rw-r-----"), Files.getPosixFilePermissions(w.path()));
            assertEquals(TierMapDescriptor.FILE_NAME, w.path().getFileName().toString());
        }
    }

    @Test
    void shouldAnswerOnlyForTheGenerationTheTiersBelongTo() {
        try (TierMapWriter w = create(4, 64); TierMapReader r = TierMapReader.attach(w.path(), READ_BOUND_NS)) {
            w.attach(2, 5);
            w.update(2, 1001, TierMapDescriptor.MEDIUM_CPU, 0, 0);
            assertEquals(TierMapDescriptor.MEDIUM_CPU, r.tierBits(2, 5, 1001));
            assertEquals(TierMapReader.ABSENT, r.tierBits(2, 5, 1002));
            assertEquals(TierMapReader.OTHER_GENERATION, r.tierBits(2, 4, 1001));
            assertEquals(TierMapReader.OTHER_GENERATION, r.tierBits(3, 5, 1001), "another slot's region");
            w.detach(2);
            assertEquals(TierMapReader.OTHER_GENERATION, r.tierBits(2, 5, 1001), "the pod went down");
            w.attach(2, 6);
            assertEquals(TierMapReader.OTHER_GENERATION, r.tierBits(2, 5, 1001), "the old pod's tiers never return");
            assertEquals(TierMapReader.ABSENT, r.tierBits(2, 6, 1001), "the new pod holds nothing yet");
            w.update(2, 1001, TierMapDescriptor.MEDIUM_GPU, 0, 0);
            w.attach(2, 6);
            assertEquals(TierMapDescriptor.MEDIUM_GPU, r.tierBits(2, 6, 1001), "attach to the same generation keeps");
            w.clear(2);
            assertEquals(TierMapReader.ABSENT, r.tierBits(2, 6, 1001), "cleared with the pod");
        }
    }

    @Test
    void shouldNotAttributeAPreviousPodsTiersToTheNextPodInItsSlot() {
        final IndexWriterContext context = new IndexWriterContext().dir(dir).cell("reuse").shardCount(2)
            .capacityBlocks(64).maxPods(1).tierMapBlocks(64).deleteOnClose(true);
        try (IndexWriter index = IndexWriter.create(context);
            TierMapReader r = TierMapReader.attach(index.tiers().path(), READ_BOUND_NS)) {
            final int a = index.registerPod("pod-a", "m");
            final int genA = index.generation(a);
            index.store(a, new long[] {77}, 0, 1);
            index.tiers().update(a, 77, TierMapDescriptor.MEDIUM_CPU, 0, 0);
            assertEquals(TierMapDescriptor.MEDIUM_CPU, r.tierBits(a, genA, 77));
            index.podDown(a);
            while (index.isSweeping()) {
                index.sweepStep();
            }
            final int c = index.registerPod("pod-c", "m");
            assertEquals(a, c, "one slot: pod C gets pod A's");
            assertEquals(genA + 1, index.generation(c));
            assertEquals(TierMapReader.OTHER_GENERATION, r.tierBits(c, genA, 77));
            assertEquals(TierMapReader.ABSENT, r.tierBits(c, genA + 1, 77), "C never inherits A's tiers");
            index.store(c, new long[] {77}, 0, 1);
            index.tiers().update(c, 77, TierMapDescriptor.MEDIUM_GPU, 0, 0);
            assertEquals(TierMapDescriptor.MEDIUM_GPU, r.tierBits(c, genA + 1, 77));
            assertEquals(TierMapReader.OTHER_GENERATION, r.tierBits(c, genA, 77), "nor A C's");
            index.clearPod(c);
            assertEquals(TierMapReader.ABSENT, r.tierBits(c, genA + 1, 77), "AllBlocksCleared clears the tiers");
        }
    }

    @Test
    void shouldAgreeWithAPlainModelThroughInsertsUpdatesAndShiftingRemovals() {
        try (TierMapWriter w = create(2, 48); TierMapReader r = TierMapReader.attach(w.path(), READ_BOUND_NS)) {
            w.attach(0, 1);
            final Map<Long, Integer> model = new HashMap<>();
            final SplittableRandom random = new SplittableRandom(12);
            for (int op = 0; op < 20_000; op++) {
                // 40 keys, some 0 and some colliding in the 64-slot region: no eviction, every shift exercised.
                final long key = random.nextInt(40) * 64L;
                final int media = random.nextInt(16);
                final int remote = random.nextInt(16);
                final int mask = random.nextInt(16);
                final int bits = w.update(0, key, media, mask, remote);
                if (media == 0) {
                    model.remove(key);
                    assertEquals(0, bits);
                } else {
                    final int old = model.getOrDefault(key, 0) >>> 4;
                    final int expected = media | (((old & ~mask) | (remote & mask)) & media) << 4;
                    model.put(key, expected);
                    assertEquals(expected, bits);
                }
                if (op % 97 == 0) {
                    for (long k = 0; k < 40; k++) {
                        final int want = model.getOrDefault(k * 64, TierMapReader.ABSENT);
                        assertEquals(want, r.tierBits(0, 1, k * 64), "key " + k * 64 + " after op " + op);
                        assertEquals(want, w.tierBits(0, k * 64));
                    }
                    assertEquals(model.size(), w.size(0));
                    assertEquals(model.size(), r.entryCount(0, 1));
                }
            }
            assertEquals(0, w.evictions());
        }
    }

    @Test
    void shouldEvictTheLeastRecentlyUpdatedOfASampleWhenARegionIsFull() {
        try (TierMapWriter w = create(1, 12); TierMapReader r = TierMapReader.attach(w.path(), READ_BOUND_NS)) {
            w.attach(0, 1);
            for (long k = 1; k <= 12; k++) {
                w.update(0, k, TierMapDescriptor.MEDIUM_GPU, 0, 0);
            }
            assertEquals(12, w.size(0));
            assertEquals(0, w.evictions());
            w.update(0, 13, TierMapDescriptor.MEDIUM_CPU, 0, 0);
            assertEquals(12, w.size(0), "memory is fixed: one in, one out");
            assertEquals(1, w.evictions());
            assertEquals(TierMapDescriptor.MEDIUM_CPU, r.tierBits(0, 1, 13));
            int present = 0;
            for (long k = 1; k <= 12; k++) {
                final int bits = r.tierBits(0, 1, k);
                assertTrue(bits == TierMapDescriptor.MEDIUM_GPU || bits == TierMapReader.ABSENT, "key " + k);
                present += bits == TierMapReader.ABSENT ? 0 : 1;
            }
            assertEquals(11, present);
        }
    }

    @Test
    void shouldMarkTheFileItReplacesSuperseded() {
        try (TierMapWriter first = create(2, 16); TierMapReader r = TierMapReader.attach(first.path(), READ_BOUND_NS)) {
            assertFalse(r.isSuperseded());
            try (TierMapWriter second = create(2, 16); TierMapReader r2 = TierMapReader.attach(second.path(),
                READ_BOUND_NS)) {
                assertTrue(r.isSuperseded(), "the old mapping tells its readers to follow the new file");
                assertFalse(r2.isSuperseded());
                assertTrue(r.epoch() != r2.epoch());
            }
        }
    }
}
