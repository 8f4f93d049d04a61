package io.kvidx.daemon.index;

import io.kvidx.ffm.MappedRegion;
import io.kvidx.ffm.SharedFiles;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.random.RandomGenerator;

/**
 * A new index file while the writer builds it: {@code index.<16 random hex digits>.tmp} in the cell directory,
 * created exclusively with the {@link SharedFiles} rules (mode 0640 and the cell's group, no symbolic link followed,
 * a planted file or link under that name fails the create), then renamed over {@code index} by {@link #publish()}
 * or deleted by {@link #abandon(Throwable)}.
 *
 * <p>Before creating it, the cell directory is opened (created 0750 when missing, refused when it is a symbolic
 * link or another user's), its mode and group are set, and an {@code index} that is a symbolic link or not a
 * regular file is refused rather than replaced.
 *
 * <p><b>Note:</b> for the one thread creating the index.
 */
final class StagedIndexFile {
    private final SharedFiles.Directory cellDirectory;
    private final String indexName;
    private final String tempName;
    private final MappedRegion region;

    private StagedIndexFile(final SharedFiles.Directory cellDirectory, final String indexName, final String tempName,
        final MappedRegion region) {
        this.cellDirectory = cellDirectory;
        this.indexName = indexName;
        this.tempName = tempName;
        this.region = region;
    }

    /**
     * Creates and maps the temporary file.
     *
     * @param files     the directory and file rules (group).
     * @param indexFile the index file it will replace.
     * @param length    file length in bytes.
     * @param random    source of the temporary name's suffix (a {@link java.security.SecureRandom} in production).
     * @return the staged file, mapped read-write.
     */
    static StagedIndexFile create(final SharedFiles files, final Path indexFile, final long length,
        final RandomGenerator random) {
        final String indexName = indexFile.getFileName().toString();
        final String tempName = indexName + "." + HexFormat.of().toHexDigits(random.nextLong()) + ".tmp";
        SharedFiles.Directory directory = null;
        try {
            directory = files.openDirectory(indexFile.toAbsolutePath().getParent());
            directory.enforcePermissions();
            directory.requireRegularFileOrAbsent(indexName);
            return new StagedIndexFile(directory, indexName, tempName,
                MappedRegion.create(directory, tempName, length));
        } catch (final IOException ex) {
            closeQuietly(directory, ex);
            throw new UncheckedIOException("cannot create index file " + indexFile.resolveSibling(tempName) + ": "
                + ex.getMessage(), ex);
        } catch (final RuntimeException ex) {
            closeQuietly(directory, ex);
            throw ex;
        }
    }

    /**
     * @return the mapped temporary file.
     */
    MappedRegion region() {
        return region;
    }

    /**
     * @return the temporary file's name.
     */
    String tempName() {
        return tempName;
    }

    /**
     * Renames the file over {@code index} atomically; the mapping stays valid.
     *
     * @throws IOException when the rename fails (the temporary file is left for {@link #abandon(Throwable)}).
     */
    void publish() throws IOException {
        cellDirectory.rename(tempName, indexName);
        cellDirectory.close();
    }

    /**
     * Unmaps and deletes the temporary file after a failure; problems doing so are added to {@code cause}.
     *
     * @param cause the failure.
     */
    void abandon(final Throwable cause) {
        region.close();
        try {
            cellDirectory.deleteIfExists(tempName);
        } catch (final IOException | RuntimeException ex) {
            cause.addSuppressed(ex);
        }
        closeQuietly(cellDirectory, cause);
    }

    private static void closeQuietly(final SharedFiles.Directory directory, final Throwable cause) {
        if (directory == null) {
            return;
        }
        try {
            directory.close();
        } catch (final RuntimeException ex) {
            cause.addSuppressed(ex);
        }
    }
}
