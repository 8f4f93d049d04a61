package io.kvidx.client.index;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

import static io.kvidx.client.index.IndexDescriptor.ENTRY_KEY_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_LENGTH;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_LENGTH_SHIFT;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_PODS_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.LINE_ENTRIES;
import static io.kvidx.client.index.IndexDescriptor.OVERFLOW_LENGTH;
import static io.kvidx.client.index.IndexDescriptor.SHARD_HEADER_LENGTH;
import static io.kvidx.client.index.IndexDescriptor.SHARD_VERSION_OFFSET;

/**
 * Single-key lookups of an {@link IndexReader}, the steps of every {@link ChainSearch}: a key's home entry offset,
 * and its pods under its shard's {@link Seqlock} (read the version, find the entry, read its pods word, check the
 * version; a shard locked or changed under it is retried within the reader's read bound, {@link ReadWait}).
 *
 * <p><b>Note:</b> thread safe and allocation-free: it only reads the file and writes the caller's words. The
 * daemon's IndexWriter is the only writer of the file.
 */
final class KeyLookup {
    /**
     * Plain loads without the alignment check (every field is 8-byte aligned anyway) for data read between two
     * reads of a seqlock version; explicit fences order them.
     */
    private static final VarHandle PLAIN = ValueLayout.JAVA_LONG_UNALIGNED.varHandle();

    private final MemorySegment segment;
    private final ReadWait wait;
    private final int shardBits;
    private final int slotBits;
    private final int slotMask;
    private final long shardHeadersOffset;
    private final long tablesOffset;
    private final long shardTableLength;
    private final long overflowOffset;
    private final int overflowPerShard;
    private final int overflowMask;
    /** Pods words are plain 64-bit bitmaps (at most 64 pods): one load per lookup. */
    private final boolean direct;

    /**
     * @param segment       the reader's read-only mapping, validated.
     * @param wait          the reader's read bound.
     * @param shardCount    the file's shards (from its header, as the reader read it).
     * @param slotsPerShard the file's entries per shard.
     * @param maxPods       the file's pod capacity (its cell).
     */
    KeyLookup(final MemorySegment segment, final ReadWait wait, final int shardCount, final int slotsPerShard,
        final int maxPods) {
        this.segment = segment;
        this.wait = wait;
        this.shardBits = Integer.numberOfTrailingZeros(shardCount);
        this.slotBits = Integer.numberOfTrailingZeros(slotsPerShard);
        this.slotMask = slotsPerShard - 1;
        this.shardHeadersOffset = IndexDescriptor.shardHeadersOffset(maxPods);
        this.tablesOffset = IndexDescriptor.tablesOffset(maxPods, shardCount);
        this.shardTableLength = (long) slotsPerShard * ENTRY_LENGTH;
        this.overflowOffset = IndexDescriptor.overflowOffset(maxPods, shardCount, slotsPerShard);
        this.overflowPerShard = IndexDescriptor.overflowPerShard(maxPods, slotsPerShard);
        this.overflowMask = Math.max(0, overflowPerShard - 1);
        this.direct = IndexDescriptor.isDirect(maxPods);
    }

    /** File offset of a stored key's home entry: shard and slot are consecutive bits of its Fibonacci hash. */
    long homeOffset(final long storedKey) {
        final long index = IndexDescriptor.homeIndex(IndexDescriptor.spread(storedKey), shardBits, slotBits);
        return tablesOffset + (index << ENTRY_LENGTH_SHIFT);
    }

