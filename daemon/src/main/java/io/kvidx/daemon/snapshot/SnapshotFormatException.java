package io.kvidx.daemon.snapshot;

/**
 * The bytes are not a snapshot this version reads: wrong magic, another major layout version, a length that
 * disagrees with the bytes, a bad checksum, a record that overruns its section, invalid UTF-8, or more bytes
 * than the configured limit. Nothing was decoded from them.
 */
public final class SnapshotFormatException extends SnapshotException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what is wrong and where (byte offset), in one line.
     */
    public SnapshotFormatException(final String message) {
        super(message);
    }
}
