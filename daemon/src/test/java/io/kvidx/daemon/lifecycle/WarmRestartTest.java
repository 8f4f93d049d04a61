package io.kvidx.daemon.lifecycle;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A pod known from its topic ({@code --zmq '*=...'}) across a clean daemon restart: the restarted daemon takes the
 * pod back from the index's pod table, model included, so that the chains it stores afterwards get the router
 * keys a router computes (the chain seed depends on the model).
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class WarmRestartTest {
    @Test
    void shouldKeyNewChainsWithThePodsModelAfterARestart() throws Exception {
        final Path work = ChildProcesses.shmDir("kvidx-warm");
        final Path dir = work.resolve("index");
        Process daemon = null;
        try (TestEngine engine = new TestEngine("warm-pod")) {
            final Path config = work.resolve("daemon.yaml");
            Files.writeString(config, "zmq:\n  - endpoint: " + engine.endpoint() + "\n    replay: "
                + engine.replayEndpoint() + "\n");
            final String[] args = {"daemon", "--config", config.toString(), "--dir", dir.toString(), "--capacity",
                "4096", "--pod-timeout-ms", "0", "--idle", "sleeping"};
            final TestEngine.Chain before = TestEngine.Chain.random(31, 12);
            final TestEngine.Chain after = TestEngine.Chain.random(32, 12);
            for (int run = 0; run < 2; run++) {
                final Path log = work.resolve("daemon-" + run + ".log");
                daemon = ChildProcesses.start(ChildProcesses.kvidx(args), log);
                final Process running = daemon;
                ChildProcesses.await("daemon ready", 30_000, () -> ChildProcesses.daemonReady(log)
                    || !running.isAlive());
                final TestEngine.Chain chain = run == 0 ? before : after;
                engine.store(chain, 0, chain.length());
                try (IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir)
                    .attachTimeoutMs(10_000))) {
                    final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                    while (TestEngine.depth(reader, engine.pod, chain) != chain.length()
                        && System.nanoTime() < deadline) {
                        engine.ping();
                        Thread.sleep(20);
                    }
                    final int depth = TestEngine.depth(reader, engine.pod, chain);
                    assertEquals(chain.length(), depth, (run == 0 ? "first run" : "after a restart") + ": the pod's "
                        + "chain is not under the router keys of its model (" + depth + " of " + chain.length()
                        + " blocks found)");
                    assertEquals(before.length(), TestEngine.depth(reader, engine.pod, before));
                }
                final int exit = ChildProcesses.stop(daemon);
                assertTrue(exit == 0 || exit == ChildProcesses.SIGTERM_EXIT, "daemon exit " + exit);
            }
        } finally {
            ChildProcesses.destroy(daemon);
            ChildProcesses.deleteTree(work);
        }
    }
}
