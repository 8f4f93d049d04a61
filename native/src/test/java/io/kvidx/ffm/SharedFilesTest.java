package io.kvidx.ffm;

import com.sun.security.auth.module.UnixSystem;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermissions;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The rules for the files the writer shares: modes, group, symbolic links, exclusive creation, the parent left
 * alone.
 */
@Timeout(30)
class SharedFilesTest {
    @TempDir
    Path tmp;

    /**
     * @return a group this user may give files other than its primary group when there is one (a supplementary
     * group, or any group for root), else the primary group.
     */
    static String otherGroup() {
        final UnixSystem unix = new UnixSystem();
        for (final long gid : unix.getGroups()) {
            if (gid != unix.getGid()) {
                return Long.toString(gid);
            }
        }
        if (unix.getUid() == 0) {
            for (final String candidate : new String[] {"1", "2", "100"}) {
                try {
                    SharedFiles.forGroup(candidate);
                    return candidate;
                } catch (final IllegalArgumentException ex) {
                    // Try the next one.
                }
            }
        }
        return Long.toString(unix.getGid());
    }

    private static String mode(final Path path) throws IOException {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(path, LinkOption.NOFOLLOW_LINKS));
    }

    private static GroupPrincipal group(final Path path) throws IOException {
        return Files.getFileAttributeView(path, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS)
            .readAttributes().group();
    }

    @Test
    void shouldCreateDirectory0750AndFiles0640WithThePrimaryGroupByDefault() throws IOException {
        final SharedFiles files = SharedFiles.forGroup(null);
        assertEquals(SharedFiles.forGroup(Long.toString(new UnixSystem().getGid())).group(), files.group());
        final Path cell = tmp.resolve("kvidx").resolve("cell");
        try (SharedFiles.Directory dir = files.openDirectory(cell)) {
            dir.enforcePermissions();
            dir.createFile("a").close();
            try (FileChannel lock = dir.openPrivateFile("lock")) {
                assertTrue(lock.isOpen());
            }
        }
        assertEquals("rwxr-x---", mode(cell));
        assertEquals("rwxr-x---", mode(cell.getParent()), "a missing parent is created 0750");
        assertEquals("rw-r-----", mode(cell.resolve("a")));
        assertEquals("rw-------", mode(cell.resolve("lock")));
        assertEquals(files.group(), group(cell));
        assertEquals(files.group(), group(cell.resolve("a")));
    }

    @Test
    void shouldGiveTheDirectoryItsParentWhenCreatedAndTheFilesTheConfiguredGroup() throws IOException {
        final SharedFiles files = SharedFiles.forGroup(otherGroup());
        final Path cell = tmp.resolve("kvidx").resolve("cell");
        try (SharedFiles.Directory dir = files.openDirectory(cell)) {
            dir.enforcePermissions();
            dir.createFile("a").close();
        }
        assertEquals(files.group(), group(cell));
        assertEquals(files.group(), group(cell.getParent()));
        assertEquals(files.group(), group(cell.resolve("a")));
        assertEquals("rw-r-----", mode(cell.resolve("a")));
    }

    @Test
    void shouldTightenAnExistingDirectoryOnlyWhenAskedAndNeverItsParent() throws IOException {
        final Path parent = tmp.resolve("shared");
        final Path cell = parent.resolve("cell");
        Files.createDirectories(cell);
        Files.setPosixFilePermissions(parent, PosixFilePermissions.fromString("rwxrwxrwx"));
        Files.setPosixFilePermissions(cell, PosixFilePermissions.fromString("rwxrwxrwx"));
        final SharedFiles files = SharedFiles.forGroup(otherGroup());
        try (SharedFiles.Directory dir = files.openDirectory(cell)) {
            assertEquals("rwxrwxrwx", mode(cell), "opening only checks");
            dir.enforcePermissions();
        }
        assertEquals("rwxr-x---", mode(cell));
        assertEquals(files.group(), group(cell));
        assertEquals("rwxrwxrwx", mode(parent), "the parent may be shared: never changed");
    }

    @Test
    void shouldWarnAboutAWorldWritableParentWithoutTheStickyBit() throws IOException {
        final Path parent = tmp.resolve("shared");
        Files.createDirectories(parent);
        Files.setAttribute(parent, "unix:mode", 0777);
        final String warning = SharedFiles.unsafeParentWarning(parent.resolve("cell"));
        assertTrue(warning != null && warning.contains("world-writable without the sticky bit")
            && warning.contains("777") && warning.lines().count() == 1, String.valueOf(warning));
        Files.setAttribute(parent, "unix:mode", 01777);
        assertNull(SharedFiles.unsafeParentWarning(parent.resolve("cell")), "/tmp-like: sticky");
        Files.setAttribute(parent, "unix:mode", 0755);
        assertNull(SharedFiles.unsafeParentWarning(parent.resolve("cell")));
    }

    @Test
    void shouldRefuseADirectoryThatIsASymbolicLink() throws IOException {
        final Path real = Files.createDirectory(tmp.resolve("elsewhere"));
        Files.setPosixFilePermissions(real, PosixFilePermissions.fromString("rwxrwxrwx"));
        final Path cell = Files.createSymbolicLink(tmp.resolve("cell"), real);
        final IOException ex = assertThrows(IOException.class,
            () -> SharedFiles.forGroup(null).openDirectory(cell).close());
        assertTrue(ex.getMessage().contains("symbolic link"), ex.getMessage());
        assertEquals("rwxrwxrwx", mode(real), "the link's target is left alone");
        try (var entries = Files.list(real)) {
            assertEquals(0, entries.count());
        }
    }

    @Test
    void shouldRefuseADirectoryOfAnotherUser() throws IOException {
        final Path cell;
        if (new UnixSystem().getUid() == 0) {
            cell = Files.createDirectory(tmp.resolve("cell"));
            Files.setAttribute(cell, "unix:uid", 1);
        } else {
            cell = Path.of("/usr");
            assumeTrue(Files.isDirectory(cell, LinkOption.NOFOLLOW_LINKS));
        }
        final String before = mode(cell);
        final IOException ex = assertThrows(IOException.class,
            () -> SharedFiles.forGroup(null).openDirectory(cell).close());
        assertTrue(ex.getMessage().contains("belongs to user"), ex.getMessage());
        assertEquals(before, mode(cell));
    }

    @Test
    void shouldNeverCreateOverAPlantedFileOrLink() throws IOException {
        final Path cell = tmp.resolve("cell");
        final Path victim = Files.writeString(tmp.resolve("victim"), "precious");
        try (SharedFiles.Directory dir = SharedFiles.forGroup(null).openDirectory(cell)) {
            Files.writeString(cell.resolve("planted"), "attacker");
            Files.createSymbolicLink(cell.resolve("link"), victim);
            Files.createSymbolicLink(cell.resolve("dangling"), tmp.resolve("created-through-link"));
            assertThrows(FileAlreadyExistsException.class, () -> dir.createFile("planted"));
            assertThrows(FileAlreadyExistsException.class, () -> dir.createFile("link"));
            assertThrows(FileAlreadyExistsException.class, () -> dir.createFile("dangling"));
            assertThrows(FileAlreadyExistsException.class, () -> MappedRegion.create(dir, "planted", 4096));
            assertThrows(FileAlreadyExistsException.class, () -> MappedRegion.create(dir, "link", 4096));
        }
        assertEquals("attacker", Files.readString(cell.resolve("planted")));
        assertEquals("precious", Files.readString(victim));
        assertTrue(Files.isSymbolicLink(cell.resolve("link")));
        assertFalse(Files.exists(tmp.resolve("created-through-link")));
    }

    @Test
    void shouldMapANewZeroFilledFile0640() throws IOException {
        try (SharedFiles.Directory dir = SharedFiles.forGroup(null).openDirectory(tmp.resolve("cell"));
            MappedRegion region = MappedRegion.create(dir, "index.tmp", 8192)) {
            assertEquals(8192, region.segment().byteSize());
            assertEquals(0, region.segment().get(java.lang.foreign.ValueLayout.JAVA_LONG, 4096));
            assertEquals(tmp.resolve("cell").resolve("index.tmp").toAbsolutePath(), region.path());
            assertEquals("rw-r-----", mode(region.path()));
            assertEquals(8192, Files.size(region.path()));
        }
    }

    @Test
    void shouldRefuseToReplaceASymbolicLinkOrADirectory() throws IOException {
        final Path cell = tmp.resolve("cell");
        try (SharedFiles.Directory dir = SharedFiles.forGroup(null).openDirectory(cell)) {
            dir.requireRegularFileOrAbsent("index");
            Files.writeString(cell.resolve("index"), "old");
            dir.requireRegularFileOrAbsent("index");
            Files.delete(cell.resolve("index"));
            Files.createSymbolicLink(cell.resolve("index"), tmp.resolve("victim"));
            final IOException link = assertThrows(IOException.class, () -> dir.requireRegularFileOrAbsent("index"));
            assertTrue(link.getMessage().contains("symbolic link"), link.getMessage());
            Files.createDirectory(cell.resolve("sub"));
            assertThrows(IOException.class, () -> dir.requireRegularFileOrAbsent("sub"));
            assertThrows(IllegalArgumentException.class, () -> dir.createFile("../escape"));
        }
    }

    @Test
    void shouldOpenAPrivateFileTighteningItAndRefusingALink() throws IOException {
        final Path cell = tmp.resolve("cell");
        final Path victim = Files.writeString(tmp.resolve("victim"), "precious");
        final String victimMode = mode(victim);
        try (SharedFiles.Directory dir = SharedFiles.forGroup(null).openDirectory(cell)) {
            Files.writeString(cell.resolve("wide"), "1234\n");
            Files.setPosixFilePermissions(cell.resolve("wide"), PosixFilePermissions.fromString("rw-rw-rw-"));
            try (FileChannel channel = dir.openPrivateFile("wide")) {
                assertEquals(5, channel.size(), "an existing file is opened, not truncated");
            }
            assertEquals("rw-------", mode(cell.resolve("wide")));
            Files.createSymbolicLink(cell.resolve("link"), victim);
            final IOException ex = assertThrows(IOException.class, () -> dir.openPrivateFile("link"));
            assertTrue(ex.getMessage().contains("symbolic link"), ex.getMessage());
        }
        assertEquals(victimMode, mode(victim));
        assertEquals("precious", Files.readString(victim));
    }

    @Test
    void shouldReopenASharedFileGivingItTheModeAndGroupAndRefusingALinkOrAnotherUsersFile() throws IOException {
        final Path cell = tmp.resolve("cell");
        final Path victim = Files.writeString(tmp.resolve("victim"), "precious");
        final String victimMode = mode(victim);
        final SharedFiles files = SharedFiles.forGroup(otherGroup());
        try (SharedFiles.Directory dir = files.openDirectory(cell)) {
            Files.writeString(cell.resolve("index"), "1234\n");
            Files.setPosixFilePermissions(cell.resolve("index"), PosixFilePermissions.fromString("rw-rw-rw-"));
            try (FileChannel channel = dir.openSharedFile("index")) {
                assertEquals(5, channel.size(), "an existing file is opened, not truncated");
            }
            assertEquals("rw-r-----", mode(cell.resolve("index")));
            assertEquals(files.group(), group(cell.resolve("index")));
            Files.createSymbolicLink(cell.resolve("link"), victim);
            final IOException link = assertThrows(IOException.class, () -> dir.openSharedFile("link"));
            assertTrue(link.getMessage().contains("symbolic link"), link.getMessage());
            if (new UnixSystem().getUid() == 0) {
                final Path foreign = Files.writeString(cell.resolve("foreign"), "x");
                Files.setAttribute(foreign, "unix:uid", 1);
                Files.setPosixFilePermissions(foreign, PosixFilePermissions.fromString("rw-rw-rw-"));
                final ForeignOwnerException ex = assertThrows(ForeignOwnerException.class,
                    () -> dir.openSharedFile("foreign"));
                assertEquals(foreign, ex.file());
                assertTrue(ex.getMessage().contains("belongs to user"), ex.getMessage());
                assertEquals("rw-rw-rw-", mode(foreign), "another user's file is left as it is");
            }
        }
        assertEquals(victimMode, mode(victim));
        assertEquals("precious", Files.readString(victim));
    }

    @Test
    void shouldRejectAnUnknownGroup() {
        final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
            () -> SharedFiles.forGroup("no-such-group-kvidx"));
        assertTrue(ex.getMessage().contains("unknown group 'no-such-group-kvidx'"), ex.getMessage());
    }

    @Test
    void shouldKnowTheSameDirectoryByItsKey() throws IOException {
        final SharedFiles files = SharedFiles.forGroup(null);
        try (SharedFiles.Directory a = files.openDirectory(tmp.resolve("a"));
            SharedFiles.Directory again = files.openDirectory(tmp.resolve("a"));
            SharedFiles.Directory b = files.openDirectory(tmp.resolve("b"))) {
            assertEquals(a.fileKey(), again.fileKey());
            assertNotEquals(a.fileKey(), b.fileKey());
        }
    }
}
