package io.kvidx.client.keys;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.kvidx.client.keys.vllm.MultiModalFeature;
import io.kvidx.client.keys.vllm.VllmExtraKeys;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.openhft.hashing.LongHashFunction;
import org.junit.jupiter.api.Test;

/**
 * Router keys with extras (docs/keys.md, "Extras"): the bytes against a reference built the slow way and hashed by
 * zero-allocation-hashing's XXH3, the per-block multimodal walk against vLLM's rule ({@link VllmExtraKeys}, itself
 * checked against CPython), v1 keys unchanged without extras, and no allocation.
 */
class RouterKeyExtrasTest {
    record Item(String id, int offset, int length) {
    }

    /** The documented extras bytes, the slow way. */
    static byte[] referenceExtras(final List<Object[]> items, final byte[] digest) {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteBuffer b = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
        out.writeBytes(b.putInt(0, items.size()).array());
        for (final Object[] item : items) {
            final byte[] id = ((String)item[0]).getBytes(StandardCharsets.UTF_8);
            out.writeBytes(b.putInt(0, id.length).array());
            out.writeBytes(id);
            out.writeBytes(b.putInt(0, (Integer)item[1]).array());
        }
        if (digest == null) {
            out.write(0);
        } else {
            out.write(1);
            out.writeBytes(b.putInt(0, digest.length).array());
            out.writeBytes(digest);
        }
        return out.toByteArray();
    }

    static long referenceKey(final long parent, final int[] tokens, final int offset, final int blockSize,
        final List<Object[]> items, final byte[] digest) {
        if (items.isEmpty() && digest == null) {
            return RouterKeyHasherTest.referenceKey(parent, tokens, offset, blockSize);
        }
        final byte[] extras = referenceExtras(items, digest);
        final ByteBuffer msg = ByteBuffer.allocate(8 + 4 * blockSize + extras.length).order(ByteOrder.LITTLE_ENDIAN);
        msg.putLong(parent);
        for (int i = 0; i < blockSize; i++) {
            msg.putInt(tokens[offset + i]);
        }
        msg.put(extras);
        return LongHashFunction.xx3().hashBytes(msg.array());
    }

    /** vLLM's per-block multimodal keys, from the vLLM-side rule: {@code (identifier, offset - start)} tuples. */
    static List<Object[]> vllmItems(final List<Item> items, final int start, final int end) {
        final List<MultiModalFeature> features = new ArrayList<>();
        items.stream().sorted(Comparator.comparingInt(Item::offset))
            .forEach(i -> features.add(new MultiModalFeature(i.id(), i.offset(), i.length())));
        final Object[] tuple = new VllmExtraKeys(null, null, features,
            VllmExtraKeys.MultiModalKeyStyle.IDENTIFIER_AND_OFFSET).forBlock(start, end);
        final List<Object[]> out = new ArrayList<>();
        if (tuple != null) {
            for (final Object o : tuple) {
                out.add((Object[])o);
            }
        }
        return out;
    }

    @Provide
    Arbitrary<List<Item>> items() {
        final Arbitrary<String> ids = Arbitraries.strings().withCharRange('a', 'f').ofMinLength(1).ofMaxLength(4)
            .injectDuplicates(0.3);
        return Combinators.combine(ids, Arbitraries.integers().between(0, 150), Arbitraries.integers().between(1, 60))
            .as(Item::new).list().ofMaxSize(6);
    }

    @Property(tries = 400)
    void shouldKeyEveryBlockOverTheItemsVllmListsForIt(@ForAll("items") final List<Item> items,
        @ForAll @IntRange(min = 1, max = 40) final int blockSize, @ForAll @IntRange(min = 0, max = 240) final int n,
        @ForAll @IntRange(min = 0, max = 3) final int digestBlocks) {
        final RouterKeyHasher hasher = new RouterKeyHasher(blockSize);
        final int[] tokens = new SplittableRandom(n * 31L + blockSize).ints(n, 0, 1000).toArray();
        final RequestExtras extras = new RequestExtras();
        for (final Item i : items) {
            extras.addMultiModal(i.id(), i.offset(), i.length());
        }
        final byte[] digests = new byte[digestBlocks * RequestExtras.EMBEDS_DIGEST_LENGTH];
        new SplittableRandom(digestBlocks).nextBytes(digests);
        extras.promptEmbedsDigests(digests, 0, digestBlocks);
        final long[] keys = new long[n / blockSize];
        assertEquals(n / blockSize, hasher.keys(77L, tokens, n, extras, keys));
        long parent = 77L;
        for (int b = 0; b < keys.length; b++) {
            final byte[] digest = b < digestBlocks ? java.util.Arrays.copyOfRange(digests, 32 * b, 32 * b + 32) : null;
            parent = referenceKey(parent, tokens, b * blockSize, blockSize,
                vllmItems(items, b * blockSize, (b + 1) * blockSize), digest);
            assertEquals(parent, keys[b], "block " + b);
        }
        // Extending from any block boundary gives the same chain.
        if (keys.length > 1) {
            final int k = keys.length / 2;
            final long[] tail = new long[keys.length];
            System.arraycopy(keys, 0, tail, 0, k);
            hasher.extend(keys[k - 1], tokens, k * blockSize, n - k * blockSize, extras, tail, k);
            assertArrayEquals(keys, tail);
        }
    }

