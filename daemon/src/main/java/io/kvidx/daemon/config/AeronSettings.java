package io.kvidx.daemon.config;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The daemon's Aeron transport, the {@code aeron:} mapping of the YAML file: the channels the Aeron ingest agent
 * subscribes to for kvidx SBE events, their stream id, the Aeron directory, and the media driver (embedded or
 * external, and the embedded one's term length). No channel means Aeron and the embedded media driver are not
 * started. Defaults from {@link DaemonConfiguration}; the directory defaults to one named after the cell, on
 * {@code /dev/shm} when there is one.
 *
 * <p>Trust: a message's pod id comes from the wire, so whoever reaches a channel can register pods, store blocks and
 * take pods down. UDP channels must therefore bind loopback unless {@link #allowRemote(boolean)} is set, and
 * {@link #pods()} limits the pod ids accepted (set it whenever a channel is reachable over a network).
 *
 * <p><b>Note:</b> part of a {@link DaemonContext}: not thread safe; filled in on one thread, read after
 * {@link #conclude(String)}.
 */
public final class AeronSettings {
    private final List<String> channels = new ArrayList<>();
    private int streamId = DaemonConfiguration.AERON_STREAM_ID_DEFAULT;
    private String dir;
    private boolean embeddedDriver = DaemonConfiguration.EMBEDDED_DRIVER_DEFAULT;
    private int termLength = DaemonConfiguration.AERON_TERM_LENGTH_DEFAULT;
    private boolean allowRemote = DaemonConfiguration.AERON_ALLOW_REMOTE_DEFAULT;
    private final List<String> pods = new ArrayList<>(DaemonConfiguration.AERON_PODS_DEFAULT);

    /**
     * Checks the term length, the channels (valid Aeron URIs; UDP on loopback unless remote is allowed) and the pod
     * patterns, then gives the Aeron directory its default when none was set.
     *
     * @param cell the concluded cell name, which the default directory is named after.
     * @throws ConfigException naming the key of a value out of range.
     */
    void conclude(final String cell) {
        ConfigException.powerOfTwo(DaemonConfiguration.AERON_TERM_LENGTH_PROP_NAME, termLength,
            DaemonConfiguration.AERON_TERM_LENGTH_MIN, DaemonConfiguration.AERON_TERM_LENGTH_MAX);
        for (final String channel : channels) {
            final String remote;
            try {
                remote = NetworkScope.remoteReason(channel);
            } catch (final RuntimeException ex) {
                throw new ConfigException(DaemonConfiguration.AERON_CHANNELS_PROP_NAME, "must be Aeron channels "
                    + "such as aeron:ipc or aeron:udp?endpoint=127.0.0.1:40123: " + channel);
            }
            if (remote != null && !allowRemote) {
                throw new ConfigException(DaemonConfiguration.AERON_CHANNELS_PROP_NAME, "must be aeron:ipc or UDP on "
                    + "a loopback address (aeron:udp?endpoint=127.0.0.1:PORT) unless "
                    + DaemonConfiguration.AERON_ALLOW_REMOTE_PROP_NAME + " (--aeron-allow-remote) is set, with "
                    + DaemonConfiguration.AERON_PODS_PROP_NAME + " (--aeron-pod) listing the pods to accept: anyone "
                    + "who reaches the channel can write the index; " + remote + ": " + channel);
            }
        }
        for (final String pattern : pods) {
            if (pattern == null || pattern.isEmpty()) {
                throw new ConfigException(DaemonConfiguration.AERON_PODS_PROP_NAME,
                    "must be pod ids or globs (* and ?), none empty: " + pods);
            }
        }
        if (dir == null) {
            dir = Path.of("/dev/shm").toFile().isDirectory() ? "/dev/shm/kvidx-aeron-" + cell
                : System.getProperty("java.io.tmpdir") + "/kvidx-aeron-" + cell;
        }
    }

    /**
     * @param channel an Aeron channel to subscribe to for kvidx SBE events (aeron:ipc, aeron:udp?endpoint=...).
     * @return this.
     */
    public AeronSettings addChannel(final String channel) {
        channels.add(channel);
        return this;
    }

    /**
     * @return Aeron channels; none means Aeron (and the embedded media driver) is not started.
     */
    public List<String> channels() {
        return channels;
    }

    /**
     * @param streamId Aeron stream id of the events.
     * @return this.
     */
    public AeronSettings streamId(final int streamId) {
        this.streamId = streamId;
        return this;
    }

    /**
     * @return Aeron stream id.
     */
    public int streamId() {
        return streamId;
    }

    /**
     * @param dir Aeron directory (the embedded driver's, or the external driver's to connect to).
     * @return this.
     */
    public AeronSettings dir(final String dir) {
        this.dir = dir;
        return this;
    }

    /**
     * @return Aeron directory.
     */
    public String dir() {
        return dir;
    }

    /**
     * @param embedded true (default) to run an embedded media driver, false to use an external one.
     * @return this.
     */
    public AeronSettings embeddedDriver(final boolean embedded) {
        this.embeddedDriver = embedded;
        return this;
    }

    /**
     * @return true when the daemon runs its own media driver.
     */
    public boolean embeddedDriver() {
        return embeddedDriver;
    }

    /**
     * @param bytes term buffer length of the embedded driver's IPC and UDP publications.
     * @return this.
     */
    public AeronSettings termLength(final int bytes) {
        this.termLength = bytes;
        return this;
    }

    /**
     * @return term buffer length.
     */
    public int termLength() {
        return termLength;
    }

    /**
     * @param allow true to accept UDP channels on a wildcard or non-loopback address (anyone who reaches them can
     *              write the index: set {@link #addPod(String) pods} too); false (default) refuses them at
     *              conclude.
     * @return this.
     */
    public AeronSettings allowRemote(final boolean allow) {
        this.allowRemote = allow;
        return this;
    }

    /**
     * @return whether UDP channels may be reachable from other hosts.
     */
    public boolean allowRemote() {
        return allowRemote;
    }

    /**
     * @param pattern a pod id or glob ({@code *} any run of characters, {@code ?} one) whose messages are accepted;
     *                once any is added, messages of other pods are dropped and counted.
     * @return this.
     */
    public AeronSettings addPod(final String pattern) {
        pods.add(pattern);
        return this;
    }

    /**
     * @return the pod allow-list; empty accepts every pod.
     */
    public List<String> pods() {
        return pods;
    }
}
