package io.kvidx.bench;

import io.kvidx.bench.trace.SimEngine;
import io.kvidx.bench.trace.TraceBench;
import io.kvidx.bench.trace.TraceBlocks;
import io.kvidx.bench.trace.TraceFile;
import io.kvidx.bench.trace.TracePlan;
import io.kvidx.bench.trace.TraceRequest;
import org.agrona.collections.LongHashSet;

import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A {@link Workload} drawn from the Mooncake conversation trace rather than generated: its chains are the trace's
 * prompts (router keys of 16-token blocks, so a 512-token trace block is 32 chain blocks, at most {@code maxChain}
 * each) and its holdings are what a fleet of simulated engines holds after serving the trace's earlier requests.
 *
 * <p>How it is built (deterministic in the seed):
 * <ol>
 *   <li>The trace's requests, in time order, are split at random across the pods exactly as {@code bench trace}
 *   splits them (the same seed gives the same split), and the first {@code 1 - 1/}{@value #HELD_OUT_DIVISOR} of
 *   them are served by their pod's {@link SimEngine} (16,384-block LRU, as in {@code bench trace}).</li>
 *   <li>The holdings are then each pod's cached prefix of each request it served. An engine evicts a request's blocks
 *   from the tail, so what a pod holds is prefix-closed and is exactly the union of those prefixes.</li>
 *   <li>The queries are the held-out last {@code 1/}{@value #HELD_OUT_DIVISOR} of the trace, in a seeded random
 *   order: the prompts that arrive next, asked of the fleet's state before they are served. That is what the
 *   router asks during a replay, on a state that does not move.</li>
 * </ol>
 * So prompt lengths, shared prefixes (the common system prompt every pod ends up holding, a conversation's earlier
 * turns on the pod that served them) and how many pods hold how deep are the trace's, not a model's.
 *
 * <p><b>Note:</b> builds a {@link Workload}, immutable afterwards; this class keeps no state.
 */
public final class TraceWorkload {
    /** The last 1/8 of the trace's requests are the queries; the rest build the fleet's state. */
    public static final int HELD_OUT_DIVISOR = 8;
    /** Seed of the split and of the query order: {@code bench trace}'s default, so both see the same fleet. */
    public static final long SEED_DEFAULT = TraceBench.SEED_DEFAULT;

    private TraceWorkload() {
    }

    /**
     * @param pods     pods, 1..256 ({@code bench trace}'s default is 128).
     * @param maxChain most blocks per prompt, 1..{@value Workload#MAX_CHAIN}: longer prompts are cut, as a model's
     *                 maximum length would cut them.
     * @param seed     seed of the split and the query order.
     * @return the workload from the committed Mooncake conversation trace.
     * @throws IOException when the trace resource cannot be read.
     */
    public static Workload loadDefault(final int pods, final int maxChain, final long seed) throws IOException {
        return build(TraceFile.loadDefault(), pods, maxChain, seed);
    }

    /**
     * @param trace    requests in time order.
     * @param pods     pods, 1..256.
     * @param maxChain most blocks per prompt, 1..{@value Workload#MAX_CHAIN}.
     * @param seed     seed of the split and the query order.
     * @return the workload.
     * @throws IllegalArgumentException on a bad argument, or a trace with no served or no held-out prompt of a block
     *                                  or more.
     */
    public static Workload build(final List<TraceRequest> trace, final int pods, final int maxChain,
        final long seed) {
        if (pods < 1 || pods > 256) {
            throw new IllegalArgumentException("pods must be in [1, 256]: " + pods);
        }
        if (maxChain < 1 || maxChain > Workload.MAX_CHAIN) {
            throw new IllegalArgumentException("chain length must be in [1, " + Workload.MAX_CHAIN + "]: "
                + maxChain);
        }
        final int n = trace.size();
        final int served = n - n / HELD_OUT_DIVISOR;
        if (served == n || served == 0) {
            throw new IllegalArgumentException("a trace of " + n + " requests has no held-out queries");
        }
        final int budget = TraceBench.BUDGET_DEFAULT;
        final int maxBlocks = Math.min(budget, maxChain);
        final TraceBlocks blocks = new TraceBlocks(TraceBench.BLOCK_SIZE_DEFAULT, maxBlocks);
        final SimEngine[] engines = new SimEngine[pods];
        final int[] split = TracePlan.split(n, pods, seed);
        final long[][] chains = new long[n][];
        final long[][] servedHashes = new long[n][];
        final int[] podOf = new int[n];
        int count = 0;
        for (int i = 0; i < n; i++) {
            final int pod = split[i];
            final int length = blocks.load(trace.get(i));
            if (length == 0) {
                continue;
            }
            podOf[count] = pod;
            chains[count] = Arrays.copyOf(blocks.routerKeys(), length);
            if (i < served) {
                if (engines[pod] == null) {
                    engines[pod] = new SimEngine(budget, maxBlocks);
                }
                engines[pod].serve(blocks.engineHashes(), blocks.routerKeys(), length);
                servedHashes[count] = Arrays.copyOf(blocks.engineHashes(), length);
            }
            count++;
        }
        // Requests of no full block were skipped: the served ones are those with engine hashes kept.
        final int[] holderStart = new int[count + 1];
        byte[] holderPod = new byte[count];
        short[] holderDepth = new short[count];
        final LongHashSet distinct = new LongHashSet();
        int holders = 0;
        int firstQuery = -1;
        for (int c = 0; c < count; c++) {
            holderStart[c] = holders;
            if (servedHashes[c] == null) {
                firstQuery = firstQuery < 0 ? c : firstQuery;
                continue;
            }
            final int depth = engines[podOf[c]].cachedPrefix(servedHashes[c], servedHashes[c].length);
            if (depth > 0) {
                holderPod[holders] = (byte) podOf[c];
                holderDepth[holders] = (short) depth;
                holders++;
                for (int d = 0; d < depth; d++) {
                    distinct.add(chains[c][d]);
                }
            }
        }
        holderStart[count] = holders;
        if (firstQuery < 0 || holders == 0) {
            throw new IllegalArgumentException("the trace has no held-out prompt or no served prompt of a full block");
        }
        holderPod = Arrays.copyOf(holderPod, holders);
        holderDepth = Arrays.copyOf(holderDepth, holders);
        final int queries = count - firstQuery;
        final SplittableRandom order = new SplittableRandom(seed ^ 0x7472_6163_6551_7279L);
        final int[] queryOrder = new int[Workload.QUERY_ORDER_LENGTH];
        for (int i = 0; i < queryOrder.length; i++) {
            queryOrder[i] = firstQuery + order.nextInt(queries);
        }
        final long[][] pool = Arrays.copyOf(chains, count);
        return Workload.of(pods, seed, pool, holderStart, holderPod, holderDepth, queryOrder, distinct.size(),
            describe(pool, firstQuery, pods, maxChain));
    }

    private static String describe(final long[][] chains, final int firstQuery, final int pods, final int maxChain) {
        final int queries = chains.length - firstQuery;
        final int[] lengths = new int[queries];
        long sum = 0;
        for (int i = 0; i < queries; i++) {
            lengths[i] = chains[firstQuery + i].length;
            sum += lengths[i];
        }
        Arrays.sort(lengths);
        return String.format("Mooncake prompts of %d-%d blocks (median %d, mean %.0f, p90 %d; 16-token blocks, cut at"
            + " %d), %d held-out prompts against %d pods' LRU caches after the trace's first %d", lengths[0],
            lengths[queries - 1], lengths[queries / 2], (double) sum / queries, lengths[queries * 9 / 10], maxChain,
            queries, pods, firstQuery);
    }
}
