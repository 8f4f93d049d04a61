package io.kvidx.discovery;

import io.kvidx.client.json.MiniJson;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The model of a Ready pod that names none (no {@value DiscoveryContext#MODEL_ANNOTATION} annotation, no model label,
 * no default): asked of the engine itself, {@code GET <http url>/v1/models} (vLLM's and SGLang's OpenAI servers
 * answer {@code {"data": [{"id": "<model>", ...}, ...]}}; the first id is the served model). The answer is kept per
 * pod uid (a pod serves one model for its life); a failed or refused answer is asked again after
 * {@value #RETRY_MS} ms. Until the model is known the pod runs no engine: keyed with no model its blocks would match
 * no request.
 *
 * <p>Bounded: one request in flight per pod, {@value #TIMEOUT_MS} ms each (connect and answer), bodies of at most
 * {@value #MAX_BODY_CHARS} chars. The answers arrive on the HTTP client's threads; {@code learnt} is then called so
 * that discovery rebuilds its engine list.
 *
 * <p><b>Note:</b> {@link #modelOf} and {@link #retain} from discovery's thread; the rest is thread safe.
 */
final class ModelProbe implements AutoCloseable {
    /** Connect and answer timeout of one question, ms. */
    static final long TIMEOUT_MS = 2_000;
    /** Delay before a pod whose answer failed is asked again, ms. */
    static final long RETRY_MS = 5_000;
    /** Longest answer read. */
    static final int MAX_BODY_CHARS = 1 << 20;

    private static final MiniJson.Limits LIMITS = MiniJson.Limits.DEFAULT.withMaxInputChars(MAX_BODY_CHARS);

    private final HttpClient http;
    private final Runnable learnt;
    private final Map<String, String> models = new ConcurrentHashMap<>();
    private final Map<String, Long> failedAtMs = new ConcurrentHashMap<>();
    private final Map<String, String> whyFailed = new ConcurrentHashMap<>();
    private final Set<String> inFlight = ConcurrentHashMap.newKeySet();

    /**
     * @param learnt called (on an HTTP client thread) when an answer arrived or failed.
     */
    ModelProbe(final Runnable learnt) {
        this.learnt = learnt;
        this.http = HttpClient.newBuilder().connectTimeout(Duration.ofMillis(TIMEOUT_MS))
            .version(HttpClient.Version.HTTP_1_1).followRedirects(HttpClient.Redirect.NEVER).build();
    }

    /**
     * @param podUid  the pod's uid.
     * @param httpUrl its engine's OpenAI server.
     * @param nowMs   the time.
     * @return its model when the engine told it, else null (a question is then on its way, unless one is or its last
     * failure is recent).
     */
    String modelOf(final String podUid, final String httpUrl, final long nowMs) {
        final String known = models.get(podUid);
        if (known != null) {
            return known;
        }
        final Long failed = failedAtMs.get(podUid);
        if ((failed == null || nowMs - failed >= RETRY_MS) && inFlight.add(podUid)) {
            ask(podUid, httpUrl);
        }
        return null;
    }

    /**
     * @param podUid a pod's uid.
     * @return why its last question failed, or null.
     */
    String whyFailed(final String podUid) {
        return whyFailed.get(podUid);
    }

    /**
     * Forgets the pods no longer seen.
     *
     * @param podUids the pods seen now.
     */
    void retain(final Set<String> podUids) {
        models.keySet().retainAll(podUids);
        failedAtMs.keySet().retainAll(podUids);
        whyFailed.keySet().retainAll(podUids);
    }

    private void ask(final String podUid, final String httpUrl) {
        final HttpRequest get;
        try {
            get = HttpRequest.newBuilder(URI.create(httpUrl + "/v1/models")).timeout(Duration.ofMillis(TIMEOUT_MS))
                .header("Accept", "application/json").GET().build();
        } catch (final IllegalArgumentException ex) {
            failed(podUid, "bad URL " + httpUrl + ": " + ex.getMessage());
            return;
        }
        http.sendAsync(get, HttpResponse.BodyHandlers.ofString()).whenComplete((r, ex) -> {
            try {
                if (ex != null) {
                    failed(podUid, "GET " + get.uri() + ": " + ex);
                } else if (r.statusCode() != 200) {
                    failed(podUid, "GET " + get.uri() + " answered " + r.statusCode());
                } else {
                    final String model = firstModel(r.body());
                    if (model == null) {
                        failed(podUid, "GET " + get.uri() + " names no model");
                    } else {
                        models.put(podUid, model);
                        failedAtMs.remove(podUid);
                        whyFailed.remove(podUid);
                    }
                }
            } finally {
                inFlight.remove(podUid);
                learnt.run();
            }
        });
    }

    private void failed(final String podUid, final String why) {
        failedAtMs.put(podUid, System.currentTimeMillis());
        whyFailed.put(podUid, why);
    }

    /**
     * @param body a {@code /v1/models} answer.
     * @return the first model's id, or null when the body is not such an answer.
     */
    static String firstModel(final String body) {
        if (body == null || body.length() > MAX_BODY_CHARS) {
            return null;
        }
        final Object doc;
        try {
            doc = MiniJson.parse(body, LIMITS);
        } catch (final IllegalArgumentException ex) {
            return null;
        }
        if (doc instanceof Map<?, ?> m && m.get("data") instanceof List<?> data && !data.isEmpty()
            && data.get(0) instanceof Map<?, ?> first && first.get("id") instanceof String id && !id.isBlank()) {
            return id;
        }
        return null;
    }

    /**
     * @return the models learnt, by pod uid (a copy).
     */
    Map<String, String> learnt() {
        return new HashMap<>(models);
    }

    @Override
    public void close() {
        http.shutdownNow();
    }
}
