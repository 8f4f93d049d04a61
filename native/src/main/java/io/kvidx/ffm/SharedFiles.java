package io.kvidx.ffm;

import com.sun.security.auth.module.UnixSystem;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.nio.file.attribute.UserPrincipalNotFoundException;
import java.util.Set;

/**
 * How kvidx creates the directories and files it shares with other processes: the one place for their modes,
 * owner and group.
 *
 * <ul>
 *   <li>a directory is {@code 0750} and a file {@code 0640}, whatever the umask; both get one group, so that
 *   readers in that group (routers) can read and nobody else can; the default group is the user's primary
 *   group;</li>
 *   <li>a private file (the writer's lock file) is {@code 0600};</li>
 *   <li>a directory must be owned by this process's user, and is never reached through a symbolic link at its
 *   last component; files are created and renamed relative to the directory's open descriptor
 *   ({@link SecureDirectoryStream}: {@code openat}, {@code renameat}) without following symbolic links, and new
 *   files are created exclusively ({@code O_CREAT|O_EXCL}), so a planted file or link makes the create fail
 *   instead of being used;</li>
 *   <li>a directory's parent is created when missing (0750, with the group) but never changed when it exists:
 *   it may be shared, e.g. a tmpfs holding several cells.</li>
 * </ul>
 *
 * <p>Linux and other POSIX systems with a {@link SecureDirectoryStream} only.
 *
 * <p><b>Note:</b> immutable and thread safe; a {@link Directory} is for one thread.
 */
public final class SharedFiles {
    /** Mode of a shared directory: {@code rwxr-x---}. */
    public static final Set<PosixFilePermission> DIRECTORY_PERMISSIONS = PosixFilePermissions.fromString("rwxr-x---");
    /** Mode of a shared file: {@code rw-r-----}. */
    public static final Set<PosixFilePermission> FILE_PERMISSIONS = PosixFilePermissions.fromString("rw-r-----");
    /** Mode of a private file: {@code rw-------}. */
    public static final Set<PosixFilePermission> PRIVATE_FILE_PERMISSIONS =
        PosixFilePermissions.fromString("rw-------");

    private static final int WORLD_WRITABLE = 0002;
    private static final int STICKY = 01000;

    private final UserPrincipal owner;
    private final GroupPrincipal group;

    private SharedFiles(final UserPrincipal owner, final GroupPrincipal group) {
        this.owner = owner;
        this.group = group;
    }

    /**
     * Resolves the group that shared directories and files get.
     *
     * @param groupName a group name or numeric id; null or empty for this process's primary group.
     * @return the policy.
     * @throws IllegalArgumentException when no such group exists.
     */
    public static SharedFiles forGroup(final String groupName) {
        final UnixSystem unix = new UnixSystem();
        final UserPrincipalLookupService lookup = FileSystems.getDefault().getUserPrincipalLookupService();
        final String name = groupName == null || groupName.isEmpty() ? Long.toString(unix.getGid()) : groupName;
        try {
            return new SharedFiles(lookup.lookupPrincipalByName(Long.toString(unix.getUid())),
                lookup.lookupPrincipalByGroupName(name));
        } catch (final UserPrincipalNotFoundException ex) {
            throw new IllegalArgumentException("unknown group '" + name + "'", ex);
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot look up group '" + name + "'", ex);
        }
    }

    /**
     * @return the group shared directories and files get.
     */
    public GroupPrincipal group() {
        return group;
    }

    /**
     * @return the user that must own shared directories (this process's).
     */
    public UserPrincipal owner() {
        return owner;
    }

