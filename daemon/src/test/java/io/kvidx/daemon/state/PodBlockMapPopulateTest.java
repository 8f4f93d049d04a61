package io.kvidx.daemon.state;

import io.kvidx.ffm.MappedRegion;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A new block map file, and each larger one a grow creates, has all its pages when the writer starts storing into
 * it ({@link PodBlockMapDescriptor#POPULATE}), instead of a page fault per 4 KiB as entries land; without a byte of
 * it written. Checked by the blocks the file system allocated to the file ({@code stat}) on tmpfs, where the
 * daemon keeps its state: a file created the same way but not populated stays sparse, so the check can tell.
 */
@Timeout(60)
class PodBlockMapPopulateTest {
    private static Path scratch() throws IOException {
        final Path shm = Path.of("/dev/shm");
        return Files.createTempDirectory(Files.isDirectory(shm) && Files.isWritable(shm) ? shm
            : Path.of(System.getProperty("java.io.tmpdir")), "kvidx-populate");
    }

    /** Bytes the file system allocated to a file ({@code stat %b * %B}). */
    private static long allocated(final Path file) throws Exception {
        final Process p = new ProcessBuilder("stat", "-c", "%b %B", file.toString()).redirectErrorStream(true)
            .start();
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.US_ASCII).trim();
        assertEquals(0, p.waitFor(), out);
        final String[] parts = out.split(" ");
        return Long.parseLong(parts[0]) * Long.parseLong(parts[1]);
    }

    @Test
    void newAndGrownMapFilesHaveTheirPagesBeforeTheFirstStore() throws Exception {
        assertTrue(PodBlockMapDescriptor.POPULATE, "on unless -Dkvidx.blockmap.populate=false");
        final Path dir = scratch();
        try {
            final Path file = dir.resolve("pod.blocks");
            try (PodBlockMap map = PodBlockMap.open(file, "pod-a", 1, 100_000)) {
                final long first = Files.size(file);
                assertTrue(allocated(file) >= first, "new: " + allocated(file) + " of " + first);
                // 4,096 slots at load 0.7 hold 2,867: the next store grows the file into a new, populated one.
                for (long h = 1; h <= 3_000; h++) {
                    map.store(h, h + 1, 1);
                }
                final long grown = Files.size(file);
                assertTrue(grown > first, "grew");
                assertTrue(allocated(file) >= grown, "grown: " + allocated(file) + " of " + grown);
                assertEquals(3_000, map.size());
                assertEquals(1_001, map.get(1_000));
            }
            // The control: the same kind of file, created and mapped but not populated, is sparse.
            final Path alone = dir.resolve("alone.blocks");
            final long length = PodBlockMapDescriptor.length(1 << 16);
            try (MappedRegion region = MappedRegion.createPrivate(alone, length)) {
                assertTrue(allocated(alone) < length / 2, "left alone: " + allocated(alone) + " of " + length);
            }
        } finally {
            try (Stream<Path> all = Files.walk(dir)) {
                all.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }
}
