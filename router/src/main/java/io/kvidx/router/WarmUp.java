package io.kvidx.router;

import io.kvidx.routing.Router;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.yaml.YamlRouting;
import io.kvidx.serve.HttpError;
import io.kvidx.serve.OpenAiRequest;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The router's warm-up before it reports ready ({@code GET /health} answers 503 until it ended): synthetic token-id
 * requests, each read by the same body reader the event loops use and decided by a twin of the router's routing
 * document (its own profiles, plugins and counters, over the router's index and pods: read, never written), so the
 * JIT compiles the decision path before the first client's request, and no pick, session or counter of the real
 * router sees a synthetic request. No network call: a document whose decision may wait (an LMCache lookup) is not
 * warmed. At most {@code decisions} decisions and {@code limitMs} milliseconds; a failure ends it early (the router
 * is as ready as it would be without it).
 *
 * <p><b>Note:</b> runs once on its own thread; {@link #ready()} is read by event loops.
 */
final class WarmUp implements Runnable {
    /** Shortest and longest synthetic prompts, tokens: the lengths the bench and the Mooncake trace send. */
    static final int MIN_TOKENS = 1_000;
    static final int MAX_TOKENS = 4_000;
    /** Token ids are drawn below this (any vocabulary holds them). */
    private static final int VOCABULARY = 100_000;
    /** Distinct synthetic prompts, sent in turn. */
    private static final int PROMPTS = 16;

    private final Supplier<YamlRouting.Loaded> twin;
    private final YamlRouting.Environment twinEnvironment;
    private final PodBook pods;
    private final int decisions;
    private final long limitMs;
    private volatile boolean ready;
    private volatile int made;

    /**
     * @param twin            parses the twin of the routing document (called on the warm-up thread).
     * @param twinEnvironment the environment the twin is parsed with (closed with it).
     * @param pods            the router's pods (their model, their exclusions).
     * @param decisions       most decisions (0: none; ready at once).
     * @param limitMs         most milliseconds.
     */
    WarmUp(final Supplier<YamlRouting.Loaded> twin, final YamlRouting.Environment twinEnvironment, final PodBook pods,
        final int decisions, final long limitMs) {
        this.twin = twin;
        this.twinEnvironment = twinEnvironment;
        this.pods = pods;
        this.decisions = decisions;
        this.limitMs = limitMs;
        this.ready = decisions <= 0;
    }

    /** Starts the warm-up on its own thread (nothing when there is none to do). */
    void start() {
        if (ready) {
            return;
        }
        final Thread t = new Thread(this, "kvidx-router-warm-up");
        t.setDaemon(true);
        t.start();
    }

    /**
     * @return true once the warm-up ended (or when there was none).
     */
    boolean ready() {
        return ready;
    }

    /**
     * @return decisions made so far.
     */
    int decisionsMade() {
        return made;
    }

    @Override
    public void run() {
        final long start = System.nanoTime();
        YamlRouting.Loaded loaded = null;
        try {
            loaded = twin.get();
            final Router router = loaded.router();
            if (!router.mayBlock()) {
                decide(router);
            }
        } catch (final RuntimeException ex) {
            System.err.println("kvidx router: warm-up ended early: " + ex);
        } finally {
            if (loaded != null) {
                close(loaded);
            }
            ready = true;
            System.out.printf("kvidx router: warm-up: %d synthetic decisions in %d ms; ready%n", made,
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
            System.out.flush();
        }
    }

    private void decide(final Router router) {
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(limitMs);
        final SplittableRandom random = new SplittableRandom(42);
        final ByteBuf[] bodies = new ByteBuf[PROMPTS];
        for (int i = 0; i < PROMPTS; i++) {
            final int tokens = MIN_TOKENS + i * (MAX_TOKENS - MIN_TOKENS) / (PROMPTS - 1);
            bodies[i] = Unpooled.wrappedBuffer(body(random, tokens));
        }
        final OpenAiRequest parsed = new OpenAiRequest();
        final RoutingContext rc = router.newContext();
        for (int i = 0; i < decisions && System.nanoTime() < deadline; i++) {
            try {
                parsed.parse(bodies[i % PROMPTS], false);
            } catch (final HttpError ex) {
                throw new IllegalStateException("a synthetic body was refused: " + ex.getMessage(), ex);
            }
            rc.reset();
            pods.excludeUnroutable(rc);
            rc.request().model(pods.defaultModel()).promptTokens(parsed.tokenCount);
            rc.tokens(parsed.tokens, 0, parsed.tokenCount);
            router.plan(rc);
            made = i + 1;
        }
    }

    private static byte[] body(final SplittableRandom random, final int tokens) {
        final StringBuilder s = new StringBuilder(tokens * 7).append("{\"model\":\"warm-up\",\"prompt\":[");
        for (int i = 0; i < tokens; i++) {
            s.append(i == 0 ? "" : ",").append(random.nextInt(VOCABULARY));
        }
        return s.append("],\"max_tokens\":16,\"stream\":false}").toString().getBytes(StandardCharsets.US_ASCII);
    }

    /** Closes what the twin opened: its preparers (a tokenizer) and a tier map it opened itself. */
    private void close(final YamlRouting.Loaded loaded) {
        loaded.close(twinEnvironment);
    }
}
