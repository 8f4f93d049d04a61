package io.kvidx.routing.exec;

import io.kvidx.client.index.DataParallelRanks;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.Router;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.RoutingPlan;

import java.net.URI;
import java.util.Objects;
import java.util.function.IntFunction;

/**
 * The one proxy policy of kvidx: what carrying out a {@link RoutingPlan} means, whatever moves the bytes. Both
 * executors drive it, each over its own transport: {@code kvidx router}'s Netty call (the client's and the pod's
 * connections on one event loop) and {@link HttpExecutor} (blocking, on {@code java.net.http}, for JVM routers that
 * link only this module). The policy, per request a {@link ProxyExchange}:
 * <ul>
 *   <li><b>Stages.</b> A single plan calls its pod; a prefill/decode plan calls the prefill pod with
 *   {@link PrefillDecodeAdapter#prefillBody}, reads its whole answer, then calls the decode pod with
 *   {@link PrefillDecodeAdapter#decodeBody} and streams that answer.</li>
 *   <li><b>Failures</b> (a pod that cannot be reached, has no endpoint, times out, closes before answering, answers
 *   5xx, or for prefill anything but 2xx) before any byte reached the client: the pod is excluded, the workflow
 *   replans ({@link io.kvidx.routing.Workflow#replan}, {@link io.kvidx.routing.Workflow#replanDecode} for the decode
 *   stage) and the call is made again, at most {@code maxAttempts} calls per stage. A 4xx is the client's: passed
 *   through. A stream the pod breaks off after its first byte is not retried.</li>
 *   <li><b>Where a call goes</b> ({@link #target}): the pod's endpoint. A data-parallel rank pod {@code <pod>#<r>}
 *   ({@link DataParallelRanks}) with no endpoint of its own (or with its base pod's) is reached at the base pod's
 *   endpoint with the header {@code X-data-parallel-rank: r}, the way vLLM's OpenAI server takes a rank choice; a base
 *   pod whose ranks the registry knows gets {@code X-data-parallel-rank: 0}, so that the engine's own balancer does
 *   not move the request to another rank.</li>
 *   <li><b>Headers</b> ({@link #forwardsRequestHeader}, {@link ProxyExchange.Call#headers}): the client's, except
 *   {@link ProxyHeaders#isHopByHop hop-by-hop ones}, its Content-Type (always {@code application/json}), its own
 *   rank header (the router chose the rank) and, with a {@link CacheHint}, its header of the hint's name (replaced by
 *   the hint for the chosen pod).</li>
 *   <li><b>Load.</b> Each call is counted in the registry's running requests of its pod while it is in flight.</li>
 * </ul>
 *
 * <p><b>Note:</b> thread safe; each exchange is used by one thread at a time.
 */
public final class ProxyPolicy {
    /** The content type of every request sent to a pod. */
    public static final String CONTENT_TYPE = "application/json";

    private final Router router;
    private final PodRegistry registry;
    private final PrefillDecodeAdapter adapter;
    private final int maxAttempts;
    private final CacheHint hint;
    private final IntFunction<URI> endpoints;

    /**
     * @param router      the router whose plans this carries out (its workflow replans, its registry counts).
     * @param adapter     prefill/decode body rewriting (null: {@link PrefillDecodeAdapter#vllm()}).
     * @param maxAttempts calls per stage (>= 1).
     * @param hint        the cache hint header to send to the chosen pods, or null for none.
     * @param endpoints   where the pod in a slot is reached (null: the registry's endpoints).
     */
    public ProxyPolicy(final Router router, final PrefillDecodeAdapter adapter, final int maxAttempts,
        final CacheHint hint, final IntFunction<URI> endpoints) {
        if (maxAttempts < 1) {
            throw new IllegalArgumentException("maxAttempts must be >= 1: " + maxAttempts);
        }
        this.router = Objects.requireNonNull(router, "router");
        this.registry = router.registry();
        this.adapter = adapter != null ? adapter : PrefillDecodeAdapter.vllm();
        this.maxAttempts = maxAttempts;
        this.hint = hint;
        this.endpoints = endpoints != null ? endpoints : registry::endpoint;
    }

    /**
     * Starts carrying out a plan.
     *
     * @param ctx          the context the plan was made in (replans use it).
     * @param plan         the plan.
     * @param promptTokens the prompt's tokens (the pods' load), 0 when unknown.
     * @return the request's exchange.
     */
    public ProxyExchange begin(final RoutingContext ctx, final RoutingPlan plan, final int promptTokens) {
        return new ProxyExchange(this, ctx, plan, Math.max(0, promptTokens));
    }

    /**
     * @return calls per stage.
     */
    public int maxAttempts() {
        return maxAttempts;
    }

    /**
     * @return the router whose plans this carries out.
     */
    public Router router() {
        return router;
    }

    /**
     * @return the pods.
     */
    public PodRegistry registry() {
        return registry;
    }

    PrefillDecodeAdapter adapter() {
        return adapter;
    }

    /**
     * @param ctx  the decision's context.
     * @param slot the chosen pod.
     * @return the cache hint's value for the pod, or null without a hint.
     */
    String hintValue(final RoutingContext ctx, final int slot) {
        return hint == null ? null : hint.value(ctx, slot);
    }

    /**
     * @return the cache hint header's name, or null without a hint.
     */
    public String hintHeader() {
        return hint == null ? null : hint.header();
    }

    /**
     * @param name       a header of the client's request.
     * @param connection the client request's Connection header, or null.
     * @return whether it is passed on to the pod.
     */
    public boolean forwardsRequestHeader(final CharSequence name, final String connection) {
        return !ProxyHeaders.isHopByHop(name, connection)
            && !ProxyHeaders.equalsIgnoreCase(name, "content-type")
            && !ProxyHeaders.equalsIgnoreCase(name, "x-data-parallel-rank")
            && (hint == null || !ProxyHeaders.equalsIgnoreCase(name, hint.header()));
    }

    /**
     * Where a call to a pod goes.
     *
     * @param endpoint the pod's (or its engine's) base URL.
     * @param rank     the data-parallel rank header's value, or null for none.
     */
    public record Target(URI endpoint, String rank) {
    }

    /**
     * @param slot a pod.
     * @return where its calls go, or null when neither the pod nor (for a rank pod) its base pod has an endpoint.
     * Scans the registry's slots for a rank pod's base pod, and for a base pod's ranks: per call, next to a network
     * call.
     */
    public Target target(final int slot) {
        URI base = endpoints.apply(slot);
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
        return base == null ? null : new Target(base, rank);
    }

    private URI endpointOf(final String podId) {
        for (int s = 0; s < PodRegistry.MAX_PODS; s++) {
            if (podId.equals(registry.podId(s))) {
                final URI e = endpoints.apply(s);
                if (e != null) {
                    return e;
                }
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
}
