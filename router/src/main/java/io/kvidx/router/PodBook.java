package io.kvidx.router;

import io.kvidx.routing.PodIndex;
import io.kvidx.routing.PodLocator;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.PodTopology;
import io.kvidx.routing.RoutingContext;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * The router's pods: which slot is which pod, where each is reached, and which may be routed to now.
 *
 * <ul>
 *   <li><b>Slots:</b> while the index is mapped, pods come from its pod table ({@link PodRegistry#registerFromIndex}),
 *   each reached where {@link PodLocator} says: the configuration's list, else the daemon's pod discovery (the
 *   cell's {@code pods.json}), else {@code pod-url-template} (a data-parallel rank {@code <pod>#<r>} at its
 *   engine's); a listed pod takes its role and model from the list. While no index was ever seen, the listed pods are registered by hand in
 *   slots 0..n-1 (the fallback picker routes among them); once the index shows its pod table, a hand slot the index
 *   gives to another pod is dropped and every pod re-learnt at the index's slot.</li>
 *   <li><b>Down:</b> a pod that refuses a connection is marked down at once ({@link #markDown}, from an event loop);
 *   a health check ({@code GET <url><health-path>}, every {@code health.interval-ms}) marks pods down and up
 *   again; a check's answer is dropped when its slot changed hands meanwhile.</li>
 *   <li><b>Load:</b> optionally each engine's {@code /metrics} ({@link EngineMetrics}) every
 *   {@code scrape.interval-ms}, into {@link PodRegistry#load} and {@link PodRegistry#kvUtilization}.</li>
 * </ul>
 *
 * <p>Written by one housekeeping thread ({@link #refresh}, the checks' callbacks) and by event loops
 * ({@link #markDown}: one atomic bit). Read by deciding threads: {@link #excludeUnroutable} reads eight atomic words,
 * {@link #endpoint} one array element. Nothing here waits on a deciding thread.
 */
final class PodBook {
    private static final int WORDS = PodRegistry.MAX_PODS / 64;

    private final RouterConfig config;
    private final PodRegistry registry;
    private final PodIndex index;
    private final Map<String, RouterConfig.Pod> listed = new HashMap<>();
    private final PodLocator locator;
    /** Pod slots with no URL (no listed URL, no template) or whose pod is down. */
    private final AtomicLongArray noUrl = new AtomicLongArray(WORDS);
    private final AtomicLongArray down = new AtomicLongArray(WORDS);
    private final AtomicReferenceArray<URI> urls = new AtomicReferenceArray<>(PodRegistry.MAX_PODS);
    /** The pod each slot held at the last refresh, and its generation (housekeeping thread only). */
    private final String[] slotPod = new String[PodRegistry.MAX_PODS];
    private final int[] slotGeneration = new int[PodRegistry.MAX_PODS];
    /** Slots this book registered by hand (housekeeping thread only). */
    private final boolean[] hand = new boolean[PodRegistry.MAX_PODS];
    /** Slots this book registered with a listed pod's role and URL (housekeeping thread only). */
    private final boolean[] configured = new boolean[PodRegistry.MAX_PODS];
    private final HttpClient http;
    private final LongAdder healthFailures = new LongAdder();
    private final LongAdder scrapeFailures = new LongAdder();
    private boolean indexSeen;
    /** The one model every routable pod serves, or null (none known, or several). */
    private volatile String defaultModel;
    private long nextHealthMs;
    private long nextScrapeMs;

    /**
     * @param config   the router's configuration.
     * @param registry the routing registry the decisions read.
     * @param index    the index (may be unmapped).
     * @param cellDir  the cell directory, where the daemon's pod discovery records pods' URLs; null for none.
     * @param topology where discovered pods' nodes and zones are recorded (the {@code locality} scorer's).
     */
    PodBook(final RouterConfig config, final PodRegistry registry, final PodIndex index, final Path cellDir,
        final PodTopology topology) {
        this.config = config;
        this.registry = registry;
        this.index = index;
        final Map<String, URI> urls = new HashMap<>();
        for (final RouterConfig.Pod p : config.pods) {
            listed.put(p.id(), p);
            urls.put(p.id(), p.url());
        }
        this.locator = new PodLocator(urls, config.podUrls, cellDir, topology);
        this.http = HttpClient.newBuilder().connectTimeout(Duration.ofMillis(config.connectMs))
            .version(HttpClient.Version.HTTP_1_1).build();
    }

    /**
     * Brings the slots in step with the index (or registers the listed pods by hand while there is none), recomputes
     * which slots have a URL, and starts the health checks and scrapes that are due. Housekeeping thread only.
     *
     * @param nowMs the current time.
     */
    void refresh(final long nowMs) {
        locator.refresh();
        boolean available;
        try {
            available = index.isAvailable();
        } catch (final RuntimeException ex) {
            available = false;
        }
        if (available) {
            try {
                followIndex();
                indexSeen = true;
            } catch (final RuntimeException ex) {
                // The index went away mid-read: the next round tries again; routing falls back meanwhile.
            }
        } else if (!indexSeen) {
            registerListedByHand();
        }
        String only = null;
        boolean several = false;
        for (int slot = 0; slot < PodRegistry.MAX_PODS; slot++) {
            final String pod = registry.podId(slot);
            final int generation = registry.generation(slot);
            if (!Objects.equals(pod, slotPod[slot]) || generation != slotGeneration[slot]) {
                // Another pod now: the old one's down mark is not the new one's.
                slotPod[slot] = pod;
                slotGeneration[slot] = generation;
                setBit(down, slot, false);
            }
            final URI url = registry.isRegistered(slot) || hand[slot] ? urlOf(slot) : null;
            urls.set(slot, url);
            setBit(noUrl, slot, url == null);
            final String model = url == null ? null : registry.model(slot);
            if (model != null) {
                several |= only != null && !only.equals(model);
                only = model;
            }
        }
        defaultModel = several ? null : only;
        if (config.healthIntervalMs > 0 && nowMs >= nextHealthMs) {
            nextHealthMs = nowMs + config.healthIntervalMs;
            checkHealth();
        }
        if (config.scrapeIntervalMs > 0 && nowMs >= nextScrapeMs) {
            nextScrapeMs = nowMs + config.scrapeIntervalMs;
            scrape();
        }
    }

    private void followIndex() {
        for (int slot = 0; slot < PodRegistry.MAX_PODS; slot++) {
            if (hand[slot] || configured[slot]) {
                final PodIndex.PodDescription d = index.describe(slot);
                if (d != null && !d.podId().equals(registry.podId(slot))) {
                    registry.unregister(slot);
                    hand[slot] = false;
                    configured[slot] = false;
                } else if (hand[slot] && d != null) {
                    hand[slot] = false;
                    configured[slot] = false; // re-registered below with the index's generation
                    registry.unregister(slot);
                }
            }
        }
        // A listed pod the index shows at another slot than its hand slot: drop the hand slot.
        final Map<String, Integer> atIndex = new HashMap<>();
        for (int slot = 0; slot < PodRegistry.MAX_PODS; slot++) {
            final PodIndex.PodDescription d = index.describe(slot);
            if (d != null) {
                atIndex.put(d.podId(), slot);
            }
        }
        for (int slot = 0; slot < PodRegistry.MAX_PODS; slot++) {
            if (hand[slot]) {
                final Integer at = atIndex.get(registry.podId(slot));
                if (at != null && at != slot) {
                    registry.unregister(slot);
                    hand[slot] = false;
                }
            }
        }
        registry.registerFromIndex(index);
        for (final Map.Entry<String, Integer> e : atIndex.entrySet()) {
            final int slot = e.getValue();
            final RouterConfig.Pod p = listed.get(e.getKey());
            if (p != null && !configured[slot]) {
                final PodIndex.PodDescription d = index.describe(slot);
                if (d != null && d.podId().equals(p.id())) {
                    registry.register(slot, p.id(), p.model() != null ? p.model() : registry.model(slot), p.role(),
                        p.url(), d.generation());
                    configured[slot] = true;
                }
            } else if (p == null && configured[slot]) {
                configured[slot] = false;
            }
        }
    }

    private void registerListedByHand() {
        int slot = 0;
        for (final RouterConfig.Pod p : config.pods) {
            if (registry.slotOf(p.id()) >= 0) {
                continue;
            }
            while (slot < PodRegistry.MAX_PODS && (hand[slot] || registry.isRegistered(slot))) {
                slot++;
            }
            if (slot == PodRegistry.MAX_PODS) {
                return;
            }
            registry.register(slot, p.id(), p.model(), p.role(), p.url());
            hand[slot] = true;
        }
    }

    private URI urlOf(final int slot) {
        final URI registered = registry.endpoint(slot);
        return registered != null ? registered : locator.url(registry.podId(slot));
    }

    private void checkHealth() {
        for (int slot = 0; slot < PodRegistry.MAX_PODS; slot++) {
            final URI url = urls.get(slot);
            if (url == null) {
                continue;
            }
            final int s = slot;
            final String id = registry.podId(slot);
            final int generation = registry.generation(slot);
            final HttpRequest get = HttpRequest.newBuilder(join(url, config.healthPath))
                .timeout(Duration.ofMillis(Math.max(config.connectMs, config.healthIntervalMs))).GET().build();
            http.sendAsync(get, HttpResponse.BodyHandlers.discarding()).whenComplete((r, ex) -> {
                final boolean ok = ex == null && r.statusCode() / 100 == 2;
                if (!ok) {
                    healthFailures.increment();
                }
                if (id != null && id.equals(registry.podId(s)) && generation == registry.generation(s)) {
                    setBit(down, s, !ok); // else the slot changed hands: its new pod is checked next round
                }
            });
        }
    }

    private void scrape() {
        for (int slot = 0; slot < PodRegistry.MAX_PODS; slot++) {
            final URI url = urls.get(slot);
            if (url == null || isDown(slot)) {
                continue;
            }
            final int s = slot;
            final String id = registry.podId(slot);
            final int generation = registry.generation(slot);
            final HttpRequest get = HttpRequest.newBuilder(join(url, "/metrics"))
                .timeout(Duration.ofMillis(Math.max(config.connectMs, config.scrapeIntervalMs))).GET().build();
            http.sendAsync(get, HttpResponse.BodyHandlers.ofString()).whenComplete((r, ex) -> {
                if (ex != null || r.statusCode() != 200) {
                    scrapeFailures.increment();
                    return;
                }
                final EngineMetrics m = EngineMetrics.parse(r.body());
                if (id == null || !id.equals(registry.podId(s)) || generation != registry.generation(s)) {
                    return; // the slot changed hands while the page was read
                }
                if (m.waiting() >= 0 || m.running() >= 0) {
                    registry.load(s, Math.max(0, m.waiting()), Math.max(0, m.running()), registry.tokens(s));
                }
                if (m.usage() >= 0) {
                    registry.kvUtilization(s, m.usage());
                }
            });
        }
    }

    static URI join(final URI base, final String path) {
        final String b = base.toString();
        return URI.create((b.endsWith("/") ? b.substring(0, b.length() - 1) : b) + path);
    }

    /**
     * Excludes the slots that cannot be routed to now (no URL, or down) from the context's candidates. Deciding
     * threads; reads eight atomic words, allocation-free.
     *
     * @param ctx the decision's context, just reset.
     */
    void excludeUnroutable(final RoutingContext ctx) {
        for (int w = 0; w < WORDS; w++) {
            long bits = noUrl.get(w) | down.get(w);
            while (bits != 0) {
                ctx.exclude((w << 6) + Long.numberOfTrailingZeros(bits));
                bits &= bits - 1;
            }
        }
    }

    /**
     * @param slot pod slot.
     * @return where the pod is reached, or null.
     */
    URI endpoint(final int slot) {
        return slot < 0 || slot >= PodRegistry.MAX_PODS ? null : urls.get(slot);
    }

    /**
     * Marks a pod down after it refused a connection; the health check brings it back. Any thread.
     *
     * @param slot pod slot.
     */
    void markDown(final int slot) {
        if (slot >= 0 && slot < PodRegistry.MAX_PODS) {
            setBit(down, slot, true);
        }
    }

    boolean isDown(final int slot) {
        return (down.get(slot >>> 6) & (1L << slot)) != 0;
    }

    /**
     * @return the model of a request that names none: the one model the routable pods serve, or null when they serve
     * several (or none is known). The index keys a prompt by its model, so a request without one would match nothing.
     */
    String defaultModel() {
        return defaultModel;
    }

    /**
     * @return the number of pods that may be routed to now.
     */
    int routable() {
        int n = 0;
        for (int slot = 0; slot < PodRegistry.MAX_PODS; slot++) {
            if (urls.get(slot) != null && !isDown(slot) && registry.isRegistered(slot)) {
                n++;
            }
        }
        return n;
    }

    /**
     * @return the models served: the registered pods' models, the listed pods' models and the LoRA adapters.
     */
    TreeSet<String> models() {
        final TreeSet<String> models = new TreeSet<>();
        for (int slot = 0; slot < PodRegistry.MAX_PODS; slot++) {
            final String m = registry.isRegistered(slot) ? registry.model(slot) : null;
            if (m != null) {
                models.add(m);
            }
        }
        for (final RouterConfig.Pod p : config.pods) {
            if (p.model() != null) {
                models.add(p.model());
            }
        }
        models.addAll(config.loraAdapters.keySet());
        return models;
    }

    long healthFailures() {
        return healthFailures.sum();
    }

    long scrapeFailures() {
        return scrapeFailures.sum();
    }

    /**
     * @return distinct pods whose {@code pod-url-template} URL was refused (its host not allowed).
     */
    long podUrlsRefused() {
        return locator.refusedPods();
    }

    /**
     * @return reads of the cell's discovered-pod file that failed (the last good directory was kept).
     */
    long podDirectoryReadFailures() {
        return locator.readFailures();
    }

    PodRegistry registry() {
        return registry;
    }

    private static void setBit(final AtomicLongArray words, final int slot, final boolean on) {
        final int w = slot >>> 6;
        final long bit = 1L << slot;
        long cur;
        do {
            cur = words.get(w);
            if (((cur & bit) != 0) == on) {
                return;
            }
        } while (!words.compareAndSet(w, cur, on ? cur | bit : cur & ~bit));
    }
}
