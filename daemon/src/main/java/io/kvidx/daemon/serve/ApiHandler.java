package io.kvidx.daemon.serve;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.tiers.TierMap;
import io.kvidx.daemon.ops.PodStatsFile;
import io.kvidx.serve.BodyLimit;
import io.kvidx.serve.HttpRequestHandler;
import io.kvidx.serve.ErrorShape;
import io.kvidx.serve.HttpError;
import io.kvidx.serve.Responses;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.util.concurrent.FastThreadLocal;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;

/**
 * Routes each request of the indexer API to the one handler of its concern: {@link QueryHandler} (query,
 * query_by_hash), {@link MembershipHandler} (register, unregister, workers), {@link OperationsHandler} (health,
 * metrics, dump). A POST needs {@code Content-Type: application/json} (415 otherwise, as Dynamo's indexer answers);
 * Dynamo's peer-list endpoints are refused with 501 ({@link #noPeers}). Under {@link #MOONCAKE} the query and
 * registration endpoints answer in Mooncake's RFC shapes (docs/service-api.md, "Mooncake's shapes"). Reads (query,
 * workers, health, metrics) are answered on the event loop: they read the index and shared files with bounded waits
 * and never take a lock the writer holds; a query whose tiers would take more than
 * {@link QueryPool#TIER_LOOKUPS_ON_LOOP} tier map lookups is answered on a {@link QueryPool} thread instead. Changes (register, unregister) and
 * snapshots complete on the daemon's own threads and answer when their future does, so no event loop ever waits; the
 * serving layer's {@link io.kvidx.serve.RequestSequencer} hands this handler a connection's next request only once
 * the answer before it was written, so pipelined answers leave in request order.
 *
 * <p><b>Note:</b> shared by every channel; per-thread scratch (request body, query arrays) lives in a
 * {@link FastThreadLocal} of the event-loop or query thread.
 */
@ChannelHandler.Sharable
final class ApiHandler extends HttpRequestHandler {
    private static final Logger LOG = LoggerFactory.getLogger(ApiHandler.class);
    /** The path prefix under which query, query_by_hash, register and unregister answer in Mooncake's RFC shapes. */
    static final String MOONCAKE = "/mooncake";

    private final IndexReader reader;
    private final PodTableView.Source pods;
    private final FastThreadLocal<Scratch> scratch;
    private final MembershipHandler membership;
    private final OperationsHandler operations;
    private final QueryPool queries;

    private final class Scratch {
        final RequestBody body;
        final QueryHandler query;

        Scratch(final int maxArray, final TierMap tiers, final PodStatsFile stats) {
            this.body = new RequestBody(maxArray);
            this.query = new QueryHandler(reader, pods, tiers, stats);
        }
    }

    /**
     * A handler that answers every query on the calling thread, however many tier lookups it takes: for a single
     * thread driving the pipeline (an {@code EmbeddedChannel} in tests and fuzzing), never for a server.
     */
    ApiHandler(final IndexReader reader, final FleetApi fleet, final PodTableView.Source pods, final TierMap tiers,
        final PodStatsFile stats, final IndexFileWatch file, final int maxBodyBytes) {
        this(reader, fleet, pods, tiers, stats, file, maxBodyBytes, null);
    }

    /**
     * @param queries where a query too costly for an event loop is answered; null to answer each on the calling
     *                thread.
     */
    ApiHandler(final IndexReader reader, final FleetApi fleet, final PodTableView.Source pods, final TierMap tiers,
        final PodStatsFile stats, final IndexFileWatch file, final int maxBodyBytes, final QueryPool queries) {
        this.reader = reader;
        this.queries = queries;
        this.pods = pods;
        this.membership = new MembershipHandler(reader, fleet, pods);
        this.operations = new OperationsHandler(reader, fleet, file);
        // A JSON array element takes at least two bytes ("1,"): no body holds more elements than this.
        final int maxArray = Math.max(1024, maxBodyBytes / 2);
        this.scratch = new FastThreadLocal<>() {
            @Override
            protected Scratch initialValue() {
                return new Scratch(maxArray, tiers, stats);
            }
        };
    }

    /**
     * Writes an error in the API's shape ({@code {"error": message, "code": code}}).
     *
     * @param ctx       the connection.
     * @param keepAlive keep the connection after the answer.
     * @param error     the error.
     */
    static void error(final ChannelHandlerContext ctx, final boolean keepAlive, final HttpError error) {
        Responses.error(ctx, keepAlive, ErrorShape.FLAT, error);
    }

    @Override
    protected void tooLarge(final ChannelHandlerContext ctx, final BodyLimit.TooLarge tooLarge) {
            error(ctx, false, new ApiException(413, ApiException.BODY_TOO_LARGE, "request body exceeds "
                + tooLarge.maxBodyBytes() + " bytes (--http-max-body-bytes)"));
    }

