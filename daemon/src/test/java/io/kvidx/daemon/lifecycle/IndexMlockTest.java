package io.kvidx.daemon.lifecycle;

import io.kvidx.daemon.config.DaemonContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code mlockIndex: true} locks the index file's mapping into RAM (the process's {@code VmLck} grows by the
 * file), or, where {@code RLIMIT_MEMLOCK} does not allow it, logs why with the errno and runs on. Off by default.
 */
@Timeout(60)
class IndexMlockTest {
    @TempDir
    Path dir;

    @Test
    void shouldLockTheIndexIntoRamOnlyWhenAsked() throws IOException {
        final long before = lockedKb();
        try (KvidxDaemon daemon = KvidxDaemon.start(new DaemonContext().dir(dir).cell("unlocked").shardCount(16)
            .capacityBlocks(8192))) {
            assertEquals(before, lockedKb(), "not locked by default");
        }
        try (KvidxDaemon daemon = KvidxDaemon.start(new DaemonContext().dir(dir).cell("locked").shardCount(16)
            .capacityBlocks(8192).mlockIndex(true))) {
            final long bytes = daemon.index().mappedBytes();
            final String log = daemon.errors().dump();
            if (log.contains("cannot lock the index into RAM")) {
                assertTrue(log.contains("EPERM (1)") || log.contains("ENOMEM (12)"), log);
            } else {
                assertTrue(lockedKb() - before >= bytes / 1024, "VmLck grew by the index's " + bytes + " bytes");
            }
        }
    }

    private static long lockedKb() throws IOException {
        for (final String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmLck:")) {
                return Long.parseLong(line.replaceAll("\\D", ""));
            }
        }
        throw new IllegalStateException("no VmLck in /proc/self/status");
    }
}
