package io.kvidx.daemon.serve;

import com.fasterxml.jackson.core.JsonGenerator;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.tiers.TierMap;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.daemon.membership.Engine;
import io.kvidx.daemon.membership.Membership;
import io.kvidx.daemon.ops.PodStatsFile;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufOutputStream;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.util.concurrent.FastThreadLocal;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Routes each request of the indexer API to the one handler of its concern. Reads (query, workers, health,
 * metrics) are answered on the event loop: they read the index and shared files with bounded waits and never take
 * a lock the writer holds. Changes (register, unregister) and snapshots complete on the daemon's own threads and
 * answer when their future does, so no event loop ever waits.
 *
 * <p><b>Note:</b> shared by every channel; per-thread scratch (request body, query arrays) lives in a
 * {@link FastThreadLocal} of the event-loop thread.
 */
@ChannelHandler.Sharable
final class ApiHandler extends SimpleChannelInboundHandler<FullHttpRequest> {
    private static final Logger LOG = LoggerFactory.getLogger(ApiHandler.class);
    private static final String PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

    private final IndexReader reader;
    private final FleetApi fleet;
    private final PodTableView.Source pods;
    private final FastThreadLocal<Scratch> scratch;

    private final class Scratch {
        final RequestBody body;
        final QueryHandler query;

        Scratch(final int maxArray, final TierMap tiers, final PodStatsFile stats) {
            this.body = new RequestBody(maxArray);
            this.query = new QueryHandler(reader, pods, tiers, stats);
        }
    }

    ApiHandler(final IndexReader reader, final FleetApi fleet, final TierMap tiers, final PodStatsFile stats,
        final int maxBodyBytes) {
        this.reader = reader;
        this.fleet = fleet;
        this.pods = new PodTableView.Source(reader, fleet.membership());
        // A JSON array element takes at least two bytes ("1,"): no body holds more elements than this.
        final int maxArray = Math.max(1024, maxBodyBytes / 2);
        this.scratch = new FastThreadLocal<>() {
            @Override
            protected Scratch initialValue() {
                return new Scratch(maxArray, tiers, stats);
            }
        };
    }

    PodTableView.Source pods() {
        return pods;
    }

    @Override
    protected void channelRead0(final ChannelHandlerContext ctx, final FullHttpRequest request) {
        final boolean keepAlive = HttpUtil.isKeepAlive(request);
        if (!request.decoderResult().isSuccess()) {
            Responses.error(ctx, false, ApiException.badJson("malformed HTTP request"));
            return;
        }
        final String uri = request.uri();
        final int q = uri.indexOf('?');
        final String path = q < 0 ? uri : uri.substring(0, q);
        final HttpMethod method = request.method();
        try {
            switch (path) {
                case "/query" -> post(method, () -> query(ctx, keepAlive, request.content(), false));
                case "/query_by_hash" -> post(method, () -> query(ctx, keepAlive, request.content(), true));
                case "/register" -> post(method, () -> register(ctx, keepAlive, request.content()));
                case "/unregister" -> post(method, () -> unregister(ctx, keepAlive, request.content()));
                case "/workers" -> get(method, () -> workers(ctx, keepAlive));
                case "/health" -> get(method, () -> health(ctx, keepAlive));
                case "/metrics" -> get(method, () -> metrics(ctx, keepAlive));
                case "/dump" -> get(method, () -> dump(ctx, keepAlive));
                default -> throw new ApiException(404, ApiException.NOT_FOUND, "no endpoint " + path);
            }
        } catch (final ApiException ex) {
            Responses.error(ctx, keepAlive, ex);
        } catch (final IOException | RuntimeException ex) {
            LOG.warn("{} {} failed", method, path, ex);
            Responses.error(ctx, keepAlive, new ApiException(500, ApiException.INTERNAL, String.valueOf(ex)));
        }
    }

    @FunctionalInterface
    private interface Action {
        void run() throws IOException;
    }

    private static void post(final HttpMethod method, final Action action) throws IOException {
        if (!HttpMethod.POST.equals(method)) {
            throw new ApiException(405, ApiException.METHOD_NOT_ALLOWED, "use POST");
        }
        action.run();
    }

    private static void get(final HttpMethod method, final Action action) throws IOException {
        if (!HttpMethod.GET.equals(method) && !HttpMethod.HEAD.equals(method)) {
            throw new ApiException(405, ApiException.METHOD_NOT_ALLOWED, "use GET");
        }
        action.run();
    }

    private void query(final ChannelHandlerContext ctx, final boolean keepAlive, final ByteBuf content,
        final boolean byHash) {
        final Scratch s = scratch.get();
        s.body.read(content);
        // The answer is built before a byte is sent: a refused query gets its own status, not a torn 200.
        final ByteBuf buf = ctx.alloc().buffer();
        try (JsonGenerator g = RequestBody.FACTORY.createGenerator((OutputStream) new ByteBufOutputStream(buf))) {
            s.query.answer(s.body, byHash, g);
        } catch (final IOException | RuntimeException ex) {
            buf.release();
            if (ex instanceof RuntimeException r) {
                throw r;
            }
            throw new IllegalStateException(ex);
        }
        Responses.send(ctx, keepAlive, 200, buf, io.netty.handler.codec.http.HttpHeaderValues.APPLICATION_JSON);
    }

