package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;

import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The reader of {@link ChangingKeysCrossProcessTest}, in its own process: queries the chains that
 * {@link ChangingKeysWriterMain} churns (binary-search {@code query}, {@code queryExact}, single-key {@code lookup})
 * and checks every answer against the states the writer published for that chain over the query's window
 * ({@link ChainStateLog}).
 *
 * <p>For one pod slot, with W the chain's states over the window (the one current when the query started and every
 * one the overlapping operations produced), an answer of depth d is legal when:
 * <ul>
 *   <li>d &gt; 0: the slot was alive in some state of W, holds block d-1 in some state of W, and lacks block d (or
 *   d is the chain's length) in some state of W (a slot not alive when the query began is not answered: d = 0);</li>
 *   <li>d is at least the shortest prefix the slot holds over W when it is alive in every state of W (those blocks
 *   were there all along), else at least 0;</li>
 *   <li>d is at most the farthest block the slot holds in any state of W.</li>
 * </ul>
 * Each probe of a query reads one key at one instant, which belongs to some state of W; whatever the order of the
 * probes, an answer outside these bounds was built from a torn read. A lookup's pod set must, per slot, agree with
 * some state of W (a slot holding the key in every state of W must be in it; a slot in it must hold it in some).
 *
 * <p>Arguments: index dir, cell, chain state log file, max seconds, seed. Prints one "CHECKED ..." line, then the
 * first violations, each on a "VIOLATION ..." line. Exit status 0 unless it could not run.
 */
public final class ChangingKeysReaderMain {
    /** Questions asked between two reads of the operation counter. */
    static final int BURST = 16;

    private ChangingKeysReaderMain() {
    }

    /** What the reader counted. */
    static final class Counts {
        long queries;
        long exact;
        long lookups;
        long overlapping;
        long skipped;
        long checkedSlots;
        long illegal;
        final List<String> violations = new ArrayList<>();
    }

    /**
     * @param log the chain state log.
     * @return the file the reader creates once attached; the writer's run starts then.
     */
    static Path attachedMarker(final Path log) {
        return log.resolveSibling(log.getFileName() + ".attached");
    }

    /**
     * @param args dir, cell, log file, seconds, seed.
     */
    public static void main(final String[] args) throws Exception {
        final Path dir = Path.of(args[0]);
        final String cell = args[1];
        final long deadline = System.nanoTime() + Long.parseLong(args[3]) * 1_000_000_000L;
        final SplittableRandom random = new SplittableRandom(Long.parseLong(args[4]));
        final Counts counts = new Counts();
        try (ChainStateLog log = ChainStateLog.open(Path.of(args[2]));
            IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir).cell(cell)
                .attachTimeoutMs(10_000).heartbeatTimeoutMs(10_000))) {
            Files.createFile(attachedMarker(Path.of(args[2])));
            final long[][] chains = new long[log.chains][];
            for (int c = 0; c < log.chains; c++) {
                chains[c] = ChangingKeysWriterMain.chainKeys(c);
            }
            final PrefixResult result = new PrefixResult();
            final int maxPods = reader.maxPods();
            final int[][] depths = new int[BURST][maxPods];
            final long[][] words = new long[BURST][4];
            while (System.nanoTime() < deadline && !log.writerDone()) {
                final int c = random.nextInt(log.chains);
                final int kind = random.nextInt(10);
                final int key = random.nextInt(log.chainLength);
                // A burst of the same question between two reads of the operation counter: the reader spends its
                // time probing while the writer moves entries, and the check's cost is shared by the burst.
                final long g1 = log.opSequence();
                try {
                for (int b = 0; b < BURST; b++) {
                    if (kind < 9) {
                        if (kind < 6) {
                            reader.query(chains[c], log.chainLength, null, result);
                        } else {
                            reader.queryExact(chains[c], log.chainLength, null, result);
                        }
                        java.util.Arrays.fill(depths[b], 0);
                        for (int i = 0; i < result.count(); i++) {
                            depths[b][result.slot(i)] = result.depth(i);
                        }
                    } else {
                        reader.lookup(chains[c][key], words[b]);
                    }
                }
                } catch (final io.kvidx.client.index.IndexBusyException ex) {
                    // Bounded: the reader gave up on a shard the writer held (it was descheduled mid-change); the
                    // burst has no answer to check. Counted by the reader.
                    continue;
                }
                VarHandle.fullFence();
                final long g2 = log.opSequence();
                final long firstOp = g1 / 2;
                final long lastOp = (g2 - 1) / 2;
                final List<ChainStateLog.State> window = window(log, c, firstOp, lastOp);
                if (window == null) {
                    counts.skipped += BURST;
                    continue;
                }
                if (lastOp >= firstOp) {
                    counts.overlapping += BURST;
                }
                for (int b = 0; b < BURST; b++) {
                    final String problem = kind < 9 ? checkQuery(depths[b], window, log.chainLength, counts)
                        : checkLookup(words[b], key, window, maxPods);
                    if (kind < 6) {
                        counts.queries++;
                    } else if (kind < 9) {
                        counts.exact++;
                    } else {
                        counts.lookups++;
                    }
                    if (problem != null) {
                        counts.illegal++;
                    }
                    if (problem != null && counts.violations.size() < 20) {
                        counts.violations.add((kind < 6 ? "query" : kind < 9 ? "queryExact" : "lookup of block "
                            + key) + " of chain " + c + " over ops " + firstOp + ".." + lastOp + ": " + problem
                            + "; states " + describe(window));
                    }
                }
            }
        }
        System.out.println("CHECKED queries=" + counts.queries + " exact=" + counts.exact + " lookups="
            + counts.lookups + " overlapping=" + counts.overlapping + " skipped=" + counts.skipped + " slots="
            + counts.checkedSlots + " violations=" + counts.illegal);
        counts.violations.forEach(v -> System.out.println("VIOLATION " + v));
        System.out.flush();
    }

    /**
     * @return the chain's states from the one current before operation {@code firstOp} to the last produced by an
     * operation up to {@code lastOp}, oldest first; null when the ring no longer holds them.
     */
    private static List<ChainStateLog.State> window(final ChainStateLog log, final int chain, final long firstOp,
        final long lastOp) throws InterruptedException {
        // The last overlapping operation may still run: its states are complete once the sequence passes it.
        final long until = 2 * lastOp + 2;
        final long deadline = System.nanoTime() + 10_000_000_000L;
        while (log.opSequence() < until) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("writer stuck in operation " + lastOp);
            }
            Thread.onSpinWait();
        }
        final List<ChainStateLog.State> states = new ArrayList<>();
        for (long j = log.latest(chain); j >= 0; j--) {
            final ChainStateLog.State state = log.read(chain, j);
            if (state == null) {
                return null;
            }
            if (state.op() <= lastOp) {
                states.add(0, state);
                if (state.op() < firstOp) {
                    return states;
                }
            }
        }
        return states;
    }

    static String checkQuery(final int[] depths, final List<ChainStateLog.State> window, final int length,
        final Counts counts) {
        for (int slot = 0; slot < depths.length; slot++) {
            final int d = depths[slot];
            boolean aliveAny = false;
            boolean aliveAll = true;
            boolean listedAny = false;
            int lo = Integer.MAX_VALUE;
            int hi = 0;
            boolean heldBefore = d == 0;
            boolean lackingAt = d == length;
            for (final ChainStateLog.State s : window) {
                final long mask = s.mask(slot);
                final int alive = s.alive(slot);
                listedAny |= alive >= 0;
                aliveAny |= alive == 1;
                aliveAll &= alive == 1;
                lo = Math.min(lo, Long.numberOfTrailingZeros(~mask));
                hi = Math.max(hi, 64 - Long.numberOfLeadingZeros(mask));
                if (d > 0 && (mask & (1L << (d - 1))) != 0) {
                    heldBefore = true;
                }
                if (d < length && (mask & (1L << d)) == 0) {
                    lackingAt = true;
                }
            }
            if (!listedAny && d == 0) {
                continue;
            }
            counts.checkedSlots++;
            final int min = aliveAll ? lo : 0;
            if (d > 0 && !aliveAny) {
                return "slot " + slot + " answered depth " + d + " but is not alive in any state";
            }
            if (d < min) {
                return "slot " + slot + " answered depth " + d + " but held at least " + min
                    + " blocks throughout (a lost key)";
            }
            if (d > hi) {
                return "slot " + slot + " answered depth " + d + " but never held a block beyond " + hi;
            }
            if (d > 0 && !heldBefore) {
                return "slot " + slot + " answered depth " + d + " but never held block " + (d - 1);
            }
            if (d > 0 && !lackingAt) {
                return "slot " + slot + " answered depth " + d + " but held block " + d + " in every state";
            }
        }
        return null;
    }

    static String checkLookup(final long[] words, final int block, final List<ChainStateLog.State> window,
        final int maxPods) {
        for (int slot = 0; slot < maxPods; slot++) {
            final boolean in = (words[slot >>> 6] & (1L << slot)) != 0;
            boolean someState = false;
            boolean everyState = true;
            for (final ChainStateLog.State s : window) {
                final boolean held = (s.mask(slot) & (1L << block)) != 0;
                someState |= held;
                everyState &= held;
            }
            if (in && !someState) {
                return "slot " + slot + " in the pod set, but it holds the block in no state";
            }
            if (!in && everyState) {
                return "slot " + slot + " missing from the pod set, but it holds the block in every state";
            }
        }
        return null;
    }

    private static String describe(final List<ChainStateLog.State> window) {
        final StringBuilder b = new StringBuilder();
        for (final ChainStateLog.State s : window) {
            b.append("[#").append(s.number()).append(" op ").append(s.op());
            for (int i = 0; i < s.slots().length; i++) {
                b.append(' ').append(s.slots()[i]).append(s.alive()[i] ? "" : "(down)").append('=')
                    .append(Long.toBinaryString(s.masks()[i]));
            }
            b.append(']');
        }
        return b.toString();
    }
}