    @Override
    protected void request(final ChannelHandlerContext ctx, final FullHttpRequest request) {
        final boolean keepAlive = HttpUtil.isKeepAlive(request);
        if (!request.decoderResult().isSuccess()) {
            error(ctx, false, ApiException.badJson("malformed HTTP request"));
            return;
        }
        final String uri = request.uri();
        final int q = uri.indexOf('?');
        final String path = q < 0 ? uri : uri.substring(0, q);
        final HttpMethod method = request.method();
        try {
            switch (path) {
                case "/query" -> post(method, request, () -> query(ctx, keepAlive, request, false, false));
                case "/query_by_hash" -> post(method, request, () -> query(ctx, keepAlive, request, true, false));
                case "/register" -> post(method, request,
                    () -> membership.register(ctx, keepAlive, body(request), false));
                case "/unregister" -> post(method, request,
                    () -> membership.unregister(ctx, keepAlive, body(request), false));
                // Mooncake's RFC shapes, for a client whose base URL ends in /mooncake.
                case MOONCAKE + "/query" -> post(method, request, () -> query(ctx, keepAlive, request, false, true));
                case MOONCAKE + "/query_by_hash" -> post(method, request,
                    () -> query(ctx, keepAlive, request, true, true));
                case MOONCAKE + "/register" -> post(method, request,
                    () -> membership.register(ctx, keepAlive, body(request), true));
                case MOONCAKE + "/unregister" -> post(method, request,
                    () -> membership.unregister(ctx, keepAlive, body(request), true));
                case "/peers" -> get(method, ApiHandler::noPeers);
                case "/register_peer", "/deregister_peer" -> post(method, request, ApiHandler::noPeers);
                case "/workers" -> get(method, () -> workers(ctx, keepAlive, uri, q));
                case "/health" -> get(method, () -> operations.health(ctx, keepAlive));
                case "/metrics" -> get(method, () -> operations.metrics(ctx, keepAlive));
                case "/dump" -> get(method, () -> dump(ctx, keepAlive, q < 0 ? null
                    : parameters(uri).get("format")));
                default -> throw new ApiException(404, ApiException.NOT_FOUND, "no endpoint " + path);
            }
        } catch (final HttpError ex) {
            error(ctx, keepAlive, ex);
        } catch (final IOException | RuntimeException ex) {
            LOG.warn("{} {} failed", method, path, ex);
            error(ctx, keepAlive, new ApiException(500, ApiException.INTERNAL, String.valueOf(ex)));
        }
    }

    /** A 405, with the methods the path takes in its {@code Allow} header (RFC 9110; Dynamo sends it too). */
    private static final class MethodNotAllowed extends HttpError {
        private static final long serialVersionUID = 1L;
        private final String allow;

        MethodNotAllowed(final String allow) {
            super(405, ApiException.METHOD_NOT_ALLOWED, "use " + allow);
            this.allow = allow;
        }

        @Override
        public void addHeaders(final io.netty.handler.codec.http.HttpHeaders headers) {
            headers.set(HttpHeaderNames.ALLOW, allow);
        }
    }

    @FunctionalInterface
    private interface Action {
        void run() throws IOException;
    }

    private static void post(final HttpMethod method, final FullHttpRequest request, final Action action)
        throws IOException {
        if (!HttpMethod.POST.equals(method)) {
            throw new MethodNotAllowed("POST");
        }
        if (!isJson(request.headers().get(HttpHeaderNames.CONTENT_TYPE))) {
            throw new ApiException(415, ApiException.UNSUPPORTED_MEDIA_TYPE,
                "Expected request with `Content-Type: application/json`");
        }
        action.run();
    }

    /**
     * Whether a content type is JSON as Dynamo's extractor (axum's {@code Json}) decides: the media type
     * {@code application/json} or {@code application/<anything>+json}, with any parameters, case aside.
     *
     * @param contentType the header's value, or null.
     * @return true for a JSON media type.
     */
    static boolean isJson(final String contentType) {
        if (contentType == null) {
            return false;
        }
        final int semi = contentType.indexOf(';');
        final String type = (semi < 0 ? contentType : contentType.substring(0, semi)).trim()
            .toLowerCase(java.util.Locale.ROOT);
        return type.equals("application/json") || type.startsWith("application/") && type.endsWith("+json");
    }

    /**
     * Dynamo's peer list feeds its start-up recovery from a peer's {@code /dump} of JSON router events; a kvidx
     * replica instead starts from another daemon's binary snapshot named by {@code --peer URL} (or YAML
     * {@code peer:}), so a list kept at run time would be used by nothing. Refused, saying so.
     */
    private static void noPeers() {
        throw new ApiException(501, ApiException.NOT_IMPLEMENTED, "kvidx keeps no peer list: a replica starts "
            + "from another daemon's snapshot given by --peer URL at start-up (docs/service-api-peers.md)");
    }

