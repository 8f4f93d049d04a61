package io.kvidx.daemon.lifecycle;

import io.kvidx.daemon.ingest.zmq.JavaVllmPublisherAccess;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A daemon process fed by an engine that stores new blocks without ever removing one (its removals are lost) keeps
 * a flat resident set: the pod's engine-hash map and the index are bounded, and nothing else grows with events.
 * Runs {@code kvidx.soak.seconds} (default 600) and prints the resident set every 10 s; the last minute's largest
 * sample must stay within 10 % (plus 16 MiB) of the largest sample of the second minute, once everything has
 * filled up.
 */
@Tag("slow")
class BoundedMemorySoakTest {
    @TempDir
    Path dir;

    @Test
    @Timeout(value = 30, unit = TimeUnit.MINUTES)
    void shouldKeepTheDaemonsResidentSetFlatUnderEndlessStoresWithoutRemovals() throws Exception {
        final long seconds = Long.getLong("kvidx.soak.seconds", 600);
        try (JavaVllmPublisherAccess publisher = JavaVllmPublisherAccess.create("kv@soak@m")) {
            final List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElse("java"),
                "-Xmx256m", "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
                "--enable-native-access=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), "io.kvidx.daemon.cli.KvidxCli", "daemon",
                "--dir", dir.toString(), "--cell", "soak", "--capacity", "200000", "--max-pods", "64",
                "--pod-max-blocks", "50000", "--pod-timeout-ms", "0",
                "--zmq", "soak@m=" + publisher.endpoint(), "--replay", "soak=" + publisher.replayEndpoint()));
            final Path log = dir.resolve("daemon.log");
            final Process daemon = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile())
                .start();
            try {
                final SplittableRandom random = new SplittableRandom(5);
                final long start = System.nanoTime();
                long nextSample = start;
                final List<Long> samples = new ArrayList<>();
                long batches = 0;
                while (System.nanoTime() - start < seconds * 1_000_000_000L) {
                    assertTrue(daemon.isAlive(), () -> "daemon exited: " + read(log));
                    publisher.publishNewBlocks(random, 16);
                    batches++;
                    if ((batches & 63) == 0) {
                        Thread.sleep(1);
                    }
                    if (System.nanoTime() >= nextSample) {
                        nextSample += 10_000_000_000L;
                        final long rss = rssKb(daemon.pid());
                        samples.add(rss);
                        System.out.printf("soak t=%ds rss=%,d KiB batches=%,d%n",
                            (System.nanoTime() - start) / 1_000_000_000L, rss, batches);
                    }
                }
                final int perMinute = 6;
                final long second = samples.subList(Math.min(perMinute, samples.size() - 1),
                    Math.min(2 * perMinute, samples.size())).stream().mapToLong(Long::longValue).max().orElse(0);
                final long last = samples.subList(Math.max(0, samples.size() - perMinute), samples.size()).stream()
                    .mapToLong(Long::longValue).max().orElse(0);
                System.out.printf("soak: %,d batches of 16 new blocks, rss second minute max %,d KiB, last minute max"
                    + " %,d KiB%n", batches, second, last);
                assertTrue(last <= second * 1.10 + 16 * 1024, "resident set grew from " + second + " to " + last
                    + " KiB");
            } finally {
                daemon.destroyForcibly();
                daemon.waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    private static long rssKb(final long pid) throws IOException {
        for (final String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", ""));
            }
        }
        throw new IOException("no VmRSS for " + pid);
    }

    private static String read(final Path log) {
        try {
            return Files.readString(log);
        } catch (final IOException ex) {
            return ex.toString();
        }
    }
}