    private void register(final ChannelHandlerContext ctx, final boolean keepAlive, final ByteBuf content) {
        final RequestBody b = scratch.get().body;
        b.read(content);
        if (b.instanceId == null) {
            throw ApiException.missing("instance_id");
        }
        if (b.endpoint == null) {
            throw ApiException.missing("endpoint");
        }
        checkEndpoint("endpoint", b.endpoint);
        if (b.replayEndpoint != null) {
            checkEndpoint("replay_endpoint", b.replayEndpoint);
        }
        if (b.model == null || b.model.isEmpty()) {
            throw ApiException.missing("model_name");
        }
        if (b.blockSize > 0 && b.blockSize != reader.blockSize()) {
            throw new ApiException(400, ApiException.WRONG_BLOCK_SIZE, "block_size " + b.blockSize + " is not the "
                + "cell's router block size " + reader.blockSize() + " (start the daemon with --block-size "
                + b.blockSize + " for such engines)");
        }
        final ZmqEndpoint.Engine type;
        try {
            type = b.type == null ? ZmqEndpoint.Engine.VLLM : ZmqEndpoint.Engine.parse(b.type);
        } catch (final IllegalArgumentException ex) {
            throw ApiException.invalid("type", "must be vllm or sglang: " + b.type);
        }
        final Engine engine;
        try {
            engine = new Engine(b.instanceId, Math.max(0, b.dpRank), b.endpoint, b.replayEndpoint, b.model,
                reader.blockSize(), b.group, b.additionalSalt, type, Engine.Source.API);
        } catch (final IllegalArgumentException ex) {
            throw ApiException.invalid("instance_id", ex.getMessage());
        }
        fleet.membership().register(engine).whenComplete((outcome, failure) -> {
            if (failure != null) {
                LOG.warn("register {} failed", engine.podId(), failure);
                Responses.error(ctx, keepAlive, new ApiException(500, ApiException.INTERNAL,
                    "registration failed: " + failure));
            } else if (outcome == Membership.Outcome.CONFLICT) {
                Responses.error(ctx, keepAlive, new ApiException(409, ApiException.CONFLICT, "instance "
                    + engine.instanceId() + " rank " + engine.dpRank() + " is registered with another endpoint, model "
                    + "or routing group; unregister it first"));
            } else {
                Responses.json(ctx, keepAlive, outcome == Membership.Outcome.UNCHANGED ? 200 : 201, g -> {
                    g.writeStartObject();
                    g.writeStringField("status", "ok");
                    g.writeStringField("outcome", outcome.name().toLowerCase(java.util.Locale.ROOT));
                    g.writeStringField("pod_id", engine.podId());
                    g.writeEndObject();
                });
            }
        });
    }

    private static void checkEndpoint(final String field, final String endpoint) {
        if (!(endpoint.startsWith("tcp://") || endpoint.startsWith("ipc://")) || endpoint.length() < 8) {
            throw ApiException.invalid(field, "must be a ZeroMQ endpoint such as tcp://10.0.0.7:5557: " + endpoint);
        }
    }

    private void unregister(final ChannelHandlerContext ctx, final boolean keepAlive, final ByteBuf content) {
        final RequestBody b = scratch.get().body;
        b.read(content);
        if (b.instanceId == null) {
            throw ApiException.missing("instance_id");
        }
        final String instance = b.instanceId;
        fleet.membership().unregister(instance, b.dpRank).whenComplete((outcome, failure) -> {
            if (failure != null) {
                LOG.warn("unregister {} failed", instance, failure);
                Responses.error(ctx, keepAlive, new ApiException(500, ApiException.INTERNAL,
                    "unregistration failed: " + failure));
            } else if (outcome == Membership.Outcome.UNKNOWN) {
                Responses.error(ctx, keepAlive, new ApiException(404, ApiException.UNKNOWN_INSTANCE,
                    "no registered instance " + instance));
            } else {
                Responses.json(ctx, keepAlive, 200, g -> {
                    g.writeStartObject();
                    g.writeStringField("status", "ok");
                    g.writeEndObject();
                });
            }
        });
    }

