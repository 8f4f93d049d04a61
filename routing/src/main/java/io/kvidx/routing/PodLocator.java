package io.kvidx.routing;

import io.kvidx.client.index.DataParallelRanks;
import io.kvidx.client.index.DiscoveredPods;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;

/**
 * Where a router or a picker reaches each pod, and where the pod runs. A pod's URL is, in this order:
 * <ol>
 *   <li>the URL the configuration lists for it ({@code --pod ID=URL}, {@code pods:});</li>
 *   <li>the URL the daemon's pod discovery recorded in the cell ({@link DiscoveredPods}, {@code pods.json}:
 *   {@code http://<podIP>:<targetPort>} of a Ready pod);</li>
 *   <li>the configuration's {@code pod-url-template} with {@code {pod}} replaced by the pod id, when its host is
 *   one the template allows ({@link PodUrlTemplate}: the pod id came from the wire); a pod whose URL is refused has
 *   none, and is counted once ({@link #refusedPods()}) and reported ({@link #lastRefused()}).</li>
 * </ol>
 * A data-parallel rank {@code <pod>#<r>} not listed itself is reached at its pod's URL. Discovered pods' nodes and
 * zones go into the {@link PodTopology} the {@code locality} scorer reads.
 *
 * <p>The directory file is re-read only when it changed (another file key, modification time or size); a file that
 * cannot be read or parsed keeps the last good directory and is reported by {@link #lastError()}; a removed file (the
 * daemon stopped discovering) empties it.
 *
 * <p><b>Note:</b> {@link #refresh()} from one housekeeping thread; {@link #url} and the getters from any thread
 * (cold path: called when the pod table changes, not per decision).
 */
public final class PodLocator {
    private final Map<String, URI> listed;
    /** Distinct pods refused at most: further ones are counted, not remembered. */
    static final int REFUSED_REMEMBERED = 1024;

    private final PodUrlTemplate urlTemplate;
    private final java.util.Set<String> refused = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final java.util.concurrent.atomic.LongAdder refusedPods = new java.util.concurrent.atomic.LongAdder();
    private volatile String lastRefused;
    private final Path directoryFile;
    private final PodTopology topology;
    private volatile Map<String, DiscoveredPods.Pod> discovered = Map.of();
    private volatile String lastError;
    private Object seenKey;
    private long seenModified = -1;
    private long seenSize = -1;
    private final java.util.concurrent.atomic.LongAdder readFailures = new java.util.concurrent.atomic.LongAdder();

    /**
     * @param listed      pod id to URL from the configuration (not copied; not changed afterwards).
     * @param urlTemplate URL of pods neither listed nor discovered, and the hosts it may reach; or null.
     * @param cellDir     the cell directory holding {@code pods.json}, or null to use no discovered pods.
     * @param topology    where discovered pods' locations are recorded.
     */
    public PodLocator(final Map<String, URI> listed, final PodUrlTemplate urlTemplate, final Path cellDir,
        final PodTopology topology) {
        this.listed = Objects.requireNonNull(listed, "listed");
        this.urlTemplate = urlTemplate;
        this.directoryFile = cellDir == null ? null : cellDir.resolve(DiscoveredPods.FILE_NAME);
        this.topology = Objects.requireNonNull(topology, "topology");
    }

