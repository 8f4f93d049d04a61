package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexStat;
import io.kvidx.ffm.MappedRegion;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The router's read path runs in a JVM with only the ipc-client and native classes and no JVM flags.
 */
@Timeout(60)
class ReadPathIsolationTest {
    @TempDir
    Path dir;

    @Test
    void shouldReadTheIndexWithOnlyTheJdkAndNoFlags() throws Exception {
        try (IndexWriter writer = IndexWriter.create(TestIndexes.small(dir))) {
            final int slot = writer.registerPod("pod-7", "qwen");
            writer.store(slot, TestIndexes.chain(1, 10), 0, 10);
            final String classPath = location(IndexReader.class) + File.pathSeparator + location(MappedRegion.class);
            final Process child = new ProcessBuilder(List.of(
                ProcessHandle.current().info().command().orElse("java"),
                "-cp", classPath, IndexStat.class.getName(), dir.toString(), "test"))
                .redirectErrorStream(true).start();
            final String out = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(child.waitFor(30, TimeUnit.SECONDS));
            assertEquals(0, child.exitValue(), out);
            assertTrue(out.contains("entries 10 evictions 0"), out);
            assertTrue(out.contains("pod 0 pod-7 model=qwen generation=1 alive"), out);
            assertFalse(out.contains("WARNING"), "no JVM warnings on the read path:\n" + out);
        }
    }

    private static String location(final Class<?> type) throws Exception {
        return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    }
}