    private static void get(final HttpMethod method, final Action action) throws IOException {
        if (!HttpMethod.GET.equals(method) && !HttpMethod.HEAD.equals(method)) {
            throw new MethodNotAllowed("GET, HEAD");
        }
        action.run();
    }

    /**
     * {@code GET /dump[?format=kvidx]}: the binary snapshot a replica loads with {@code --peer}. Dynamo's format (JSON
     * router events) is refused: its events name each block's {@code tokens_hash}, the XXH3-64 of the block's tokens,
     * which the index does not keep (it keeps chained router keys, from which no block's own hash can be recovered), so
     * a Dynamo indexer rebuilt from such a dump would match no query.
     */
    private void dump(final ChannelHandlerContext ctx, final boolean keepAlive, final java.util.List<String> format) {
        final String f = format == null || format.isEmpty() ? "kvidx" : format.get(0);
        switch (f) {
            case "kvidx" -> operations.dump(ctx, keepAlive);
            case "dynamo" -> throw new ApiException(501, ApiException.NOT_IMPLEMENTED, "kvidx cannot write Dynamo's "
                + "router events: they need each block's tokens_hash (the XXH3-64 of its tokens), which kvidx's index "
                + "does not keep (it keeps chained router keys); GET /dump is the binary snapshot a kvidx replica "
                + "loads with --peer (docs/snapshot-format.md)");
            default -> throw ApiException.refused("format", "must be kvidx (the binary snapshot): " + f);
        }
    }

    /** {@code GET /workers[?model_name=M][&routing_group=G]}: Dynamo's filters ({@code tenant_id} names the group). */
    private void workers(final ChannelHandlerContext ctx, final boolean keepAlive, final String uri, final int q) {
        final java.util.Map<String, java.util.List<String>> params = q < 0 ? java.util.Map.of() : parameters(uri);
        final java.util.List<String> group = params.getOrDefault("routing_group", params.get("tenant_id"));
        membership.workers(ctx, keepAlive, first(params.get("model_name")), first(group));
    }

    /**
     * The query string's parameters; a malformed one (a {@code %} not followed by two hex digits) is the request's
     * fault: 400, not the 500 of an exception nobody expected (found by {@code HttpDoorJazzerTest}).
     */
    private static java.util.Map<String, java.util.List<String>> parameters(final String uri) {
        try {
            return new QueryStringDecoder(uri).parameters();
        } catch (final IllegalArgumentException ex) {
            throw new ApiException(400, ApiException.INVALID_FIELD, "malformed query string: " + ex.getMessage());
        }
    }

    private static String first(final java.util.List<String> values) {
        return values == null || values.isEmpty() ? null : values.get(0);
    }

    private RequestBody body(final FullHttpRequest request) {
        final RequestBody b = scratch.get().body;
        b.read(request.content());
        return b;
    }

    private void query(final ChannelHandlerContext ctx, final boolean keepAlive, final FullHttpRequest request,
        final boolean byHash, final boolean mooncake) {
        final Scratch s = scratch.get();
        s.body.read(request.content());
        try {
            // The answer is built before a byte is sent: a refused query gets its own status, not a torn 200.
            Responses.json(ctx, keepAlive, 200, g -> s.query.answer(s.body, byHash, mooncake,
                queries == null ? Integer.MAX_VALUE : QueryPool.TIER_LOOKUPS_ON_LOOP, g));
        } catch (final QueryHandler.TooManyTierLookups ex) {
            // Too costly for the loop: answered on a query thread (the sequencer holds the connection's next request).
            final ByteBuf body = request.content().retainedDuplicate().readerIndex(0);
            if (!queries.submit(() -> answerOffLoop(ctx, keepAlive, body, byHash, mooncake))) {
                body.release();
                throw new ApiException(503, ApiException.UNAVAILABLE, "the query threads are busy ("
                    + queries.threads() + " threads, " + QueryPool.QUEUE + " waiting): retry");
            }
        }
    }

    /** A query thread's answer to a query the event loop passed on; releases the body. */
    private void answerOffLoop(final ChannelHandlerContext ctx, final boolean keepAlive, final ByteBuf content,
        final boolean byHash, final boolean mooncake) {
        try {
            final Scratch s = scratch.get();
            s.body.read(content);
            Responses.json(ctx, keepAlive, 200, g -> s.query.answer(s.body, byHash, mooncake, g));
        } catch (final HttpError ex) {
            error(ctx, keepAlive, ex);
        } catch (final RuntimeException ex) {
            LOG.warn("POST {} failed", byHash ? "/query_by_hash" : "/query", ex);
            error(ctx, keepAlive, new ApiException(500, ApiException.INTERNAL, String.valueOf(ex)));
        } finally {
            content.release();
        }
    }
}
