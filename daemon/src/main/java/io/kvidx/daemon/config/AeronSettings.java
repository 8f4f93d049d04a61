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
 * <p><b>Note:</b> part of a {@link DaemonContext}: not thread safe; filled in on one thread, read after
 * {@link #conclude(String)}.
 */
public final class AeronSettings {
    private final List<String> channels = new ArrayList<>();
    private int streamId = DaemonConfiguration.AERON_STREAM_ID_DEFAULT;
    private String dir;
    private boolean embeddedDriver = DaemonConfiguration.EMBEDDED_DRIVER_DEFAULT;
    private int termLength = DaemonConfiguration.AERON_TERM_LENGTH_DEFAULT;

    /**
     * Checks the term length, then gives the Aeron directory its default when none was set.
     *
     * @param cell the concluded cell name, which the default directory is named after.
     * @throws ConfigException naming the key of a value out of range.
     */
    void conclude(final String cell) {
        ConfigException.powerOfTwo(DaemonConfiguration.AERON_TERM_LENGTH_PROP_NAME, termLength,
            DaemonConfiguration.AERON_TERM_LENGTH_MIN, DaemonConfiguration.AERON_TERM_LENGTH_MAX);
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
}
