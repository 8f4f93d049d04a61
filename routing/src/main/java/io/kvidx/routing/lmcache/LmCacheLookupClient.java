package io.kvidx.routing.lmcache;

import io.kvidx.client.json.MiniJson;
import io.kvidx.routing.PodRegistry;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Asks an LMCache controller which instances hold a prefix of a request's tokens: {@code POST /lookup} with
 * <pre>{"tokens": [128000, 849, 21435, ...]}</pre>
 * answered by
 * <pre>{"event_id": "Lookup...", "layout_info": {"vllm-001": ["LocalCPUBackend", 512], ...}}</pre>
 * where each entry is an instance id and its (location, matched token count). The controller walks the request's
 * chunks (256 tokens by default, prefix-hashed) until the first chunk nobody holds and credits each chunk to its
 * first holder, so an instance's count is the end of the last matched chunk credited to it (see docs/routing.md,
 * "LMCache prefix lookup", for the sources).
 *
 * <p>Instance ids name pods through a worker map (as the vLLM router fork's {@code lmcache_worker_map}): a value
 * with a scheme ({@code http://host:port}) is matched against the registry's pod endpoints, any other value against
 * pod ids; an instance missing from the map is taken as a pod id. Instances that name no registered pod are counted
 * ({@link #unknownInstances()}) and ignored.
 *
 * <p>Liveness: a lookup never waits longer than its timeout (the future is abandoned and cancelled then), and every
 * failure (timeout, transport error, non-200 status, malformed JSON) is counted and reported as a status, never
 * thrown, so the caller can pick with its fallback. A lookup allocates (the request body, the response); nothing
 * else in this class does.
 *
 * <p><b>Note:</b> thread safe: any number of routing threads may look up concurrently; counters are atomic.
 */
public final class LmCacheLookupClient implements AutoCloseable {
    /** Path of the controller's prefix lookup. */
    public static final String LOOKUP_PATH = "/lookup";
    /** Default per-lookup timeout: the vLLM router fork caps its prefix lookup at 200 ms. */
    public static final long TIMEOUT_MS_DEFAULT = 200;
    /** Largest accepted timeout (a router thread waits this long at most). */
    public static final long TIMEOUT_MS_MAX = 60_000;

    /** {@link #lookup} status: the request had no tokens (no lookup made). */
    public static final int NO_TOKENS = -1;
    /** {@link #lookup} status: no answer within the timeout. */
    public static final int TIMEOUT = -2;
    /** {@link #lookup} status: transport error, non-200 status or a malformed answer. */
    public static final int ERROR = -3;

    private final URI lookupUri;
    private final PodRegistry registry;
    private final Map<String, String> workerMap;
    private final long timeoutNanos;
    private final Duration timeout;
    private final HttpClient client;
    private final AtomicLong lookups = new AtomicLong();
    private final AtomicLong timeouts = new AtomicLong();
    private final AtomicLong errors = new AtomicLong();
    private final AtomicLong unknownInstances = new AtomicLong();
    private volatile String lastError;

    /**
     * @param controller base URI of the controller's API server, e.g. http://lmcache-controller:9000.
     * @param registry   the router's pods.
     * @param workerMap  instance id to pod id or endpoint URL (may be empty: instance ids are pod ids).
     * @param timeoutMs  per-lookup timeout in milliseconds, in [1, {@link #TIMEOUT_MS_MAX}].
     * @throws IllegalArgumentException for a controller that is not an absolute http(s) URI, a bad timeout or an
     *                                  empty map entry.
     */
    public LmCacheLookupClient(final URI controller, final PodRegistry registry, final Map<String, String> workerMap,
        final long timeoutMs) {
        Objects.requireNonNull(controller, "controller");
        final String scheme = controller.getScheme();
        if (!("http".equalsIgnoreCase(scheme) || "https".equalsIgnoreCase(scheme)) || controller.getHost() == null) {
            throw new IllegalArgumentException("the LMCache controller must be an http(s) URL with a host, is '"
                + controller + "'");
        }
        if (timeoutMs < 1 || timeoutMs > TIMEOUT_MS_MAX) {
            throw new IllegalArgumentException("the lookup timeout must be in [1, " + TIMEOUT_MS_MAX + "] ms, is "
                + timeoutMs);
        }
        final Map<String, String> map = new LinkedHashMap<>();
        for (final Map.Entry<String, String> e : Objects.requireNonNull(workerMap, "workerMap").entrySet()) {
            if (e.getKey() == null || e.getKey().isBlank() || e.getValue() == null || e.getValue().isBlank()) {
                throw new IllegalArgumentException("worker map entries need an instance id and a pod id or URL: '"
                    + e.getKey() + "' -> '" + e.getValue() + "'");
            }
            map.put(e.getKey(), trimSlash(e.getValue().trim()));
        }
        this.lookupUri = URI.create(trimSlash(controller.toString()) + LOOKUP_PATH);
        this.registry = Objects.requireNonNull(registry, "registry");
        this.workerMap = Map.copyOf(map);
        this.timeout = Duration.ofMillis(timeoutMs);
        this.timeoutNanos = TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        this.client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(timeout).build();
    }

    private static String trimSlash(final String s) {
        int end = s.length();
        while (end > 0 && s.charAt(end - 1) == '/') {
            end--;
        }
        return s.substring(0, end);
    }

    /**
     * The request body: {@code {"tokens":[...]}} (token ids are plain integers, nothing to escape).
     *
     * @param ids    token ids.
     * @param offset first.
     * @param length count.
     * @return the JSON text.
     */
    public static String requestBody(final int[] ids, final int offset, final int length) {
        final StringBuilder sb = new StringBuilder(12 + length * 7).append("{\"tokens\":[");
        for (int i = 0; i < length; i++) {
            if (i > 0) {
                sb.append(',');
            }
            sb.append(ids[offset + i]);
        }
        return sb.append("]}").toString();
    }

    /**
     * Looks up the longest cached prefix of these tokens per pod.
     *
     * @param ids           token ids.
     * @param offset        first.
     * @param length        count.
     * @param matchedBySlot output, by pod slot: matched tokens (entries of pods the controller did not name are set
     *                      to 0).
     * @return the number of pods with a match, or {@link #NO_TOKENS}, {@link #TIMEOUT} or {@link #ERROR} (then
     * {@code matchedBySlot} is all zero).
     */
    public int lookup(final int[] ids, final int offset, final int length, final long[] matchedBySlot) {
        Arrays.fill(matchedBySlot, 0L);
        if (length <= 0) {
            return NO_TOKENS;
        }
        lookups.getAndIncrement();
        final long deadline = System.nanoTime() + timeoutNanos;
        final HttpRequest request = HttpRequest.newBuilder(lookupUri).timeout(timeout)
            .header("Content-Type", "application/json").header("Accept", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(requestBody(ids, offset, length))).build();
        final CompletableFuture<HttpResponse<String>> future =
            client.sendAsync(request, HttpResponse.BodyHandlers.ofString());
        final HttpResponse<String> response;
        try {
            response = future.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (final TimeoutException ex) {
            future.cancel(true);
            return timedOut("no answer within " + timeout.toMillis() + " ms");
        } catch (final ExecutionException ex) {
            final Throwable cause = ex.getCause();
            if (cause instanceof HttpTimeoutException) {
                return timedOut(cause.getMessage());
            }
            return failed(cause instanceof IOException ? cause.getClass().getSimpleName() + ": " + cause.getMessage()
                : String.valueOf(cause));
        } catch (final InterruptedException ex) {
            future.cancel(true);
            Thread.currentThread().interrupt();
            return failed("interrupted");
        }
        if (response.statusCode() != 200) {
            return failed("POST " + lookupUri + " answered " + response.statusCode() + ": "
                + abbreviate(response.body()));
        }
        final Map<?, ?> layout;
        try {
            final Object doc = MiniJson.parse(response.body());
            if (!(doc instanceof Map<?, ?> root) || !(root.get("layout_info") instanceof Map<?, ?> l)) {
                return failed("POST " + lookupUri + ": no \"layout_info\" object in " + abbreviate(response.body()));
            }
            layout = l;
        } catch (final IllegalArgumentException ex) {
            return failed("POST " + lookupUri + ": " + ex.getMessage());
        }
        for (final Map.Entry<?, ?> e : layout.entrySet()) {
            if (!(e.getValue() instanceof List<?> info) || info.size() != 2 || !(info.get(0) instanceof String)
                || !(info.get(1) instanceof Long matched) || matched < 0) {
                Arrays.fill(matchedBySlot, 0L);
                return failed("POST " + lookupUri + ": layout_info entry \"" + e.getKey()
                    + "\" is not [location, token count]: " + e.getValue());
            }
        }
        int found = 0;
        for (final Map.Entry<?, ?> e : layout.entrySet()) {
            final long matched = (Long) ((List<?>) e.getValue()).get(1);
            final int slot = slotOf(String.valueOf(e.getKey()));
            if (slot < 0) {
                unknownInstances.getAndIncrement();
            } else if (matched > 0) {
                if (matchedBySlot[slot] == 0) {
                    found++;
                }
                matchedBySlot[slot] = Math.max(matchedBySlot[slot], Math.min(matched, length));
            }
        }
        return found;
    }

    private int timedOut(final String why) {
        timeouts.getAndIncrement();
        lastError = "POST " + lookupUri + ": " + why;
        return TIMEOUT;
    }

    private int failed(final String why) {
        errors.getAndIncrement();
        lastError = why;
        return ERROR;
    }

    /**
     * @param instanceId an LMCache instance id.
     * @return the slot of the registered pod it names, or -1.
     */
    public int slotOf(final String instanceId) {
        final String target = workerMap.getOrDefault(instanceId, instanceId);
        final boolean url = target.contains("://");
        for (int slot = 0; slot < PodRegistry.MAX_PODS; slot++) {
            if (!registry.isRegistered(slot)) {
                continue;
            }
            if (url) {
                final URI endpoint = registry.endpoint(slot);
                if (endpoint != null && trimSlash(endpoint.toString()).equals(target)) {
                    return slot;
                }
            } else if (target.equals(registry.podId(slot))) {
                return slot;
            }
        }
        return -1;
    }

    private static String abbreviate(final String s) {
        return s.length() > 200 ? s.substring(0, 200) + "..." : s;
    }

    /**
     * @return the lookup URI.
     */
    public URI uri() {
        return lookupUri;
    }

    /**
     * @return the per-lookup timeout.
     */
    public Duration timeout() {
        return timeout;
    }

    /**
     * @return the worker map (instance id to pod id or endpoint URL).
     */
    public Map<String, String> workerMap() {
        return workerMap;
    }

    /**
     * @return lookups sent.
     */
    public long lookups() {
        return lookups.get();
    }

    /**
     * @return lookups without an answer within the timeout.
     */
    public long timeouts() {
        return timeouts.get();
    }

    /**
     * @return lookups that failed otherwise (transport error, non-200 status, malformed answer).
     */
    public long errors() {
        return errors.get();
    }

    /**
     * @return layout_info entries naming no registered pod.
     */
    public long unknownInstances() {
        return unknownInstances.get();
    }

    /**
     * @return the last failure's message, or null.
     */
    public String lastError() {
        return lastError;
    }

    /**
     * Stops the HTTP client (in-flight lookups are abandoned).
     */
    @Override
    public void close() {
        client.shutdownNow();
    }
}
