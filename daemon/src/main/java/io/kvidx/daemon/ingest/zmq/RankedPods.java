package io.kvidx.daemon.ingest.zmq;

import io.kvidx.client.index.DataParallelRanks;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.ingest.vllm.BatchRankReader;
import io.kvidx.daemon.writer.PodDirectory;
import org.agrona.collections.Long2LongHashMap;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.AtomicCounter;

/**
 * Makes the data-parallel rank part of a pod's identity: each (pod, rank) is its own pod, {@code <pod>#<r>} for
 * rank {@code r > 0} ({@link DataParallelRanks}), the plain pod for rank 0, nil or absent. The rank comes from the
 * batch itself ({@link BatchRankReader}): vLLM and SGLang engines with data parallelism run one engine, one KV
 * cache and one publisher per rank, and each stamps its rank in its batches.
 *
 * <p>Bad values, each counted and logged once per pod: an absurd rank (wrong type, negative, above
 * {@link DataParallelRanks#MAX_RANK}) applies the batch to the plain pod ({@link CounterType#DP_RANKS_INVALID}); a
 * rank whose pod id would exceed the pod table's 112 UTF-8 bytes, or that finds the pod directory full, drops the
 * batch ({@link CounterType#DP_RANK_PODS_REJECTED}) rather than mixing two caches in one pod.
 *
 * <p>Allocation-free once a (pod, rank) has been seen: the pod handles are cached in a primitive map keyed by the
 * base pod's handle and the rank. A cached rank pod whose handle is no longer current (it went down) is registered
 * again; entries of base pods that went down are never looked up again, so the map is cleared when it holds more
 * than {@value #BOUND_PER_POD} entries per pod the directory allows.
 *
 * <p><b>Note:</b> used by one transport thread.
 */
final class RankedPods {
    /** The batch is dropped: its rank's pod cannot be registered. */
    static final int REJECTED = -1;

    private static final long MISSING = Long.MIN_VALUE;
    /** Map entries allowed per pod of the directory's maximum before the map is cleared. */
    static final int BOUND_PER_POD = 4;

    private final PodDirectory directory;
    private final IngestErrors errors;
    private final AtomicCounter invalid;
    private final AtomicCounter rejected;
    private final BatchRankReader reader = new BatchRankReader();
    private final UnsafeBuffer payload = new UnsafeBuffer(new byte[0]);
    private final Long2LongHashMap pods = new Long2LongHashMap(MISSING);
    private final int bound;

    RankedPods(final PodDirectory directory, final IngestCounters counters, final IngestErrors errors) {
        this.directory = directory;
        this.bound = BOUND_PER_POD * directory.maxPods();
        this.errors = errors;
        this.invalid = counters.get(CounterType.DP_RANKS_INVALID);
        this.rejected = counters.get(CounterType.DP_RANK_PODS_REJECTED);
    }

    /**
     * @param basePod the pod handle the topic or the endpoint names (current).
     * @param batch   the batch's msgpack payload.
     * @return the pod handle of the batch's (pod, rank), or {@link #REJECTED}.
     */
    int podOf(final int basePod, final byte[] batch) {
        payload.wrap(batch);
        return podOf(basePod, payload, 0, batch.length);
    }

    /**
     * @param basePod the pod handle the topic or the endpoint names (current).
     * @param batch   holds the batch's msgpack payload.
     * @param offset  where it starts.
     * @param length  its length.
     * @return the pod handle of the batch's (pod, rank), or {@link #REJECTED}.
     */
    int podOf(final int basePod, final org.agrona.DirectBuffer batch, final int offset, final int length) {
        final int rank = reader.read(batch, offset, length);
        if (rank == BatchRankReader.INVALID_RANK) {
            invalid.increment();
            errors.report(CounterType.DP_RANKS_INVALID.typeId(), PodDirectory.number(basePod), () -> "pod "
                + directory.podId(basePod)
                + ": batch with a data-parallel rank that is not an integer in 0.." + DataParallelRanks.MAX_RANK
                + "; applied to the plain pod (rank 0)");
            return basePod;
        }
        if (rank <= 0) {
            return basePod;
        }
        final long key = ((long) basePod << 32) | rank;
        final long known = pods.get(key);
        if (known != MISSING && (known < 0 || directory.isCurrent((int) known))) {
            if (known < 0) {
                rejected.increment();
            }
            return (int) known;
        }
        if (known == MISSING && pods.size() >= bound) {
            pods.clear();
        }
        final int pod = register(basePod, rank);
        pods.put(key, pod);
        return pod;
    }

    private int register(final int basePod, final int rank) {
        final String base = directory.podId(basePod);
        final String id;
        try {
            id = DataParallelRanks.podId(base, rank);
        } catch (final IllegalArgumentException ex) {
            rejected.increment();
            errors.report(CounterType.DP_RANK_PODS_REJECTED.typeId(), PodDirectory.number(basePod), () -> "pod "
                + base + ": " + ex.getMessage() + "; the batches of this rank are dropped (shorten the pod id)");
            return REJECTED;
        }
        final int pod = directory.podNumber(id, directory.model(basePod));
        if (pod < 0) {
            rejected.increment();
            errors.report(CounterType.DP_RANK_PODS_REJECTED.typeId(), PodDirectory.number(basePod), () -> "pod "
                + base + ": too many pods to add data-parallel rank pod " + id + "; its batches are dropped");
            return REJECTED;
        }
        return pod;
    }
}
