package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexReader;
import io.kvidx.daemon.TestGroups;
import io.kvidx.ffm.SharedFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HexFormat;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * How {@link IndexWriter#create} puts the index file in place: modes, group, symbolic links, the temporary name.
 */
@Timeout(30)
class StagedIndexFileTest {
    private static final long LENGTH = 1 << 16;

    @TempDir
    Path dir;

    private static String mode(final Path path) throws IOException {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(path, LinkOption.NOFOLLOW_LINKS));
    }

    private static GroupPrincipal group(final Path path) throws IOException {
        return Files.getFileAttributeView(path, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS)
            .readAttributes().group();
    }

    private static List<String> names(final Path directory) throws IOException {
        try (Stream<Path> entries = Files.list(directory)) {
            // The writer's private side table (index.writer) lives beside the index; temporary files must not.
            return entries.map(p -> p.getFileName().toString()).filter(n -> !n.equals("index.writer")).sorted()
                .toList();
        }
    }

    @Test
    void shouldCreateTheIndex0640InACellDirectory0750WithTheGroup() throws IOException {
        final SharedFiles files = SharedFiles.forGroup(TestGroups.other());
        final Path cell = dir.resolve("test");
        Files.createDirectories(cell);
        Files.setPosixFilePermissions(cell, PosixFilePermissions.fromString("rwxrwxrwx"));
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
        try (IndexWriter writer = IndexWriter.create(TestIndexes.small(dir).files(files));
            IndexReader reader = IndexReader.attach(TestIndexes.reader(dir))) {
            assertEquals(writer.epoch(), reader.epoch());
            assertEquals("rw-r-----", mode(writer.context().indexFile()));
            assertEquals(files.group(), group(writer.context().indexFile()));
            assertEquals("rwxr-x---", mode(cell), "an existing wider cell directory is tightened");
            assertEquals(files.group(), group(cell));
            assertEquals("rwxrwxrwx", mode(dir), "the parent is never changed");
            assertEquals("rw-r-----", mode(writer.tiers().path()), "the host tier map beside it, same rules");
            assertEquals(files.group(), group(writer.tiers().path()));
            assertEquals(List.of("index", "tiers", "writer.lock"), names(cell), "no temporary file left");
        }
    }

    @Test
    void shouldRefuseACellDirectoryThatIsASymbolicLink() throws IOException {
        final Path elsewhere = Files.createDirectory(dir.resolve("elsewhere"));
        Files.createSymbolicLink(dir.resolve("test"), elsewhere);
        final UncheckedIOException ex = assertThrows(UncheckedIOException.class,
            () -> IndexWriter.create(TestIndexes.small(dir)));
        assertTrue(ex.getMessage().contains("is a symbolic link"), ex.getMessage());
        assertEquals(List.of(), names(elsewhere));
    }

    @Test
    void shouldRefuseAnIndexPathThatIsASymbolicLink() throws IOException {
        final Path victim = Files.writeString(dir.resolve("victim"), "precious");
        final Path cell = Files.createDirectory(dir.resolve("test"));
        Files.createSymbolicLink(cell.resolve("index"), victim);
        final UncheckedIOException ex = assertThrows(UncheckedIOException.class,
            () -> IndexWriter.create(TestIndexes.small(dir)));
        assertTrue(ex.getMessage().contains("symbolic link"), ex.getMessage());
        assertTrue(Files.isSymbolicLink(cell.resolve("index")));
        assertEquals("precious", Files.readString(victim));
        assertEquals(List.of("index", "writer.lock"), names(cell), "no temporary file left");
    }

    @Test
    void shouldNeverUseAPlantedTemporaryName() throws IOException {
        final Path cell = Files.createDirectory(dir.resolve("test"));
        final Path victim = Files.writeString(dir.resolve("victim"), "precious");
        // The name an attacker could predict before: index.<pid>.tmp. It is not used at all now.
        final Path predictable = cell.resolve("index." + ProcessHandle.current().pid() + ".tmp");
        Files.createSymbolicLink(predictable, victim);
        try (IndexWriter writer = IndexWriter.create(TestIndexes.small(dir))) {
            assertTrue(Files.isSymbolicLink(predictable));
            assertEquals("precious", Files.readString(victim));
            assertEquals("rw-r-----", mode(writer.context().indexFile()));
        }
        // Even a planted file under the exact random name is never opened: the exclusive create fails.
        final long suffix = new SplittableRandom(7).nextLong();
        final Path planted = Files.writeString(cell.resolve("index." + HexFormat.of().toHexDigits(suffix) + ".tmp"),
            "attacker");
        Files.writeString(cell.resolve("index"), "old index");
        final UncheckedIOException ex = assertThrows(UncheckedIOException.class, () -> StagedIndexFile.create(
            SharedFiles.forGroup(null), cell.resolve("index"), LENGTH, new SplittableRandom(7)));
        assertInstanceOf(FileAlreadyExistsException.class, ex.getCause());
        assertEquals("attacker", Files.readString(planted));
        assertEquals("old index", Files.readString(cell.resolve("index")));
    }

    @Test
    void shouldUseAnUnpredictableTemporaryNameAndRemoveItOnAbandon() throws IOException {
        final SharedFiles files = SharedFiles.forGroup(null);
        final Path index = dir.resolve("test").resolve("index");
        final StagedIndexFile a = StagedIndexFile.create(files, index, LENGTH, new java.security.SecureRandom());
        final StagedIndexFile b = StagedIndexFile.create(files, index, LENGTH, new java.security.SecureRandom());
        try {
            assertTrue(a.tempName().matches("index\\.[0-9a-f]{16}\\.tmp"), a.tempName());
            assertNotEquals(a.tempName(), b.tempName());
            assertEquals("rw-r-----", mode(index.resolveSibling(a.tempName())));
        } finally {
            a.abandon(new RuntimeException("test"));
            b.publish();
            b.region().close();
        }
        assertFalse(Files.exists(index.resolveSibling(a.tempName())));
        assertEquals(List.of("index"), names(index.getParent()));
        assertEquals(LENGTH, Files.size(index));
    }
}
