package io.kvidx.bench.router;

import io.kvidx.bench.Json;
import io.kvidx.bench.trace.TraceBlocks;
import io.kvidx.bench.trace.TraceRequest;
import io.kvidx.client.index.IndexConfiguration;
import io.kvidx.client.json.MiniJson;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ops.CountersFile;

import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Part A of {@code bench router}: the trace replayed through {@code kvidx router} in front of mock engines, one
 * policy at a time. Each policy gets fresh engines (empty prefix caches), a fresh daemon cell and a fresh router, so
 * every policy starts cold and sees the same requests at the same (scaled) times.
 *
 * <p>Requests: each trace request becomes a token-id completion ({@code max_tokens} 1, not streamed), its tokens
 * made by {@link TraceBlocks} from the Mooncake hash ids (each id stands for 512 tokens, equal ids give equal
 * tokens, so requests sharing hash ids share token prefixes; 512 = 32 blocks of 16), the last partial block
 * included with the same token function. Each is sent at its trace time divided by the speed-up, at most
 * {@code concurrency} at once (a request waits for a free slot; its TTFT counts from when it is sent).
 *
 * <p>Measured per request: the engine's {@code usage.prompt_tokens} and
 * {@code usage.prompt_tokens_details.cached_tokens} (the actual prefix hit), the router's
 * {@code x-kvidx-predicted-tokens} (the prefix the index said the chosen pod holds), the pod, the client's time to
 * the (single-token) answer. Per policy: hit rate, prediction error, TTFT p50/p99, the router's fallback decisions.
 */
final class E2eBench {
    private static final String FALLBACKS = "kvidx_router_decisions_total{outcome=\"fallback\"}";
    private static final String INDEXED = "kvidx_router_decisions_total{outcome=\"indexed\"}";
    private static final String WITHOUT_INDEX = "kvidx_router_decisions_total{outcome=\"without_index\"}";
    private static final long REQUEST_TIMEOUT_S = 300;
    private static final String CELL = "e2e";

    private E2eBench() {
    }

    /**
     * The replayed requests.
     *
     * @param atNs   send time, ns after the first request's.
     * @param tokens prompt length.
     * @param body   the JSON request.
     */
    record Prompt(long atNs, int tokens, byte[] body) {
    }

    /**
     * One answer.
     *
     * @param status       HTTP status (0: no answer).
     * @param ttftNs       send to complete answer.
     * @param promptTokens the engine's prompt tokens.
     * @param cachedTokens the engine's cached tokens.
     * @param predicted    the router's predicted tokens (-1: no header).
     * @param pod          the pod chosen.
     * @param sentTokens   prompt tokens sent.
     */
    record Outcome(int status, long ttftNs, int promptTokens, int cachedTokens, long predicted, String pod,
        int sentTokens) {
    }

