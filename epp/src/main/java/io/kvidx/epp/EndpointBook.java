package io.kvidx.epp;

import io.kvidx.routing.PodIndex;
import io.kvidx.routing.PodLocator;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.PodRole;
import io.kvidx.routing.PodTopology;
import io.kvidx.routing.PodUrlTemplate;
import io.kvidx.routing.RoutingContext;

import java.net.URI;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The pods the picker may answer and the endpoint ({@code host:port}) of each, by slot: the pods the index registers
 * (where {@link PodLocator} says: the listed URL, else the one the daemon's pod discovery recorded in the cell, else
 * the URL template's), and the listed pods registered by hand while no index was ever
 * seen (as {@code kvidx router} does, so that a picker in front of listed pods answers before its daemon is up).
 * A data-parallel rank pod {@code <pod>#<r>} is answered at its engine's endpoint. Refreshed by one housekeeping
 * thread; read by deciding threads (an atomic array, allocation-free).
 *
 * <p><b>Note:</b> {@link #refresh} from one thread; the rest from any.
 */
final class EndpointBook {
    private final PodRegistry registry;
    private final PodIndex index;
    private final Map<String, URI> listed;
    private final Map<String, String> listedModels;
    private final PodLocator locator;
    private final AtomicReferenceArray<String> endpoints = new AtomicReferenceArray<>(PodRegistry.MAX_PODS);
    private final boolean[] hand = new boolean[PodRegistry.MAX_PODS];
    private volatile String defaultModel;
    private volatile int ready;
    private boolean indexSeen;

    /**
     * @param registry     the routing registry the decisions read.
     * @param index        the index (may be unmapped).
     * @param listed       pod id to URL (its host:port answered).
     * @param listedModels pod id to model for listed pods that name one.
     * @param urlTemplate  URL for pods the index knows and neither the list nor discovery names, and the hosts it may
     *                     reach; or null.
     * @param cellDir      the cell directory, where the daemon's pod discovery records pods' URLs; null for none.
     * @param topology     where discovered pods' nodes and zones are recorded (the {@code locality} scorer's).
     */
    EndpointBook(final PodRegistry registry, final PodIndex index, final Map<String, URI> listed,
        final Map<String, String> listedModels, final PodUrlTemplate urlTemplate, final Path cellDir,
        final PodTopology topology) {
        this.registry = registry;
        this.index = index;
        this.listed = listed;
        this.listedModels = listedModels;
        this.locator = new PodLocator(listed, urlTemplate, cellDir, topology);
    }

    /** Brings the slots in step with the index (or the list while no index was seen). Housekeeping thread. */
    void refresh() {
        locator.refresh();
        boolean available;
        try {
            available = index.isAvailable();
        } catch (final RuntimeException ex) {
            available = false;
        }
        if (available) {
            if (!indexSeen) {
                for (int slot = 0; slot < PodRegistry.MAX_PODS; slot++) {
                    if (hand[slot]) {
                        registry.unregister(slot);
                        hand[slot] = false;
                    }
                }
            }
            try {
                registry.registerFromIndex(index);
                indexSeen = true;
            } catch (final RuntimeException ex) {
                // The index went away mid-read: the next round tries again.
            }
        } else if (!indexSeen) {
            int slot = 0;
            for (final Map.Entry<String, URI> p : listed.entrySet()) {
                if (registry.slotOf(p.getKey()) >= 0) {
                    continue;
                }
                while (slot < PodRegistry.MAX_PODS && (hand[slot] || registry.isRegistered(slot))) {
                    slot++;
                }
                if (slot == PodRegistry.MAX_PODS) {
                    break;
                }
                registry.register(slot, p.getKey(), listedModels.get(p.getKey()), PodRole.BOTH, p.getValue());
                hand[slot] = true;
            }
        }
        String only = null;
        boolean several = false;
        int n = 0;
        for (int slot = 0; slot < PodRegistry.MAX_PODS; slot++) {
            final String ep = registry.isRegistered(slot) ? endpointOf(registry.podId(slot)) : null;
            endpoints.set(slot, ep);
            if (ep != null) {
                n++;
                final String model = registry.model(slot);
                if (model != null) {
                    several |= only != null && !only.equals(model);
                    only = model;
                }
            }
        }
        ready = n;
        defaultModel = several ? null : only;
    }

    private String endpointOf(final String podId) {
        final URI url = locator.url(podId);
        if (url == null || url.getHost() == null) {
            return null;
        }
        final int port = url.getPort() >= 0 ? url.getPort() : "https".equals(url.getScheme()) ? 443 : 80;
        final String host = url.getHost();
        return (host.indexOf(':') >= 0 && !host.startsWith("[") ? "[" + host + "]" : host) + ":" + port;
    }

    /**
     * Excludes the slots without an endpoint, and those outside the subset when one is given.
     *
     * @param ctx    the decision's context, just reset.
     * @param subset the endpoints the proxy allows, or null for all.
     * @return the slots left.
     */
    int exclude(final RoutingContext ctx, final Set<String> subset) {
        int left = 0;
        for (int slot = 0; slot < PodRegistry.MAX_PODS; slot++) {
            final String ep = endpoints.get(slot);
            if (ep == null || subset != null && !subset.contains(ep)) {
                ctx.exclude(slot);
            } else {
                left++;
            }
        }
        return left;
    }

    /**
     * @param slot pod slot.
     * @return its endpoint {@code host:port}, or null.
     */
    String endpoint(final int slot) {
        return slot < 0 || slot >= PodRegistry.MAX_PODS ? null : endpoints.get(slot);
    }

    /**
     * @return the model of a request that names none (the one model the pods serve), or null.
     */
    String defaultModel() {
        return defaultModel;
    }

    /**
     * @return pods with an endpoint now.
     */
    int ready() {
        return ready;
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
}
