package io.kvidx.daemon.lifecycle;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.index.CellLock;
import io.kvidx.daemon.index.CellLockedException;
import io.kvidx.ffm.SharedFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One writer per cell inside one JVM; the refusal across processes and the take-over after {@code kill -9} are in
 * {@code DaemonCommandTest}, with real processes.
 */
@Timeout(60)
class CellLockTest {
    private static final long PID = ProcessHandle.current().pid();

    @TempDir
    Path dir;

    private final SharedFiles files = SharedFiles.forGroup(null);

    private static String mode(final Path path) throws IOException {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(path, LinkOption.NOFOLLOW_LINKS));
    }

    private static Object key(final Path path) throws IOException {
        return Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).fileKey();
    }

    @Test
    void shouldWriteThePidIntoAPrivateLockFileAndRefuseASecondLockAtOnce() throws IOException {
        try (CellLock lock = CellLock.acquire(dir, "c", files)) {
            assertEquals(dir.resolve("c").resolve(CellLock.LOCK_FILE_NAME), lock.file());
            assertEquals(PID + "\n", Files.readString(lock.file()));
            assertEquals("rw-------", mode(lock.file()));
            assertEquals("rwxr-x---", mode(dir.resolve("c")));
            final long start = System.nanoTime();
            final CellLockedException ex = assertThrows(CellLockedException.class,
                () -> CellLock.acquire(dir, "c", files));
            assertTrue(System.nanoTime() - start < 1_000_000_000L, "refused without waiting");
            assertEquals(PID, ex.holderPid());
            assertTrue(ex.getMessage().contains("pid " + PID) && ex.getMessage().contains(lock.file().toString()),
                ex.getMessage());
            // Another cell of the same directory is independent.
            CellLock.acquire(dir, "other", files).close();
        }
    }

    @Test
    void shouldLetTheNextWriterTakeOverOnceReleasedAndKeepTheFile() throws IOException {
        final Path file = dir.resolve("c").resolve(CellLock.LOCK_FILE_NAME);
        Files.createDirectories(file.getParent());
        Files.writeString(file, "99999999\nstale pid of a dead daemon\n");
        CellLock.acquire(dir, "c", files).close();
        assertEquals(PID + "\n", Files.readString(file), "the stale pid is replaced");
        assertEquals("rw-------", mode(file), "a wider existing lock file is tightened");
        try (CellLock again = CellLock.acquire(dir, "c", files)) {
            assertEquals(file, again.file());
        }
        assertTrue(Files.exists(file), "the file stays: only a held lock means something");
    }

    @Test
    void shouldRefuseACellDirectoryThatIsASymbolicLink() throws IOException {
        final Path elsewhere = Files.createDirectory(dir.resolve("elsewhere"));
        Files.createSymbolicLink(dir.resolve("c"), elsewhere);
        final UncheckedIOException ex = assertThrows(UncheckedIOException.class,
            () -> CellLock.acquire(dir, "c", files));
        assertTrue(ex.getMessage().contains("symbolic link"), ex.getMessage());
        try (Stream<Path> entries = Files.list(elsewhere)) {
            assertEquals(0, entries.count());
        }
    }

    @Test
    void shouldWarnOnceAboutAWorldWritableParentWithoutTheStickyBit() throws Exception {
        Files.setAttribute(dir, "unix:mode", 0777);
        // A real daemon process: the warning goes through the daemon's logging (SLF4J), with a timestamp and level.
        final Path log = dir.resolveSibling(dir.getFileName() + ".log");
        final List<Process> processes = new ArrayList<>();
        try {
            final ChildProcesses.Daemon daemon = ChildProcesses.startDaemon(new String[] {"daemon", "--dir",
                dir.toString(), "--cell", "c", "--shards", "16", "--capacity-blocks", "4096"}, log, false, processes,
                new ArrayList<>());
            ChildProcesses.awaitReady(daemon);
            final List<String> warnings = ChildProcesses.read(log).lines().filter(l -> l.contains("sticky"))
                .toList();
            assertEquals(1, warnings.size(), ChildProcesses.read(log));
            assertTrue(warnings.get(0).matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}\\S* WARN "
                + "CellLock - .*"), warnings.get(0));
            assertEquals("rwxrwxrwx", mode(dir), "the parent is never changed");
        } finally {
            ChildProcesses.destroy(processes.toArray(new Process[0]));
            Files.deleteIfExists(log);
        }
    }

    @Test
    void shouldRefuseASecondDaemonInThisJvmBeforeItTouchesTheAeronDirectoryOrTheIndex() throws Exception {
        final String aeronDir = "/dev/shm/kvidx-test-aeron-" + UUID.randomUUID();
        try (KvidxDaemon daemon = KvidxDaemon.start(context(aeronDir))) {
            final Path index = daemon.index().context().indexFile();
            final Path cnc = Path.of(aeronDir, "cnc.dat");
            final Object indexKey = key(index);
            final FileTime indexTime = Files.getLastModifiedTime(index, LinkOption.NOFOLLOW_LINKS);
            final Object aeronKey = key(Path.of(aeronDir));
            final Object cncKey = key(cnc);
            final CellLockedException ex = assertThrows(CellLockedException.class,
                () -> KvidxDaemon.start(context(aeronDir)));
            assertEquals(PID, ex.holderPid());
            assertEquals(indexKey, key(index));
            assertEquals(indexTime, Files.getLastModifiedTime(index, LinkOption.NOFOLLOW_LINKS));
            assertEquals(aeronKey, key(Path.of(aeronDir)), "the media driver's directory was not recreated");
            assertEquals(cncKey, key(cnc));
            try (IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir))) {
                assertEquals(daemon.index().epoch(), reader.epoch(), "the first daemon's index is still in place");
            }
            assertTrue(daemon.aeron().countersReader().maxCounterId() > 0, "the first daemon's Aeron still works");
        }
        assertFalse(Files.exists(Path.of(aeronDir)), "the first daemon cleaned up its own directory");
        // Released on close: the cell can be written again.
        try (KvidxDaemon again = KvidxDaemon.start(new DaemonContext().dir(dir).shardCount(16).capacityBlocks(4096)
            .idleStrategy("sleeping"))) {
            assertEquals(PID + "\n", Files.readString(dir.resolve("default").resolve(CellLock.LOCK_FILE_NAME)));
            assertTrue(again.index().epoch() > 0);
        }
    }

    private DaemonContext context(final String aeronDir) {
        final DaemonContext context = new DaemonContext().dir(dir).shardCount(16).capacityBlocks(4096)
            .idleStrategy("sleeping");
        context.aeron().addChannel("aeron:ipc").dir(aeronDir).termLength(1 << 16);
        return context;
    }
}