    /**
     * One policy's figures.
     *
     * @param policy        the policy.
     * @param requests      requests sent.
     * @param errors        requests without a 200 answer.
     * @param promptTokens  sum of the engines' prompt tokens.
     * @param cachedTokens  sum of the engines' cached tokens.
     * @param maeTokens     mean |predicted - cached|.
     * @param exactPct      predicted == cached, % of answered requests.
     * @param overPct       predicted > cached.
     * @param underPct      predicted < cached.
     * @param cappedExactPct predicted capped at vLLM's largest possible hit (all full blocks before the last token)
     *                      == cached.
     * @param ttftP50Ms     time to the answer, median.
     * @param ttftP99Ms     time to the answer, p99.
     * @param fallbacks     router decisions made by the fallback picker.
     * @param indexed       router decisions made with the index.
     * @param withoutIndex  router decisions of a policy that reads no index (-1: the router does not count them).
     * @param busiestShare  share of requests the busiest pod got.
     * @param evicted       blocks the engines evicted (the daemon's count of removed blocks; -1: unread).
     * @param lateMs        worst lateness of a send against its scaled trace time.
     * @param seconds       wall time of the replay.
     */
    record PolicyResult(String policy, int requests, int errors, long promptTokens, long cachedTokens,
        double maeTokens, double exactPct, double overPct, double underPct, double cappedExactPct, double ttftP50Ms,
        double ttftP99Ms, long fallbacks, long indexed, long withoutIndex, double busiestShare, long evicted,
        double lateMs, double seconds) {

        /** @return prefix hit rate: cached / prompt tokens. */
        double hitRate() {
            return promptTokens == 0 ? 0 : (double) cachedTokens / promptTokens;
        }

        /** @return the JSON object. */
        Json json() {
            // Four decimals (Json writes two).
            return new Json().put("requests", requests).put("errors", errors)
                .putRaw("hit_rate", String.format(Locale.ROOT, "%.4f", hitRate()))
                .put("prompt_tokens", promptTokens)
                .put("cached_tokens", cachedTokens)
                .put("prediction", new Json().put("mae_tokens", maeTokens).put("exact_pct", exactPct)
                    .put("over_pct", overPct).put("under_pct", underPct).put("exact_pct_vllm_capped",
                        cappedExactPct))
                .put("ttft_ms", new Json().put("p50", ttftP50Ms).put("p99", ttftP99Ms))
                .put("fallbacks", fallbacks).put("indexed_decisions", indexed)
                .put("without_index_decisions", withoutIndex)
                .put("busiest_pod_share", busiestShare).put("blocks_evicted", evicted)
                .put("send_late_max_ms", lateMs).put("seconds", seconds);
        }
    }

    /**
     * Builds the requests: token ids from the trace's hash ids, send times from its timestamps.
     *
     * @param trace     the requests, by time.
     * @param blockSize engine block size.
     * @param maxTokens longest prompt (longer ones are cut, as a max model length would).
     * @param speedup   trace time / replay time.
     * @return the prompts (empty trace requests left out).
     */
    static List<Prompt> prompts(final List<TraceRequest> trace, final int blockSize, final int maxTokens,
        final double speedup) {
        final TraceBlocks blocks = new TraceBlocks(blockSize, maxTokens / blockSize);
        final List<Prompt> out = new ArrayList<>();
        final long first = trace.isEmpty() ? 0 : trace.get(0).timestampMs();
        for (final TraceRequest r : trace) {
            final int n = Math.min(r.promptTokens(), maxTokens / blockSize * blockSize);
            if (n < 1) {
                continue;
            }
            final int full = blocks.load(r) * blockSize;
            final int[] tokens = blocks.tokens();
            final StringBuilder sb = new StringBuilder(n * 7 + 64).append("{\"model\":\"").append(Fleet.MODEL)
                .append("\",\"max_tokens\":1,\"prompt\":[");
            for (int p = 0; p < n; p++) {
                if (p > 0) {
                    sb.append(',');
                }
                // Full blocks as TraceBlocks made them; the last partial block with its token function.
                sb.append(p < full ? tokens[p] : TraceBlocks.token(r.hashIds()[p / TraceRequest.TRACE_BLOCK_TOKENS],
                    p % TraceRequest.TRACE_BLOCK_TOKENS));
            }
            sb.append("]}");
            out.add(new Prompt((long) ((r.timestampMs() - first) * 1e6 / speedup), n,
                sb.toString().getBytes(StandardCharsets.US_ASCII)));
        }
        return out;
    }

