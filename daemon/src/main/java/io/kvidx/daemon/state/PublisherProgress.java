package io.kvidx.daemon.state;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Each publisher's last sequence whose batches are all applied to the index, kept in the cell's state directory
 * ({@code state/publishers}) so that a restarted daemon asks each engine's replay socket for exactly the batches
 * after it. One line per publisher, tab-separated: {@code <sequence>[/<fingerprint>] <pod id or -> <endpoint>},
 * the fingerprint (16 hex digits, since 2026-12) being that of the batch applied under the sequence, by which the
 * restarted daemon recognises whether the engine that answers its replay is still the one that published it. The
 * file is replaced atomically (a temporary file renamed over it), so a crash leaves the old or the new version. A
 * line without a fingerprint (an older daemon's) is read with none; a line this version does not understand is
 * skipped (that publisher is then replayed from 0, as on a first start).
 *
 * <p>The sequence recorded is never ahead of the index: the ingest agent records a sequence only once the writer
 * queues have been consumed past every batch dispatched up to it (a barrier on the queues' positions). After a
 * crash the restarted daemon may therefore apply some batches again, which is harmless: every event is idempotent
 * and the batches are re-applied in their order.
 *
 * <p>Several ZeroMQ ingest agents ({@code --zmq-ingest-threads}) share the file through {@link #shares}: each records
 * its own publishers, and every write is the union of the shares' latest records (a share that has not written yet
 * keeps what the file held for its publishers).
 *
 * <p><b>Note:</b> one writer at a time: the ZeroMQ ingest agent, the shares (serialized among themselves), or the
 * daemon's close after the agents stopped.
 */
public final class PublisherProgress implements ProgressLog {
    /** File name inside the state directory. */
    public static final String FILE_NAME = "publishers";

    private final Path file;

    /**
     * @param stateDir the cell's state directory.
     */
    public PublisherProgress(final Path stateDir) {
        this.file = stateDir.resolve(FILE_NAME);
    }

    /** A fingerprint of 0 means none is known. */
    public static final long NO_FINGERPRINT = 0;

    /**
     * One publisher's progress.
     *
     * @param endpoint    the publisher's endpoint.
     * @param sequence    its last sequence whose batches are all applied, or -1.
     * @param podId       the pod its batches went to last, or null.
     * @param fingerprint the fingerprint of the batch applied under {@code sequence}, or {@link #NO_FINGERPRINT}.
     */
    public record Entry(String endpoint, long sequence, String podId, long fingerprint) {
        /**
         * An entry without a fingerprint.
         *
         * @param endpoint the publisher's endpoint.
         * @param sequence its last applied sequence.
         * @param podId    its pod, or null.
         */
        public Entry(final String endpoint, final long sequence, final String podId) {
            this(endpoint, sequence, podId, NO_FINGERPRINT);
        }
    }

    /**
     * @return the recorded progress by endpoint (empty when none was recorded); malformed lines are skipped.
     */
    @Override
    public Map<String, Entry> read() {
        final Map<String, Entry> entries = new LinkedHashMap<>();
        final List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (final NoSuchFileException ex) {
            return entries;
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot read " + file, ex);
        }
        for (final String line : lines) {
            final String[] parts = line.split("\t", 3);
            if (parts.length != 3) {
                continue;
            }
            try {
                final int slash = parts[0].indexOf('/');
                final long seq = Long.parseLong(slash < 0 ? parts[0] : parts[0].substring(0, slash));
                final long fingerprint = slash < 0 ? NO_FINGERPRINT
                    : Long.parseUnsignedLong(parts[0].substring(slash + 1), 16);
                entries.put(parts[2], new Entry(parts[2], seq, "-".equals(parts[1]) ? null : parts[1], fingerprint));
            } catch (final NumberFormatException ex) {
                // skipped: a line this version does not understand
            }
        }
        return entries;
    }

    /**
     * Replaces the recorded progress.
     *
     * @param entries every publisher's progress.
     */
    @Override
    public void write(final List<Entry> entries) {
        final StringBuilder text = new StringBuilder();
        for (final Entry e : entries) {
            if (e.sequence() >= 0) {
                text.append(e.sequence());
                if (e.fingerprint() != NO_FINGERPRINT) {
                    text.append('/').append(String.format("%016x", e.fingerprint()));
                }
                text.append('\t').append(e.podId() == null ? "-" : e.podId()).append('\t')
                    .append(e.endpoint()).append('\n');
            }
        }
        try {
            if (Files.notExists(file.getParent())) {
                Files.createDirectories(file.getParent(), PosixFilePermissions.asFileAttribute(
                    PosixFilePermissions.fromString("rwx------")));
            }
            final Path temp = Files.createTempFile(file.getParent(), FILE_NAME + ".", ".tmp");
            Files.writeString(temp, text, StandardCharsets.UTF_8);
            Files.move(temp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot write " + file, ex);
        }
    }

    /**
     * Splits the file between several writers, one per ZeroMQ ingest agent.
     *
     * @param parts  how many.
     * @param partOf a recorded endpoint's part (the agent its publisher is given to), 0..parts-1.
     * @return one log per part: reads return the whole file; a write replaces that part's entries and writes the
     * union (for an endpoint in several parts, the entry of a part that has written wins over the file's).
     */
    public ProgressLog[] shares(final int parts, final java.util.function.ToIntFunction<String> partOf) {
        final List<List<Entry>> latest = new java.util.ArrayList<>(parts);
        final boolean[] written = new boolean[parts];
        for (int i = 0; i < parts; i++) {
            latest.add(new java.util.ArrayList<>());
        }
        for (final Entry e : read().values()) {
            latest.get(Math.floorMod(partOf.applyAsInt(e.endpoint()), parts)).add(e);
        }
        final ProgressLog[] logs = new ProgressLog[parts];
        for (int i = 0; i < parts; i++) {
            final int part = i;
            logs[i] = new ProgressLog() {
                @Override
                public Map<String, Entry> read() {
                    return PublisherProgress.this.read();
                }

                @Override
                public void write(final List<Entry> entries) {
                    synchronized (latest) {
                        latest.set(part, List.copyOf(entries));
                        written[part] = true;
                        final Map<String, Entry> union = new LinkedHashMap<>();
                        for (int pass = 0; pass < 2; pass++) {
                            for (int k = 0; k < parts; k++) {
                                if (written[k] == (pass == 1)) {
                                    for (final Entry e : latest.get(k)) {
                                        union.put(e.endpoint(), e);
                                    }
                                }
                            }
                        }
                        PublisherProgress.this.write(List.copyOf(union.values()));
                    }
                }
            };
        }
        return logs;
    }
}