    /**
     * Re-reads the discovered pods when the daemon rewrote or removed them. Housekeeping thread.
     *
     * @return true when the discovered pods changed.
     */
    public boolean refresh() {
        if (directoryFile == null) {
            return false;
        }
        final BasicFileAttributes a;
        try {
            a = Files.readAttributes(directoryFile, BasicFileAttributes.class);
        } catch (final NoSuchFileException ex) {
            seenKey = null;
            seenModified = -1;
            seenSize = -1;
            lastError = null;
            return apply(Map.of());
        } catch (final IOException ex) {
            fail("cannot read " + directoryFile + ": " + ex.getMessage());
            return false;
        }
        final long modified = a.lastModifiedTime().toMillis();
        if (Objects.equals(a.fileKey(), seenKey) && modified == seenModified && a.size() == seenSize) {
            return false;
        }
        final Map<String, DiscoveredPods.Pod> pods;
        try {
            if (a.size() > DiscoveredPods.MAX_FILE_CHARS) {
                throw new IOException("larger than " + DiscoveredPods.MAX_FILE_CHARS + " bytes");
            }
            pods = DiscoveredPods.parse(Files.readString(directoryFile, StandardCharsets.UTF_8));
        } catch (final NoSuchFileException ex) {
            return false; // renamed over between the two reads: the next round reads the new file
        } catch (final IOException | IllegalArgumentException ex) {
            fail("cannot read " + directoryFile + ": " + ex.getMessage());
            return false;
        }
        seenKey = a.fileKey();
        seenModified = modified;
        seenSize = a.size();
        lastError = null;
        return apply(pods);
    }

    private boolean apply(final Map<String, DiscoveredPods.Pod> pods) {
        if (pods.equals(discovered)) {
            return false;
        }
        final Map<String, PodTopology.Location> locations = new HashMap<>();
        for (final DiscoveredPods.Pod p : pods.values()) {
            if (p.node() != null || p.zone() != null) {
                locations.put(p.id(), new PodTopology.Location(p.node(), p.zone()));
            }
        }
        discovered = Map.copyOf(pods);
        topology.replaceAll(locations);
        return true;
    }

    private void fail(final String message) {
        readFailures.increment();
        lastError = message;
    }

    /**
     * @param podId a pod id (a rank pod's id finds its pod's URL).
     * @return where it is reached, or null when no source names it (or the template makes no valid URI, or one on a
     *     host it may not reach).
     */
    public URI url(final String podId) {
        if (podId == null) {
            return null;
        }
        URI u = listed.get(podId);
        if (u != null) {
            return u;
        }
        final String pod = DataParallelRanks.basePodId(podId);
        if (!pod.equals(podId)) {
            u = listed.get(pod);
            if (u != null) {
                return u;
            }
        }
        final DiscoveredPods.Pod d = discovered.get(pod);
        if (d != null) {
            return d.uri();
        }
        if (urlTemplate != null) {
            u = urlTemplate.url(pod);
            if (u == null) {
                refuse(pod);
            }
            return u;
        }
        return null;
    }

    private void refuse(final String pod) {
        if (refused.contains(pod)) {
            return;
        }
        if (refused.size() < REFUSED_REMEMBERED) {
            if (!refused.add(pod)) {
                return;
            }
        }
        refusedPods.increment();
        lastRefused = "pod " + pod + ": pod-url-template " + urlTemplate.template() + " makes no URL on an allowed host"
            + " (pod-url-hosts " + urlTemplate.hosts() + ")";
    }

    /**
     * @return distinct pods whose template URL was refused since start (each counted once while at most
     *     {@value #REFUSED_REMEMBERED} are remembered; beyond, each lookup of another one counts).
     */
    public long refusedPods() {
        return refusedPods.sum();
    }

    /**
     * @return why the last refused pod has no URL, or null when none was refused.
     */
    public String lastRefused() {
        return lastRefused;
    }

    /**
     * @return the discovered pods now (pod id to pod).
     */
    public Map<String, DiscoveredPods.Pod> discovered() {
        return discovered;
    }

    /**
     * @return the topology discovered pods' locations are recorded in.
     */
    public PodTopology topology() {
        return topology;
    }

    /**
     * @return why the directory file could not be read at the last attempt, or null.
     */
    public String lastError() {
        return lastError;
    }

    /**
     * @return how many reads of the directory file failed (counted by the housekeeping thread; read by metrics).
     */
    public long readFailures() {
        return readFailures.sum();
    }
}
