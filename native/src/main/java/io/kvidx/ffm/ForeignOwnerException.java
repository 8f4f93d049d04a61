package io.kvidx.ffm;

import java.io.IOException;
import java.nio.file.Path;

/**
 * A shared directory or file belongs to a user other than this process's: {@link SharedFiles} refuses to use it
 * rather than write into (or hand to readers) something another user controls.
 */
public final class ForeignOwnerException extends IOException {
    private static final long serialVersionUID = 1L;

    /** The file or directory. */
    private final transient Path file;
    /** Its owner's name. */
    private final String owner;

    /**
     * @param file     the file or directory.
     * @param owner    its owner's name.
     * @param expected this process's user's name.
     */
    public ForeignOwnerException(final Path file, final String owner, final String expected) {
        super(file + " belongs to user " + owner + ", not to this process's user " + expected
            + ": refusing to use it");
        this.file = file;
        this.owner = owner;
    }

    /**
     * @return the file or directory.
     */
    public Path file() {
        return file;
    }

    /**
     * @return its owner's name.
     */
    public String owner() {
        return owner;
    }
}
