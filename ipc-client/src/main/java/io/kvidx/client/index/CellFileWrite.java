package io.kvidx.client.index;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * Writes one of the cell's small state files whole: a temporary file beside it, then a rename over it, so that a
 * reader in another process sees the old text or the new, never a part. Not forced to disk: these files describe a
 * running daemon and are rewritten or removed with it.
 *
 * <p><b>Note:</b> one writer per file.
 */
public final class CellFileWrite {
    private CellFileWrite() {
    }

    /**
     * @param file the file.
     * @param text its new text (UTF-8).
     * @throws IOException when it cannot be written.
     */
    public static void replace(final Path file, final String text) throws IOException {
        final Path temp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.writeString(temp, text, StandardCharsets.UTF_8);
        try {
            Files.move(temp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (final AtomicMoveNotSupportedException ex) {
            Files.move(temp, file, StandardCopyOption.REPLACE_EXISTING);
        }
    }
}
