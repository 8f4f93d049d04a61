package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.ffm.Layouts;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.util.BitSet;

/**
 * The overflow bitmaps of a general cell (more than 64 pods): each shard's pool of bitmaps in the file, its free list
 * on the heap, and its in-use count in the shard header. An entry whose block gains an 8th holder takes a bitmap
 * ({@link #alloc}); a deleted or demoted entry gives it back ({@link #free}).
 *
 * <p>Layout (spec: docs/index-layout.md; C slots per shard, C/8 bitmaps per shard, offsets from
 * {@link IndexGeometry#overflowEntry}):
 * <pre>
 *   overflow area, 4 KiB aligned after the tables:
 *   +----------------------+----------------------+-----+----------------------+-----+
 *   | shard 0, bitmap 0    | shard 0, bitmap 1    | ... | shard 1, bitmap 0    | ... |
 *   +----------------------+----------------------+-----+----------------------+-----+
 *
 *   one bitmap (32 bytes): bit p % 64 of word p / 64 set when pod slot p holds the block
 *   0              8              16             24             32
 *   +--------------+--------------+--------------+--------------+
 *   | slots 0..63  | slots 64..127| slots 128..  | slots 192..  |
 *   +--------------+--------------+--------------+--------------+
 *
 *   shard header, SHARD_OVERFLOW_IN_USE_OFFSET: i32 bitmaps in use (release store on every alloc and free)
 *
 *   heap free list: freeStack[shard * C/8 + 0 .. freeTop[shard]) are the shard's free bitmap indexes
 * </pre>
 * A bitmap word is changed by one opaque store: readers reach it only through an entry's pods word published with
 * a release store, and retry when the shard's version moved (a freed bitmap may be reused at once).
 *
 * <p><b>Note:</b> written by the writer threads of {@link IndexWriter}, each holding the shard's lock
 * ({@link ShardLocks}). {@link IndexRepair} rebuilds a shard's free list: at attach, before any writer thread
 * starts, and after a failed change, under the shard's lock.
 */
final class OverflowPool {
    private static final VarHandle LONG = Layouts.LONG;
    private static final VarHandle INT = Layouts.INT;

    private final IndexGeometry g;
    private final MemorySegment segment;
    /** Free bitmap indexes, a stack per shard. */
    private final int[] freeStack;
    /** The height of each shard's stack. */
    private final int[] freeTop;

    OverflowPool(final IndexGeometry g, final MemorySegment segment) {
        this.g = g;
        this.segment = segment;
        this.freeStack = new int[g.shardCount * g.overflowPerShard];
        this.freeTop = new int[g.shardCount];
    }

    /**
     * @return the index of a free bitmap of the shard, now in use, or -1 when the pool is empty.
     */
    int alloc(final int shard) {
        final int top = freeTop[shard];
        if (top == 0) {
            return -1;
        }
        freeTop[shard] = top - 1;
        final long inUse = g.shardHeader(shard) + IndexDescriptor.SHARD_OVERFLOW_IN_USE_OFFSET;
        INT.setRelease(segment, inUse, (int) INT.get(segment, inUse) + 1);
        return freeStack[shard * g.overflowPerShard + top - 1];
    }

    void free(final int shard, final int index) {
        freeStack[shard * g.overflowPerShard + freeTop[shard]++] = index;
        final long inUse = g.shardHeader(shard) + IndexDescriptor.SHARD_OVERFLOW_IN_USE_OFFSET;
        INT.setRelease(segment, inUse, (int) INT.get(segment, inUse) - 1);
    }

    /**
     * Rebuilds a shard's free list and in-use count.
     *
     * @param used the bitmaps the shard's entries reference.
     */
    void rebuild(final int shard, final BitSet used) {
        int top = 0;
        for (int i = g.overflowPerShard - 1; i >= 0; i--) {
            if (!used.get(i)) {
                freeStack[shard * g.overflowPerShard + top++] = i;
            }
        }
        freeTop[shard] = top;
        INT.setRelease(segment, g.shardHeader(shard) + IndexDescriptor.SHARD_OVERFLOW_IN_USE_OFFSET,
            used.cardinality());
    }

