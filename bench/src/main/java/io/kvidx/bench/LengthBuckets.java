package io.kvidx.bench;

import org.HdrHistogram.Histogram;

import java.util.function.ObjIntConsumer;

/**
 * The prompt-length buckets query latencies are reported in ({@code bench trace}'s {@code query_by_length}, the
 * query and cross-process benches on a trace workload): one place for their bounds.
 *
 * <p><b>Note:</b> constants and a pure function; thread safe.
 */
public final class LengthBuckets {
    /** Upper bounds (blocks, inclusive) of the buckets; the last one is the index's longest chain. */
    private static final int[] BOUNDS = {32, 128, 512, 2_048, Workload.MAX_CHAIN};

    private LengthBuckets() {
    }

    /**
     * @return the number of buckets.
     */
    public static int count() {
        return BOUNDS.length;
    }

    /**
     * @param bucket a bucket in [0, count()).
     * @return its upper bound in blocks, inclusive.
     */
    public static int maxBlocks(final int bucket) {
        return BOUNDS[bucket];
    }

    /**
     * @param blocks a chain's length.
     * @return its bucket: the first whose bound is at least {@code blocks} (the last for anything longer).
     */
    public static int of(final int blocks) {
        for (int b = 0; b < BOUNDS.length - 1; b++) {
            if (blocks <= BOUNDS[b]) {
                return b;
            }
        }
        return BOUNDS.length - 1;
    }

    /**
     * @return one latency histogram per bucket (ns, as {@link QueryHarness#newHistogram()}).
     */
    public static Histogram[] newHistograms() {
        final Histogram[] h = new Histogram[BOUNDS.length];
        for (int b = 0; b < h.length; b++) {
            h[b] = QueryHarness.newHistogram();
        }
        return h;
    }

    /**
     * @param byLength one latency histogram per bucket.
     * @param more     adds a bucket's other fields to its object (given the object and the bucket); null for none.
     * @return a JSON array with an object per non-empty bucket: max_blocks, queries, p50_ns, p99_ns and the rest.
     */
    public static String json(final Histogram[] byLength, final ObjIntConsumer<Json> more) {
        final StringBuilder a = new StringBuilder("[");
        for (int b = 0; b < byLength.length; b++) {
            if (byLength[b].getTotalCount() == 0) {
                continue;
            }
            final Json bucket = new Json().put("max_blocks", BOUNDS[b])
                .put("queries", byLength[b].getTotalCount()).put("p50_ns", byLength[b].getValueAtPercentile(50))
                .put("p99_ns", byLength[b].getValueAtPercentile(99));
            if (more != null) {
                more.accept(bucket, b);
            }
            a.append(a.length() > 1 ? "," : "").append(bucket);
        }
        return a.append(']').toString();
    }

    /**
     * @param byLength one latency histogram per bucket.
     * @return one line per non-empty bucket: blocks, queries, p50 and p99 in µs, for a report.
     */
    public static String table(final Histogram[] byLength) {
        final StringBuilder t = new StringBuilder();
        int low = 1;
        for (int b = 0; b < byLength.length; b++) {
            if (byLength[b].getTotalCount() != 0) {
                t.append(String.format("  %5d-%-5d blocks: %8d queries, p50 %7.2f us, p99 %8.2f us%n", low,
                    BOUNDS[b], byLength[b].getTotalCount(), byLength[b].getValueAtPercentile(50) / 1e3,
                    byLength[b].getValueAtPercentile(99) / 1e3));
            }
            low = BOUNDS[b] + 1;
        }
        return t.toString();
    }
}
