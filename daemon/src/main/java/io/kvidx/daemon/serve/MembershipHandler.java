package io.kvidx.daemon.serve;

import com.fasterxml.jackson.core.JsonGenerator;
import io.kvidx.client.index.IndexReader;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.daemon.membership.Engine;
import io.kvidx.daemon.membership.Membership;
import io.kvidx.serve.Responses;
import io.netty.channel.ChannelHandlerContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * {@code POST /register}, {@code POST /unregister} and {@code GET /workers}: the API's door onto the daemon's
 * {@link Membership} table. A change is validated here (fields, endpoint shape, block size) and carried out on the
 * table's own thread; the answer is written when its future completes, so the event loop never waits: a registration
 * once the transport holds its subscription (nothing is kept when it cannot subscribe), an unregistration once its
 * pods are down to readers (or 503 after {@link FleetApi#changeTimeoutMs()}).
 *
 * <p><b>Note:</b> stateless; called on event-loop threads.
 */
final class MembershipHandler {
    private static final Logger LOG = LoggerFactory.getLogger(MembershipHandler.class);

    private final IndexReader reader;
    private final FleetApi fleet;
    private final PodTableView.Source pods;

    MembershipHandler(final IndexReader reader, final FleetApi fleet, final PodTableView.Source pods) {
        this.reader = reader;
        this.fleet = fleet;
        this.pods = pods;
    }

    /**
     * @param mooncake true: Mooncake's RFC answer ({@code 200 {"status":"registered successfully","instance_id"}}, the
     *                 same registration again included); false: Dynamo's ({@code 201 {"status":"ok"}}, 409 again).
     */
    void register(final ChannelHandlerContext ctx, final boolean keepAlive, final RequestBody b,
        final boolean mooncake) {
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
        for (final String e : new String[] {b.endpoint, b.replayEndpoint}) {
            if (e != null && !fleet.registerHosts().allows(e)) {
                throw new ApiException(403, ApiException.ENDPOINT_NOT_ALLOWED, "endpoint " + e + " names a host "
                    + "outside the daemon's httpRegisterHosts " + fleet.registerHosts().patterns());
            }
        }
        if (b.model == null || b.model.isEmpty()) {
            throw ApiException.missing("model_name");
        }
        if (b.blockSize > 0 && b.blockSize != reader.blockSize()) {
            throw new ApiException(409, ApiException.WRONG_BLOCK_SIZE, "block_size mismatch for model=" + b.model
                + " tenant=" + (b.group == null || b.group.isEmpty() ? Engine.DEFAULT_GROUP : b.group) + ": existing="
                + reader.blockSize() + ", requested=" + b.blockSize + " (the cell has one router block size: start a "
                + "daemon with --block-size " + b.blockSize + " for such engines)");
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
            throw ApiException.refused("instance_id", ex.getMessage());
        }
        fleet.membership().register(engine).whenComplete((outcome, failure) -> {
            if (failure != null) {
                ApiHandler.error(ctx, keepAlive, subscribeFailed(engine, unwrap(failure)));
            } else if (outcome == Membership.Outcome.FULL) {
                ApiHandler.error(ctx, keepAlive, new ApiException(429, ApiException.TOO_MANY_ENGINES, "the daemon "
                    + "holds the most API registrations allowed (httpMaxRegistrations); unregister one first"));
            } else if (outcome == Membership.Outcome.CONFLICT) {
                ApiHandler.error(ctx, keepAlive, new ApiException(409, ApiException.CONFLICT, "instance "
                    + engine.instanceId() + " dp_rank " + engine.dpRank() + " already registered with another "
                    + "endpoint, model or routing group; unregister it first"));
            } else if (mooncake) {
                // Mooncake registers by (instance, tenant, rank) and answers the same registration again alike.
                Responses.json(ctx, keepAlive, 200, g -> {
                    g.writeStartObject();
                    g.writeStringField("status", "registered successfully");
                    g.writeStringField("instance_id", engine.instanceId());
                    g.writeEndObject();
                });
            } else if (outcome == Membership.Outcome.UNCHANGED) {
                // Dynamo's answer to the same registration again; nothing changed.
                ApiHandler.error(ctx, keepAlive, new ApiException(409, ApiException.ALREADY_REGISTERED, "instance "
                    + engine.instanceId() + " dp_rank " + engine.dpRank() + " already registered"));
            } else {
                Responses.json(ctx, keepAlive, 201, g -> {
                    g.writeStartObject();
                    g.writeStringField("status", "ok");
                    g.writeStringField("outcome", outcome.name().toLowerCase(java.util.Locale.ROOT));
                    g.writeStringField("pod_id", engine.podId());
                    g.writeEndObject();
                });
            }
        });
    }

    /**
     * A registration the transport could not subscribe: nothing was kept, so registering again tries again. An
     * endpoint ZeroMQ refuses (no port, a port out of range, a bad URI) is the request's fault (400); any other cause
     * (a name that does not resolve, the transport's queue full, no subscription within the bound) is 503.
     */
    private static ApiException subscribeFailed(final Engine engine, final Throwable cause) {
        if (cause instanceof IllegalArgumentException) {
            return ApiException.refused("endpoint", "is refused by ZeroMQ (" + cause.getMessage() + "): "
                + engine.endpoint() + "; nothing was registered");
        }
        LOG.warn("register {}: cannot subscribe to {}", engine.podId(), engine.endpoint(), cause);
        return new ApiException(503, ApiException.UNAVAILABLE, "cannot subscribe to " + engine.endpoint() + ": "
            + cause.getMessage() + "; nothing was registered (retry)");
    }

    private static Throwable unwrap(final Throwable failure) {
        Throwable t = failure;
        while ((t instanceof java.util.concurrent.CompletionException
            || t instanceof java.util.concurrent.ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    private static void checkEndpoint(final String field, final String endpoint) {
        if (!(endpoint.startsWith("tcp://") || endpoint.startsWith("ipc://")) || endpoint.length() < 8) {
            // Dynamo's words first ("invalid ZMQ endpoint `...`" / "invalid replay endpoint `...`"), then kvidx's rule.
            throw new ApiException(400, ApiException.INVALID_FIELD, "invalid " + ("endpoint".equals(field) ? "ZMQ"
                : "replay") + " endpoint `" + endpoint + "`: not tcp://host:port or ipc://path (field '" + field
                + "')");
        }
    }

    /**
     * @param mooncake true: Mooncake's RFC answer ({@code {"status":"unregistered successfully","removed_instances":
     *                 ["id|tenant|rank", ...]}}, 404 {@code service not found: id|tenant|rank}); false: Dynamo's.
     */
    void unregister(final ChannelHandlerContext ctx, final boolean keepAlive, final RequestBody b,
        final boolean mooncake) {
        if (b.instanceId == null) {
            throw ApiException.missing("instance_id");
        }
        final String instance = b.instanceId;
        // Mooncake names what it removed as id|tenant|rank: the registrations the removal takes, read before it.
        final List<String> removed = new ArrayList<>();
        if (mooncake) {
            for (final Engine e : fleet.membership().engines().values()) {
                if (instance.equals(e.instanceId()) && (b.dpRank < 0 || b.dpRank == e.dpRank())) {
                    removed.add(e.instanceId() + "|" + e.routingGroup() + "|" + e.dpRank());
                }
            }
            removed.sort(null);
        }
        final long timeoutMs = fleet.changeTimeoutMs();
        // Answered once the pods are down to readers (no query names them, /workers does not list them), or 503
        // after the bound; the event loop never waits: the answer is written when the future completes.
        final CompletableFuture<Membership.Outcome> removal = fleet.membership().unregister(instance, b.dpRank)
            .orTimeout(timeoutMs, TimeUnit.MILLISECONDS);
        removal.whenComplete((outcome, failure) -> {
            final Throwable cause = failure == null ? null : unwrap(failure);
            if (cause instanceof TimeoutException) {
                ApiHandler.error(ctx, keepAlive, new ApiException(503, ApiException.UNAVAILABLE, "instance "
                    + instance + " was not taken down within " + timeoutMs + " ms (the membership table's thread or "
                    + "a writer is far behind): its removal goes on, and answers may name it until it is done"));
            } else if (cause != null) {
                LOG.warn("unregister {} failed", instance, cause);
                ApiHandler.error(ctx, keepAlive, new ApiException(500, ApiException.INTERNAL,
                    "unregistration failed: " + cause));
            } else if (outcome == Membership.Outcome.UNKNOWN) {
                ApiHandler.error(ctx, keepAlive, new ApiException(404, ApiException.UNKNOWN_INSTANCE, mooncake
                    ? "service not found: " + instance + "|" + (b.group == null ? Engine.DEFAULT_GROUP : b.group) + "|"
                    + Math.max(0, b.dpRank) : "instance " + instance + " not found"));
            } else if (mooncake) {
                Responses.json(ctx, keepAlive, 200, g -> {
                    g.writeStartObject();
                    g.writeStringField("status", "unregistered successfully");
                    g.writeArrayFieldStart("removed_instances");
                    for (final String r : removed) {
                        g.writeString(r);
                    }
                    g.writeEndArray();
                    g.writeEndObject();
                });
            } else {
                Responses.json(ctx, keepAlive, 200, g -> {
                    g.writeStartObject();
                    g.writeStringField("status", "ok");
                    g.writeEndObject();
                });
            }
        });
    }

    /**
     * @param model the {@code model_name} filter, or null for every model.
     * @param group the {@code routing_group} filter, or null for every group (pods no registration names are in the
     *              default group).
     */
    void workers(final ChannelHandlerContext ctx, final boolean keepAlive, final String model, final String group) {
        final PodTableView view = pods.current();
        final Map<String, List<Engine>> byInstance = new TreeMap<>();
        for (final Engine e : fleet.membership().engines().values()) {
            if (e.instanceId() == null) {
                continue; // a configured endpoint whose pods its topics name: they are listed as pods below
            }
            if (model != null && !model.equals(e.model()) || group != null && !group.equals(e.routingGroup())) {
                continue; // Dynamo's filters: each optional, both applied
            }
            byInstance.computeIfAbsent(e.instanceId(), k -> new ArrayList<>()).add(e);
        }
        byInstance.values().forEach(ranks -> ranks.sort(java.util.Comparator.comparingInt(Engine::dpRank)));
        // Pods alive in the index that no registration names (topics of a bound socket, Aeron publishers). A pod
        // taken down (unregistered, silent, its publisher gone) is no worker while its blocks are swept.
        final java.util.Set<String> registered = new java.util.HashSet<>();
        for (final Engine e : fleet.membership().engines().values()) {
            registered.add(e.instanceId());
        }
        final Map<String, List<Integer>> unregistered = new TreeMap<>();
        for (int slot = 0; slot < view.present.length; slot++) {
            if (view.present[slot] && !registered.contains(view.instance[slot]) && reader.isAlive(slot)
                && (model == null || model.equals(view.model[slot]))
                && (group == null || Engine.DEFAULT_GROUP.equals(group))) {
                unregistered.computeIfAbsent(view.instance[slot], k -> new ArrayList<>()).add(slot);
            }
        }
        Responses.json(ctx, keepAlive, 200, g -> {
            g.writeStartArray();
            for (final var entry : byInstance.entrySet()) {
                g.writeStartObject();
                writeInstanceId(g, entry.getKey());
                g.writeStringField("source", "zmq");
                // Dynamo's listener states: a rank whose pod the index holds alive is active, one whose first events
                // have not come (or whose pod was taken down as silent) pending; the instance is active when all are.
                final List<Engine> ranks = entry.getValue();
                final boolean[] alive = new boolean[ranks.size()];
                boolean all = true;
                for (int i = 0; i < alive.length; i++) {
                    alive[i] = isAlive(view, ranks.get(i).podId());
                    all &= alive[i];
                }
                g.writeStringField("status", all ? "active" : "pending");
                g.writeStringField("model_name", entry.getValue().get(0).model());
                g.writeStringField("routing_group", entry.getValue().get(0).routingGroup());
                g.writeNumberField("block_size", reader.blockSize());
                g.writeObjectFieldStart("endpoints");
                for (final Engine e : entry.getValue()) {
                    g.writeStringField(Integer.toString(e.dpRank()), e.endpoint());
                }
                g.writeEndObject();
                g.writeObjectFieldStart("listeners");
                for (int i = 0; i < alive.length; i++) {
                    g.writeObjectFieldStart(Integer.toString(ranks.get(i).dpRank()));
                    g.writeStringField("endpoint", ranks.get(i).endpoint());
                    g.writeStringField("status", alive[i] ? "active" : "pending");
                    g.writeEndObject();
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
                g.writeStringField("status", "active");
                g.writeObjectFieldStart("endpoints");
                g.writeEndObject();
                g.writeObjectFieldStart("listeners");
                g.writeEndObject();
                g.writeEndObject();
            }
            g.writeEndArray();
        });
    }

    private boolean isAlive(final PodTableView view, final String podId) {
        final String base = io.kvidx.client.index.DataParallelRanks.basePodId(podId);
        final int rank = io.kvidx.client.index.DataParallelRanks.rankOf(podId);
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
}
