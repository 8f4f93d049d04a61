package io.kvidx.daemon.cli;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.daemon.TestGroups;
import io.kvidx.daemon.config.DaemonConfigFile;
import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.config.ZmqSettings;
import io.kvidx.daemon.ingest.zmq.ZmqEndpoint;
import io.kvidx.daemon.index.CellLock;
import io.kvidx.daemon.index.CellLockedException;
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
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code kvidx daemon} as a real process: a second daemon for the same cell is refused, and a new one takes over
 * after {@code kill -9} (the daemon answering {@code kvidx query} and stopping on SIGTERM is the tools module's
 * {@code DaemonQueryProcessTest}, since {@code query} lives in the launcher's jar).
 */
class DaemonCommandTest {
    private static final String MODEL = "Qwen/Qwen3-0.6B";

    @TempDir
    Path dir;

    private static List<String> java(final String... args) {
        final List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.addAll(Arrays.asList("--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
            "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
            "io.kvidx.daemon.cli.KvidxCli"));
        cmd.addAll(Arrays.asList(args));
        return cmd;
    }

    @Test
    void shouldParseZmqSpecs() {
        assertEquals(new ZmqEndpoint("tcp://h:5557", "pod-1", "org/model@v2", null),
            TransportOptions.parseZmq("pod-1@org/model@v2=tcp://h:5557"));
        assertEquals(new ZmqEndpoint("tcp://h:5557", "pod-1", null, null),
            TransportOptions.parseZmq("pod-1=tcp://h:5557"));
        assertEquals(new ZmqEndpoint("tcp://h:5557", null, null, null), TransportOptions.parseZmq("*=tcp://h:5557"));
        assertThrows(IllegalArgumentException.class, () -> TransportOptions.parseZmq("tcp://h:5557"));
    }

    @Test
    void shouldChooseTheEngineOfAnEndpointInYamlAndOnTheCommandLine() {
        final DaemonContext yaml = DaemonConfigFile.parse(String.join("\n",
            "zmq:", "  - endpoint: tcp://a:5557", "    pod: a", "    engine: sglang",
            "  - endpoint: tcp://b:5557", "    engine: vllm", "  - endpoint: tcp://c:5557"), new DaemonContext(),
            "test");
        assertEquals(List.of(ZmqEndpoint.Engine.SGLANG, ZmqEndpoint.Engine.VLLM, ZmqEndpoint.Engine.VLLM),
            yaml.zmq().endpoints().stream().map(ZmqEndpoint::engine).toList());
        assertThrows(IllegalArgumentException.class, () -> DaemonConfigFile.parse(String.join("\n",
            "zmq:", "  - endpoint: tcp://a:5557", "    engine: trtllm"), new DaemonContext(), "test"));
        // --engine POD=ENGINE or ENDPOINT=ENGINE, as DaemonCommand applies it.
        final ZmqSettings cli = new DaemonContext().zmq().addEndpoint(TransportOptions.parseZmq("a=tcp://a:5557"))
            .addEndpoint(TransportOptions.parseZmq("*=tcp://b:5557")).engine("a", "sglang")
            .engine("tcp://b:5557", "SGLang");
        assertEquals(List.of(ZmqEndpoint.Engine.SGLANG, ZmqEndpoint.Engine.SGLANG),
            cli.endpoints().stream().map(ZmqEndpoint::engine).toList());
        assertThrows(IllegalArgumentException.class, () -> cli.engine("nobody", "sglang"));
        assertThrows(IllegalArgumentException.class, () -> cli.engine("a", "llama.cpp"));
    }

    @Test
    void shouldReadYamlConfigAndRejectUnknownKeys() {
        final DaemonContext ctx = DaemonConfigFile.parse(String.join("\n",
            "dir: /tmp/x", "blockSize: 32", "podTimeoutMs: 1000", "idleStrategy: sleeping",
            "zmq:", "  - endpoint: tcp://a:5557", "    pod: a", "    model: m", "    replay: tcp://a:5558",
            "  - endpoint: tcp://b:5557"), new DaemonContext(), "test").conclude();
        assertEquals(Path.of("/tmp/x"), ctx.dir());
        assertEquals(32, ctx.blockSize());
        assertEquals(1000, ctx.podTimeoutMs());
        assertEquals(List.of(new ZmqEndpoint("tcp://a:5557", "a", "m", "tcp://a:5558"),
            new ZmqEndpoint("tcp://b:5557", null, null, null)), ctx.zmq().endpoints());
        final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
            () -> DaemonConfigFile.parse("blocksize: 32", new DaemonContext(), "test"));
        assertTrue(ex.getMessage().contains("unknown key 'blocksize'"), ex.getMessage());
        assertThrows(IllegalArgumentException.class,
            () -> DaemonConfigFile.parse("idleStrategy: nope", new DaemonContext(), "test").conclude());
        final String group = TestGroups.other();
        final DaemonContext grouped = DaemonConfigFile.parse("group: " + group, new DaemonContext(), "test").conclude();
        assertEquals(group, grouped.group());
        assertEquals(SharedFiles.forGroup(group).group(), grouped.sharedFiles().group());
        assertEquals(SharedFiles.forGroup(null).group(), new DaemonContext().conclude().sharedFiles().group(),
            "no group: the primary group");
        final IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
            () -> DaemonConfigFile.parse("group: no-such-group-kvidx", new DaemonContext(), "test").conclude());
        assertTrue(unknown.getMessage().contains("unknown group"), unknown.getMessage());
    }

    @Test
    @Timeout(120)
    void shouldRefuseASecondDaemonOnTheSameCellAndLetANewOneTakeOverAfterKill9() throws Exception {
        final Path root = shmTempDir();
        final Path aeronDir = root.resolve("aeron");
        final Path cell = root.resolve("lk");
        final Path index = cell.resolve("index");
        final String group = TestGroups.other();
        final String[] args = {"daemon", "--dir", root.toString(), "--cell", "lk", "--group", group, "--capacity",
            "4096", "--idle", "sleeping", "--aeron", "aeron:ipc", "--aeron-dir", aeronDir.toString()};
        final List<Process> processes = new ArrayList<>();
        try {
            final Process first = startDaemon(args, root.resolve("first.log"), processes);
            awaitLockedBy(first, cell, root.resolve("first.log"));
            assertEquals("rwxr-x---", mode(cell));
            assertEquals("rw-r-----", mode(index));
            assertEquals("rw-------", mode(cell.resolve(CellLock.LOCK_FILE_NAME)));
            final GroupPrincipal expected = SharedFiles.forGroup(group).group();
            assertEquals(expected, group(cell), "--group " + group);
            assertEquals(expected, group(index), "--group " + group);
            final Object indexKey = key(index);
            final FileTime indexTime = Files.getLastModifiedTime(index, LinkOption.NOFOLLOW_LINKS);
            final long epoch = epoch(root);
            final Object aeronKey = key(aeronDir);
            final Object cncKey = key(aeronDir.resolve("cnc.dat"));
            final FileTime cncTime = Files.getLastModifiedTime(aeronDir.resolve("cnc.dat"));

            final long start = System.nanoTime();
            final Process second = new ProcessBuilder(java(args)).redirectOutput(root.resolve("second.out").toFile())
                .redirectError(root.resolve("second.err").toFile()).start();
            processes.add(second);
            assertTrue(second.waitFor(30, TimeUnit.SECONDS), "the second daemon must not run");
            final long elapsedMs = (System.nanoTime() - start) / 1_000_000;
            final String err = Files.readString(root.resolve("second.err"));
            assertNotEquals(0, second.exitValue(), err);
            assertTrue(err.contains("pid " + first.pid()) && err.contains("already written"), err);
            // JVM start included (about 0.5 s here); the lock itself is refused at once (CellLockTest).
            assertTrue(elapsedMs < 3_000, "refused after " + elapsedMs + " ms");
            assertEquals(indexKey, key(index), "the live index was not replaced");
            assertEquals(indexTime, Files.getLastModifiedTime(index, LinkOption.NOFOLLOW_LINKS));
            assertEquals(epoch, epoch(root));
            assertEquals(aeronKey, key(aeronDir), "the live Aeron directory was not recreated");
            assertEquals(cncKey, key(aeronDir.resolve("cnc.dat")));
            assertEquals(cncTime, Files.getLastModifiedTime(aeronDir.resolve("cnc.dat")));
            assertTrue(first.isAlive(), "the first daemon still runs");
            assertEquals(first.pid() + "\n", Files.readString(cell.resolve(CellLock.LOCK_FILE_NAME)));

            // kill -9: the kernel drops the lock with the process; the next daemon takes over.
            first.destroyForcibly();
            assertTrue(first.waitFor(30, TimeUnit.SECONDS));
            assertEquals(128 + 9, first.exitValue());
            final Process third = startDaemon(args, root.resolve("third.log"), processes);
            awaitLockedBy(third, cell, root.resolve("third.log"));
            final long deadline = System.currentTimeMillis() + 10_000;
            while (true) {
                try (IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(root).cell("lk"))) {
                    if (reader.writerPid() == third.pid()) {
                        assertEquals(epoch, reader.epoch(), "the new daemon re-attached to the killed one's index");
                        break;
                    }
                }
                assertTrue(System.currentTimeMillis() < deadline, "the new daemon never wrote its pid");
                Thread.sleep(20);
            }
            third.destroy();
            assertTrue(third.waitFor(30, TimeUnit.SECONDS), "the new daemon stops on SIGTERM");
        } finally {
            for (final Process p : processes) {
                p.destroyForcibly();
                p.waitFor(30, TimeUnit.SECONDS);
            }
            deleteRecursively(root);
        }
    }

    @Test
    @Timeout(60)
    void shouldStillHoldTheLockAgainstOtherProcessesAfterRefusingADaemonInThisJvm() throws Exception {
        final Path root = shmTempDir();
        final long pid = ProcessHandle.current().pid();
        try (CellLock lock = CellLock.acquire(root, "c", SharedFiles.forGroup(null))) {
            // Refusals in this JVM must not open and close the lock file: closing any descriptor of a file drops
            // this process's record locks on it.
            assertThrows(CellLockedException.class, () -> CellLock.acquire(root, "c", SharedFiles.forGroup(null)));
            assertThrows(CellLockedException.class, () -> io.kvidx.daemon.lifecycle.KvidxDaemon.start(
                new DaemonContext().dir(root).cell("c").capacityBlocks(4096)));
            final Process other = new ProcessBuilder(java("daemon", "--dir", root.toString(), "--cell", "c",
                "--capacity", "4096", "--idle", "sleeping")).redirectErrorStream(true)
                .redirectOutput(root.resolve("other.log").toFile()).start();
            try {
                assertTrue(other.waitFor(30, TimeUnit.SECONDS), "the other process got the lock");
            } finally {
                other.destroyForcibly();
            }
            final String out = Files.readString(root.resolve("other.log"));
            assertNotEquals(0, other.exitValue(), out);
            assertTrue(out.contains("pid " + pid), out);
            assertEquals(pid + "\n", Files.readString(lock.file()));
        } finally {
            deleteRecursively(root);
        }
    }

    private static Path shmTempDir() throws IOException {
        final Path shm = Path.of("/dev/shm");
        // tmpfs: writes through a mapping never change a file's mtime there, so the test can compare it.
        return Files.createTempDirectory(Files.isDirectory(shm) && Files.isWritable(shm) ? shm
            : Path.of(System.getProperty("java.io.tmpdir")), "kvidx-lock-test-");
    }

    private static Process startDaemon(final String[] args, final Path log, final List<Process> processes)
        throws IOException {
        final Process p = new ProcessBuilder(java(args)).redirectErrorStream(true).redirectOutput(log.toFile())
            .start();
        processes.add(p);
        return p;
    }

    private static void awaitLockedBy(final Process daemon, final Path cell, final Path log) throws Exception {
        final long deadline = System.currentTimeMillis() + 30_000;
        final Path lockFile = cell.resolve(CellLock.LOCK_FILE_NAME);
        while (System.currentTimeMillis() < deadline) {
            assertTrue(daemon.isAlive(), () -> "daemon exited: " + read(log));
            if (read(log).contains("kvidx daemon: index") && Files.exists(lockFile)
                && Files.readString(lockFile).equals(daemon.pid() + "\n")) {
                return;
            }
            Thread.sleep(50);
        }
        throw new AssertionError("daemon " + daemon.pid() + " not ready: " + read(log));
    }

    private static String read(final Path file) {
        try {
            return Files.exists(file) ? Files.readString(file) : "";
        } catch (final IOException ex) {
            return ex.toString();
        }
    }

    private static long epoch(final Path root) {
        try (IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(root).cell("lk"))) {
            return reader.epoch();
        }
    }

    private static String mode(final Path path) throws IOException {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(path, LinkOption.NOFOLLOW_LINKS));
    }

    private static GroupPrincipal group(final Path path) throws IOException {
        return Files.getFileAttributeView(path, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS)
            .readAttributes().group();
    }

    private static Object key(final Path path) throws IOException {
        return Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).fileKey();
    }

    private static void deleteRecursively(final Path root) throws IOException {
        try (Stream<Path> paths = Files.walk(root)) {
            for (final Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
