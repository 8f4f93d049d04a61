package io.kvidx.client.index;

import java.nio.file.AccessDeniedException;
import java.nio.file.Path;

/**
 * This process may not read the index file (or search its directory): the router runs as a user outside the
 * daemon's group. The message names the file, the user and the fix.
 */
public class IndexAccessDeniedException extends IndexException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what was denied and how to fix it.
     * @param cause   the file system's refusal.
     */
    public IndexAccessDeniedException(final String message, final Throwable cause) {
        super(message, cause);
    }

    /**
     * @param file a file of the cell (the index, the host tier map).
     * @param ex   the file system's refusal (its file may be the file or a directory above it).
     * @return the exception to throw.
     */
    public static IndexAccessDeniedException of(final Path file, final AccessDeniedException ex) {
        final String denied = ex.getFile() == null || ex.getFile().equals(file.toString()) ? ""
            : " (denied on " + ex.getFile() + ")";
        return new IndexAccessDeniedException("permission denied reading kvidx index " + file + denied + " as user '"
            + System.getProperty("user.name") + "': add the router's user to the daemon's group, see tuning/README.md",
            ex);
    }
}
