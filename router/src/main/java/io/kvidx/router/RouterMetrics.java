package io.kvidx.router;

import io.kvidx.routing.RoutingCounters;
import io.kvidx.routing.Selector;
import io.kvidx.routing.Workflow;
import io.prometheus.metrics.core.datapoints.CounterDataPoint;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import java.io.IOException;
import java.io.OutputStream;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The router's Prometheus metrics ({@code GET /metrics}): requests by endpoint and status, upstream failures and
 * retries, decisions (with the index or by the fallback picker), time to first byte, the router's own time per
 * request before the pod was called, in-flight requests, routable pods. Written by event loops and deciding
 * threads (each metric is thread safe), read by the scrape.
 */
final class RouterMetrics {
    private static final PrometheusTextFormatWriter TEXT = PrometheusTextFormatWriter.create();
    /** Statuses the proxied endpoints' counters are cached for (0..599). */
    private static final int STATUSES = 600;

    private final PrometheusRegistry registry = new PrometheusRegistry();
    final Counter requests;
    final Counter upstreamFailures;
    final Counter retries;
    final Counter clientDisconnects;
    final Counter brokenStreams;
    final Counter tokenizeRejected;
    final Counter noPod;
    final Histogram firstByteSeconds;
    final Histogram routerSeconds;
    final Gauge inFlight;
    /** The proxied endpoints' request counters by status, looked up once (a label lookup allocates). */
    private final AtomicReferenceArray<CounterDataPoint> answered = new AtomicReferenceArray<>(2 * STATUSES);

    RouterMetrics(final Workflow workflow, final PodBook pods) {
        requests = Counter.builder().name("kvidx_router_requests_total")
            .help("Requests answered, by endpoint and HTTP status").labelNames("endpoint", "status")
            .register(registry);
        upstreamFailures = Counter.builder().name("kvidx_router_upstream_failures_total")
            .help("Calls to a pod that failed, by stage (single, prefill, decode) and reason")
            .labelNames("stage", "reason").register(registry);
        retries = Counter.builder().name("kvidx_router_retries_total")
            .help("Requests sent to another pod after a failure before anything reached the client")
            .register(registry);
        clientDisconnects = Counter.builder().name("kvidx_router_client_disconnects_total")
            .help("Clients that went away before their answer ended (the upstream request was cancelled)")
            .register(registry);
        brokenStreams = Counter.builder().name("kvidx_router_broken_streams_total")
            .help("Answers a pod broke off after the router had started sending them (not retried)")
            .register(registry);
        tokenizeRejected = Counter.builder().name("kvidx_router_tokenize_rejected_total")
            .help("Text or chat requests refused (503) because the tokenizing threads' queue was full")
            .register(registry);
        noPod = Counter.builder().name("kvidx_router_no_pod_total")
            .help("Requests refused because no pod could take them").register(registry);
        firstByteSeconds = Histogram.builder().name("kvidx_router_time_to_first_byte_seconds")
            .help("From the request's arrival to the first byte of the pod's answer sent to the client")
            .classicOnly().classicUpperBounds(1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1, 2.5, 5,
                10, 30, 60)
            .register(registry);
        routerSeconds = Histogram.builder().name("kvidx_router_decision_seconds")
            .help("The router's own time per request before calling a pod: parsing, tokenizing, deciding")
            .classicOnly().classicUpperBounds(1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 1e-2, 0.1)
            .register(registry);
        inFlight = Gauge.builder().name("kvidx_router_in_flight").help("Requests being proxied now")
            .register(registry);
        CounterWithCallback.builder().name("kvidx_router_decisions_total")
            .help("Routing decisions by outcome: scored with the index (indexed), picked by the fallback picker"
                + " (index unavailable, busy or failing), or made by a profile that does not read the index"
                + " (without_index: round robin, least load)")
            .labelNames("outcome")
            .callback(cb -> {
                long indexed = 0;
                long fallbacks = 0;
                long without = 0;
                for (final Selector s : workflow.selectors()) {
                    final RoutingCounters c = s.counters();
                    fallbacks += c.fallbacks();
                    if (s.profile().needsIndex()) {
                        indexed += Math.max(0, c.decisions() - c.fallbacks());
                    } else {
                        without += Math.max(0, c.decisions() - c.fallbacks());
                    }
                }
                cb.call(indexed, "indexed");
                cb.call(fallbacks, "fallback");
                cb.call(without, "without_index");
            }).register(registry);
        GaugeWithCallback.builder().name("kvidx_router_pods_routable")
            .help("Pods that may be routed to now (registered, with a URL, not down)")
            .callback(cb -> cb.call(pods.routable())).register(registry);
        CounterWithCallback.builder().name("kvidx_router_health_check_failures_total")
            .help("Health checks a pod failed").callback(cb -> cb.call(pods.healthFailures())).register(registry);
        CounterWithCallback.builder().name("kvidx_router_pod_urls_refused_total")
            .help("Pods the index names whose pod-url-template URL is on a host pod-url-hosts does not allow (each"
                + " counted once; not routed to)")
            .callback(cb -> cb.call(pods.podUrlsRefused())).register(registry);
        CounterWithCallback.builder().name("kvidx_router_pod_directory_read_failures_total")
            .help("Reads of the cell's pods.json (pod discovery's directory) that failed; the last good one is kept")
            .callback(cb -> cb.call(pods.podDirectoryReadFailures())).register(registry);
        CounterWithCallback.builder().name("kvidx_router_scrape_failures_total")
            .help("Engine /metrics pages that could not be read").callback(cb -> cb.call(pods.scrapeFailures()))
            .register(registry);
    }

    void write(final OutputStream out) throws IOException {
        TEXT.write(out, registry.scrape());
    }

    /**
     * Counts a request answered: {@code completions} and {@code chat} through a counter looked up once per status,
     * other endpoints by label.
     *
     * @param endpoint the endpoint's label.
     * @param status   the HTTP status.
     */
    void answered(final String endpoint, final int status) {
        final int row = "completions".equals(endpoint) ? 0 : "chat".equals(endpoint) ? 1 : -1;
        if (row < 0 || status < 0 || status >= STATUSES) {
            requests.labelValues(endpoint, Integer.toString(status)).inc();
            return;
        }
        final int i = row * STATUSES + status;
        CounterDataPoint c = answered.get(i);
        if (c == null) {
            c = requests.labelValues(endpoint, Integer.toString(status));
            answered.set(i, c);
        }
        c.inc();
    }
}
