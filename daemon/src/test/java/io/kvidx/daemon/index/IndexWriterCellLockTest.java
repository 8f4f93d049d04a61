package io.kvidx.daemon.index;

import io.kvidx.ffm.SharedFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every writer of a cell holds its lock: one made without a daemon (a benchmark, the demo, a test) takes it itself
 * and lets go when closed; one handed the lock its caller holds (the daemon) neither takes nor releases it.
 */
@Timeout(30)
class IndexWriterCellLockTest {
    private static final long PID = ProcessHandle.current().pid();

    @TempDir
    Path dir;

    private final SharedFiles files = SharedFiles.forGroup(null);

    private static Object key(final Path file) throws IOException {
        return Files.readAttributes(file, BasicFileAttributes.class).fileKey();
    }

    @Test
    void shouldTakeTheCellsLockAndReleaseItOnClose() throws IOException {
        final Path lockFile = dir.resolve("test").resolve(CellLock.LOCK_FILE_NAME);
        try (IndexWriter writer = IndexWriter.create(TestIndexes.small(dir).deleteOnClose(false))) {
            assertEquals(PID + "\n", Files.readString(lockFile));
            final Object index = key(writer.context().indexFile());
            final CellLockedException created = assertThrows(CellLockedException.class,
                () -> IndexWriter.create(TestIndexes.small(dir)));
            assertEquals(PID, created.holderPid());
            assertTrue(created.getMessage().contains("pid " + PID), created.getMessage());
            assertThrows(CellLockedException.class, () -> IndexWriter.open(TestIndexes.small(dir)));
            assertThrows(CellLockedException.class, () -> CellLock.acquire(dir, "test", files), "a daemon too");
            assertEquals(index, key(writer.context().indexFile()), "the refused writers replaced nothing");
            // Another cell of the same directory is independent.
            IndexWriter.create(TestIndexes.small(dir).cell("other")).close();
        }
        // Released on close: the next writer, without any daemon, takes the cell and re-attaches.
        try (IndexWriter next = IndexWriter.open(TestIndexes.small(dir))) {
            assertTrue(next.attached(), next.openReason());
        }
        CellLock.acquire(dir, "test", files).close();
    }

    @Test
    void shouldUseAHandedInLockWithoutReleasingIt() throws IOException {
        try (CellLock lock = CellLock.acquire(dir, "test", files)) {
            final IndexWriter first = IndexWriter.create(TestIndexes.small(dir).deleteOnClose(false).cellLock(lock));
            first.close();
            assertThrows(CellLockedException.class, () -> CellLock.acquire(dir, "test", files),
                "closing the writer left the caller's lock held");
            // The holder may open writers in turn, as the daemon does when it replaces a half-loaded index.
            try (IndexWriter second = IndexWriter.open(TestIndexes.small(dir).cellLock(lock))) {
                assertEquals(first.epoch(), second.epoch());
            }
            assertEquals(PID + "\n", Files.readString(lock.file()));
            final IllegalArgumentException wrong = assertThrows(IllegalArgumentException.class,
                () -> IndexWriter.create(TestIndexes.small(dir).cell("other").cellLock(lock)));
            assertTrue(wrong.getMessage().contains(lock.file().toString()), wrong.getMessage());
            assertTrue(Files.notExists(dir.resolve("other").resolve("index")));
        }
    }
}
