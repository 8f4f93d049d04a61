package io.kvidx.bench.trace;

import io.kvidx.bench.KvidxStore;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;

import java.nio.file.Path;
import java.util.SplittableRandom;

/**
 * The replay router's warm-up before it reports {@code ATTACHED}: prefix queries on a private index of the trace's
 * shape, so that the JIT has compiled the query code before the first timed query, as in a router that has served
 * traffic (the {@code kvidx router} warms its decision path before it reports ready for the same reason). Without it
 * the router process compiles its query code during the measured window: it makes a few thousand queries there, and
 * a query whose lines were all in cache measured 1.4–2.0 µs at p50 in it, against 0.3–0.6 µs in {@code bench xproc}
 * after its warm-up.
 *
 * <p>The private index (in {@code /dev/shm} when writable, deleted at the end) has the trace's shape: every pod holds
 * a {@value #ROOT}-block system prompt, and each of {@value #PROMPTS} prompts continues it with a tail of its own of
 * 1 to {@value #MAX_TAIL} blocks, which one pod holds to some depth, and every eighth prompt's tail several pods to
 * different depths (the searches that split). It never reads the daemon's index: none of the measured index's lines
 * are brought into the cache by it.
 *
 * <p><b>Note:</b> runs on the router's querying thread, before the replay; one instance per run.
 */
final class QueryWarmUp {
    /** Blocks of the system prompt every pod holds. */
    static final int ROOT = 32;
    /** Distinct prompts, queried in turn. */
    static final int PROMPTS = 256;
    /** Longest tail after the system prompt. */
    static final int MAX_TAIL = 2_048;
    private static final String CELL = "warm-up";

    private QueryWarmUp() {
    }

    /**
     * Builds the private index for {@code pods} pods (the replay's cell size, so that the same cell layout is
     * compiled), queries it until {@code queries} queries or {@code limitMs} have passed, and deletes it.
     *
     * @param pods    pods of the replay's cell.
     * @param queries most queries (0: none).
     * @param limitMs most milliseconds spent querying.
     * @return queries made.
     */
    static long run(final int pods, final long queries, final long limitMs) {
        if (queries <= 0) {
            return 0;
        }
        final SplittableRandom random = new SplittableRandom(0x5EED);
        final long[][] prompts = new long[PROMPTS][];
        long blocks = ROOT;
        final long[] root = new long[ROOT];
        for (int b = 0; b < ROOT; b++) {
            root[b] = random.nextLong() | 1;
        }
        for (int p = 0; p < PROMPTS; p++) {
            final long[] prompt = new long[ROOT + 1 + random.nextInt(MAX_TAIL)];
            System.arraycopy(root, 0, prompt, 0, ROOT);
            for (int b = ROOT; b < prompt.length; b++) {
                prompt[b] = random.nextLong() | 1;
            }
            prompts[p] = prompt;
            blocks += prompt.length - ROOT;
        }
        final Path dir = KvidxStore.tempDir("kvidx-warm-up-");
        try (IndexWriter writer = IndexWriter.create(new IndexWriterContext().dir(dir).cell(CELL)
            .capacityBlocks(KvidxStore.capacityFor(blocks)).maxPods(pods).deleteOnClose(true))) {
            final int[] slots = new int[pods];
            for (int p = 0; p < pods; p++) {
                slots[p] = writer.registerPod("warm-up-" + p, "warm-up");
                writer.store(slots[p], root, 0, ROOT);
            }
            for (int p = 0; p < PROMPTS; p++) {
                final long[] prompt = prompts[p];
                final int holders = p % 8 == 0 ? 1 + random.nextInt(Math.min(8, pods)) : 1;
                for (int h = 0; h < holders; h++) {
                    final int depth = ROOT + random.nextInt(prompt.length - ROOT + 1);
                    writer.store(slots[random.nextInt(pods)], prompt, 0, depth);
                }
            }
            writer.heartbeat(System.currentTimeMillis());
            try (IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir).cell(CELL))) {
                final PrefixResult result = new PrefixResult();
                final long deadline = System.nanoTime() + limitMs * 1_000_000L;
                long made = 0;
                while (made < queries && System.nanoTime() < deadline) {
                    for (int i = 0; i < 1_024 && made < queries; i++, made++) {
                        final long[] prompt = prompts[(int) (made % PROMPTS)];
                        reader.query(prompt, prompt.length, null, result);
                    }
                    writer.heartbeat(System.currentTimeMillis());
                }
                return made;
            }
        } finally {
            KvidxStore.deleteTree(dir);
        }
    }
}
