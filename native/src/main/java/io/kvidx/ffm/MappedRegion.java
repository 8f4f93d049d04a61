package io.kvidx.ffm;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A file mapped into memory as a {@link MemorySegment}, read-write for its one writer or read-only for readers.
 *
 * <p>A read-only region is backed by a read-only segment: any attempt to write through it fails with an
 * exception before touching memory, so a reader can never corrupt the writer's file.
 *
 * <p><b>Note:</b> the segment lives in a shared arena; it stays valid until {@link #close()} and may be used by
 * any thread meanwhile.
 */
public final class MappedRegion implements AutoCloseable {
    private final Path path;
    private final Arena arena;
    private final MemorySegment segment;
    private final boolean readOnly;

    private MappedRegion(final Path path, final Arena arena, final MemorySegment segment, final boolean readOnly) {
        this.path = path;
        this.arena = arena;
        this.segment = segment;
        this.readOnly = readOnly;
    }

    /**
     * Creates a new file of {@code length} bytes, zero-filled, in a shared directory and maps it read-write. The file
     * is created exclusively with the directory's policy ({@link SharedFiles}: mode 0640, its group, no symbolic
     * link followed): when anything already has that name the create fails and that thing is left untouched.
     *
     * @param directory the open directory.
     * @param name      file name inside it.
     * @param length    length in bytes, {@code > 0}.
     * @return the mapped region.
     * @throws java.nio.file.FileAlreadyExistsException when the name is taken.
     * @throws IOException                              when the file cannot be created or mapped.
     */
    public static MappedRegion create(final SharedFiles.Directory directory, final String name, final long length)
        throws IOException {
        if (length <= 0) {
            throw new IllegalArgumentException("length must be > 0: " + length);
        }
        final Path path = directory.path().resolve(name);
        try (FileChannel channel = directory.createFile(name)) {
            final Arena arena = Arena.ofShared();
            try {
                // Extend sparsely: tmpfs and ext4 both give zero pages on first touch.
                channel.position(length - 1);
                channel.write(java.nio.ByteBuffer.wrap(new byte[1]));
                final MemorySegment segment = channel.map(FileChannel.MapMode.READ_WRITE, 0, length, arena);
                return new MappedRegion(path, arena, segment, false);
            } catch (final IOException | RuntimeException ex) {
                arena.close();
                directory.deleteIfExists(name);
                throw ex;
            }
        }
    }

    /**
     * Creates a file only its writer uses (mode 0600), of {@code length} zero bytes, and maps it read-write: any
     * previous file of that name is replaced (a symbolic link is removed, never followed), and the new file is
     * created exclusively. Its parent directory is created (0700) when missing.
     *
     * @param path   the file.
     * @param length length in bytes, {@code > 0}.
     * @return the mapped region.
     * @throws IOException when the file cannot be created or mapped.
     */
    public static MappedRegion createPrivate(final Path path, final long length) throws IOException {
        if (length <= 0) {
            throw new IllegalArgumentException("length must be > 0: " + length);
        }
        final Path parent = path.toAbsolutePath().getParent();
        if (parent != null && java.nio.file.Files.notExists(parent, LinkOption.NOFOLLOW_LINKS)) {
            java.nio.file.Files.createDirectories(parent, java.nio.file.attribute.PosixFilePermissions
                .asFileAttribute(java.nio.file.attribute.PosixFilePermissions.fromString("rwx------")));
        }
        java.nio.file.Files.deleteIfExists(path);
        try (FileChannel channel = FileChannel.open(path, java.util.Set.of(StandardOpenOption.CREATE_NEW,
            StandardOpenOption.READ, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS),
            java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
                java.nio.file.attribute.PosixFilePermissions.fromString("rw-------")))) {
            channel.position(length - 1);
            channel.write(java.nio.ByteBuffer.wrap(new byte[1]));
            return mapExisting(channel, path, length, false);
        }
    }

    /**
     * Maps an existing file read-only, exactly {@code length} bytes from its start.
     *
     * <p>The caller must have checked that the file is at least {@code length} bytes long: touching a mapping
     * beyond the end of its file raises SIGBUS.
     *
     * @param path   the file.
     * @param length bytes to map.
     * @return the read-only region.
     * @throws IOException when the file cannot be opened or mapped.
     */
    public static MappedRegion mapReadOnly(final Path path, final long length) throws IOException {
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            return mapExisting(channel, path, length, true);
        }
    }

    /** Maps the first {@code length} bytes of an open file that must be at least that long. */
    private static MappedRegion mapExisting(final FileChannel channel, final Path path, final long length,
        final boolean readOnly) throws IOException {
        final long size = channel.size();
        if (size < length) {
            throw new IOException("file " + path + " is " + size + " bytes, shorter than the " + length
                + " bytes to map");
        }
        final Arena arena = Arena.ofShared();
        try {
            final MemorySegment segment = channel.map(readOnly ? FileChannel.MapMode.READ_ONLY
                : FileChannel.MapMode.READ_WRITE, 0, length, arena);
            return new MappedRegion(path, arena, segment, readOnly);
        } catch (final IOException | RuntimeException ex) {
            arena.close();
            throw ex;
        }
    }

    /**
     * Maps an existing shared file of a directory read-write, exactly {@code length} bytes from its start, without
     * changing its length or contents: how a restarted writer re-attaches to the shared file its predecessor left.
     * The file's owner, mode and group are checked and set first ({@link SharedFiles.Directory#openSharedFile}).
     *
     * @param directory the open directory.
     * @param name      file name inside it.
     * @param length    bytes to map; the file must be at least that long.
     * @return the writable region.
     * @throws ForeignOwnerException when the file belongs to another user.
     * @throws IOException           when it is not a regular file, its mode or group cannot be set, or it cannot be
     *                               mapped or is shorter than {@code length}.
     */
    public static MappedRegion attach(final SharedFiles.Directory directory, final String name, final long length)
        throws IOException {
        try (FileChannel channel = directory.openSharedFile(name)) {
            return mapExisting(channel, directory.path().resolve(name), length, false);
        }
    }

    /**
     * Maps an existing file read-write, exactly {@code length} bytes from its start, without changing its length or
     * contents: how a restarted writer re-attaches to the file its predecessor left. A symbolic link is not
     * followed: opening one fails.
     *
     * @param path   the file.
     * @param length bytes to map; the file must be at least that long.
     * @return the writable region.
     * @throws IOException when the file cannot be opened or mapped, or is shorter than {@code length}.
     */
    public static MappedRegion mapReadWrite(final Path path, final long length) throws IOException {
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE,
            LinkOption.NOFOLLOW_LINKS)) {
            return mapExisting(channel, path, length, false);
        }
    }

    /**
     * @return the file this region maps.
     */
    public Path path() {
        return path;
    }

    /**
     * @return the mapped memory; read-only when {@link #isReadOnly()}.
     */
    public MemorySegment segment() {
        return segment;
    }

    /**
     * @return true for a reader's mapping.
     */
    public boolean isReadOnly() {
        return readOnly;
    }

    /**
     * Flushes dirty pages of a writable mapping to the file (no-op for tmpfs in practice).
     */
    public void force() {
        if (!readOnly) {
            segment.force();
        }
    }

    /**
     * Unmaps the region. The segment must not be used afterwards; other mappings of the same file are unaffected.
     */
    @Override
    public void close() {
        if (arena.scope().isAlive()) {
            arena.close();
        }
    }
}