    /**
     * Opens a shared directory, creating it (and a missing parent) when absent. Checks only: an existing directory's
     * mode and group are corrected by {@link Directory#enforcePermissions()}, which a writer calls once it knows it
     * is the only one.
     *
     * @param dir the directory.
     * @return the open directory; close it.
     * @throws IOException when the directory is a symbolic link or not a directory, belongs to another user, or
     *                     cannot be created or opened.
     */
    public Directory openDirectory(final Path dir) throws IOException {
        final Path absolute = dir.toAbsolutePath();
        final Path parent = absolute.getParent();
        if (parent != null && Files.notExists(parent)) {
            createParent(parent);
        }
        try {
            Files.createDirectory(absolute, PosixFilePermissions.asFileAttribute(DIRECTORY_PERMISSIONS));
        } catch (final FileAlreadyExistsException ex) {
            // Checked below, whatever it is.
        }
        final PosixFileAttributes link = Files.readAttributes(absolute, PosixFileAttributes.class,
            LinkOption.NOFOLLOW_LINKS);
        if (link.isSymbolicLink()) {
            throw new IOException(absolute + " is a symbolic link: refusing to use it (make it a real directory)");
        }
        if (!link.isDirectory()) {
            throw new IOException(absolute + " is not a directory");
        }
        final DirectoryStream<Path> stream = Files.newDirectoryStream(absolute);
        if (!(stream instanceof SecureDirectoryStream<Path> secure)) {
            stream.close();
            throw new IOException("no secure directory access (openat) on this platform for " + absolute);
        }
        try {
            final PosixFileAttributes opened = secure.getFileAttributeView(PosixFileAttributeView.class)
                .readAttributes();
            if (!opened.fileKey().equals(link.fileKey())) {
                throw new IOException(absolute + " was replaced while being opened");
            }
            requireOwner(opened, absolute);
            return new Directory(absolute, secure, opened.fileKey());
        } catch (final IOException | RuntimeException ex) {
            secure.close();
            throw ex;
        }
    }

    private void requireOwner(final PosixFileAttributes attributes, final Path what) throws ForeignOwnerException {
        if (!attributes.owner().equals(owner)) {
            throw new ForeignOwnerException(what, attributes.owner().getName(), owner.getName());
        }
    }

    private void createParent(final Path parent) throws IOException {
        final Path grandparent = parent.getParent();
        if (grandparent != null) {
            Files.createDirectories(grandparent, PosixFilePermissions.asFileAttribute(DIRECTORY_PERMISSIONS));
        }
        try {
            Files.createDirectory(parent, PosixFilePermissions.asFileAttribute(DIRECTORY_PERMISSIONS));
        } catch (final FileAlreadyExistsException ex) {
            return; // created meanwhile by someone else: theirs, left alone
        }
        // Ours, just created: give it the group so that readers can reach the directory below it.
        Files.getFileAttributeView(parent, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS).setGroup(group);
    }

    /**
     * Says whether a directory's parent lets other users replace the directory: world-writable without the sticky
     * bit (where {@code /tmp} and {@code /dev/shm} have it).
     *
     * @param dir a directory.
     * @return a one-line warning, or null when the parent is fine or its mode is unknown.
     */
    public static String unsafeParentWarning(final Path dir) {
        final Path parent = dir.toAbsolutePath().getParent();
        if (parent == null) {
            return null;
        }
        try {
            final int mode = (Integer) Files.getAttribute(parent, "unix:mode");
            if ((mode & WORLD_WRITABLE) != 0 && (mode & STICKY) == 0) {
                return parent + " is world-writable without the sticky bit (mode " + Integer.toOctalString(mode & 07777)
                    + "): any local user can rename or replace " + dir.getFileName()
                    + "; make it 0755 or 1777, or mount the index tmpfs with tuning/mount-index-tmpfs.sh";
            }
            return null;
        } catch (final IOException | UnsupportedOperationException | IllegalArgumentException ex) {
            return null;
        }
    }

    /**
     * An open shared directory: files are created, opened and renamed relative to its descriptor.
     *
     * <p><b>Note:</b> for one thread; close it when done.
     */
    public final class Directory implements AutoCloseable {
        private final Path path;
        private final SecureDirectoryStream<Path> stream;
        private final Object fileKey;

        private Directory(final Path path, final SecureDirectoryStream<Path> stream, final Object fileKey) {
            this.path = path;
            this.stream = stream;
            this.fileKey = fileKey;
        }

        /**
         * @return the directory's absolute path.
         */
        public Path path() {
            return path;
        }