    /**
     * The pods word of a stored key in a direct cell (0 when absent), found from its home entry's file offset
     * under the shard's seqlock.
     */
    long direct(final long k, final long home) {
        final MemorySegment s = segment;
        final long inTables = home - tablesOffset;
        final long tableMask = shardTableLength - 1;
        final long table = home - (inTables & tableMask);
        final int shard = (int) (inTables >>> (slotBits + ENTRY_LENGTH_SHIFT));
        final long versionOffset = shardHeadersOffset + (long) shard * SHARD_HEADER_LENGTH + SHARD_VERSION_OFFSET;
        int spins = 0;
        long waitStartNs = 0;
        while (true) {
            // Plain loads with explicit fences: the same ordering as getAcquire / getOpaque without their
            // alignment checks, and the table wraps by a mask (docs/perf.md, layout 3.0 runs: 7 % less in-cache time).
            final long v1 = Seqlock.beginReadUnchecked(s, versionOffset);
            if (!Seqlock.isWriting(v1)) {
                long pods = 0;
                final long e = find(k, home, table, tableMask);
                if (e >= 0) {
                    // The key is published (release) after its pods word: read the pods word after the key.
                    if (!ProtocolFaults.OMIT_ENTRY_ACQUIRE_FENCE) {
                        VarHandle.acquireFence();
                    }
                    pods = (long) PLAIN.get(s, e + ENTRY_PODS_OFFSET);
                }
                if (ProtocolFaults.OMIT_SHARD_VERSION_CHECK || Seqlock.validateUnchecked(s, versionOffset, v1)) {
                    return pods;
                }
            }
            Thread.onSpinWait();
            if ((++spins & (ReadWait.SPINS_PER_CLOCK_CHECK - 1)) == 0) {
                waitStartNs = wait.check(waitStartNs, spins, shard, -1);
            }
        }
    }

    /**
     * The file offset of the entry holding a stored key, or -1 when the key is absent; called between the two
     * reads of its shard's seqlock version. A key's home is the first entry of a cache line (layout 3.0) and it sits
     * in the first free entry probing on from there, with no free entry between (removals shift spilled keys back).
     * So the four keys of the home line are compared at once, without a branch on where the key sits (a
     * data-dependent branch per lookup; without it a cold 64-pod query is 16 % faster, docs/perf.md, 2026-11-26);
     * only a full home line without the key sends the lookup on, entry by entry, from the next line.
     */
    private long find(final long k, final long home, final long table, final long tableMask) {
        final MemorySegment s = segment;
        final long k0 = (long) PLAIN.get(s, home + ENTRY_KEY_OFFSET);
        final long k1 = (long) PLAIN.get(s, home + ENTRY_LENGTH + ENTRY_KEY_OFFSET);
        final long k2 = (long) PLAIN.get(s, home + 2 * ENTRY_LENGTH + ENTRY_KEY_OFFSET);
        final long k3 = (long) PLAIN.get(s, home + 3 * ENTRY_LENGTH + ENTRY_KEY_OFFSET);
        final long hits = isZero(k0 ^ k) | isZero(k1 ^ k) << 1 | isZero(k2 ^ k) << 2 | isZero(k3 ^ k) << 3;
        final long free = isZero(k0) | isZero(k1) | isZero(k2) | isZero(k3);
        if (hits != 0) {
            return home + ((long) Long.numberOfTrailingZeros(hits) << ENTRY_LENGTH_SHIFT);
        }
        if (free != 0) {
            return -1;
        }
        long e = table + ((home + LINE_ENTRIES * ENTRY_LENGTH - table) & tableMask);
        for (int n = LINE_ENTRIES; n <= slotMask; n++) {
            final long ek = (long) PLAIN.get(s, e + ENTRY_KEY_OFFSET);
            if (ek == k) {
                return e;
            }
            if (ek == 0) {
                return -1;
            }
            e = table + ((e + ENTRY_LENGTH - table) & tableMask);
        }
        return -1;
    }

    /**
     * Loads, without the seqlock, the pods a stored key's entry points to when it sits in its home line: the first
     * word of its overflow bitmap for an overflow entry, else its pods word. Only a prefetch: the value means
     * nothing (a concurrent writer may move anything), it only brings the line a later {@link #lookup} of the key
     * will read into the cache. Every offset stays inside the mapping: the bitmap index is masked to its shard.
     *
     * @param k    the stored key.
     * @param home its home entry's offset ({@link #homeOffset}).
     * @return a value to sum into a sink.
     */
    long touchPods(final long k, final long home) {
        final MemorySegment s = segment;
        for (int i = 0; i < LINE_ENTRIES; i++) {
            final long e = home + ((long) i << ENTRY_LENGTH_SHIFT);
            if ((long) PLAIN.get(s, e + ENTRY_KEY_OFFSET) == k) {
                final long pods = (long) PLAIN.get(s, e + ENTRY_PODS_OFFSET);
                if (pods >= 0 || direct) {
                    return pods;
                }
                final int shard = (int) ((home - tablesOffset) >>> (slotBits + ENTRY_LENGTH_SHIFT));
                return (long) PLAIN.get(s, overflowOffset
                    + ((long) shard * overflowPerShard + ((int) pods & overflowMask)) * OVERFLOW_LENGTH);
            }
        }
        return 0;
    }

