package io.kvidx.routing.exec;

import io.kvidx.client.index.DataParallelRanks;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.Router;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.RoutingPlan;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Reference {@link Executor} on {@code java.net.http}: POSTs the request to the pod's endpoint (from the
 * {@link PodRegistry}) and streams the answer to the sink as it arrives (server-sent events pass through chunk by
 * chunk). Prefill/decode: POSTs the adapted body to the prefill pod and waits for its whole answer, then POSTs the
 * decode body to the decode pod and streams that.
 *
 * <p>Failure policy: when a pod cannot be reached, times out, or answers 5xx before anything was streamed, the
 * executor excludes it, asks the workflow for a new plan ({@link io.kvidx.routing.Workflow#replan}) and tries
 * again, at most {@code maxAttempts} times per stage; then it throws an {@link ExecutionException} listing every
 * attempt. A 4xx answer is the client's problem: it is streamed back as is. Running-request counters in the
 * registry are kept up to date around each call.
 *
 * <p>Data-parallel ranks ({@link DataParallelRanks}): a pod {@code <pod>#<r>} with no endpoint of its own (or with
 * its base pod's) is reached at the base pod's endpoint with the header {@code X-data-parallel-rank: r}, the way
 * vLLM's OpenAI server takes a rank choice; a base pod whose ranks the registry knows gets
 * {@code X-data-parallel-rank: 0}, so that the engine's own balancer does not move the request to another rank. A
 * client's own {@code X-data-parallel-rank} header is never forwarded: the router chose the rank.
 *
 * <p>Cache hint (off by default): with a {@link CacheHint}, every request to a chosen pod carries one header naming
 * where that pod holds the prompt's matched prefix (GPU, CPU, disk), read from the host tier map for that pod only;
 * a client's header of the same name is replaced.
 *
 * <p><b>Note:</b> thread safe; one shared {@link HttpClient}.
 */
public final class HttpExecutor implements Executor {
    private static final Set<String> RESTRICTED = Set.of("connection", "content-length", "host", "expect", "upgrade");

    private final Router router;
    private final PodRegistry registry;
    private final HttpClient client;
    private final PrefillDecodeAdapter adapter;
    private final int maxAttempts;
    private final Duration requestTimeout;
    private final CacheHint hint;

    /**
     * @param router         the router whose plans this executes (workflow and registry).
     * @param adapter        prefill/decode body rewriting (null: {@link PrefillDecodeAdapter#vllm()}).
     * @param maxAttempts    attempts per stage (>= 1).
     * @param connectTimeout connect timeout.
     * @param requestTimeout time to the response headers (and the whole prefill answer).
     */
    public HttpExecutor(final Router router, final PrefillDecodeAdapter adapter, final int maxAttempts,
        final Duration connectTimeout, final Duration requestTimeout) {
        this(router, adapter, maxAttempts, connectTimeout, requestTimeout, null);
    }

    /**
     * @param router         the router whose plans this executes (workflow and registry).
     * @param adapter        prefill/decode body rewriting (null: {@link PrefillDecodeAdapter#vllm()}).
     * @param maxAttempts    attempts per stage (>= 1).
     * @param connectTimeout connect timeout.
     * @param requestTimeout time to the response headers (and the whole prefill answer).
     * @param hint           the cache hint header to send to the chosen pods, or null for none.
     */
    public HttpExecutor(final Router router, final PrefillDecodeAdapter adapter, final int maxAttempts,
        final Duration connectTimeout, final Duration requestTimeout, final CacheHint hint) {
        this.hint = hint;
        if (maxAttempts < 1) {
            throw new IllegalArgumentException("maxAttempts must be >= 1: " + maxAttempts);
        }
        this.router = Objects.requireNonNull(router, "router");
        this.registry = router.registry();
        this.adapter = adapter != null ? adapter : PrefillDecodeAdapter.vllm();
        this.maxAttempts = maxAttempts;
        this.requestTimeout = Objects.requireNonNull(requestTimeout, "requestTimeout");
        this.client = HttpClient.newBuilder().connectTimeout(connectTimeout).version(HttpClient.Version.HTTP_1_1)
            .build();
    }

    @Override
    public Outcome execute(final RoutingContext ctx, final ProxyRequest request, final OutputStream sink)
        throws ExecutionException, InterruptedException {
        final List<ExecutionException.Attempt> failures = new ArrayList<>();
        RoutingPlan plan = ctx.plan();
        int attempts = 0;
        final int promptTokens = Math.max(0, ctx.tokens().length());
        if (plan.kind() == RoutingPlan.Kind.PREFILL_DECODE) {
            byte[] prefillAnswer = null;
            int prefillSlot = RoutingPlan.NO_POD;
            final byte[] prefillBody = adapter.prefillBody(request.body());
            for (int a = 0; a < maxAttempts && prefillAnswer == null; a++) {
                if (!plan.isRoutable()) {
                    throw new ExecutionException("no prefill/decode pod available", failures);
                }
                prefillSlot = plan.prefillSlot();
                attempts++;
                prefillAnswer = prefill(ctx, prefillSlot, request, prefillBody, promptTokens, failures);
                if (prefillAnswer == null) {
                    plan = router.workflow().replan(ctx, prefillSlot);
                }
            }
            if (prefillAnswer == null) {
                throw new ExecutionException("prefill failed on " + maxAttempts + " pod(s)", failures);
            }
            final byte[] decodeBody = adapter.decodeBody(request.body(), prefillAnswer);
            return stream("decode", plan, prefillSlot, request, decodeBody, promptTokens, sink, failures, ctx,
                attempts);
        }
        return stream("single", plan, RoutingPlan.NO_POD, request, request.body(), promptTokens, sink, failures, ctx,
            attempts);
    }

    private Outcome stream(final String stage, final RoutingPlan first, final int prefillSlot,
        final ProxyRequest request, final byte[] body, final int promptTokens, final OutputStream sink,
        final List<ExecutionException.Attempt> failures, final RoutingContext ctx, final int attemptsSoFar)
        throws ExecutionException, InterruptedException {
        RoutingPlan plan = first;
        int attempts = attemptsSoFar;
        for (int a = 0; a < maxAttempts; a++) {
            if (plan.slot() == RoutingPlan.NO_POD) {
                throw new ExecutionException("no " + stage + " pod available", failures);
            }
            final int slot = plan.slot();
            attempts++;
            final Target target = target(slot, request.path());
            if (target == null) {
                failures.add(new ExecutionException.Attempt(stage, slot, "pod has no endpoint in the registry"));
            } else {
                registry.requestStarted(slot, promptTokens);
                try {
                    final HttpResponse<InputStream> response = client.send(post(target, request.headers(), body,
                            hint == null ? null : hint.value(ctx, slot)),
                        HttpResponse.BodyHandlers.ofInputStream());
                    if (response.statusCode() >= 500) {
                        final String start = readStart(response.body());
                        failures.add(new ExecutionException.Attempt(stage, slot, "HTTP " + response.statusCode()
                            + ": " + start));
                    } else {
                        final long[] bytes = new long[1];
                        try {
                            copy(response.body(), sink, bytes);
                        } catch (final IOException ex) {
                            failures.add(new ExecutionException.Attempt(stage, slot, ex.toString()));
                            throw new ExecutionException("the " + stage + " pod " + slot
                                + " broke off its answer after " + bytes[0] + " bytes were streamed (not retried)",
                                failures);
                        }
                        return new Outcome(response.statusCode(), slot, prefillSlot, attempts, bytes[0]);
                    }
                } catch (final IOException ex) {
                    failures.add(new ExecutionException.Attempt(stage, slot, ex.toString()));
                } finally {
                    registry.requestFinished(slot, promptTokens);
                }
            }
            plan = prefillSlot != RoutingPlan.NO_POD ? router.workflow().replanDecode(ctx, slot)
                : router.workflow().replan(ctx, slot);
        }
        throw new ExecutionException(stage + " failed on " + maxAttempts + " pod(s)", failures);
    }

    private byte[] prefill(final RoutingContext ctx, final int slot, final ProxyRequest request, final byte[] body,
        final int promptTokens, final List<ExecutionException.Attempt> failures) throws InterruptedException {
        final Target target = target(slot, request.path());
        if (target == null) {
            failures.add(new ExecutionException.Attempt("prefill", slot, "pod has no endpoint in the registry"));
            return null;
        }
        registry.requestStarted(slot, promptTokens);
        try {
            final HttpResponse<byte[]> response = client.send(post(target, request.headers(), body,
                    hint == null ? null : hint.value(ctx, slot)),
                HttpResponse.BodyHandlers.ofByteArray());
            if (response.statusCode() / 100 != 2) {
                failures.add(new ExecutionException.Attempt("prefill", slot, "HTTP " + response.statusCode() + ": "
                    + abbreviate(new String(response.body(), StandardCharsets.UTF_8))));
                return null;
            }
            return response.body();
        } catch (final IOException ex) {
            failures.add(new ExecutionException.Attempt("prefill", slot, ex.toString()));
            return null;
        } finally {
            registry.requestFinished(slot, promptTokens);
        }
    }

    /** Where a request for a pod goes: the URI, and the data-parallel rank header's value or null for none. */
    private record Target(URI uri, String rank) {
    }

    /**
     * @return the request's target for the pod in {@code slot}, or null when neither the pod nor (for a rank pod)
     * its base pod has an endpoint. Scans the registry's slots for rank pods: per request, next to a network call.
     */
    private Target target(final int slot, final String path) {
        URI base = registry.endpoint(slot);
        String rank = null;
        final String podId = registry.podId(slot);
        if (podId != null) {
            final int r = DataParallelRanks.rankOf(podId);
            if (r > 0) {
                final URI engine = endpointOf(DataParallelRanks.basePodId(podId));
                if (base == null) {
                    base = engine;
                }
                if (base != null && base.equals(engine)) {
                    rank = Integer.toString(r);
                }
            } else if (base != null && hasRanks(podId)) {
                rank = "0";
            }
        }
        if (base == null) {
            return null;
        }
        final String b = base.toString();
        return new Target(URI.create((b.endsWith("/") ? b.substring(0, b.length() - 1) : b) + path), rank);
    }

    private URI endpointOf(final String podId) {
        for (int s = 0; s < PodRegistry.MAX_PODS; s++) {
            final URI e = registry.endpoint(s);
            if (e != null && podId.equals(registry.podId(s))) {
                return e;
            }
        }
        return null;
    }

    private boolean hasRanks(final String podId) {
        for (int s = 0; s < PodRegistry.MAX_PODS; s++) {
            final String id = registry.podId(s);
            if (id != null && id.length() > podId.length() && id.startsWith(podId)
                && DataParallelRanks.rankOf(id) > 0 && DataParallelRanks.basePodId(id).equals(podId)) {
                return true;
            }
        }
        return false;
    }

    private HttpRequest post(final Target target, final Map<String, String> headers, final byte[] body,
        final String hintValue) {
        final HttpRequest.Builder b = HttpRequest.newBuilder(target.uri()).timeout(requestTimeout)
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofByteArray(body));
        for (final Map.Entry<String, String> h : headers.entrySet()) {
            if (!RESTRICTED.contains(h.getKey().toLowerCase(java.util.Locale.ROOT))
                && !"content-type".equalsIgnoreCase(h.getKey())
                && !DataParallelRanks.HEADER.equalsIgnoreCase(h.getKey())
                && (hintValue == null || !hint.header().equalsIgnoreCase(h.getKey()))) {
                b.header(h.getKey(), h.getValue());
            }
        }
        if (target.rank() != null) {
            b.header(DataParallelRanks.HEADER, target.rank());
        }
        if (hintValue != null) {
            b.header(hint.header(), hintValue);
        }
        return b.build();
    }

    private static void copy(final InputStream in, final OutputStream out, final long[] total) throws IOException {
        final byte[] buffer = new byte[8192];
        try (InputStream body = in) {
            int n;
            while ((n = body.read(buffer)) >= 0) {
                if (n > 0) {
                    out.write(buffer, 0, n);
                    out.flush();
                    total[0] += n;
                }
            }
        }
    }

    private static String readStart(final InputStream in) {
        try (InputStream body = in) {
            return abbreviate(new String(body.readNBytes(200), StandardCharsets.UTF_8));
        } catch (final IOException ex) {
            return "(body unreadable: " + ex.getMessage() + ")";
        }
    }

    private static String abbreviate(final String s) {
        return s.length() > 200 ? s.substring(0, 200) + "..." : s;
    }
}
