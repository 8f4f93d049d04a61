package io.kvidx.router;

import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.RoutingPlan;
import io.kvidx.routing.exec.ProxyPolicy;
import io.netty.channel.ChannelHandlerContext;
import io.netty.util.AsciiString;

import java.net.URI;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The router's executor on Netty: what every {@link ProxyCall} shares (the one {@link ProxyPolicy} of routing's
 * executors, the pod connections, the pods, the metrics, the timeouts) and the factory of calls. A call is the
 * policy's transport; it decides nothing the policy decides.
 *
 * <p><b>Note:</b> shared by all connections; immutable but for its cache of Host headers (a concurrent map).
 */
final class ProxyCalls {
    final ProxyPolicy policy;
    final Upstreams upstreams;
    final PodBook pods;
    final Decisions decisions;
    final RouterMetrics metrics;
    final long firstByteMs;
    final long requestMs;
    /** Whether answers carry x-kvidx-pod, x-kvidx-predicted-tokens, x-kvidx-fallback, x-kvidx-prefill-pod. */
    final boolean responseHeaders;
    final int blockSize;
    /** Each pod URL's Host header, made once. */
    private final ConcurrentHashMap<URI, AsciiString> hosts = new ConcurrentHashMap<>();

    /**
     * @param policy          the proxy policy (the router's plans, attempts, pod targets, rank and hint headers).
     * @param upstreams       the pod connections.
     * @param pods            the pods (marked down when they refuse a connection).
     * @param decisions       takes a request's routing context back when its call ends.
     * @param metrics         the router's metrics.
     * @param config          the timeouts and whether answers name the pod.
     * @param blockSize       tokens per block (the predicted-tokens header).
     */
    ProxyCalls(final ProxyPolicy policy, final Upstreams upstreams, final PodBook pods, final Decisions decisions,
        final RouterMetrics metrics, final RouterConfig config, final int blockSize) {
        this.policy = policy;
        this.upstreams = upstreams;
        this.pods = pods;
        this.decisions = decisions;
        this.metrics = metrics;
        this.firstByteMs = config.firstByteMs;
        this.requestMs = config.requestMs;
        this.responseHeaders = config.responseHeaders;
        this.blockSize = blockSize;
    }

    /**
     * @param url a pod's base URL.
     * @return its {@code Host} header's value ({@code host:port}), made once per URL.
     */
    AsciiString hostHeader(final URI url) {
        final AsciiString h = hosts.get(url);
        return h != null ? h : hosts.computeIfAbsent(url, u -> AsciiString.of(u.getHost() + ":" + Upstreams.port(u)));
    }

    /**
     * Starts proxying a decided request.
     *
     * @param client  the client's connection (the call runs on its event loop).
     * @param request the request.
     * @param rc      its routing context (released when the call ends).
     * @param plan    its plan.
     * @return the call.
     */
    ProxyCall start(final ChannelHandlerContext client, final CallRequest request, final RoutingContext rc,
        final RoutingPlan plan) {
        final ProxyCall call = new ProxyCall(this, client, request, rc,
            policy.begin(rc, plan, request.promptTokens()));
        call.start();
        return call;
    }
}