    private void workers(final ChannelHandlerContext ctx, final boolean keepAlive) {
        final PodTableView view = pods.current();
        final Map<String, List<Engine>> byInstance = new TreeMap<>();
        for (final Engine e : fleet.membership().engines().values()) {
            if (e.instanceId() == null) {
                continue; // a configured endpoint whose pods its topics name: they are listed as pods below
            }
            byInstance.computeIfAbsent(e.instanceId(), k -> new ArrayList<>()).add(e);
        }
        // Pods in the index that no registration names (topics of a bound socket, Aeron publishers).
        final Map<String, List<Integer>> unregistered = new TreeMap<>();
        for (int slot = 0; slot < view.present.length; slot++) {
            if (view.present[slot] && !byInstance.containsKey(view.instance[slot])) {
                unregistered.computeIfAbsent(view.instance[slot], k -> new ArrayList<>()).add(slot);
            }
        }
        Responses.json(ctx, keepAlive, 200, g -> {
            g.writeStartArray();
            for (final var entry : byInstance.entrySet()) {
                g.writeStartObject();
                writeInstanceId(g, entry.getKey());
                g.writeStringField("source", "zmq");
                boolean alive = false;
                for (final Engine e : entry.getValue()) {
                    alive |= isAlive(view, e.podId());
                }
                g.writeStringField("status", alive ? "active" : "registered");
                g.writeStringField("model_name", entry.getValue().get(0).model());
                g.writeStringField("routing_group", entry.getValue().get(0).routingGroup());
                g.writeNumberField("block_size", reader.blockSize());
                g.writeObjectFieldStart("endpoints");
                for (final Engine e : entry.getValue()) {
                    g.writeStringField(Integer.toString(e.dpRank()), e.endpoint());
                }
                g.writeEndObject();
                g.writeObjectFieldStart("replay_endpoints");
                for (final Engine e : entry.getValue()) {
                    if (e.replayEndpoint() != null) {
                        g.writeStringField(Integer.toString(e.dpRank()), e.replayEndpoint());
                    }
                }
                g.writeEndObject();
                g.writeStringField("registered_by", entry.getValue().get(0).source() == Engine.Source.API ? "api"
                    : "config");
                g.writeEndObject();
            }
            for (final var entry : unregistered.entrySet()) {
                g.writeStartObject();
                writeInstanceId(g, entry.getKey());
                g.writeStringField("source", "events");
                boolean alive = false;
                for (final int slot : entry.getValue()) {
                    alive |= reader.isAlive(slot);
                }
                g.writeStringField("status", alive ? "active" : "draining");
                g.writeObjectFieldStart("endpoints");
                g.writeEndObject();
                g.writeEndObject();
            }
            g.writeEndArray();
        });
    }

    private boolean isAlive(final PodTableView view, final String podId) {
        final String base = io.kvidx.client.routing.DataParallelRanks.basePodId(podId);
        final int rank = io.kvidx.client.routing.DataParallelRanks.rankOf(podId);
        for (int slot = 0; slot < view.present.length; slot++) {
            if (view.present[slot] && view.dpRank[slot] == rank && base.equals(view.instance[slot])
                && reader.isAlive(slot)) {
                return true;
            }
        }
        return false;
    }

    /** Dynamo's worker ids are numbers: an id that is one is written as a number, any other as a string. */
    private static void writeInstanceId(final JsonGenerator g, final String id) throws IOException {
        g.writeFieldName("instance_id");
        if (!id.isEmpty() && id.length() <= 20 && id.chars().allMatch(c -> c >= '0' && c <= '9')
            && (id.length() == 1 || id.charAt(0) != '0')) {
            try {
                g.writeNumber(new java.math.BigInteger(id));
                return;
            } catch (final NumberFormatException ex) {
                // falls through to a string
            }
        }
        g.writeString(id);
    }

    private void health(final ChannelHandlerContext ctx, final boolean keepAlive) {
        final long age = reader.heartbeatAgeMs();
        final boolean replaced = reader.isReplaced();
        final boolean stale = reader.isWriterStale() || age < 0 || age > fleet.healthMaxHeartbeatAgeMs();
        final boolean ok = !replaced && !stale;
        Responses.json(ctx, keepAlive, ok ? 200 : 503, g -> {
            g.writeStartObject();
            g.writeStringField("status", ok ? "ok" : "unhealthy");
            if (!ok) {
                g.writeStringField("reason", replaced ? "the index file was replaced" : "the writer's heartbeat is "
                    + (age < 0 ? "missing" : age + " ms old"));
            }
            g.writeNumberField("heartbeat_age_ms", age);
            g.writeNumberField("entries", reader.entryCount());
            int alive = 0;
            for (int slot = 0; slot < reader.maxPods(); slot++) {
                if (reader.isAlive(slot)) {
                    alive++;
                }
            }
            g.writeNumberField("pods_alive", alive);
            g.writeNumberField("block_size", reader.blockSize());
            g.writeEndObject();
        });
    }

    private void metrics(final ChannelHandlerContext ctx, final boolean keepAlive) throws IOException {
        final ByteBuf buf = ctx.alloc().buffer();
        try (ByteBufOutputStream out = new ByteBufOutputStream(buf)) {
            fleet.scrapeMetrics(out);
        } catch (final IOException | RuntimeException ex) {
            buf.release();
            throw ex;
        }
        Responses.send(ctx, keepAlive, 200, buf, PROMETHEUS_TEXT);
    }

    private void dump(final ChannelHandlerContext ctx, final boolean keepAlive) {
        fleet.snapshot().whenComplete((bytes, failure) -> {
            if (failure != null) {
                Responses.error(ctx, keepAlive, new ApiException(503, ApiException.UNAVAILABLE,
                    "snapshot failed: " + (failure.getCause() != null ? failure.getCause().getMessage()
                        : failure.getMessage())));
            } else {
                Responses.send(ctx, keepAlive, 200, Unpooled.wrappedBuffer(bytes), "application/octet-stream");
            }
        });
    }
}
