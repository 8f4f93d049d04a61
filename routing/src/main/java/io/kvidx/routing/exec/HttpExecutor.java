package io.kvidx.routing.exec;

import io.kvidx.routing.Router;
import io.kvidx.routing.RoutingContext;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;

/**
 * The {@link Executor} on {@code java.net.http}, for JVM routers that link only this module: a blocking transport
 * for the {@link ProxyPolicy} (stages, retries, targets, data-parallel rank and cache hint headers: all the policy's,
 * none of its own). It POSTs each call to its pod and streams the answer to the sink as it arrives (server-sent
 * events pass through chunk by chunk); a prefill answer is read whole. When no pod can serve the request it throws an
 * {@link ExecutionException} listing every attempt. {@code kvidx router} drives the same policy on Netty.
 *
 * <p><b>Note:</b> thread safe; one shared {@link HttpClient}.
 */
public final class HttpExecutor implements Executor {
    private final ProxyPolicy policy;
    private final HttpClient client;
    private final Duration requestTimeout;

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
        this.policy = new ProxyPolicy(router, adapter, maxAttempts, hint, null);
        this.requestTimeout = Objects.requireNonNull(requestTimeout, "requestTimeout");
        this.client = HttpClient.newBuilder().connectTimeout(connectTimeout).version(HttpClient.Version.HTTP_1_1)
            .build();
    }

    @Override
    public Outcome execute(final RoutingContext ctx, final ProxyRequest request, final OutputStream sink)
        throws ExecutionException, InterruptedException {
        final ProxyExchange x = policy.begin(ctx, ctx.plan(), ctx.tokens().length());
        byte[] body = x.stage() == ProxyExchange.Stage.PREFILL ? x.prefillBody(request.body()) : request.body();
        while (true) {
            final ProxyExchange.Call call = x.call();
            if (call == null) {
                throw new ExecutionException(x.noPodMessage(), x.failures());
            }
            String failure;
            if (call.endpoint() == null) {
                failure = "pod has no endpoint in the registry";
            } else {
                x.started();
                try {
                    if (call.stage() == ProxyExchange.Stage.PREFILL) {
                        final HttpResponse<byte[]> r = client.send(post(call, request, body),
                            HttpResponse.BodyHandlers.ofByteArray());
                        if (!x.retries(r.statusCode())) {
                            body = x.decodeBody(request.body(), r.body());
                            x.prefilled();
                            continue;
                        }
                        failure = "HTTP " + r.statusCode() + ": " + abbreviate(new String(r.body(),
                            StandardCharsets.UTF_8));
                    } else {
                        final HttpResponse<InputStream> r = client.send(post(call, request, body),
                            HttpResponse.BodyHandlers.ofInputStream());
                        if (!x.retries(r.statusCode())) {
                            return stream(x, call, r, sink);
                        }
                        failure = "HTTP " + r.statusCode() + ": " + readStart(r.body());
                    }
                } catch (final IOException ex) {
                    failure = ex.toString();
                } finally {
                    x.ended();
                }
            }
            if (!x.failed(failure)) {
                throw new ExecutionException(x.spentMessage(), x.failures());
            }
        }
    }

    private static Outcome stream(final ProxyExchange x, final ProxyExchange.Call call,
        final HttpResponse<InputStream> response, final OutputStream sink) throws ExecutionException {
        final long[] bytes = new long[1];
        try {
            copy(response.body(), sink, bytes);
        } catch (final IOException ex) {
            x.brokeOff(ex.toString());
            throw new ExecutionException("the " + call.stage().label() + " pod " + call.slot()
                + " broke off its answer after " + bytes[0] + " bytes were streamed (not retried)", x.failures());
        }
        return new Outcome(response.statusCode(), call.slot(), x.prefillSlot(), x.attempts(), bytes[0]);
    }

    private HttpRequest post(final ProxyExchange.Call call, final ProxyRequest request, final byte[] body) {
        final String b = call.endpoint().toString();
        final HttpRequest.Builder h = HttpRequest.newBuilder(URI.create((b.endsWith("/") ? b.substring(0,
            b.length() - 1) : b) + request.path())).timeout(requestTimeout)
            .POST(HttpRequest.BodyPublishers.ofByteArray(body));
        final String connection = connectionHeader(request.headers());
        for (final Map.Entry<String, String> e : request.headers().entrySet()) {
            if (policy.forwardsRequestHeader(e.getKey(), connection)) {
                h.header(e.getKey(), e.getValue());
            }
        }
        call.headers(h::header);
        return h.build();
    }

    private static String connectionHeader(final Map<String, String> headers) {
        for (final Map.Entry<String, String> e : headers.entrySet()) {
            if ("connection".equalsIgnoreCase(e.getKey())) {
                return e.getValue();
            }
        }
        return null;
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
