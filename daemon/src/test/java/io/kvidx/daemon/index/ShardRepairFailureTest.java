package io.kvidx.daemon.index;

import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.agent.AgentErrorHandler;
import org.agrona.concurrent.AgentTerminationException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A writer that fails in the middle of a change and then fails to repair the shard stops the daemon with a clear
 * error (issue 26, "a writer that fails mid-change either repairs its shard or stops the daemon"): the index throws
 * {@link ShardRepairException}, the writer agent turns it into an {@link AgentTerminationException}, and the runner's
 * {@link AgentErrorHandler} tells the daemon, whose command then exits non-zero. Any other escaping exception is only
 * counted and logged.
 */
@Timeout(30)
class ShardRepairFailureTest {
    @TempDir
    Path dir;

    @Test
    void shouldStopTheDaemonWhenARepairFailsToo() {
        final long[] keys = TestIndexes.chain(11, 16);
        try (IndexWriter writer = IndexWriter.create(new IndexWriterContext().dir(dir).cell("repair").shardCount(4)
            .slotsPerShard(64).maxChainLength(64)); IngestCounters counters = IngestCounters.local()) {
            final int a = writer.registerPod("pod-a", "m");
            writer.store(a, keys, 0, 16);
            writer.deleteFault(() -> {
                throw new IllegalStateException("injected: the change failed");
            });
            writer.repairFault(() -> {
                throw new IllegalStateException("injected: the repair failed");
            });
            final ShardRepairException ex = assertThrows(ShardRepairException.class,
                () -> writer.remove(a, keys, 8, 1));
            assertTrue(ex.getMessage().contains("left locked"), ex.getMessage());

            final List<String> fatal = new ArrayList<>();
            final AgentErrorHandler handler = AgentErrorHandler.of("writer-0", new IngestErrors(),
                counters.get(CounterType.AGENT_ERRORS), fatal::add);
            handler.onError(new IllegalStateException("an ordinary failure: counted, the daemon goes on"));
            assertTrue(fatal.isEmpty(), fatal.toString());
            handler.onError(new AgentTerminationException("writer-0 stopped: " + ex.getMessage(), ex));
            assertEquals(1, fatal.size());
            assertTrue(fatal.get(0).startsWith("writer-0 stopped: shard "), fatal.get(0));
            assertEquals(2, counters.value(CounterType.AGENT_ERRORS));
        }
    }
}
