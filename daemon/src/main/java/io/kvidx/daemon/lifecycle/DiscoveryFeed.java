package io.kvidx.daemon.lifecycle;

import io.fabric8.kubernetes.client.Config;
import io.kvidx.client.index.DiscoveredPods;
import io.kvidx.daemon.config.DiscoverySettings;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.daemon.membership.Engine;
import io.kvidx.daemon.membership.Membership;
import io.kvidx.daemon.ops.DiscoveryStatusFile;
import io.kvidx.discovery.DiscoveredEngine;
import io.kvidx.discovery.DiscoveryStatus;
import io.kvidx.discovery.PodDiscovery;
import org.agrona.CloseHelper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Pod discovery feeding the daemon's one membership table: every engine list discovery publishes becomes the
 * {@link Engine.Source#DISCOVERY} engines of the {@link Membership} (new pods subscribed and replayed, gone or unready
 * pods taken down through the two-phase removal, a pod back with a new IP re-subscribed). Engines the configuration
 * or an API registration already holds keep their source. Once the membership applied a list, the pods' URLs and
 * locations are written to the cell's {@link DiscoveredPods} ({@code pods.json}) for the routers and pickers beside
 * the daemon; the file is removed, with {@code discovery.json}, when discovery stops.
 *
 * <p><b>Note:</b> the engine lists arrive on discovery's own thread; the membership applies them on its thread.
 */
final class DiscoveryFeed implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DiscoveryFeed.class);
    /** Error-log kind of discovery's problems (the daemon's lifecycle kinds are negative). */
    private static final int ERROR_KIND = -4;

    /** How often the state file is brought up to date (when the state changed). */
    private static final long STATUS_FILE_INTERVAL_MS = 1_000;

    private final PodDiscovery discovery;
    private final Path cellDir;
    private final ScheduledExecutorService statusWriter;
    private DiscoveryStatus written;

    /**
     * Connects to the API server and starts watching.
     *
     * @param settings   what to discover and which credentials to use.
     * @param membership the table to feed.
     * @param errors     the daemon's error log.
     * @param cellDir    the cell directory, where {@link DiscoveryStatusFile} records the state for
     *                   {@code kvidx status}.
     */
    DiscoveryFeed(final DiscoverySettings settings, final Membership membership, final IngestErrors errors,
        final Path cellDir) {
        this.cellDir = cellDir;
        this.statusWriter = Executors.newSingleThreadScheduledExecutor(r -> {
            final Thread t = new Thread(r, "kvidx-discovery-status");
            t.setDaemon(true);
            return t;
        });
        this.discovery = new PodDiscovery(config(settings), settings.context(), engines -> {
            final List<Engine> wanted = new ArrayList<>(engines.size());
            for (final DiscoveredEngine d : engines) {
                wanted.add(new Engine(d.podName(), d.dpRank(), d.kvEndpoint(), d.replayEndpoint(), d.model(), 0,
                    null, null, ZmqEndpoint.Engine.parse(d.engine()), Engine.Source.DISCOVERY));
            }
            membership.reconcile(Engine.Source.DISCOVERY, wanted).whenComplete((changes, ex) -> {
                if (ex != null) {
                    errors.report(ERROR_KIND, -1, () -> "discovery: applying " + wanted.size()
                        + " engine(s) failed: " + ex);
                    return;
                }
                final List<DiscoveredPods.Pod> pods = directory(engines);
                statusWriter.execute(() -> writePods(pods, errors));
                if (changes > 0) {
                    LOG.info("discovery: {} engine(s) from {} ready pod(s); {} subscription(s) changed",
                        wanted.size(), engines.stream().map(DiscoveredEngine::podName).distinct().count(),
                        changes);
                }
                if (membership.discoveryConflicts() > 0) {
                    errors.report(ERROR_KIND, -2, () -> "discovery: " + membership.discoveryConflicts()
                        + " discovered pod(s) left out: the configuration or an API registration holds their "
                        + "pod id");
                }
            });
        });
        statusWriter.scheduleWithFixedDelay(() -> writeStatus(errors), 0, STATUS_FILE_INTERVAL_MS,
            TimeUnit.MILLISECONDS);
        LOG.info("discovery: watching pods in namespace {} ({})", discovery.namespace(),
            settings.context().pool() != null ? "InferencePool " + settings.context().pool()
                : "selector " + settings.context().selector());
    }

    private static Config config(final DiscoverySettings settings) {
        if (settings.kubeconfig() == null) {
            // KUBECONFIG, ~/.kube/config, then the pod's service account (token and CA), as kubectl does.
            return Config.autoConfigure(null);
        }
        try {
            return Config.fromKubeconfig(Files.readString(settings.kubeconfig(), StandardCharsets.UTF_8));
        } catch (final IOException ex) {
            throw new IllegalArgumentException("cannot read kubeconfig " + settings.kubeconfig() + ": "
                + ex.getMessage(), ex);
        }
    }

    /**
     * @param engines the discovered engines (one per data-parallel rank).
     * @return one directory entry per pod (its first rank's URL, model and location: the ranks share the pod's).
     */
    static List<DiscoveredPods.Pod> directory(final List<DiscoveredEngine> engines) {
        final Map<String, DiscoveredPods.Pod> pods = new LinkedHashMap<>();
        for (final DiscoveredEngine d : engines) {
            pods.putIfAbsent(d.podName(), new DiscoveredPods.Pod(d.podName(), d.httpUrl(), d.model(), d.node(),
                d.zone()));
        }
        return new ArrayList<>(pods.values());
    }

    private void writePods(final List<DiscoveredPods.Pod> pods, final IngestErrors errors) {
        try {
            DiscoveredPods.write(cellDir, pods);
        } catch (final IOException | RuntimeException ex) {
            errors.report(ERROR_KIND, -5, () -> "discovery: cannot write " + cellDir.resolve(DiscoveredPods.FILE_NAME)
                + ": " + ex.getMessage());
        }
    }

    private void writeStatus(final IngestErrors errors) {
        final DiscoveryStatus s = discovery.status();
        if (s.equals(written)) {
            return;
        }
        try {
            DiscoveryStatusFile.write(cellDir, s);
            written = s;
        } catch (final IOException | RuntimeException ex) {
            errors.report(ERROR_KIND, -3, () -> "discovery: cannot write " + cellDir.resolve(
                DiscoveryStatusFile.FILE_NAME) + ": " + ex.getMessage());
        }
    }

    /**
     * @return what discovery knows now.
     */
    DiscoveryStatus status() {
        return discovery.status();
    }

    @Override
    public void close() {
        statusWriter.shutdownNow();
        try {
            statusWriter.awaitTermination(5, TimeUnit.SECONDS);
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
        CloseHelper.close(discovery);
        for (final String name : new String[] {DiscoveryStatusFile.FILE_NAME, DiscoveredPods.FILE_NAME}) {
            try {
                Files.deleteIfExists(cellDir.resolve(name));
            } catch (final IOException ex) {
                LOG.warn("discovery: cannot remove {}: {}", cellDir.resolve(name), ex.getMessage());
            }
        }
    }
}