        /**
         * @return the directory's identity (device and inode): equal for two opens of the same directory.
         */
        public Object fileKey() {
            return fileKey;
        }

        /**
         * Sets the directory's mode to exactly {@link #DIRECTORY_PERMISSIONS} and its group to the policy's group,
         * through its open descriptor ({@code fchmod}, {@code fchown}); no-op when they already are.
         *
         * @throws IOException when they cannot be set, e.g. the user is not a member of the group.
         */
        public void enforcePermissions() throws IOException {
            final PosixFileAttributeView view = stream.getFileAttributeView(PosixFileAttributeView.class);
            final PosixFileAttributes attributes = view.readAttributes();
            if (!attributes.permissions().equals(DIRECTORY_PERMISSIONS)) {
                view.setPermissions(DIRECTORY_PERMISSIONS);
            }
            if (!attributes.group().equals(group)) {
                setGroup(view, path);
            }
        }

        /**
         * Creates a new shared file, exclusively: it fails when anything (a file, a symbolic link) already has that
         * name. The file gets exactly {@link #FILE_PERMISSIONS} and the policy's group.
         *
         * @param name file name inside this directory.
         * @return the file, open for reading and writing; the caller closes it.
         * @throws FileAlreadyExistsException when the name is taken.
         * @throws IOException                when the file cannot be created.
         */
        public FileChannel createFile(final String name) throws IOException {
            final FileChannel channel = open(name, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS), FILE_PERMISSIONS);
            try {
                final PosixFileAttributeView view = view(name);
                view.setPermissions(FILE_PERMISSIONS);
                setGroup(view, path.resolve(name));
                return channel;
            } catch (final IOException | RuntimeException ex) {
                channel.close();
                deleteIfExists(name);
                throw ex;
            }
        }

        /**
         * Opens a private file ({@link #PRIVATE_FILE_PERMISSIONS}), creating it when absent. An existing one must be
         * a regular file (not a symbolic link) owned by this user; a wider mode is tightened.
         *
         * <p>Tightening opens and closes a second descriptor, and closing any descriptor of a file drops the POSIX
         * record locks this process holds on it: call this before locking the file, never while holding a lock.
         *
         * @param name file name inside this directory.
         * @return the file, open for reading and writing; the caller closes it.
         * @throws IOException when it cannot be opened, or is a link, not a regular file or another user's.
         */
        public FileChannel openPrivateFile(final String name) throws IOException {
            final Set<OpenOption> create = Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
            try {
                final FileChannel channel = open(name, create, PRIVATE_FILE_PERMISSIONS);
                try {
                    view(name).setPermissions(PRIVATE_FILE_PERMISSIONS);
                    return channel;
                } catch (final IOException | RuntimeException ex) {
                    channel.close();
                    throw ex;
                }
            } catch (final FileAlreadyExistsException ex) {
                // An existing file: checked before it is opened.
            }
            final PosixFileAttributes attributes = view(name).readAttributes();
            if (attributes.isSymbolicLink() || !attributes.isRegularFile()) {
                throw new IOException(path.resolve(name) + " is " + (attributes.isSymbolicLink()
                    ? "a symbolic link" : "not a regular file") + ": refusing to use it");
            }
            requireOwner(attributes, path.resolve(name));
            if (!attributes.permissions().equals(PRIVATE_FILE_PERMISSIONS)) {
                view(name).setPermissions(PRIVATE_FILE_PERMISSIONS);
            }
            return open(name, Set.of(StandardOpenOption.READ, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS),
                null);
        }

