package io.kvidx.bench;

import io.kvidx.client.index.IndexBusyException;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import org.HdrHistogram.Histogram;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The second process of {@code bench xproc}: attaches to the writer's index read-only, as a router would, and
 * times prefix queries while the writer churns. Every answer is checked against the answer the writer's process
 * computed before the churn started (the churn touches other keys, so answers must not change); a torn read would
 * show up as a mismatch. A query that gives up at the reader's read bound ({@link IndexBusyException}: the writer
 * held a shard locked, e.g. preempted mid-change) is no answer: counted as busy, its time recorded, not checked.
 *
 * <p>Protocol on stdout: {@code ATTACHED}, {@code MEASURE_START}, {@code MEASURE_END}, then {@code RESULT <json>}.
 */
public final class XprocReader {
    /** The hidden bench sub-command that runs this class. */
    public static final String COMMAND = "xproc-reader";

    private XprocReader() {
    }

    /**
     * @param args index dir, cell, query file, warmup ms, measure ms, MiB to read before each timed query (0: none).
     * @throws IOException when the query file cannot be read.
     */
    public static void main(final String[] args) throws IOException {
        final Path dir = Path.of(args[0]);
        final String cell = args[1];
        final Queries q = Queries.read(Path.of(args[2]));
        final long warmupMs = Long.parseLong(args[3]);
        final long measureMs = Long.parseLong(args[4]);
        // Read before each timed query, untimed: more than the L3 pushes the index's lines out of the cache.
        final long[] evict = new long[(int) (Long.parseLong(args[5]) << 20 >>> 3)];
        final com.sun.management.ThreadMXBean threads =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

        try (IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir).cell(cell))) {
            System.out.println("ATTACHED");
            System.out.flush();
            final PrefixResult result = new PrefixResult();
            final long[] keys = new long[reader.maxChainLength()];
            final Histogram histogram = QueryHarness.newHistogram();
            final Histogram[] byLength = LengthBuckets.newHistograms();
            final int n = q.chains.length;
            long mismatches = 0;
            long warmupBusy = 0;
            long busy = 0;
            long sink = 0;
            int i = 0;
            final long warmEnd = System.nanoTime() + warmupMs * 1_000_000L;
            while (System.nanoTime() < warmEnd) {
                try {
                    final int max = reader.query(q.chains[i], q.chains[i].length, null, result);
                    sink += max;
                    if (max != q.maxDepth[i] || checksum(result) != q.checksum[i]) {
                        mismatches++;
                    }
                } catch (final IndexBusyException ex) {
                    warmupBusy++;
                }
                i = i + 1 == n ? 0 : i + 1;
            }
            System.out.println("MEASURE_START");
            System.out.flush();
            final long allocBefore = threads.getCurrentThreadAllocatedBytes();
            final long deadline = System.nanoTime() + measureMs * 1_000_000L;
            long now = System.nanoTime();
            while (now < deadline) {
                final long[] chain = q.chains[i];
                if (evict.length != 0) {
                    sink += evict(evict);
                }
                // The router's keys are in its own, hot buffer (QueryHarness explains why).
                System.arraycopy(chain, 0, keys, 0, chain.length);
                final long t0 = System.nanoTime();
                int max = -1;
                try {
                    max = reader.query(keys, chain.length, null, result);
                } catch (final IndexBusyException ex) {
                    busy++;
                }
                now = System.nanoTime();
                final long took = Math.min(histogram.getHighestTrackableValue(), now - t0);
                histogram.recordValue(took);
                byLength[LengthBuckets.of(chain.length)].recordValue(took);
                if (max >= 0) {
                    sink += max;
                    if (max != q.maxDepth[i] || checksum(result) != q.checksum[i]) {
                        mismatches++;
                    }
                }
                i = i + 1 == n ? 0 : i + 1;
            }
            final long allocated = threads.getCurrentThreadAllocatedBytes() - allocBefore;
            System.out.println("MEASURE_END");
            final LatencyStats s = LatencyStats.of("xproc", histogram, allocated);
            final Json json = new Json()
                .put("p50_ns", s.p50Ns())
                .put("p90_ns", s.p90Ns())
                .put("p99_ns", s.p99Ns())
                .put("p999_ns", s.p999Ns())
                .put("max_ns", s.maxNs())
                .put("mean_ns", s.meanNs())
                .put("alloc_bytes_per_op", s.allocBytesPerOp())
                .put("queries", s.queries())
                .put("mismatches", mismatches)
                .put("busy", busy)
                .put("busy_warmup", warmupBusy)
                .putRaw("query_by_length", LengthBuckets.json(byLength, null))
                .put("reader_pid", ProcessHandle.current().pid())
                .put("sink", sink & 1);
            System.out.println("RESULT " + json);
            System.out.flush();
        }
    }

    /** Reads one word of each cache line of {@code buffer}: its lines take the cache's place of others. */
    private static long evict(final long[] buffer) {
        long sum = 0;
        for (int w = 0; w < buffer.length; w += 8) {
            sum += buffer[w];
        }
        return sum;
    }

    /**
     * A digest of a prefix answer: sum over listed pods of depth x (slot + 1), mixed.
     *
     * @param result the answer.
     * @return the digest.
     */
    static long checksum(final PrefixResult result) {
        long sum = 0;
        for (int j = 0, n = result.count(); j < n; j++) {
            sum += (long) result.depth(j) * (result.slot(j) + 1) * 0x9E3779B97F4A7C15L;
        }
        return sum;
    }

    /**
     * The query file: chains (each of its own length) and their expected answers. Layout, big-endian:
     * {@code count:int, then per chain: length:int, keys:long[length], maxDepth:int, checksum:long}.
     */
    static final class Queries {
        final long[][] chains;
        final int[] maxDepth;
        final long[] checksum;

        Queries(final long[][] chains, final int[] maxDepth, final long[] checksum) {
            this.chains = chains;
            this.maxDepth = maxDepth;
            this.checksum = checksum;
        }

        static Queries read(final Path file) throws IOException {
            try (DataInputStream in = new DataInputStream(new BufferedInputStream(Files.newInputStream(file),
                1 << 16))) {
                final int count = in.readInt();
                final long[][] chains = new long[count][];
                final int[] max = new int[count];
                final long[] sums = new long[count];
                for (int c = 0; c < count; c++) {
                    chains[c] = new long[in.readInt()];
                    for (int k = 0; k < chains[c].length; k++) {
                        chains[c][k] = in.readLong();
                    }
                    max[c] = in.readInt();
                    sums[c] = in.readLong();
                }
                return new Queries(chains, max, sums);
            }
        }

        void write(final Path file) throws IOException {
            try (DataOutputStream out = new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(file),
                1 << 16))) {
                out.writeInt(chains.length);
                for (int c = 0; c < chains.length; c++) {
                    out.writeInt(chains[c].length);
                    for (final long k : chains[c]) {
                        out.writeLong(k);
                    }
                    out.writeInt(maxDepth[c]);
                    out.writeLong(checksum[c]);
                }
            }
        }
    }
}