    @Test
    void shouldKeepVersionOneKeysForBlocksWithoutExtras() {
        final RouterKeyHasher hasher = new RouterKeyHasher(16);
        final int[] tokens = new SplittableRandom(5L).ints(16 * 6, 0, 150_000).toArray();
        final long seed = RouterKeyHasher.chainSeed("m", null, "salt");
        final long[] plain = new long[6];
        hasher.keys(seed, tokens, tokens.length, plain);
        final long[] none = new long[6];
        hasher.keys(seed, tokens, tokens.length, new RequestExtras(), none);
        assertArrayEquals(plain, none);
        // An image on blocks 2..3 only: blocks 0 and 1 keep their keys, 2 and later change (the chain).
        final long[] image = new long[6];
        hasher.keys(seed, tokens, tokens.length, new RequestExtras().addMultiModal("img", 40, 20), image);
        assertEquals(plain[0], image[0]);
        assertEquals(plain[1], image[1]);
        for (int b = 2; b < 6; b++) {
            assertNotEquals(plain[b], image[b], "block " + b);
        }
        assertEquals(plain[1], hasher.blockKey(plain[0], tokens, 16, new BlockExtras()));
    }

    @Test
    void shouldSeparateDifferentImagesBehindTheSamePlaceholders() {
        final RouterKeyHasher hasher = new RouterKeyHasher(16);
        final int[] tokens = new int[64];
        java.util.Arrays.fill(tokens, 16, 48, 151_655);
        final Set<Long> lastKeys = new HashSet<>();
        final String[] ids = {"image-a", "image-b", "image-a\u0000", "image-"};
        for (final String id : ids) {
            final long[] keys = new long[4];
            hasher.keys(1L, tokens, 64, new RequestExtras().addMultiModal(id, 16, 32), keys);
            lastKeys.add(keys[3]);
        }
        // The same image at another position is another prompt too.
        final long[] moved = new long[4];
        hasher.keys(1L, tokens, 64, new RequestExtras().addMultiModal("image-a", 17, 31), moved);
        lastKeys.add(moved[3]);
        assertEquals(ids.length + 1, lastKeys.size());
    }

    @Test
    void shouldNotBeFooledByItemBoundaries() {
        // ("ab", 1) ("c", 2) and ("a", ...) ("bc", ...) must differ: identifiers are length-prefixed.
        final RouterKeyHasher hasher = new RouterKeyHasher(4);
        final int[] tokens = {9, 9, 9, 9};
        final long a = hasher.blockKey(0L, tokens, 0, new BlockExtras().item("ab", 1).item("c", 2));
        final long b = hasher.blockKey(0L, tokens, 0, new BlockExtras().item("a", 1).item("bc", 2));
        final long c = hasher.blockKey(0L, tokens, 0, new BlockExtras().item("ab", 1).item("c", 2)
            .digest(new byte[32], 0, 32));
        assertNotEquals(a, b);
        assertNotEquals(a, c);
        final byte[] utf8 = "h\u00e9\ud83d\ude00\ud800x".getBytes(StandardCharsets.UTF_8);
        assertEquals(hasher.blockKey(3L, tokens, 0, new BlockExtras().item(utf8, 0, utf8.length, -7)),
            hasher.blockKey(3L, tokens, 0, new BlockExtras().item("h\u00e9\ud83d\ude00\ud800x", -7)));
    }

