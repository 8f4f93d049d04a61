package io.kvidx.bench.trace;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The replay router's JIT warm-up: it makes the queries asked for, on the direct (up to 64 pods) and the general
 * cell layout, none when asked for none, and leaves no index behind.
 */
class QueryWarmUpTest {
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldMakeTheQueriesAskedForOnEitherCellLayoutAndLeaveNoIndexBehind() throws IOException {
        final List<Path> before = warmUpDirs();
        assertEquals(0, QueryWarmUp.run(128, 0, 10_000));
        assertEquals(3_000, QueryWarmUp.run(8, 3_000, 30_000));
        assertEquals(3_000, QueryWarmUp.run(128, 3_000, 30_000));
        assertEquals(before, warmUpDirs());
    }

    /** The warm-up's private index directories, where it makes them. */
    private static List<Path> warmUpDirs() throws IOException {
        final Path shm = Path.of("/dev/shm");
        final Path parent = Files.isDirectory(shm) && Files.isWritable(shm) ? shm
            : Path.of(System.getProperty("java.io.tmpdir"));
        try (Stream<Path> dirs = Files.list(parent)) {
            return dirs.filter(d -> d.getFileName().toString().startsWith("kvidx-warm-up-")).sorted().toList();
        }
    }
}
