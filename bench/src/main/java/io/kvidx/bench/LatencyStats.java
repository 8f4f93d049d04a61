package io.kvidx.bench;

import org.HdrHistogram.Histogram;

/**
 * Latency summary of one store's measured queries.
 *
 * @param name            store name.
 * @param queries         queries timed.
 * @param p50Ns           median, ns.
 * @param p90Ns           90th percentile, ns.
 * @param p99Ns           99th percentile, ns.
 * @param p999Ns          99.9th percentile, ns.
 * @param maxNs           maximum, ns.
 * @param meanNs          mean, ns.
 * @param allocBytesPerOp bytes the querying thread allocated per query (ThreadMXBean).
 */
public record LatencyStats(String name, long queries, long p50Ns, long p90Ns, long p99Ns, long p999Ns, long maxNs,
    double meanNs, double allocBytesPerOp) {

    /**
     * @param name      store name.
     * @param histogram recorded latencies.
     * @param allocated bytes allocated over the recorded queries.
     * @return the summary.
     */
    public static LatencyStats of(final String name, final Histogram histogram, final long allocated) {
        final long n = histogram.getTotalCount();
        return new LatencyStats(name, n, histogram.getValueAtPercentile(50), histogram.getValueAtPercentile(90),
            histogram.getValueAtPercentile(99), histogram.getValueAtPercentile(99.9), histogram.getMaxValue(),
            histogram.getMean(), n == 0 ? 0 : (double) allocated / n);
    }
}
