package io.kvidx.client.keys;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import java.util.SplittableRandom;

import net.openhft.hashing.LongHashFunction;
import org.junit.jupiter.api.Test;

class RouterKeyHasherTest {
    /** The key definition of docs/keys.md, built the slow way: the message bytes, then XXH3-64. */
    static long referenceKey(final long parent, final int[] tokens, final int offset, final int blockSize) {
        final ByteBuffer msg = ByteBuffer.allocate(8 + 4 * blockSize).order(ByteOrder.LITTLE_ENDIAN);
        msg.putLong(parent);
        for (int i = 0; i < blockSize; i++) {
            msg.putInt(tokens[offset + i]);
        }
        return LongHashFunction.xx3().hashBytes(msg.array());
    }

    static long referenceSeed(final String model, final String lora, final String salt) {
        final ByteBuffer msg = ByteBuffer.allocate(1024).order(ByteOrder.LITTLE_ENDIAN);
        msg.put("kvidx.router.v1".getBytes(StandardCharsets.US_ASCII));
        for (final String field : new String[] {model, lora, salt}) {
            if (field == null) {
                msg.put((byte)0);
            } else {
                final byte[] b = field.getBytes(StandardCharsets.UTF_8);
                msg.put((byte)1).putInt(b.length).put(b);
            }
        }
        return LongHashFunction.xx3().hashBytes(msg.array(), 0, msg.position());
    }

    @Test
    void shouldMatchTheReferenceDefinitionForEveryMessageLengthPath() {
        final SplittableRandom random = new SplittableRandom(4L);
        // Block sizes 1..80 cover the 9-16, 17-128, 129-240 and long (> 240 bytes) XXH3 paths; 300 and 600
        // cover several stripes and more than one 1 KiB block.
        final int[] sizes = new int[82];
        for (int i = 0; i < 80; i++) {
            sizes[i] = i + 1;
        }
        sizes[80] = 300;
        sizes[81] = 600;
        for (final int bs : sizes) {
            final RouterKeyHasher hasher = new RouterKeyHasher(bs);
            for (int round = 0; round < 20; round++) {
                final int[] tokens = random.ints(bs + 3).toArray();
                final int off = random.nextInt(4);
                final long parent = random.nextLong();
                assertEquals(referenceKey(parent, tokens, off, bs), hasher.blockKey(parent, tokens, off),
                    "blockSize=" + bs);
            }
        }
    }

