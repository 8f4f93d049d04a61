package io.kvidx.bench.trace;

import io.kvidx.bench.Json;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * A point's per-stage times, from the daemon's own histograms (docs/operations.md, metrics): transport receive to
 * the writer's queue ({@code kvidx_batch_ingest_seconds}), the wait in the queue ({@code kvidx_batch_queue_seconds}),
 * and decode and apply ({@code kvidx_batch_apply_seconds}, after which the batch's blocks are visible). Scraped before
 * the replay and after it and subtracted, so warm-up batches do not count; quantiles are interpolated within the
 * buckets as PromQL's {@code histogram_quantile} does (so they are as coarse as the buckets: 1, 2.5, 5 per decade).
 *
 * <p><b>Note:</b> immutable.
 */
final class StageLatencies {
    /**
     * The stages, in order, by the metric's middle name. The daemon's {@code kvidx_event_to_visible_seconds} is left
     * out: it starts at the batch's own timestamp, which in a replay is the trace's, not a clock (the router process
     * times event to visible from the send instead).
     */
    static final String[] STAGES = {"batch_ingest", "batch_queue", "batch_apply"};
    private static final Duration SCRAPE_TIMEOUT = Duration.ofSeconds(10);

    /** Per stage: bucket upper bound to cumulative count. */
    private final Map<String, TreeMap<Double, Double>> buckets;

    private StageLatencies(final Map<String, TreeMap<Double, Double>> buckets) {
        this.buckets = buckets;
    }

    /** No batch observed. */
    static final StageLatencies NONE = new StageLatencies(Map.of());

    /**
     * @param text metrics in the Prometheus text format.
     * @return the stage histograms in it.
     */
    static StageLatencies parse(final String text) {
        final Map<String, TreeMap<Double, Double>> buckets = new HashMap<>();
        for (final String line : text.split("\n")) {
            for (final String stage : STAGES) {
                final String prefix = "kvidx_" + stage + "_seconds_bucket{le=\"";
                if (line.startsWith(prefix)) {
                    final int end = line.indexOf('"', prefix.length());
                    final String le = line.substring(prefix.length(), end);
                    final double bound = "+Inf".equals(le) ? Double.POSITIVE_INFINITY : Double.parseDouble(le);
                    final double count = Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                    buckets.computeIfAbsent(stage, s -> new TreeMap<>()).put(bound, count);
                }
            }
        }
        return new StageLatencies(buckets);
    }

    /**
     * @param port the daemon's metrics port on loopback.
     * @return its stage histograms now.
     * @throws IOException when the scrape fails.
     */
    static StageLatencies scrape(final int port) throws IOException {
        try (HttpClient client = HttpClient.newBuilder().connectTimeout(SCRAPE_TIMEOUT).build()) {
            final HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
                + "/metrics")).timeout(SCRAPE_TIMEOUT).build(), HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) {
                throw new IOException("metrics scrape answered " + r.statusCode());
            }
            return parse(r.body());
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while scraping the daemon's metrics", ex);
        }
    }

    /**
     * @param before an earlier scrape of the same daemon.
     * @return what was observed since.
     */
    StageLatencies minus(final StageLatencies before) {
        final Map<String, TreeMap<Double, Double>> diff = new HashMap<>();
        buckets.forEach((stage, now) -> {
            final TreeMap<Double, Double> then = before.buckets.getOrDefault(stage, new TreeMap<>());
            final TreeMap<Double, Double> d = new TreeMap<>();
            now.forEach((bound, count) -> d.put(bound, count - then.getOrDefault(bound, 0.0)));
            diff.put(stage, d);
        });
        return new StageLatencies(diff);
    }

    /**
     * @param stage one of {@link #STAGES}.
     * @return batches observed.
     */
    long count(final String stage) {
        final TreeMap<Double, Double> b = buckets.get(stage);
        return b == null || b.isEmpty() ? 0 : Math.round(b.lastEntry().getValue());
    }

    /**
     * @param stage one of {@link #STAGES}.
     * @param q     quantile, 0..1.
     * @return seconds, interpolated within the bucket holding the quantile; NaN when nothing was observed; the
     * largest finite bound when the quantile falls in the +Inf bucket.
     */
    double quantile(final String stage, final double q) {
        final TreeMap<Double, Double> b = buckets.get(stage);
        final long total = count(stage);
        if (total == 0) {
            return Double.NaN;
        }
        final double rank = q * total;
        double lowerBound = 0;
        double lowerCount = 0;
        for (final Map.Entry<Double, Double> e : b.entrySet()) {
            if (e.getValue() >= rank) {
                if (e.getKey().isInfinite()) {
                    return lowerBound;
                }
                final double inBucket = e.getValue() - lowerCount;
                return inBucket <= 0 ? e.getKey()
                    : lowerBound + (e.getKey() - lowerBound) * (rank - lowerCount) / inBucket;
            }
            lowerBound = e.getKey();
            lowerCount = e.getValue();
        }
        return lowerBound;
    }

    /**
     * @return per stage: batches, p50 and p99 in microseconds (null when none was observed).
     */
    Json json() {
        final Json json = new Json();
        for (final String stage : STAGES) {
            final long n = count(stage);
            json.put(stage, n == 0 ? null : new Json().put("batches", n)
                .put("p50_us", Math.round(quantile(stage, 0.50) * 1e7) / 10.0)
                .put("p99_us", Math.round(quantile(stage, 0.99) * 1e7) / 10.0));
        }
        return json;
    }

    /**
     * @return one line: p50 / p99 per stage.
     */
    String describe() {
        final StringBuilder s = new StringBuilder("stages p50/p99");
        for (final String stage : STAGES) {
            if (count(stage) > 0) {
                s.append(String.format(java.util.Locale.ROOT, " %s %.0f/%.0f us", stage.replace("batch_", ""),
                    quantile(stage, 0.5) * 1e6, quantile(stage, 0.99) * 1e6));
            }
        }
        return s.toString();
    }
}