    /**
     * Runs one policy on fresh engines, daemon and router.
     *
     * @param policy  the router's policy.
     * @param prompts the requests.
     * @param o       the bench's options.
     * @param dir     this policy's directory (index, logs).
     * @param log     progress.
     * @return the figures.
     * @throws IOException when a process does not come up.
     * @throws InterruptedException when interrupted.
     */
    static PolicyResult run(final String policy, final List<Prompt> prompts, final RouterBench.Options o,
        final Path dir, final PrintStream log) throws IOException, InterruptedException {
        final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();
        try (ChildProcesses procs = new ChildProcesses(dir.resolve("logs"))) {
            final List<String> pods = new ArrayList<>();
            for (int i = 0; i < o.engines; i++) {
                pods.add(String.format("e%02d", i));
            }
            final List<Fleet.Engine> engines = Fleet.startEngines(procs, new Fleet.EngineSettings(o.python,
                o.mockEngine, o.blockSize, o.numBlocks, o.prefillUsPerToken), pods);
            final Path indexDir = dir.resolve("index");
            Fleet.startDaemon(procs, indexDir, CELL, o.blockSize, engines);
            final Map<String, String> urls = new LinkedHashMap<>();
            for (final Fleet.Engine e : engines) {
                urls.put(e.pod(), e.http());
            }
            final Fleet.Router router = Fleet.startRouter(procs, "router", indexDir, CELL, policy, urls, true,
                o.routerJvmArgs);
            Fleet.awaitRoutable(client, procs, "router", router, engines.size());
            final long started = System.nanoTime();
            final Outcome[] outcomes = new Outcome[prompts.size()];
            final double lateMs = replay(client, URI.create("http://127.0.0.1:" + router.port()
                + "/v1/completions"), prompts, o.concurrency, outcomes);
            final double seconds = (System.nanoTime() - started) / 1e9;
            final long fallbacks = Fleet.metric(client, router.port(), FALLBACKS);
            final long indexed = Fleet.metric(client, router.port(), INDEXED);
            final long withoutIndex = Fleet.metric(client, router.port(), WITHOUT_INDEX);
            final PolicyResult r = summarise(policy, outcomes, o.blockSize, fallbacks, indexed, withoutIndex,
                evicted(indexDir), lateMs, seconds);
            if (r.errors() > 0) {
                log.printf("  %s: %d request(s) failed; router log ends: %s%n", policy, r.errors(),
                    procs.tail("router"));
            }
            return r;
        } finally {
            client.close();
        }
    }

