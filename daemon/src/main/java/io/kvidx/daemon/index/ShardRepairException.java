package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexException;

/**
 * A writer thread failed mid-change and the repair of the shard it was changing failed too: the shard stays locked
 * (its version odd) and possibly inconsistent. Not recoverable in place: the writer thread that sees it stops
 * (its duty cycle then stops, and so does the index heartbeat: readers see a stale writer), the daemon stops with
 * this message and a non-zero exit status, and the next daemon repairs the shard when it re-attaches
 * (docs/index-layout.md, "Writer heartbeat").
 */
public final class ShardRepairException extends IndexException {
    private static final long serialVersionUID = 1L;

    /**
     * @param shard        the shard left locked.
     * @param change       what failed mid-change.
     * @param repairFailed what failed in the repair (added as suppressed).
     */
    ShardRepairException(final int shard, final Throwable change, final Throwable repairFailed) {
        super("shard " + shard + " left locked: a change failed (" + change + ") and its repair failed too ("
            + repairFailed + "); the writer and the daemon stop, readers see the heartbeat stop, a restart repairs"
            + " the shard",
            change);
        addSuppressed(repairFailed);
    }
}