    @Test
    void shouldReproduceTheDocumentedCheckValues() {
        // docs/keys.md; computed independently with python-xxhash from the written definition.
        final long seed = RouterKeyHasher.chainSeed("Qwen/Qwen3-0.6B", null, null);
        assertEquals("14453068898186846636", Long.toUnsignedString(seed));
        final int[] tokens = new int[32];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = i;
        }
        final long[] keys = new long[2];
        assertEquals(2, new RouterKeyHasher(16).keys(seed, tokens, 32, keys));
        assertEquals("7826063163776810328", Long.toUnsignedString(keys[0]));
        assertEquals("11786072796337667649", Long.toUnsignedString(keys[1]));
    }

    @Test
    void shouldChainKeysFromTheSeedAndSkipThePartialBlock() {
        final RouterKeyHasher hasher = new RouterKeyHasher();
        final int[] tokens = new SplittableRandom(9L).ints(16 * 5 + 7, 0, 152_000).toArray();
        final long seed = RouterKeyHasher.chainSeed("Qwen/Qwen3-0.6B", null, null);
        final long[] out = new long[10];
        assertEquals(5, hasher.keys(seed, tokens, tokens.length, out));
        long parent = seed;
        for (int b = 0; b < 5; b++) {
            parent = referenceKey(parent, tokens, 16 * b, 16);
            assertEquals(parent, out[b], "block " + b);
        }
        assertEquals(0L, out[5]);
        assertEquals(0, hasher.keys(seed, tokens, 15, out));
    }

    @Test
    void shouldExtendAChainIncrementally() {
        final RouterKeyHasher hasher = new RouterKeyHasher(16);
        final int[] tokens = new SplittableRandom(10L).ints(16 * 9, 0, 50_000).toArray();
        final long seed = RouterKeyHasher.chainSeed("m", "adapter", "salt");
        final long[] whole = new long[9];
        hasher.keys(seed, tokens, tokens.length, whole);

        final long[] parts = new long[9];
        assertEquals(3, hasher.extend(seed, tokens, 0, 3 * 16 + 5, parts, 0));
        assertEquals(6, hasher.extend(parts[2], tokens, 3 * 16, 6 * 16, parts, 3));
        assertArrayEquals(whole, parts);
    }

    @Test
    void shouldWriteOnlyAsManyKeysAsFit() {
        final RouterKeyHasher hasher = new RouterKeyHasher(4);
        final int[] tokens = new int[40];
        final long[] whole = new long[10];
        hasher.keys(1L, tokens, 40, whole);
        final long[] small = new long[3];
        assertEquals(3, hasher.keys(1L, tokens, 40, small));
        assertEquals(whole[2], small[2]);
        final long[] tail = new long[5];
        assertEquals(2, hasher.extend(1L, tokens, 0, 40, tail, 3));
        assertEquals(whole[1], tail[4]);
    }

    @Test
    void shouldDeriveTheChainSeedFromModelLoraAndSalt() {
        assertEquals(referenceSeed(null, null, null), RouterKeyHasher.chainSeed(null, null, null));
        assertEquals(referenceSeed("Qwen/Qwen3-0.6B", "Alice", "s\u00e9l"),
            RouterKeyHasher.chainSeed("Qwen/Qwen3-0.6B", "Alice", "s\u00e9l"));
        final Set<Long> seeds = new HashSet<>();
        final String[][] variants = {
            {null, null, null}, {"", null, null}, {null, "", null}, {null, null, ""},
            {"m", null, null}, {null, "m", null}, {null, null, "m"}, {"m", "a", null}, {"m", null, "a"},
            {"ma", null, null}, {"m", "a", "s"}, {"m", "a", "t"},
        };
        for (final String[] v : variants) {
            seeds.add(RouterKeyHasher.chainSeed(v[0], v[1], v[2]));
        }
        assertEquals(variants.length, seeds.size());
    }

    @Test
    void shouldRejectBadArguments() {
        assertThrows(IllegalArgumentException.class, () -> new RouterKeyHasher(0));
        final RouterKeyHasher hasher = new RouterKeyHasher(16);
        assertThrows(IndexOutOfBoundsException.class, () -> hasher.blockKey(0L, new int[15], 0));
        assertThrows(IndexOutOfBoundsException.class, () -> hasher.keys(0L, new int[15], 16, new long[1]));
        assertThrows(IndexOutOfBoundsException.class, () -> hasher.extend(0L, new int[32], 0, 32, new long[1], 2));
    }

    @Test
    void shouldAllocateNothingOnTheKeyPaths() {
        final com.sun.management.ThreadMXBean threads =
            (com.sun.management.ThreadMXBean)java.lang.management.ManagementFactory.getThreadMXBean();
        org.junit.jupiter.api.Assumptions.assumeTrue(threads.isThreadAllocatedMemorySupported(),
            "SKIPPED: this JVM cannot measure per-thread allocation");
        final RouterKeyHasher small = new RouterKeyHasher(16);
        final RouterKeyHasher large = new RouterKeyHasher(300);
        final int[] tokens = new SplittableRandom(3L).ints(2048, 0, 150_000).toArray();
        final long[] keys = new long[2048];
        long sink = 0;
        for (int round = 0; round < 2; round++) {
            final long before = threads.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < 2_000; i++) {
                sink += small.keys(i, tokens, tokens.length, keys);
                sink += large.extend(i, tokens, 0, tokens.length, keys, 0);
                sink += small.blockKey(i, tokens, 16);
            }
            final long allocated = threads.getCurrentThreadAllocatedBytes() - before;
            if (round == 1) {
                // Round 0 warms up (class loading, JIT); the measuring calls themselves allocate nothing.
                assertEquals(0L, allocated, "bytes allocated by 6,000 key computations (sink " + sink + ")");
            }
        }
    }

    @Test
    void shouldGiveDistinctKeysToNeighbouringTokens() {
        final RouterKeyHasher hasher = new RouterKeyHasher(16);
        final int[] tokens = new int[16];
        final long base = hasher.blockKey(0L, tokens, 0);
        for (int i = 0; i < 16; i++) {
            tokens[i] = 1;
            assertNotEquals(base, hasher.blockKey(0L, tokens, 0));
            tokens[i] = 0;
        }
    }
}
