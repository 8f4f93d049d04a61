package io.kvidx.daemon.lifecycle;

import com.sun.security.auth.module.UnixSystem;
import io.kvidx.daemon.TestGroups;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.index.IndexFileOwnerException;
import io.kvidx.ffm.SharedFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A restarted daemon re-attaches to the index its predecessor left (same epoch) and gives it, and the other files of
 * the cell, the mode and group of its policy, whatever was changed behind its back or by another {@code --group};
 * an index file owned by another user is refused and the daemon does not start.
 */
@Timeout(60)
class ReattachPermissionsTest {
    /** The cell's shared files, all 0640 in the policy's group after a start. */
    private static final List<String> SHARED = List.of("index", "tiers", "counters", "pods", "errors");

    @TempDir
    Path dir;

    private DaemonContext context(final String group) {
        return new DaemonContext().dir(dir).cell("c").shardCount(16).capacityBlocks(4096).idleStrategy("sleeping")
            .group(group);
    }

    private Path cell() {
        return dir.resolve("c");
    }

    private static PosixFileAttributes attributes(final Path file) throws IOException {
        return Files.readAttributes(file, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    }

    private static String mode(final Path file) throws IOException {
        return PosixFilePermissions.toString(attributes(file).permissions());
    }

    private static PosixFileAttributeView view(final Path file) {
        return Files.getFileAttributeView(file, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS);
    }

    private long startAndStop(final DaemonContext context, final boolean expectAttached) {
        try (KvidxDaemon daemon = KvidxDaemon.start(context)) {
            assertEquals(expectAttached, daemon.index().attached(), daemon.index().openReason());
            return daemon.index().epoch();
        }
    }

    private void assertPolicy(final SharedFiles files) throws IOException {
        for (final String name : SHARED) {
            final Path file = cell().resolve(name);
            assertEquals("rw-r-----", mode(file), name);
            assertEquals(files.group(), attributes(file).group(), name);
        }
        assertEquals("rw-------", mode(cell().resolve("index.writer")), "the writer's private side table");
        assertEquals("rwxr-x---", mode(cell()));
        assertEquals(files.group(), attributes(cell()).group());
    }

    @Test
    void shouldRestoreTheModeAndGroupOfTheIndexItReattachesTo() throws IOException {
        final long epoch = startAndStop(context(null), false);
        final String other = TestGroups.other();
        final GroupPrincipal otherGroup = SharedFiles.forGroup(other).group();
        for (final String name : SHARED) {
            Files.setPosixFilePermissions(cell().resolve(name), PosixFilePermissions.fromString("rw-rw-rw-"));
            view(cell().resolve(name)).setGroup(otherGroup);
        }
        Files.setPosixFilePermissions(cell().resolve("index.writer"), PosixFilePermissions.fromString("rw-r--r--"));
        Files.setPosixFilePermissions(cell().resolve("index"), PosixFilePermissions.fromString("rw-------"));

        assertEquals(epoch, startAndStop(context(null), true), "a warm restart keeps the index");
        assertPolicy(SharedFiles.forGroup(null));

        // A restart with another --group hands the same index to that group's routers.
        final Object key = Files.readAttributes(cell().resolve("index"), BasicFileAttributes.class).fileKey();
        assertEquals(epoch, startAndStop(context(other), true));
        assertEquals(key, Files.readAttributes(cell().resolve("index"), BasicFileAttributes.class).fileKey(),
            "the same file, not a new one");
        assertPolicy(SharedFiles.forGroup(other));
    }

    @Test
    void shouldRefuseToStartOnAnIndexFileOwnedByAnotherUser() throws IOException {
        assumeTrue(new UnixSystem().getUid() == 0, "only root can give a file to another user");
        final UserPrincipal nobody = dir.getFileSystem().getUserPrincipalLookupService()
            .lookupPrincipalByName("nobody");
        final long epoch = startAndStop(context(null), false);
        for (final String name : List.of("index", "index.writer")) {
            final Path file = cell().resolve(name);
            final UserPrincipal owner = attributes(file).owner();
            Files.setOwner(file, nobody);
            Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-rw-rw-"));
            final FileTime modified = Files.getLastModifiedTime(file, LinkOption.NOFOLLOW_LINKS);
            final Object key = attributes(file).fileKey();

            final IndexFileOwnerException ex = assertThrows(IndexFileOwnerException.class,
                () -> KvidxDaemon.start(context(null)));
            assertTrue(ex.getMessage().contains(file.toString()) && ex.getMessage().contains("user nobody"),
                ex.getMessage());
            assertEquals(key, attributes(file).fileKey(), name + " is not replaced");
            assertEquals(nobody, attributes(file).owner());
            assertEquals("rw-rw-rw-", mode(file), name + " is left as it was");
            assertEquals(modified, Files.getLastModifiedTime(file, LinkOption.NOFOLLOW_LINKS));

            // The refused start released the cell's lock: once the file is the daemon's again, it starts.
            Files.setOwner(file, owner);
            assertEquals(epoch, startAndStop(context(null), true));
            assertPolicy(SharedFiles.forGroup(null));
        }
    }
}