        /**
         * Opens an existing shared file of this directory for reading and writing, as a writer re-attaching to the
         * file its predecessor left: the file must be a regular file (not a symbolic link) owned by this user, and
         * gets exactly {@link #FILE_PERMISSIONS} and the policy's group when it has another mode or group (changed
         * behind the writer's back, or left by a writer with another {@code --group}). Mode and group are set
         * through the name relative to this directory's descriptor, without following a link; only this user can
         * replace a name in a directory it owns with mode 0750.
         *
         * @param name file name inside this directory.
         * @return the file, open for reading and writing; the caller closes it.
         * @throws NoSuchFileException    when there is no such file.
         * @throws ForeignOwnerException when it belongs to another user.
         * @throws IOException            when it is a link or not a regular file, or its mode or group cannot be set
         *                                (e.g. the user is not a member of the group).
         */
        public FileChannel openSharedFile(final String name) throws IOException {
            final PosixFileAttributeView view = view(name);
            final PosixFileAttributes attributes = view.readAttributes();
            if (attributes.isSymbolicLink() || !attributes.isRegularFile()) {
                throw new IOException(path.resolve(name) + " is " + (attributes.isSymbolicLink()
                    ? "a symbolic link" : "not a regular file") + ": refusing to use it");
            }
            requireOwner(attributes, path.resolve(name));
            if (!attributes.permissions().equals(FILE_PERMISSIONS)) {
                view.setPermissions(FILE_PERMISSIONS);
            }
            if (!attributes.group().equals(group)) {
                setGroup(view, path.resolve(name));
            }
            return open(name, Set.of(StandardOpenOption.READ, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS),
                null);
        }

        /**
         * Fails when a name refers to a symbolic link or a directory: what a writer checks before renaming a file
         * over that name. An absent name or a regular file passes.
         *
         * @param name file name inside this directory.
         * @throws IOException when it is a symbolic link or not a regular file.
         */
        public void requireRegularFileOrAbsent(final String name) throws IOException {
            final PosixFileAttributes attributes;
            try {
                attributes = view(name).readAttributes();
            } catch (final NoSuchFileException ex) {
                return;
            }
            if (attributes.isSymbolicLink()) {
                throw new IOException(path.resolve(name) + " is a symbolic link: refusing to replace it (remove it)");
            }
            if (!attributes.isRegularFile()) {
                throw new IOException(path.resolve(name) + " is not a regular file: refusing to replace it");
            }
        }

        /**
         * Renames a file of this directory atomically ({@code renameat}), replacing the target name.
         *
         * @param from existing name.
         * @param to   new name.
         * @throws IOException when the rename fails.
         */
        public void rename(final String from, final String to) throws IOException {
            stream.move(name(from), stream, name(to));
        }

        /**
         * Deletes a file of this directory (a link itself, never its target) when present.
         *
         * @param name file name.
         * @throws IOException when it exists and cannot be deleted.
         */
        public void deleteIfExists(final String name) throws IOException {
            try {
                stream.deleteFile(name(name));
            } catch (final NoSuchFileException ex) {
                // Already gone.
            }
        }

        /**
         * Closes the directory's descriptor; files opened from it stay open.
         */
        @Override
        public void close() {
            try {
                stream.close();
            } catch (final IOException ex) {
                throw new UncheckedIOException("cannot close " + path, ex);
            }
        }

        private FileChannel open(final String name, final Set<OpenOption> options,
            final Set<PosixFilePermission> permissions) throws IOException {
            final SeekableByteChannel channel = permissions == null ? stream.newByteChannel(name(name), options)
                : stream.newByteChannel(name(name), options, PosixFilePermissions.asFileAttribute(permissions));
            if (channel instanceof FileChannel fileChannel) {
                return fileChannel;
            }
            channel.close();
            throw new IOException("cannot map or lock " + path.resolve(name) + ": not a FileChannel on this platform");
        }

        private PosixFileAttributeView view(final String name) {
            return stream.getFileAttributeView(name(name), PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS);
        }

        private void setGroup(final PosixFileAttributeView view, final Path what) throws IOException {
            try {
                view.setGroup(group);
            } catch (final IOException ex) {
                throw new IOException("cannot give " + what + " the group " + group.getName()
                    + " (the user must be a member of it): " + ex.getMessage(), ex);
            }
        }

        private Path name(final String name) {
            final Path relative = path.getFileSystem().getPath(name);
            if (relative.isAbsolute() || relative.getNameCount() != 1 || name.equals("..") || name.equals(".")) {
                throw new IllegalArgumentException("not a plain file name: " + name);
            }
            return relative;
        }
    }
}
