package io.kvidx.bench.tokenize;

import io.kvidx.bench.Json;
import io.kvidx.bench.trace.TraceRequest;
import io.kvidx.routing.TokenIds;
import io.kvidx.tokenize.HfTokenizer;
import io.kvidx.tokenize.PrefixBoundaries;
import io.kvidx.tokenize.PrefixCache;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Replays the first requests of the Mooncake conversation trace in trace order through a tokenizer, without and with
 * a {@link PrefixCache}, timing each request. Each of a request's {@code hash_ids} (512 tokens of the trace) becomes
 * a deterministic text of about that many tokens (mixed prose as {@link BenchTexts}, seeded by the id), and the
 * request becomes ChatML as Qwen3's chat template writes it: the ids are grouped into turns that end after an id
 * whose mixed value is divisible by {@value #TURN_EVERY} (so about {@value #TURN_EVERY} blocks a turn, and requests
 * that share a prefix of hash ids share their rendered text up to the last turn end inside it), the first turn is
 * the system message, the rest alternate user and assistant, and the generation prompt follows. Requests sharing
 * hash ids therefore share rendered prefixes as multi-turn conversations do.
 *
 * <p>Three paths: the plain tokenizer; {@code split_only}, the same cut at the boundaries but with a cache that keeps
 * nothing (so what the cut alone changes: the Rust library is faster per token on shorter calls); and the prefix
 * cache. A warm-up replay of the first {@value #WARMUP} requests, then the measured replay with fresh caches and
 * fresh tokenizer instances; each request runs through every path back to back (rotating which goes first), and
 * every path's ids are checked against the plain tokenizer's.
 *
 * <p><b>Note:</b> not thread safe; one replay at a time.
 */
final class ConversationReplay {
    /** A turn ends after about this many blocks. */
    static final int TURN_EVERY = 3;
    /** Characters per 512-token block (the mixed prose runs about 3.5 characters a token). */
    static final int BLOCK_CHARS = 1800;
    private static final int WARMUP = 50;

    private ConversationReplay() {
    }

    /** One mode's figures. */
    record Figures(String mode, int requests, long tokens, long[] nanos, long hits, long misses, long saved,
        long evictions, int entries, long cachedTokens, long cachedChars) {
        double percentileUs(final double p) {
            final long[] s = nanos.clone();
            Arrays.sort(s);
            final int i = (int) Math.min(s.length - 1, Math.max(0, Math.ceil(p / 100.0 * s.length) - 1));
            return s[i] / 1e3;
        }

        double meanUs() {
            long sum = 0;
            for (final long n : nanos) {
                sum += n;
            }
            return sum / 1e3 / nanos.length;
        }
    }

    static String blockText(final long hashId) {
        return BenchTexts.prose(new SplittableRandom(0x5EED_0000L ^ (hashId * 0x9E37_79B9_7F4A_7C15L)), BLOCK_CHARS);
    }

    private static boolean endsTurn(final long hashId) {
        long z = hashId + 0x9E37_79B9_7F4A_7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58_476D_1CE4_E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D0_49BB_1331_11EBL;
        return Long.remainderUnsigned(z ^ (z >>> 31), TURN_EVERY) == 0;
    }

    /**
     * @param hashIds a request's hash ids.
     * @return the request as a rendered chat.
     */
    static String render(final long[] hashIds) {
        final StringBuilder sb = new StringBuilder(hashIds.length * (BLOCK_CHARS + 64));
        int turn = 0;
        boolean open = false;
        for (int i = 0; i < hashIds.length; i++) {
            if (!open) {
                sb.append("<|im_start|>").append(turn == 0 ? "system" : turn % 2 == 1 ? "user" : "assistant")
                    .append('\n');
                open = true;
            }
            sb.append(blockText(hashIds[i]));
            if (endsTurn(hashIds[i]) || i == hashIds.length - 1) {
                sb.append("<|im_end|>\n");
                open = false;
                turn++;
            }
        }
        return sb.append("<|im_start|>assistant\n").toString();
    }

    /**
     * One pass: each request is encoded by every path back to back, rotating which goes first, each path with its
     * own tokenizer instance (the Rust library keeps a per-instance word cache, which one path would otherwise warm
     * for the next), so load changes on a shared machine hit all alike. A null cache is the plain tokenizer.
     */
    private static Figures[] replay(final String[] modes, final HfTokenizer[] tokenizers, final PrefixCache[] caches,
        final List<TraceRequest> requests) {
        final int paths = modes.length;
        final TokenIds[] outs = new TokenIds[paths];
        final long[][] nanos = new long[paths][requests.size()];
        for (int p = 0; p < paths; p++) {
            outs[p] = new TokenIds();
        }
        long tokens = 0;
        for (int i = 0; i < requests.size(); i++) {
            final String text = render(requests.get(i).hashIds());
            for (int k = 0; k < paths; k++) {
                final int p = (i + k) % paths;
                final long start = System.nanoTime();
                if (caches[p] == null) {
                    tokenizers[p].encode(text, false, outs[p]);
                } else {
                    caches[p].encode(text, false, outs[p]);
                }
                nanos[p][i] = System.nanoTime() - start;
            }
            for (int p = 1; p < paths; p++) {
                if (!Arrays.equals(outs[0].ids(), 0, outs[0].length(), outs[p].ids(), 0, outs[p].length())) {
                    throw new IllegalStateException("request " + i + ": " + modes[p] + " gave other ids than the"
                        + " tokenizer (" + outs[p].length() + " tokens, " + outs[0].length() + " expected)");
                }
            }
            tokens += outs[0].length();
        }
        final Figures[] out = new Figures[paths];
        for (int p = 0; p < paths; p++) {
            final PrefixCache c = caches[p];
            out[p] = c == null ? new Figures(modes[p], requests.size(), tokens, nanos[p], 0, 0, 0, 0, 0, 0, 0)
                : new Figures(modes[p], requests.size(), tokens, nanos[p], c.hits(), c.misses(), c.tokensSaved(),
                    c.evictions(), c.entries(), c.cachedTokens(), c.cachedChars());
        }
        return out;
    }

    /** No cache for the plain path; a cache that keeps nothing (bounds of 1) for the split-only path. */
    private static PrefixCache[] caches(final HfTokenizer[] t, final PrefixBoundaries boundaries, final int maxEntries,
        final long maxTokens) {
        return new PrefixCache[] {null, new PrefixCache(t[1], boundaries, 1, 1),
            new PrefixCache(t[2], boundaries, maxEntries, maxTokens)};
    }

    /**
     * Runs the replays and prints a table.
     *
     * @param tokenizer  the tokenizer (Qwen3's for the figures in docs/routing.md); each pass loads its own
     *                   instances of its file.
     * @param requests   the trace's requests, in order.
     * @param n          how many to replay.
     * @param maxEntries the cache's entry bound.
     * @param maxTokens  the cache's token bound.
     * @param out        where the table goes.
     * @return the report.
     */
    static Json run(final HfTokenizer tokenizer, final List<TraceRequest> requests, final int n, final int maxEntries,
        final long maxTokens, final PrintStream out) {
        final List<TraceRequest> replayed = requests.subList(0, Math.min(n, requests.size()));
        final List<TraceRequest> warm = replayed.subList(0, Math.min(WARMUP, replayed.size()));
        final PrefixBoundaries boundaries = PrefixBoundaries.read(tokenizer.file());
        long blocks = 0;
        for (final TraceRequest r : replayed) {
            blocks += r.hashIds().length;
        }
        final String[] modes = {"uncached", "split_only", "prefix_cache"};
        final HfTokenizer[] tokenizers = new HfTokenizer[modes.length];
        try {
            for (int p = 0; p < modes.length; p++) {
                tokenizers[p] = HfTokenizer.load(tokenizer.file(), false);
            }
            replay(modes, tokenizers, caches(tokenizers, boundaries, maxEntries, maxTokens), warm);
        } finally {
            for (final HfTokenizer t : tokenizers) {
                if (t != null) {
                    t.close();
                }
            }
        }
        final Figures[] figures;
        try {
            // Fresh instances for the measured pass: no word cache from the warm-up.
            for (int p = 0; p < modes.length; p++) {
                tokenizers[p] = HfTokenizer.load(tokenizer.file(), false);
            }
            figures = replay(modes, tokenizers, caches(tokenizers, boundaries, maxEntries, maxTokens), replayed);
        } finally {
            for (final HfTokenizer t : tokenizers) {
                if (t != null) {
                    t.close();
                }
            }
        }
        final Figures plain = figures[0];
        final Figures cached = figures[2];

        out.printf("conversation replay: first %d requests of the Mooncake conversation trace, %d blocks of %d"
                + " characters (%.0f tokens a block), turns of about %d blocks; cache bounds %d entries, %d tokens%n",
            replayed.size(), blocks, BLOCK_CHARS, (double) plain.tokens() / blocks, TURN_EVERY, maxEntries,
            maxTokens);
        out.printf("%-14s %10s %10s %10s %8s %14s %10s%n", "path", "p50 us", "p99 us", "mean us", "hit %",
            "tokens saved %", "evictions");
        final Json report = new Json();
        for (final Figures f : figures) {
            final double hitRate = f.hits() + f.misses() == 0 ? 0 : 100.0 * f.hits() / (f.hits() + f.misses());
            final double savedShare = 100.0 * f.saved() / f.tokens();
            out.printf("%-14s %10.0f %10.0f %10.0f %8.1f %14.1f %10d%n", f.mode(), f.percentileUs(50),
                f.percentileUs(99), f.meanUs(), hitRate, savedShare, f.evictions());
            report.put(f.mode(), new Json()
                .put("p50_ns", f.percentileUs(50) * 1e3)
                .put("p99_ns", f.percentileUs(99) * 1e3)
                .put("mean_ns", f.meanUs() * 1e3)
                .put("tokens", f.tokens())
                .put("hits", f.hits())
                .put("misses", f.misses())
                .put("tokens_saved", f.saved())
                .put("evictions", f.evictions())
                .put("entries", f.entries())
                .put("cached_tokens", f.cachedTokens())
                .put("cached_chars", f.cachedChars()));
        }
        out.printf("cache held %d entries, %d tokens and %d characters at the end; ids equal to the uncached path"
            + " for all %d requests%n", cached.entries(), cached.cachedTokens(), cached.cachedChars(),
            replayed.size());
        return report.put("workload", new Json()
            .put("requests", replayed.size())
            .put("blocks", blocks)
            .put("block_chars", BLOCK_CHARS)
            .put("turn_every_blocks", TURN_EVERY)
            .put("max_entries", maxEntries)
            .put("max_tokens", maxTokens));
    }
}
