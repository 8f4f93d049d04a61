package io.kvidx.bench;

import io.kvidx.daemon.index.IndexWriter;

import java.util.SplittableRandom;

/**
 * Bounded store/remove churn on an index: each step stores a chain of fresh keys for one pod and removes the chain
 * stored {@code window} steps earlier, so the index holds a steady {@code window x chainLength} extra entries and
 * never needs to evict. Keys come from a pool of {@code 2 x window} chains, reused only after their removal.
 *
 * <p><b>Note:</b> not thread safe; the single writer thread calls {@link #step()}.
 */
public final class ChurnDriver {
    private final IndexWriter writer;
    private final int[] slots;
    private final int window;
    private final long[][] pool;
    private final int chainLength;
    private long steps;
    private long stored;
    private long removed;

    /**
     * @param writer      the index writer; pods 0..pods-1 must be registered in slots 0..pods-1.
     * @param pods        pods to rotate over.
     * @param chainLength keys per step.
     * @param window      steps a chain stays stored.
     * @param seed        key seed (pick one unlikely to collide with the workload's keys).
     */
    public ChurnDriver(final IndexWriter writer, final int pods, final int chainLength, final int window,
        final long seed) {
        this(writer, java.util.stream.IntStream.range(0, pods).toArray(), randomPool(window * 2, chainLength, seed),
            window);
    }

    /**
     * @param writer the index writer; the slots must be registered.
     * @param slots  the pods to rotate over, by slot (a writer thread's own pods).
     * @param pool   the chains, all of one length, taken in turn: at least {@code 2 x window} of them, so that a chain
     *               is reused only after its removal.
     * @param window steps a chain stays stored.
     */
    public ChurnDriver(final IndexWriter writer, final int[] slots, final long[][] pool, final int window) {
        if (pool.length < 2 * window || slots.length == 0) {
            throw new IllegalArgumentException("a pool of at least 2 x window chains and a pod are required");
        }
        this.writer = writer;
        this.slots = slots.clone();
        this.window = window;
        this.chainLength = pool[0].length;
        this.pool = pool;
    }

    private static long[][] randomPool(final int chains, final int chainLength, final long seed) {
        final long[][] pool = new long[chains][chainLength];
        final SplittableRandom rnd = new SplittableRandom(seed);
        for (final long[] chain : pool) {
            for (int i = 0; i < chainLength; i++) {
                chain[i] = Workload.nonZero(rnd);
            }
        }
        return pool;
    }

    /**
     * @param windowChains steps a chain stays stored.
     * @param chainLength  keys per step.
     * @return index capacity the churn needs beyond the workload.
     */
    public static long spareBlocks(final int windowChains, final int chainLength) {
        return (long) windowChains * chainLength + 1024;
    }

    /**
     * Stores one chain and removes the one stored {@code window} steps ago.
     *
     * @return keys the store made new for the pod (the chain length while the pool's keys stay unique); the keys
     *         the remove took away are added to {@link #removed()}.
     */
    public int step() {
        final long s = steps++;
        final int added = writer.store(slots[(int) (s % slots.length)], pool[(int) (s % pool.length)], 0, chainLength);
        stored += added;
        final long old = s - window;
        if (old >= 0) {
            removed += writer.remove(slots[(int) (old % slots.length)], pool[(int) (old % pool.length)], 0,
                chainLength);
        }
        return added;
    }

    /**
     * @return (pod, block) stores so far that were new for the pod, as the writer reported them.
     */
    public long stored() {
        return stored;
    }

    /**
     * @return (pod, block) holdings removed so far, as the writer reported them (0 until the window is full).
     */
    public long removed() {
        return removed;
    }

    /**
     * @return steps taken.
     */
    public long steps() {
        return steps;
    }

    /**
     * @return keys per step.
     */
    public int chainLength() {
        return chainLength;
    }
}