    @Test
    void shouldKeepItemsInOffsetOrderAndRejectBadRanges() {
        final RequestExtras e = new RequestExtras().addMultiModal("c", 30, 2).addMultiModal("a", 10, 2)
            .addMultiModal("b", 10, 5);
        assertEquals(10, e.itemOffset(0));
        assertEquals(2, e.itemLength(0));
        assertEquals(5, e.itemLength(1));
        assertEquals(30, e.itemOffset(2));
        assertThrows(IllegalArgumentException.class, () -> e.addMultiModal("x", -1, 2));
        assertThrows(IllegalArgumentException.class, () -> e.addMultiModal("x", 0, 0));
        assertThrows(IllegalArgumentException.class, () -> e.addMultiModal("x", Integer.MAX_VALUE, 2));
        assertThrows(IllegalArgumentException.class,
            () -> new RouterKeyHasher(16).extend(0L, new int[64], 8, 32, e, new long[4], 0));
        assertThrows(IndexOutOfBoundsException.class, () -> e.promptEmbedsDigests(new byte[63], 0, 2));
    }

    @Test
    void shouldReproduceTheDocumentedCheckValues() {
        // docs/keys.md, "Extras"; computed independently with python-xxhash from the written definition.
        final int[] tokens = new int[32];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = i;
        }
        final RouterKeyHasher hasher = new RouterKeyHasher(16);
        final long seed = RouterKeyHasher.chainSeed("Qwen/Qwen3-0.6B", null, null);
        final long[] keys = new long[2];
        hasher.keys(seed, tokens, 32, new RequestExtras().addMultiModal("img-A", 4, 20), keys);
        assertEquals(CHECK_MM_0, Long.toUnsignedString(keys[0]));
        assertEquals(CHECK_MM_1, Long.toUnsignedString(keys[1]));
        final long salted = RouterKeyHasher.chainSeed("Qwen/Qwen3-0.6B", null, "tenant-a");
        assertEquals(CHECK_SALT_SEED, Long.toUnsignedString(salted));
        hasher.keys(salted, tokens, 32, keys);
        assertEquals(CHECK_SALT_0, Long.toUnsignedString(keys[0]));
        assertEquals(CHECK_SALT_1, Long.toUnsignedString(keys[1]));
    }

    static final String CHECK_MM_0 = "1120839064125022060";
    static final String CHECK_MM_1 = "10211117881086589895";
    static final String CHECK_SALT_SEED = "10227510407219449583";
    static final String CHECK_SALT_0 = "8446255860077153739";
    static final String CHECK_SALT_1 = "12208996491782064300";

    @Test
    void shouldAllocateNothingOnTheExtrasPathOnceWarm() {
        final com.sun.management.ThreadMXBean threads =
            (com.sun.management.ThreadMXBean)java.lang.management.ManagementFactory.getThreadMXBean();
        org.junit.jupiter.api.Assumptions.assumeTrue(threads.isThreadAllocatedMemorySupported(),
            "SKIPPED: this JVM cannot measure per-thread allocation");
        final RouterKeyHasher hasher = new RouterKeyHasher(16);
        final int[] tokens = new SplittableRandom(3L).ints(2048, 0, 150_000).toArray();
        final long[] keys = new long[128];
        final RequestExtras extras = new RequestExtras();
        final BlockExtras block = new BlockExtras();
        final byte[] digests = new byte[128 * 32];
        final String[] ids = {"img-0123456789abcdef", "img-fedcba9876543210", "audio-1"};
        long sink = 0;
        // Round 0 warms up; then the least of five rounds must be 0. One round can allocate on a loaded host
        // without the path allocating per call (144 B in one round on a clean clone, load 4: objects the compiler
        // had scalar-replaced, materialized when compiled code deoptimizes); a path that allocates per call
        // allocates in every round.
        final long[] rounds = new long[5];
        for (int round = 0; round <= rounds.length; round++) {
            final long before = threads.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < 500; i++) {
                extras.clear();
                extras.addMultiModal(ids[i % 3], 40, 600).addMultiModal(ids[(i + 1) % 3], 700, 30)
                    .promptEmbedsDigests(digests, 0, i % 128);
                sink += hasher.keys(i, tokens, tokens.length, extras, keys);
                sink += hasher.blockKey(i, tokens, 16, block.clear().item(ids[i % 3], -3).digest(digests, 0, 32));
            }
            final long allocated = threads.getCurrentThreadAllocatedBytes() - before;
            if (round > 0) {
                rounds[round - 1] = allocated;
            }
        }
        assertEquals(0L, java.util.Arrays.stream(rounds).min().orElseThrow(), "bytes allocated by 1,000 extras key "
            + "computations, in each of five rounds: " + java.util.Arrays.toString(rounds) + " (sink " + sink + ")");
    }
}
