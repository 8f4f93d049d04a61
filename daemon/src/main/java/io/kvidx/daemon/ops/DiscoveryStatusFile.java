package io.kvidx.daemon.ops;

import io.kvidx.client.index.CellFileWrite;
import io.kvidx.client.json.MiniJson;
import io.kvidx.discovery.DiscoveryStatus;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Pod discovery's state as a file in the cell directory ({@value #FILE_NAME}), for {@code kvidx status}, which reads
 * the cell's files rather than asking the daemon: one JSON object with the fields of {@code /health}'s
 * {@code discovery} object. Written whole to a temporary file and renamed into place, so a reader sees the old or the
 * new state; removed when discovery stops (by the daemon's discovery feed).
 *
 * <p><b>Note:</b> written only by the daemon's discovery feed; read by any process.
 */
public final class DiscoveryStatusFile {
    /** The file's name in the cell directory. */
    public static final String FILE_NAME = "discovery.json";

    private DiscoveryStatusFile() {
    }

    /**
     * @param s a status.
     * @return its fields, in {@code /health}'s names and order.
     */
    public static Map<String, Object> fields(final DiscoveryStatus s) {
        final Map<String, Object> m = new LinkedHashMap<>();
        m.put("synced", s.synced());
        m.put("selector", s.selector());
        m.put("pods_seen", (long) s.podsSeen());
        m.put("pods_ready", (long) s.podsReady());
        m.put("engines", (long) s.engines());
        m.put("pods_rejected", (long) s.podsRejected());
        m.put("watch_restarts", s.watchRestarts());
        m.put("last_sync_ms", s.lastSyncMs());
        m.put("last_error", s.lastError());
        return m;
    }

    /**
     * @param cellDir the cell directory.
     * @param s       the state to record.
     * @throws IOException when the file cannot be written.
     */
    public static void write(final Path cellDir, final DiscoveryStatus s) throws IOException {
        CellFileWrite.replace(cellDir.resolve(FILE_NAME), MiniJson.write(fields(s)) + "\n");
    }

    /**
     * @param cellDir the cell directory.
     * @return the recorded fields, or null when the daemon does not discover pods (no file) or the file cannot be
     * read as a JSON object.
     */
    @SuppressWarnings("unchecked")
    public static Map<String, Object> read(final Path cellDir) {
        try {
            final Object o = MiniJson.parse(Files.readString(cellDir.resolve(FILE_NAME), StandardCharsets.UTF_8));
            return o instanceof Map<?, ?> m ? (Map<String, Object>) m : null;
        } catch (final NoSuchFileException ex) {
            return null;
        } catch (final IOException | IllegalArgumentException ex) {
            return null;
        }
    }
}
