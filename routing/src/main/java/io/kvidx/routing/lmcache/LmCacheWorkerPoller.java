package io.kvidx.routing.lmcache;

import io.kvidx.client.json.MiniJson;
import io.kvidx.routing.PodRegistry;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Polls an LMCache controller's {@code GET /controller/workers} and keeps each pod's key count (the number of KV
 * chunks its LMCache workers hold) for the {@link io.kvidx.routing.plugins.LmCacheScorer}. The controller
 * answers
 * <pre>{"workers": [{"instance_id": "...", "worker_id": 0, "ip": "...", "port": 8000, "key_count": 123,
 *   ...}], "total_count": 1}</pre>
 * A {@link WorkerMapper} names the pod each worker belongs to (default: its {@code instance_id} is the pod id);
 * the key counts of a pod's workers (tensor-parallel ranks) are summed. Pods the controller does not list get 0.
 *
 * <p>Run {@link #run()} from a scheduled housekeeping thread (e.g. every second).
 *
 * <p><b>Note:</b> thread safe: one thread polls, any number read {@link #keyCount(int)} (allocation-free).
 */
public final class LmCacheWorkerPoller implements Runnable {
    /** Path of the controller's worker list. */
    public static final String WORKERS_PATH = "/controller/workers";

    /**
     * Names the pod an LMCache worker serves.
     */
    @FunctionalInterface
    public interface WorkerMapper {
        /**
         * @param instanceId LMCache instance id.
         * @param workerId   worker (rank) id.
         * @param ip         worker address.
         * @param port       worker port.
         * @return the pod id in the registry, or null to ignore the worker.
         */
        String podId(String instanceId, long workerId, String ip, long port);
    }

    private final URI workersUri;
    private final PodRegistry registry;
    private final WorkerMapper mapper;
    private final HttpClient client;
    private final Duration timeout;
    private final AtomicLongArray keyCounts = new AtomicLongArray(PodRegistry.MAX_PODS);
    private final AtomicLong polls = new AtomicLong();
    private final AtomicLong errors = new AtomicLong();
    private volatile String lastError;

    /**
     * @param controller base URI of the controller, e.g. http://127.0.0.1:9000.
     * @param registry   the router's pods (pod id to slot).
     * @param mapper     worker to pod id; null for "instance_id is the pod id".
     * @param timeout    request timeout.
     */
    public LmCacheWorkerPoller(final URI controller, final PodRegistry registry, final WorkerMapper mapper,
        final Duration timeout) {
        final String base = controller.toString().replaceAll("/+$", "");
        this.workersUri = URI.create(base + WORKERS_PATH);
        this.registry = Objects.requireNonNull(registry, "registry");
        this.mapper = mapper != null ? mapper : (instance, worker, ip, port) -> instance;
        this.timeout = Objects.requireNonNull(timeout, "timeout");
        this.client = HttpClient.newBuilder().connectTimeout(timeout).build();
    }

    /**
     * Fetches the worker list once and replaces the key counts.
     *
     * @return number of workers matched to a registered pod.
     * @throws IOException          when the controller cannot be reached or answers with an error or bad JSON.
     * @throws InterruptedException when interrupted.
     */
    public int pollOnce() throws IOException, InterruptedException {
        final HttpResponse<String> response = client.send(HttpRequest.newBuilder(workersUri).timeout(timeout).GET()
            .header("Accept", "application/json").build(), HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) {
            throw new IOException("GET " + workersUri + " answered " + response.statusCode() + ": "
                + abbreviate(response.body()));
        }
        final long[] counts = new long[PodRegistry.MAX_PODS];
        int matched = 0;
        try {
            final Object doc = MiniJson.parse(response.body());
            if (!(doc instanceof Map<?, ?> root) || !(root.get("workers") instanceof List<?> workers)) {
                throw new IOException("GET " + workersUri + ": no \"workers\" array in " + abbreviate(response.body()));
            }
            for (final Object o : workers) {
                if (!(o instanceof Map<?, ?> w)) {
                    continue;
                }
                final String podId = mapper.podId(String.valueOf(w.get("instance_id")), longOf(w.get("worker_id")),
                    String.valueOf(w.get("ip")), longOf(w.get("port")));
                final int slot = podId == null ? -1 : registry.slotOf(podId);
                if (slot >= 0) {
                    counts[slot] += Math.max(0, longOf(w.get("key_count")));
                    matched++;
                }
            }
        } catch (final IllegalArgumentException ex) {
            throw new IOException("GET " + workersUri + ": " + ex.getMessage(), ex);
        }
        for (int s = 0; s < counts.length; s++) {
            keyCounts.set(s, counts[s]);
        }
        polls.incrementAndGet();
        return matched;
    }

    private static long longOf(final Object o) {
        return o instanceof Number n ? n.longValue() : 0;
    }

    private static String abbreviate(final String s) {
        return s.length() > 200 ? s.substring(0, 200) + "..." : s;
    }

    /**
     * Polls once, counting (and remembering) a failure instead of throwing; keeps the previous counts then.
     */
    @Override
    public void run() {
        try {
            pollOnce();
        } catch (final IOException ex) {
            errors.incrementAndGet();
            lastError = ex.getMessage();
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * @param slot pod slot.
     * @return the pod's LMCache key count from the last successful poll.
     */
    public long keyCount(final int slot) {
        return keyCounts.get(slot);
    }

    /**
     * @return successful polls.
     */
    public long polls() {
        return polls.get();
    }

    /**
     * @return failed polls.
     */
    public long errors() {
        return errors.get();
    }

    /**
     * @return the last failure's message, or null.
     */
    public String lastError() {
        return lastError;
    }
}
