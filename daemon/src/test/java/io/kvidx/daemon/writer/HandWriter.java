package io.kvidx.daemon.writer;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.daemon.ingest.EngineDecoders;
import org.agrona.concurrent.NoOpIdleStrategy;
import org.agrona.concurrent.SystemEpochClock;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A real index (mapped files in a directory), a reader attached to it and one writer agent run by hand (no thread):
 * {@link #apply} hands a vLLM batch to the agent and runs it until the batch is applied.
 */
final class HandWriter implements AutoCloseable {
    final String model;
    final IndexWriter index;
    final IndexReader reader;
    final IngestCounters counters = IngestCounters.local();
    final IngestErrors errors = new IngestErrors();
    final PodDirectory directory = new PodDirectory(16);
    private final WriterPool pool;
    private final WriterAgent agent;

    HandWriter(final Path dir, final int blockSize, final String model) {
        this.model = model;
        index = IndexWriter.create(new IndexWriterContext().dir(dir).shardCount(16).capacityBlocks(8192)
            .blockSize(blockSize).deleteOnClose(true));
        reader = IndexReader.attach(new IndexReaderContext().dir(dir));
        pool = new WriterPool(1, 1 << 20, index, directory, counters, errors, SystemEpochClock.INSTANCE, 0,
            NoOpIdleStrategy::new, NoOpIdleStrategy::new, EngineDecoders.standard());
        agent = pool.agents()[0];
    }

    int pod(final String podId) {
        return directory.podNumber(podId, model);
    }

    void apply(final int pod, final byte[] batch) {
        apply(pod, new UnsafeBuffer(batch), batch.length);
    }

    /** Allocation-free when the caller reuses its buffer. */
    void apply(final int pod, final UnsafeBuffer batch, final int length) {
        assertTrue(pool.offer(pod, WriterMessages.VLLM_BATCH, batch, 0, length));
        while (!pool.isIdle()) {
            agent.doWork();
        }
    }

    /**
     * @return the longest prefix of {@code keys[0 .. n)} the pod holds (0 when it is not registered).
     */
    int depth(final String podId, final long[] keys, final int n) {
        final PrefixResult result = new PrefixResult();
        reader.queryExact(keys, n, null, result);
        for (int slot = 0; slot < reader.maxPods(); slot++) {
            if (reader.isAlive(slot) && podId.equals(reader.pod(slot).podId())) {
                return result.depthOf(slot);
            }
        }
        return 0;
    }

    long count(final CounterType type) {
        return counters.value(type);
    }

    @Override
    public void close() {
        pool.close();
        reader.close();
        index.close();
        counters.close();
    }
}
