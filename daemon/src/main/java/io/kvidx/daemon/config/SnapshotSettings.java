package io.kvidx.daemon.config;

import io.kvidx.daemon.snapshot.PeerClient;

/**
 * Snapshots of the daemon's state: the peer a new cell catches up from at start ({@code peer}, with what to do when
 * it cannot be fetched and how long to wait for it), the largest snapshot taken for a replica or loaded from a peer,
 * and how long the writers have to answer a snapshot request. No peer by default. Defaults from
 * {@link DaemonConfiguration}.
 *
 * <p><b>Note:</b> part of a {@link DaemonContext}: not thread safe; filled in on one thread, read after
 * {@link #conclude()}.
 */
public final class SnapshotSettings {
    private String peer = DaemonConfiguration.PEER_DEFAULT;
    private boolean peerOptional = DaemonConfiguration.PEER_OPTIONAL_DEFAULT;
    private long peerTimeoutMs = DaemonConfiguration.PEER_TIMEOUT_MS_DEFAULT;
    private long snapshotMaxBytes = DaemonConfiguration.SNAPSHOT_MAX_BYTES_DEFAULT;
    private long snapshotTimeoutMs = DaemonConfiguration.SNAPSHOT_TIMEOUT_MS_DEFAULT;

    /**
     * Checks the peer's URL, the peer timeout, the snapshot size limit and the snapshot timeout, in that order.
     *
     * @throws ConfigException naming the key of the first value out of range.
     * @throws IllegalArgumentException for a snapshot timeout below 1 ms (it has no key).
     */
    void conclude() {
        if (peer != null) {
            try {
                PeerClient.dumpUri(peer);
            } catch (final IllegalArgumentException ex) {
                throw new ConfigException(DaemonConfiguration.PEER_PROP_NAME,
                    "must be the URL of a daemon's HTTP API, http://HOST:PORT: " + peer);
            }
        }
        ConfigException.range(DaemonConfiguration.PEER_TIMEOUT_MS_PROP_NAME, peerTimeoutMs, 1,
            DaemonConfiguration.PEER_TIMEOUT_MS_MAX);
        ConfigException.range(DaemonConfiguration.SNAPSHOT_MAX_BYTES_PROP_NAME, snapshotMaxBytes,
            DaemonConfiguration.SNAPSHOT_MAX_BYTES_MIN, DaemonConfiguration.SNAPSHOT_MAX_BYTES_MAX);
        if (snapshotTimeoutMs < 1) {
            throw new IllegalArgumentException("snapshot timeout must be >= 1 ms: " + snapshotTimeoutMs);
        }
    }

    /**
     * @param url base URL of a running daemon's HTTP API ({@code http://HOST:PORT}) whose snapshot this daemon loads
     *            at start when its index is created new, so that it continues from the peer's state and replays each
     *            ZeroMQ engine from there; null (the default) to start empty. Ignored when the index is re-attached.
     * @return this.
     */
    public SnapshotSettings peer(final String url) {
        this.peer = url;
        return this;
    }

    /**
     * @return the peer to catch up from at start, or null for none.
     */
    public String peer() {
        return peer;
    }

    /**
     * @param optional true: start empty (logged) when the peer's snapshot cannot be fetched or is corrupt; false
     *                 (the default): fail the start. A snapshot of another block size or key scheme always fails it.
     * @return this.
     */
    public SnapshotSettings peerOptional(final boolean optional) {
        this.peerOptional = optional;
        return this;
    }

    /**
     * @return whether the daemon starts empty when the peer's snapshot cannot be fetched.
     */
    public boolean peerOptional() {
        return peerOptional;
    }

    /**
     * @param ms bound on connecting to the peer and on the whole snapshot download.
     * @return this.
     */
    public SnapshotSettings peerTimeoutMs(final long ms) {
        this.peerTimeoutMs = ms;
        return this;
    }

    /**
     * @return bound on connecting to the peer and on the whole snapshot download.
     */
    public long peerTimeoutMs() {
        return peerTimeoutMs;
    }

    /**
     * @param bytes longest snapshot this daemon takes for a replica or loads from a peer; a longer one is refused.
     * @return this.
     */
    public SnapshotSettings snapshotMaxBytes(final long bytes) {
        this.snapshotMaxBytes = bytes;
        return this;
    }

    /**
     * @return longest snapshot taken or loaded.
     */
    public long snapshotMaxBytes() {
        return snapshotMaxBytes;
    }

    /**
     * @param ms how long the writers have to answer a snapshot request before it fails.
     * @return this.
     */
    public SnapshotSettings snapshotTimeoutMs(final long ms) {
        this.snapshotTimeoutMs = ms;
        return this;
    }

    /**
     * @return how long the writers have to answer a snapshot request.
     */
    public long snapshotTimeoutMs() {
        return snapshotTimeoutMs;
    }
}
