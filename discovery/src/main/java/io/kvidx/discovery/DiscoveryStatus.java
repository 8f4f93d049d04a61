package io.kvidx.discovery;

/**
 * What discovery knows and how its watches fare, for {@code /health}, {@code kvidx status} and Prometheus.
 *
 * @param synced         whether the pod list has been read once since the selector was last set (until then the
 *                       engine list is not known, and a daemon should not report ready).
 * @param selector       the label selector in force ({@code k=v,...}), or null while a pool has none.
 * @param podsSeen       pods the selector matches now.
 * @param podsReady      of those, the Running and Ready ones with an IP.
 * @param engines        engines published (ready pods times their data-parallel ranks, less rejected pods).
 * @param podsRejected   ready pods whose annotations were refused (see {@link #lastError()}).
 * @param watchRestarts  times a watch was lost and re-established (a server closing it, 410 Gone, a network
 *                       error), pods' and pool's.
 * @param lastSyncMs     epoch ms of the last list, watch event or resync seen; 0 before any.
 * @param lastError      the last error (a refused pod, a lost watch, a missing pool), or null.
 */
public record DiscoveryStatus(boolean synced, String selector, int podsSeen, int podsReady, int engines,
    int podsRejected, long watchRestarts, long lastSyncMs, String lastError) {
}
