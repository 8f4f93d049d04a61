package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexException;
import io.kvidx.ffm.ForeignOwnerException;

/**
 * A cell's existing index file (or the writer's side table beside it) belongs to another user: the writer refuses
 * to re-attach to it (and the daemon does not start) rather than write a file another user controls, or replace it.
 */
public final class IndexFileOwnerException extends IndexException {
    private static final long serialVersionUID = 1L;

    /**
     * @param cause the file system check that found the other owner.
     */
    public IndexFileOwnerException(final ForeignOwnerException cause) {
        super("cannot re-attach to " + cause.file() + ": it belongs to user " + cause.owner() + ", not to this "
            + "writer's user " + System.getProperty("user.name") + " (remove the cell's files, or run the daemon as "
            + cause.owner() + ")", cause);
    }
}
