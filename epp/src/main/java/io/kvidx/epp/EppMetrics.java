package io.kvidx.epp;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import java.io.IOException;
import java.io.OutputStream;
import java.util.function.IntSupplier;

/**
 * The picker's Prometheus metrics ({@code GET /metrics} on the metrics port): picks and refusals by outcome, the
 * predicted cached tokens of each pick (the chosen pod's cached prefix per the index, capped as vLLM caps a hit:
 * what {@code kvidx router} sends as {@code x-kvidx-predicted-tokens}), the picker's time per decision, the streams
 * open and the pods ready.
 *
 * <p><b>Note:</b> thread safe (each metric is).
 */
final class EppMetrics {
    private static final PrometheusTextFormatWriter TEXT = PrometheusTextFormatWriter.create();

    private final PrometheusRegistry registry = new PrometheusRegistry();
    /** Streams answered, by outcome (picked, fallback, no_endpoint, bad_request, too_large, unauthorized, ...). */
    final Counter requests;
    final Histogram predictedTokens;
    final Histogram decisionSeconds;
    final Gauge streams;

    /**
     * @param ready      pods with an endpoint now.
     * @param urlRefused distinct pods whose template URL was refused.
     * @param dirFailed  reads of the cell's discovered-pod file that failed.
     */
    EppMetrics(final IntSupplier ready, final java.util.function.LongSupplier urlRefused,
        final java.util.function.LongSupplier dirFailed) {
        requests = Counter.builder().name("kvidx_epp_requests_total")
            .help("ext_proc request streams answered, by outcome").labelNames("outcome").register(registry);
        predictedTokens = Histogram.builder().name("kvidx_epp_predicted_cached_tokens")
            .help("Prompt tokens the picked pod holds in its KV cache per the index when it was picked")
            .classicOnly().classicUpperBounds(0, 16, 64, 256, 1024, 4096, 16384, 65536, 262144).register(registry);
        decisionSeconds = Histogram.builder().name("kvidx_epp_decision_seconds")
            .help("From a stream's complete request body to its pick: parsing, tokenizing, deciding")
            .classicOnly().classicUpperBounds(1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 1e-2, 0.1)
            .register(registry);
        streams = Gauge.builder().name("kvidx_epp_streams_open").help("ext_proc streams open now")
            .register(registry);
        GaugeWithCallback.builder().name("kvidx_epp_pods_ready").help("Pods the picker may answer now")
            .callback(cb -> cb.call(ready.getAsInt())).register(registry);
        CounterWithCallback.builder().name("kvidx_epp_pod_urls_refused_total")
            .help("Pods the index names whose pod-url-template URL is on a host pod-url-hosts does not allow (each"
                + " counted once; not answered)")
            .callback(cb -> cb.call(urlRefused.getAsLong())).register(registry);
        CounterWithCallback.builder().name("kvidx_epp_pod_directory_read_failures_total")
            .help("Reads of the cell's pods.json (pod discovery's directory) that failed; the last good one is kept")
            .callback(cb -> cb.call(dirFailed.getAsLong())).register(registry);
    }

    void write(final OutputStream out) throws IOException {
        TEXT.write(out, registry.scrape());
    }
}
