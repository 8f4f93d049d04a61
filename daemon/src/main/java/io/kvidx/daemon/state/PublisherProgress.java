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
 * after it. One line per publisher, tab-separated: {@code <sequence> <pod id or -> <endpoint>}; the file is
 * replaced atomically (a temporary file renamed over it), so a crash leaves the old or the new version.
 *
 * <p>The sequence recorded is never ahead of the index: the ingest agent records a sequence only once the writer
 * queues have been consumed past every batch dispatched up to it (a barrier on the queues' positions). After a
 * crash the restarted daemon may therefore apply some batches again, which is harmless: every event is idempotent
 * and the batches are re-applied in their order.
 *
 * <p><b>Note:</b> one writer: the ZeroMQ ingest agent (or the daemon's close, after that agent stopped).
 */
public final class PublisherProgress {
    /** File name inside the state directory. */
    public static final String FILE_NAME = "publishers";

    private final Path file;

    /**
     * @param stateDir the cell's state directory.
     */
    public PublisherProgress(final Path stateDir) {
        this.file = stateDir.resolve(FILE_NAME);
    }

    /** One publisher's progress. */
    public record Entry(String endpoint, long sequence, String podId) {
    }

    /**
     * @return the recorded progress by endpoint (empty when none was recorded); malformed lines are skipped.
     */
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
                final long seq = Long.parseLong(parts[0]);
                entries.put(parts[2], new Entry(parts[2], seq, "-".equals(parts[1]) ? null : parts[1]));
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
    public void write(final List<Entry> entries) {
        final StringBuilder text = new StringBuilder();
        for (final Entry e : entries) {
            if (e.sequence() >= 0) {
                text.append(e.sequence()).append('\t').append(e.podId() == null ? "-" : e.podId()).append('\t')
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
}
