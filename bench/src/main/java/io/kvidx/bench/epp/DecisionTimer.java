package io.kvidx.bench.epp;

import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.router.RouterConfig;
import io.kvidx.routing.IndexReaderPodIndex;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.Router;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.RoutingPlan;
import io.kvidx.routing.yaml.YamlRouting;
import io.kvidx.serve.OpenAiRequest;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.HdrHistogram.Histogram;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The decision layer alone, in this process, over the same index and prompts as the picker: the routing document
 * {@code kvidx router} and {@code kvidx epp} make from the same options ({@link RouterConfig#routingDocument()}:
 * cache-aware, with the tokenize stage when a tokenizer is given), a context filled as the router's
 * {@code Decisions} fills it (model, prompt tokens or text) and the router's {@link Router#plan}. Timed one request at
 * a time on one thread (closed loop, no gRPC), per request:
 * <ul>
 *   <li>{@code parse}: the body read by {@link OpenAiRequest} (the reader both the router and the picker use);</li>
 *   <li>{@code decide}: fill and plan, what {@code kvidx router} runs per request (for text: tokenizing too);</li>
 *   <li>{@code work}: parse, decide and the held depth of the picked pod, all the picker does on its thread per
 *   request besides gRPC and protobuf (the picker's predicted-tokens query).</li>
 * </ul>
 *
 * <p><b>Note:</b> one thread.
 */
final class DecisionTimer implements AutoCloseable {
    private final IndexReaderPodIndex index;
    private final PodRegistry registry = new PodRegistry();
    private final YamlRouting.Environment environment;
    private final YamlRouting.Loaded loaded;
    private final Router router;
    private final RoutingContext rc;
    private final OpenAiRequest parsed = new OpenAiRequest();

    /**
     * The figures of one prompt set.
     *
     * @param parse  body parse, ns.
     * @param decide fill and plan, ns.
     * @param work   parse, decide and held depth, ns.
     * @param heldBlocks the picked pods' held depths summed over the timed requests (the prediction's blocks).
     */
    record Result(Histogram parse, Histogram decide, Histogram work, long heldBlocks) {
    }

    /**
     * @param dir       the index directory.
     * @param cell      the cell.
     * @param tokenizer the picker's tokenizer file, or null.
     */
    DecisionTimer(final Path dir, final String cell, final Path tokenizer) {
        this.index = new IndexReaderPodIndex(new IndexReaderContext().dir(dir).cell(cell), 1_000);
        if (!index.isAvailable()) {
            index.close();
            throw new IllegalStateException("the bench's own index is not available to its reader");
        }
        registry.registerFromIndex(index);
        final RouterConfig config = tokenizer == null ? new RouterConfig()
            : RouterConfig.fromYaml("tokenizer: " + EppFixture.quote(tokenizer.toAbsolutePath().toString()) + "\n",
                null);
        this.environment = new YamlRouting.Environment().index(index).registry(registry)
            .blockSize(index.blockSize());
        this.loaded = YamlRouting.parse(config.validate().routingDocument(), environment, null);
        this.router = loaded.router();
        this.rc = router.newContext();
    }

    /**
     * @param body a request body.
     * @return the endpoint the decision layer picks for it (null when it cannot route), not timed.
     */
    String pick(final byte[] body) {
        final ByteBuf b = Unpooled.wrappedBuffer(body);
        parsed.parse(b, false);
        final RoutingPlan plan = decide();
        if (!plan.isRoutable() || plan.isFallback()) {
            return null;
        }
        final String pod = registry.podId(plan.decodeSlot());
        return pod == null ? null : EppFixture.endpoint(Integer.parseInt(pod.substring(pod.indexOf('-') + 1)));
    }

    /**
     * Times the set's requests in turn for {@code durationNs} after {@code warmupNs} untimed.
     *
     * @param bodies     the request bodies.
     * @param warmupNs   untimed time first.
     * @param durationNs timed time.
     * @return the figures.
     */
    Result time(final List<byte[]> bodies, final long warmupNs, final long durationNs) {
        final List<ByteBuf> buffers = new ArrayList<>();
        for (final byte[] b : bodies) {
            buffers.add(Unpooled.wrappedBuffer(b));
        }
        final Histogram parse = new Histogram(EnvoyLoad.HIGHEST_NS, 3);
        final Histogram decide = new Histogram(EnvoyLoad.HIGHEST_NS, 3);
        final Histogram work = new Histogram(EnvoyLoad.HIGHEST_NS, 3);
        long held = 0;
        for (int pass = 0; pass < 2; pass++) {
            final boolean timed = pass == 1;
            final long end = System.nanoTime() + (timed ? durationNs : warmupNs);
            int i = 0;
            while (System.nanoTime() < end) {
                final ByteBuf body = buffers.get(i++ % buffers.size());
                final long t0 = System.nanoTime();
                parsed.parse(body, false);
                final long t1 = System.nanoTime();
                final RoutingPlan plan = decide();
                final long t2 = System.nanoTime();
                final int depth = router.heldDepth(rc, plan.decodeSlot());
                final long t3 = System.nanoTime();
                if (timed) {
                    held += Math.max(0, depth);
                    parse.recordValue(Math.min(EnvoyLoad.HIGHEST_NS, t1 - t0));
                    decide.recordValue(Math.min(EnvoyLoad.HIGHEST_NS, t2 - t1));
                    work.recordValue(Math.min(EnvoyLoad.HIGHEST_NS, t3 - t0));
                }
            }
        }
        return new Result(parse, decide, work, held);
    }

    /** Fill and plan, as the router's {@code Decisions.decide} for a parsed body. */
    private RoutingPlan decide() {
        rc.reset();
        final var meta = rc.request();
        meta.model(parsed.model != null ? parsed.model : EppFixture.MODEL);
        if (parsed.tokenCount >= 0) {
            meta.promptTokens(parsed.tokenCount);
            rc.tokens(parsed.tokens, 0, parsed.tokenCount);
        } else if (parsed.text != null) {
            meta.prompt(parsed.text);
        }
        return router.plan(rc);
    }

    @Override
    public void close() {
        loaded.close(environment);
        index.close();
    }
}
