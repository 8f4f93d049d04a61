package io.kvidx.jcstress;

import io.kvidx.client.index.IndexDescriptor;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Lanes of shared index cells for the entry tests: each lane is {@value #KEYS} keys with the same home line, absent
 * from the index while the lane is free. Stored in order, the first four fill the home line and the fifth spills
 * into the first entry of the next line, so deleting the first shifts the other four back (backward-shift
 * deletion) and the fifth leaves the probe sequence's second line for the home line.
 *
 * <p>Cells: 2 shards of 32,768 entries, 256 pod slots ({@link #GENERAL}) or 64 ({@link #DIRECT}), two registered
 * pods ({@code pod-a}, {@code pod-b}). Lanes sit on every
 * third line of a shard (home line, spill line, one empty line), never on a shard's last line, so that no two lanes'
 * probe runs touch and a change in one never moves another's entries (it may bump their shard's version: their
 * readers retry). Keys are made for their line by inverting the Fibonacci hash
 * ({@link IndexDescriptor#spread}), so a cell has about 5,460 lanes.
 *
 * <p><b>Note:</b> thread safe: lanes come from a {@link LanePool}.
 */
public final class EntryLanes {
    /** Keys per lane. */
    public static final int KEYS = 5;
    /** The general cell (more than 64 pods: inline pod lists), as the daemon creates by default. */
    public static final EntryLanes GENERAL = new EntryLanes("entries", IndexDescriptor.MAX_PODS);
    /** A direct cell (at most 64 pods: the pods word is a bitmap, read by the reader's separate direct path). */
    public static final EntryLanes DIRECT = new EntryLanes("entries-direct", 64);

    private static final int SHARDS = 2;
    private static final int SLOTS_PER_SHARD = 1 << 15;
    private static final int SHARD_BITS = Integer.numberOfTrailingZeros(SHARDS);
    private static final int SLOT_BITS = Integer.numberOfTrailingZeros(SLOTS_PER_SHARD);
    /** The multiplicative inverse of the Fibonacci multiplier modulo 2^64 (Newton's iteration). */
    private static final long UNSPREAD = inverse(IndexDescriptor.FIBONACCI_MULTIPLIER);

    private final String kind;
    private final int maxPods;
    private final LanePool<Lane> pool = new LanePool<>(this::newCell);
    /** Used under the pool's lock only (newCell). */
    private final SplittableRandom random = new SplittableRandom(0x6B76_6964_78L);

    /**
     * A lane.
     *
     * @param cell  its cell.
     * @param keys  {@value #KEYS} keys with the same home line.
     * @param home  their home entry's index over all tables (shard x slots per shard + slot).
     * @param podA  slot of {@code pod-a}.
     * @param podB  slot of {@code pod-b}.
     */
    public record Lane(Cell cell, long[] keys, long home, int podA, int podB) {
        /**
         * @param slot a pod slot.
         * @param out  a lookup's pod words.
         * @return true when they hold exactly that pod.
         */
        public static boolean holdsOnly(final int slot, final long[] out) {
            for (int w = 0; w < out.length; w++) {
                if (out[w] != (w == slot >>> 6 ? 1L << slot : 0L)) {
                    return false;
                }
            }
            return true;
        }

        /**
         * @param out a lookup's pod words.
         * @return true when they hold no pod.
         */
        public static boolean none(final long[] out) {
            return (out[0] | out[1] | out[2] | out[3]) == 0;
        }
    }

    private EntryLanes(final String kind, final int maxPods) {
        this.kind = kind;
        this.maxPods = maxPods;
    }

    /**
     * @return a free lane (its keys absent).
     */
    public Lane take() {
        return pool.take();
    }

    /**
     * Removes every key of a lane for both pods and frees it.
     *
     * @param lane a lane taken from this pool.
     */
    public void give(final Lane lane) {
        lane.cell().setup(() -> {
            for (int i = 0; i < KEYS; i++) {
                lane.cell().writer().remove(lane.podA(), lane.keys(), i, 1);
                lane.cell().writer().remove(lane.podB(), lane.keys(), i, 1);
            }
        });
        pool.give(lane);
    }

    private List<Lane> newCell() {
        final Cell cell = Cell.create(kind, SHARDS, SLOTS_PER_SHARD, maxPods, 12);
        final int podA = cell.writer().registerPod("pod-a", "llama-3.1-8b-instruct");
        final int podB = cell.writer().registerPod("pod-b", "llama-3.1-8b-instruct");
        final int linesPerShard = SLOTS_PER_SHARD / IndexDescriptor.LINE_ENTRIES;
        final List<Lane> lanes = new ArrayList<>();
        for (int shard = 0; shard < SHARDS; shard++) {
            for (int line = 0; line + 1 < linesPerShard; line += 3) {
                final long home = (long) shard * SLOTS_PER_SHARD + (long) line * IndexDescriptor.LINE_ENTRIES;
                final long[] keys = new long[KEYS];
                for (int i = 0; i < KEYS; i++) {
                    keys[i] = keyAt(home);
                }
                lanes.add(new Lane(cell, keys, home, podA, podB));
            }
        }
        return lanes;
    }

    /** A random key whose home entry is {@code home} (an index over all tables, a line's first entry). */
    private long keyAt(final long home) {
        final int bits = SHARD_BITS + SLOT_BITS;
        while (true) {
            final long top = home | random.nextInt(IndexDescriptor.LINE_ENTRIES);
            final long spread = top << (64 - bits) | random.nextLong() >>> bits;
            final long key = spread * UNSPREAD;
            if (key != 0 && key != IndexDescriptor.ZERO_KEY_ALIAS) {
                final long check = IndexDescriptor.homeIndex(IndexDescriptor.spread(key), SHARD_BITS, SLOT_BITS);
                if (check != home) {
                    throw new IllegalStateException("key " + key + " has home " + check + ", not " + home);
                }
                return key;
            }
        }
    }

    private static long inverse(final long odd) {
        long x = odd;
        for (int i = 0; i < 5; i++) {
            x *= 2 - odd * x;
        }
        return x;
    }
}
