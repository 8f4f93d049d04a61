package io.kvidx.bench;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * A deterministic synthetic fleet state shared by every store under comparison: a pool of block chains with
 * shared prefixes and, for each chain, the pods that hold a prefix of it and how deep.
 *
 * <p>Shape (all drawn from one seed):
 * <ul>
 *   <li>{@code groupCount} prefix groups ("system prompts"), each with a shared prefix of
 *   {@code [0, chainLength / 2]} blocks;</li>
 *   <li>each chain belongs to one group: its first blocks are the group's prefix keys, the rest are its own;
 *   with cumulative chaining a key identifies the whole prefix, so sharing keys is exactly sharing prefixes;</li>
 *   <li>each chain is held by {@code 1 + Geometric(1/2)} distinct pods (mean 2); 7 in 8 of them hold the group's
 *   whole shared prefix and drop off at a uniform depth in the chain's own part, 1 in 8 drop off at a uniform depth
 *   in {@code [1, chainLength]}: many pods hold a group's early blocks, few hold a chain's tail;</li>
 *   <li>keys are uniform random non-zero 64-bit values, as router keys (hashes) are;</li>
 *   <li>chains are added until {@code blocks} distinct keys are held by at least one pod (the last chain may
 *   overshoot by less than one chain).</li>
 * </ul>
 * Every pod's holding is prefix-closed (a union of chain prefixes), so binary search and the exact walk agree.
 *
 * <p>Queries are whole chains of the pool, in a pre-generated uniform random order ({@link #queryOrder()}): part
 * of most chains is not indexed (beyond the deepest holder), as for a request longer than anything cached.
 *
 * <p><b>Note:</b> immutable after {@link #generate}; safe to share between threads.
 */
public final class Workload {
    /** Default number of pods. */
    public static final int PODS_DEFAULT = 64;
    /** Default chain length (blocks per query). */
    public static final int CHAIN_DEFAULT = 32;
    /** Default number of distinct blocks indexed: 2^20. */
    public static final int BLOCKS_DEFAULT = 1 << 20;
    /** Default seed. */
    public static final long SEED_DEFAULT = 0x6b76_6964_7842_656eL;
    /** Queries pre-generated in random order (cycled). */
    public static final int QUERY_ORDER_LENGTH = 1 << 20;
    /** Longest chain a workload generates: the index's maximum chain length (IndexWriterContext's default). */
    public static final int MAX_CHAIN = 8192;
    /** Depths at which a group's shared prefix ends an earlier turn, in workloads with more holders than B's. */
    public static final int TURNS = 4;
    /** Default mean number of pods holding a prefix of each chain (workload B). */
    public static final double HOLDERS_DEFAULT = 2.0;

    private final int pods;
    private final int chainLength;
    private final long seed;
    private final long[][] chains;
    private final int[] holderStart;
    private final byte[] holderPod;
    private final short[] holderDepth;
    private final int[] queryOrder;
    private final long blocks;
    private final long podBlocks;
    private final double meanHolders;
    private final String chainsDescription;

    private Workload(final int pods, final int chainLength, final long seed, final long[][] chains,
        final int[] holderStart, final byte[] holderPod, final short[] holderDepth, final int[] queryOrder,
        final long blocks, final long podBlocks, final double meanHolders, final String chainsDescription) {
        this.chainsDescription = chainsDescription;
        this.pods = pods;
        this.meanHolders = meanHolders;
        this.chainLength = chainLength;
        this.seed = seed;
        this.chains = chains;
        this.holderStart = holderStart;
        this.holderPod = holderPod;
        this.holderDepth = holderDepth;
        this.queryOrder = queryOrder;
        this.blocks = blocks;
        this.podBlocks = podBlocks;
    }

    /**
     * Generates a workload with {@link #HOLDERS_DEFAULT} holders per chain on average (workload B's shape).
     *
     * @param pods        pods, 1..256.
     * @param chainLength blocks per chain, 1..{@value #MAX_CHAIN}.
     * @param blocks      distinct blocks to index, >= 1.
     * @param seed        random seed; equal arguments give an equal workload.
     * @return the workload.
     */
    public static Workload generate(final int pods, final int chainLength, final long blocks, final long seed) {
        return generate(pods, chainLength, blocks, seed, HOLDERS_DEFAULT);
    }

    /**
     * Generates a workload whose chains are held by {@code 1 + Geometric} pods with the given mean. A mean of 2 gives
     * exactly the workload of {@link #generate(int, int, long, long)} (the same random draws). With any other mean a
     * chain's first two holders drop off as in workload B and the others hold the group's shared prefix to the end of
     * one of its {@link #TURNS} earlier turns. That is the shape of the Mooncake conversation trace on 128 pods: in a
     * replay that sends each request to a random pod (16,384-block LRU engines), every pod holds the common system
     * prompt, so a query meets all 128 pods as holders, at few distinct depths (1.7 on average, 3 at p90, 6 at p99,
     * counted in the trace's 512-token blocks). Blocks past the shared prefix keep one or two holders.
     *
     * @param pods        pods, 1..256.
     * @param chainLength blocks per chain, 1..{@value #MAX_CHAIN}.
     * @param blocks      distinct blocks to index, >= 1.
     * @param seed        random seed; equal arguments give an equal workload.
     * @param meanHolders mean number of pods holding a prefix of each chain, in [1, pods] (at least 1).
     * @return the workload.
     */
    public static Workload generate(final int pods, final int chainLength, final long blocks, final long seed,
        final double meanHolders) {
        if (pods < 1 || pods > 256) {
            throw new IllegalArgumentException("pods must be in [1, 256]: " + pods);
        }
        if (chainLength < 1 || chainLength > MAX_CHAIN) {
            throw new IllegalArgumentException("chain length must be in [1, " + MAX_CHAIN + "]: " + chainLength);
        }
        if (!(meanHolders >= 1) || meanHolders > pods) {
            throw new IllegalArgumentException("mean holders must be in [1, pods]: " + meanHolders);
        }
        // 1 + Geometric(p) has mean 1/p: go on to one more holder with probability 1 - p.
        final boolean coin = meanHolders == HOLDERS_DEFAULT;
        final double more = 1 - 1 / meanHolders;
        if (blocks < 1 || blocks > (1L << 28)) {
            throw new IllegalArgumentException("blocks must be in [1, 2^28]: " + blocks);
        }
        final SplittableRandom rnd = new SplittableRandom(seed);
        final int groupCount = (int) Math.max(1, Math.min(4096, blocks / (chainLength * 16L)));
        final long[][] groupPrefix = new long[groupCount][];
        final int[] groupHeld = new int[groupCount];
        for (int g = 0; g < groupCount; g++) {
            groupPrefix[g] = randomKeys(rnd, rnd.nextInt(chainLength / 2 + 1));
        }
        // Beyond workload B's shape: each group's prefix ends its earlier turns at TURNS depths (system prompt, first
        // answer, ...), and the pods that served one of them hold the prefix to there.
        final int[][] groupTurns = new int[coin ? 0 : groupCount][];
        for (int g = 0; g < groupTurns.length; g++) {
            groupTurns[g] = new int[TURNS];
            for (int t = 0; t < TURNS; t++) {
                groupTurns[g][t] = groupPrefix[g].length == 0 ? 0 : 1 + rnd.nextInt(groupPrefix[g].length);
            }
        }
        int capacity = (int) Math.max(16, blocks / Math.max(1, chainLength / 2));
        long[][] chains = new long[capacity][];
        int[] holderStart = new int[capacity + 1];
        byte[] holderPod = new byte[capacity * 2];
        short[] holderDepth = new short[capacity * 2];
        final int[] podScratch = new int[pods];
        int chainCount = 0;
        int holders = 0;
        long indexed = 0;
        long podBlocks = 0;
        while (indexed < blocks) {
            if (chainCount == capacity) {
                capacity *= 2;
                chains = Arrays.copyOf(chains, capacity);
                holderStart = Arrays.copyOf(holderStart, capacity + 1);
            }
            final int g = rnd.nextInt(groupCount);
            final long[] prefix = groupPrefix[g];
            final long[] chain = new long[chainLength];
            System.arraycopy(prefix, 0, chain, 0, prefix.length);
            for (int i = prefix.length; i < chainLength; i++) {
                chain[i] = nonZero(rnd);
            }
            int holderCount = 1;
            while (holderCount < pods && (coin ? rnd.nextBoolean() : rnd.nextDouble() < more)) {
                holderCount++;
            }
            // Distinct pods: a partial Fisher-Yates shuffle of [0, pods).
            for (int p = 0; p < pods; p++) {
                podScratch[p] = p;
            }
            if (holders + holderCount > holderPod.length) {
                holderPod = Arrays.copyOf(holderPod, Math.max(holderPod.length * 2, holders + holderCount));
                holderDepth = Arrays.copyOf(holderDepth, holderPod.length);
            }
            int maxDepth = 0;
            holderStart[chainCount] = holders;
            for (int h = 0; h < holderCount; h++) {
                final int j = h + rnd.nextInt(pods - h);
                final int pod = podScratch[j];
                podScratch[j] = podScratch[h];
                podScratch[h] = pod;
                // A pod that served a group's request keeps its hot shared prefix (every request of the group
                // touches it, so LRU evicts it last): 7 in 8 holders drop off in the chain's own part, 1 in 8
                // anywhere (a pod idle for the group, partly evicted).
                // With more holders than workload B's, the first two stay as above and the others hold the group's
                // prefix to the end of one of its earlier turns: pods that served that turn.
                final int own = chainLength - prefix.length;
                final int depth;
                if (!coin && h >= 2 && prefix.length > 0) {
                    depth = groupTurns[g][rnd.nextInt(TURNS)];
                } else {
                    depth = own > 0 && rnd.nextInt(8) != 0
                        ? prefix.length + 1 + rnd.nextInt(own)
                        : 1 + rnd.nextInt(chainLength);
                }
                holderPod[holders] = (byte) pod;
                holderDepth[holders] = (short) depth;
                holders++;
                podBlocks += depth;
                maxDepth = Math.max(maxDepth, depth);
            }
            // New distinct keys: the part of the group prefix no chain held so deep yet, plus the own suffix.
            final int sharedDepth = Math.min(maxDepth, prefix.length);
            if (sharedDepth > groupHeld[g]) {
                indexed += sharedDepth - groupHeld[g];
                groupHeld[g] = sharedDepth;
            }
            indexed += Math.max(0, maxDepth - prefix.length);
            chains[chainCount++] = chain;
        }
        holderStart[chainCount] = holders;
        final int[] order = new int[QUERY_ORDER_LENGTH];
        for (int i = 0; i < order.length; i++) {
            order[i] = rnd.nextInt(chainCount);
        }
        return new Workload(pods, chainLength, seed, Arrays.copyOf(chains, chainCount),
            Arrays.copyOf(holderStart, chainCount + 1), Arrays.copyOf(holderPod, holders),
            Arrays.copyOf(holderDepth, holders), order, indexed, podBlocks, meanHolders,
            "chain " + chainLength + " blocks");
    }

    /**
     * A workload whose chains may differ in length, built elsewhere ({@link TraceWorkload}): holdings are given per
     * chain, queries are chains of the pool in the given order.
     *
     * @param pods         pods, 1..256.
     * @param seed         the seed it was built with.
     * @param chains       the chains (1..{@value #MAX_CHAIN} keys each).
     * @param holderStart  chain c's holdings are {@code [holderStart[c], holderStart[c + 1])}.
     * @param holderPod    pod of each holding.
     * @param holderDepth  depth of each holding, 1..the chain's length.
     * @param queryOrder   chain indices to query, in order; length {@link #QUERY_ORDER_LENGTH}.
     * @param blocks       distinct keys held by at least one pod.
     * @param description  what the chains are, for every report ("Mooncake prompts, 33..8,192 blocks, ...").
     * @return the workload.
     */
    static Workload of(final int pods, final long seed, final long[][] chains, final int[] holderStart,
        final byte[] holderPod, final short[] holderDepth, final int[] queryOrder, final long blocks,
        final String description) {
        if (queryOrder.length != QUERY_ORDER_LENGTH || holderStart.length != chains.length + 1) {
            throw new IllegalArgumentException("a query order of " + QUERY_ORDER_LENGTH + " and a holder start per"
                + " chain are required");
        }
        int longest = 1;
        for (final long[] chain : chains) {
            if (chain.length < 1 || chain.length > MAX_CHAIN) {
                throw new IllegalArgumentException("chain lengths must be in [1, " + MAX_CHAIN + "]: " + chain.length);
            }
            longest = Math.max(longest, chain.length);
        }
        long podBlocks = 0;
        for (final short d : holderDepth) {
            podBlocks += d;
        }
        final double meanHolders = (double) holderPod.length / Math.max(1, chains.length);
        return new Workload(pods, longest, seed, chains, holderStart, holderPod, holderDepth, queryOrder, blocks,
            podBlocks, meanHolders, description);
    }

    private static long[] randomKeys(final SplittableRandom rnd, final int n) {
        final long[] keys = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = nonZero(rnd);
        }
        return keys;
    }

    /**
     * @param rnd the source.
     * @return a uniform random non-zero 64-bit key, as router keys (hashes) are.
     */
    static long nonZero(final SplittableRandom rnd) {
        long k;
        do {
            k = rnd.nextLong();
        } while (k == 0);
        return k;
    }

    /**
     * Calls {@code sink.store(pod, chain, depth)} for every (chain, holder) pair, in generation order: loading
     * this into a store yields the workload's index.
     *
     * @param sink receives the stores.
     */
    public void forEachHolding(final HoldingSink sink) {
        for (int c = 0; c < chains.length; c++) {
            for (int h = holderStart[c], end = holderStart[c + 1]; h < end; h++) {
                sink.store(holderPod[h] & 0xFF, chains[c], holderDepth[h]);
            }
        }
    }

    /**
     * Receives one pod's holding of one chain prefix.
     */
    @FunctionalInterface
    public interface HoldingSink {
        /**
         * @param pod   pod index in [0, pods).
         * @param chain the chain's keys (do not modify).
         * @param depth the pod holds keys {@code chain[0..depth)}.
         */
        void store(int pod, long[] chain, int depth);
    }

    /**
     * @return pods.
     */
    public int pods() {
        return pods;
    }

    /**
     * @return the mean number of pods holding a prefix of each chain the workload was generated with (a trace
     * workload's: holdings per chain of the pool).
     */
    public double meanHolders() {
        return meanHolders;
    }

    /**
     * @return blocks per chain: the longest chain's, where chains differ in length ({@link TraceWorkload}).
     */
    public int chainLength() {
        return chainLength;
    }

    /**
     * @return what the queried chains are, with their lengths, for every figure ("chain 32 blocks" for a synthetic
     * workload; the prompt-length distribution for a trace's).
     */
    public String chains() {
        return chainsDescription;
    }

    /**
     * @return the seed.
     */
    public long seed() {
        return seed;
    }

    /**
     * @return number of chains in the pool.
     */
    public int chainCount() {
        return chains.length;
    }

    /**
     * @param index chain index.
     * @return that chain's keys (shared array: do not modify).
     */
    public long[] chain(final int index) {
        return chains[index];
    }

    /**
     * @return chain indices in query order (shared array: do not modify), length {@link #QUERY_ORDER_LENGTH}.
     */
    public int[] queryOrder() {
        return queryOrder;
    }

    /**
     * @return distinct block keys held by at least one pod.
     */
    public long blocks() {
        return blocks;
    }

    /**
     * @return (pod, block) pairs summed over pods, counting a shared block once per pod and chain holding it.
     */
    public long podBlocks() {
        return podBlocks;
    }

    /**
     * @return number of (chain, pod) holdings.
     */
    public int holdings() {
        return holderPod.length;
    }
}