    /**
     * Sends the prompts at their times, at most {@code concurrency} at once, and waits for every answer.
     *
     * @return the worst lateness of a send, ms.
     */
    private static double replay(final HttpClient client, final URI uri, final List<Prompt> prompts,
        final int concurrency, final Outcome[] outcomes) throws InterruptedException {
        final Semaphore slots = new Semaphore(concurrency);
        final CountDownLatch done = new CountDownLatch(prompts.size());
        final long t0 = System.nanoTime() + 100_000_000L;
        long late = 0;
        for (int i = 0; i < prompts.size(); i++) {
            final Prompt p = prompts.get(i);
            final long due = t0 + p.atNs();
            long now;
            while ((now = System.nanoTime()) < due) {
                LockSupport.parkNanos(due - now);
            }
            slots.acquire();
            late = Math.max(late, System.nanoTime() - due);
            final HttpRequest request = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(REQUEST_TIMEOUT_S))
                .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofByteArray(p.body()))
                .build();
            final int k = i;
            final long sent = System.nanoTime();
            client.sendAsync(request, HttpResponse.BodyHandlers.ofString()).whenComplete((response, ex) -> {
                try {
                    outcomes[k] = outcome(response, System.nanoTime() - sent, p.tokens());
                } finally {
                    slots.release();
                    done.countDown();
                }
            });
        }
        if (!done.await(REQUEST_TIMEOUT_S + 30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("answers still missing " + (REQUEST_TIMEOUT_S + 30) + " s after the"
                + " last request");
        }
        return late / 1e6;
    }

    /** @return the blocks the daemon saw removed (the engines' evictions), or -1 when the counters are unread. */
    private static long evicted(final Path indexDir) {
        try (CountersFile.Reader c = CountersFile.open(IndexConfiguration.indexFile(indexDir, CELL).getParent())) {
            return c.value(CounterType.BLOCKS_REMOVED.typeId()) + c.value(CounterType.UNKNOWN_REMOVALS.typeId());
        } catch (final RuntimeException ex) {
            return -1;
        }
    }

    private static Outcome outcome(final HttpResponse<String> r, final long ttftNs, final int sentTokens) {
        if (r == null) {
            return new Outcome(0, ttftNs, 0, 0, -1, null, sentTokens);
        }
        final long predicted = r.headers().firstValueAsLong("x-kvidx-predicted-tokens").orElse(-1);
        final String pod = r.headers().firstValue("x-kvidx-pod").orElse(null);
        if (r.statusCode() != 200) {
            return new Outcome(r.statusCode(), ttftNs, 0, 0, predicted, pod, sentTokens);
        }
        try {
            final Map<?, ?> usage = (Map<?, ?>) ((Map<?, ?>) MiniJson.parse(r.body())).get("usage");
            final Map<?, ?> details = (Map<?, ?>) usage.get("prompt_tokens_details");
            return new Outcome(200, ttftNs, ((Number) usage.get("prompt_tokens")).intValue(),
                details == null ? 0 : ((Number) details.get("cached_tokens")).intValue(), predicted, pod,
                sentTokens);
        } catch (final RuntimeException ex) {
            return new Outcome(-1, ttftNs, 0, 0, predicted, pod, sentTokens);
        }
    }

    static PolicyResult summarise(final String policy, final Outcome[] outcomes, final int blockSize,
        final long fallbacks, final long indexed, final long withoutIndex, final long evicted, final double lateMs,
        final double seconds) {
        long prompt = 0;
        long cached = 0;
        long absError = 0;
        int answered = 0;
        int exact = 0;
        int over = 0;
        int under = 0;
        int cappedExact = 0;
        int errors = 0;
        final long[] ttft = new long[outcomes.length];
        final Map<String, Integer> perPod = new HashMap<>();
        for (int i = 0; i < outcomes.length; i++) {
            final Outcome x = outcomes[i];
            ttft[i] = x == null ? Long.MAX_VALUE : x.ttftNs();
            if (x == null || x.status() != 200) {
                errors++;
                continue;
            }
            answered++;
            prompt += x.promptTokens();
            cached += x.cachedTokens();
            if (x.pod() != null) {
                perPod.merge(x.pod(), 1, Integer::sum);
            }
            final long predicted = Math.max(0, x.predicted());
            absError += Math.abs(predicted - x.cachedTokens());
            if (predicted == x.cachedTokens()) {
                exact++;
            } else if (predicted > x.cachedTokens()) {
                over++;
            } else {
                under++;
            }
            // vLLM computes the last prompt token: at most (prompt - 1) / block full blocks can hit.
            final long most = (long) ((x.promptTokens() - 1) / blockSize) * blockSize;
            if (Math.min(predicted, most) == x.cachedTokens()) {
                cappedExact++;
            }
        }
        Arrays.sort(ttft);
        int busiest = 0;
        for (final int n : perPod.values()) {
            busiest = Math.max(busiest, n);
        }
        final double pct = answered == 0 ? 0 : 100.0 / answered;
        return new PolicyResult(policy, outcomes.length, errors, prompt, cached,
            answered == 0 ? 0 : (double) absError / answered, exact * pct, over * pct, under * pct,
            cappedExact * pct, percentileMs(ttft, 0.50), percentileMs(ttft, 0.99), fallbacks, indexed, withoutIndex,
            answered == 0 ? 0 : (double) busiest / answered, evicted, lateMs, seconds);
    }

    private static double percentileMs(final long[] sorted, final double q) {
        if (sorted.length == 0) {
            return Double.NaN;
        }
        final long v = sorted[Math.min(sorted.length - 1, (int) Math.ceil(q * sorted.length) - 1)];
        return v == Long.MAX_VALUE ? Double.POSITIVE_INFINITY : Math.round(v / 1e4) / 100.0;
    }
}