    /**
     * Fills a bitmap just taken from the pool with {@code slot} and the slots of a full inline list, before the
     * entry's pods word points to it.
     */
    void fill(final long overflow, final long inlinePods, final int slot) {
        for (int w = 0; w < IndexDescriptor.POD_WORDS; w++) {
            LONG.setOpaque(segment, overflow + w * 8L, 0L);
        }
        orBit(overflow, slot);
        for (int i = 0; i < IndexDescriptor.PODS_INLINE_MAX; i++) {
            orBit(overflow, IndexDescriptor.inlineSlot(inlinePods, i));
        }
    }

    /**
     * @return false when {@code slot} was already set in the bitmap, true when it was set now.
     */
    boolean add(final long overflow, final int slot) {
        final long word = wordOf(overflow, slot);
        final long old = (long) LONG.get(segment, word);
        final long bit = 1L << slot;
        if ((old & bit) != 0) {
            return false;
        }
        LONG.setOpaque(segment, word, old | bit);
        return true;
    }

    /**
     * @return false when {@code slot} was not set in the bitmap, true when it was cleared now.
     */
    boolean remove(final long overflow, final int slot) {
        final long word = wordOf(overflow, slot);
        final long old = (long) LONG.get(segment, word);
        final long bit = 1L << slot;
        if ((old & bit) == 0) {
            return false;
        }
        LONG.setOpaque(segment, word, old & ~bit);
        return true;
    }

    /** Clears the slots of the pod mask {@code m0..m3} from a bitmap, storing only the words that change. */
    void clear(final long overflow, final long m0, final long m1, final long m2, final long m3) {
        clearBits(overflow, m0);
        clearBits(overflow + 8, m1);
        clearBits(overflow + 16, m2);
        clearBits(overflow + 24, m3);
    }

    boolean isEmpty(final long overflow) {
        return ((long) LONG.get(segment, overflow) | (long) LONG.get(segment, overflow + 8)
            | (long) LONG.get(segment, overflow + 16) | (long) LONG.get(segment, overflow + 24)) == 0;
    }

    /**
     * @return the number of slots set in a bitmap.
     */
    int count(final long overflow) {
        return Long.bitCount((long) LONG.get(segment, overflow))
            + Long.bitCount((long) LONG.get(segment, overflow + 8))
            + Long.bitCount((long) LONG.get(segment, overflow + 16))
            + Long.bitCount((long) LONG.get(segment, overflow + 24));
    }

    /**
     * @return an inline pods word listing the slots set in a bitmap of at most
     * {@link IndexDescriptor#PODS_INLINE_MAX} slots.
     */
    long toInline(final long overflow) {
        long inline = 0;
        for (int w = 0; w < IndexDescriptor.POD_WORDS; w++) {
            long bits = (long) LONG.get(segment, overflow + w * 8L);
            while (bits != 0) {
                inline = PodsWord.inlineAdd(inline, (w << 6) + Long.numberOfTrailingZeros(bits));
                bits &= bits - 1;
            }
        }
        return inline;
    }

    /** The offset of the bitmap word that holds {@code slot}. */
    private static long wordOf(final long overflow, final int slot) {
        return overflow + (slot >>> 6) * 8L;
    }

    private void orBit(final long overflow, final int slot) {
        final long word = wordOf(overflow, slot);
        LONG.setOpaque(segment, word, (long) LONG.get(segment, word) | (1L << slot));
    }

    private void clearBits(final long offset, final long mask) {
        if (mask != 0) {
            final long old = (long) LONG.get(segment, offset);
            if ((old & mask) != 0) {
                LONG.setOpaque(segment, offset, old & ~mask);
            }
        }
    }
}