    /** 1 when x is 0, else 0, without a branch. */
    private static long isZero(final long x) {
        return ~(x | -x) >>> 63;
    }

    /** See {@link IndexReader#lookup}; also the general cell's lookup of a chain search. */
    boolean lookup(final long key, final long[] out) {
        final long k = IndexDescriptor.storedKey(key);
        if (direct) {
            // A direct cell deletes an entry with its last pod: a non-zero word is a present key.
            out[0] = direct(k, homeOffset(k));
            out[1] = 0;
            out[2] = 0;
            out[3] = 0;
            return out[0] != 0;
        }
        final long h = IndexDescriptor.spread(k);
        final int shard = (int) (h >>> (64 - shardBits));
        final long versionOffset = shardHeadersOffset + (long) shard * SHARD_HEADER_LENGTH + SHARD_VERSION_OFFSET;
        final long table = tablesOffset + shard * shardTableLength;
        final long home = table + ((long) IndexDescriptor.homeSlot(h, shardBits, slotBits) << ENTRY_LENGTH_SHIFT);
        final long tableMask = shardTableLength - 1;
        final MemorySegment s = segment;
        int spins = 0;
        long waitStartNs = 0;
        while (true) {
            final long v1 = Seqlock.beginRead(s, versionOffset);
            if (!Seqlock.isWriting(v1)) {
                long w0 = 0;
                long w1 = 0;
                long w2 = 0;
                long w3 = 0;
                final long e = find(k, home, table, tableMask);
                if (e >= 0) {
                    // The key is published (release) after its pods word: read the pods word after the key.
                    if (!ProtocolFaults.OMIT_ENTRY_ACQUIRE_FENCE) {
                        VarHandle.acquireFence();
                    }
                    final long pods = (long) PLAIN.get(s, e + ENTRY_PODS_OFFSET);
                    if (pods >= 0) {
                        for (int i = 0, count = IndexDescriptor.inlineCount(pods); i < count; i++) {
                            final int slot = IndexDescriptor.inlineSlot(pods, i);
                            final long bit = 1L << slot;
                            switch (slot >>> 6) {
                                case 0 -> w0 |= bit;
                                case 1 -> w1 |= bit;
                                case 2 -> w2 |= bit;
                                default -> w3 |= bit;
                            }
                        }
                    } else {
                        // Masked: even a corrupted index cannot point outside this shard's overflow area.
                        final long o = overflowOffset
                            + ((long) shard * overflowPerShard + ((int) pods & overflowMask)) * OVERFLOW_LENGTH;
                        // The bitmap is filled before its index is published (release) in the pods word.
                        VarHandle.acquireFence();
                        w0 = (long) PLAIN.get(s, o);
                        w1 = (long) PLAIN.get(s, o + 8);
                        w2 = (long) PLAIN.get(s, o + 16);
                        w3 = (long) PLAIN.get(s, o + 24);
                    }
                }
                if (ProtocolFaults.OMIT_SHARD_VERSION_CHECK || Seqlock.validate(s, versionOffset, v1)) {
                    out[0] = w0;
                    out[1] = w1;
                    out[2] = w2;
                    out[3] = w3;
                    return e >= 0;
                }
            }
            Thread.onSpinWait();
            if ((++spins & (ReadWait.SPINS_PER_CLOCK_CHECK - 1)) == 0) {
                waitStartNs = wait.check(waitStartNs, spins, shard, -1);
            }
        }
    }
}
