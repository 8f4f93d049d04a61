package io.kvidx.bench.trace;

import org.agrona.collections.LongHashSet;

import java.io.BufferedOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The throughput replay, worked out before it is timed: requests split at random (seeded) across the pods, each
 * pod's share served by its own {@link SimEngine}, and per request the event batch its engine publishes, encoded
 * for the transport ({@link BatchEncoder}), the router keys a router queries for it, and, when the batch stores a block no pod
 * stored before, that block's router key as a visibility probe (its appearance in the index can only come from
 * this batch). The split does not depend on timing, so every point of the rate sweep replays the same plan.
 *
 * <p><b>Note:</b> built by one thread, then read only.
 */
public final class TracePlan {
    private final int pods;
    private final int blockSize;
    private final long[] timestampMs;
    private final int[] pod;
    private final byte[][] payload;
    private final long[] keyOffset;
    private final long[] keys;
    private final long[] probeKey;
    private final long blocksQueried;
    private final long blocksStored;
    private final long blocksRemoved;
    private final long blocksReused;
    private final long payloadBytes;

    private TracePlan(final int pods, final int blockSize, final long[] timestampMs, final int[] pod,
        final byte[][] payload, final long[] keyOffset, final long[] keys, final long[] probeKey, final long queried,
        final long stored, final long removed, final long reused, final long bytes) {
        this.pods = pods;
        this.blockSize = blockSize;
        this.timestampMs = timestampMs;
        this.pod = pod;
        this.payload = payload;
        this.keyOffset = keyOffset;
        this.keys = keys;
        this.probeKey = probeKey;
        this.blocksQueried = queried;
        this.blocksStored = stored;
        this.blocksRemoved = removed;
        this.blocksReused = reused;
        this.payloadBytes = bytes;
    }

    /**
     * @param trace     requests sorted by timestamp.
     * @param pods      simulated engines.
     * @param blockSize engine block size in tokens.
     * @param budget    blocks per engine.
     * @param maxChain  most blocks per request (the index's maximum chain length).
     * @param seed      seed of the random split.
     * @param encoder   encodes each request's events for the transport.
     * @return the plan.
     */
    static TracePlan build(final List<TraceRequest> trace, final int pods, final int blockSize,
        final int budget, final int maxChain, final long seed, final BatchEncoder encoder) {
        final int maxBlocks = Math.min(budget, maxChain);
        final int n = trace.size();
        final SplittableRandom random = new SplittableRandom(seed);
        final SimEngine[] engines = new SimEngine[pods];
        final TraceBlocks blocks = new TraceBlocks(blockSize, maxBlocks);
        final LongHashSet everStored = new LongHashSet();
        final long[] ts = new long[n];
        final int[] podOf = new int[n];
        final byte[][] payloads = new byte[n][];
        final long[] offsets = new long[n + 1];
        long[] allKeys = new long[1 << 20];
        final long[] probes = new long[n];
        long stored = 0;
        long removed = 0;
        long reused = 0;
        long bytes = 0;
        long k = 0;
        for (int i = 0; i < n; i++) {
            final TraceRequest r = trace.get(i);
            final int p = random.nextInt(pods);
            if (engines[p] == null) {
                engines[p] = new SimEngine(budget, maxBlocks);
            }
            final int len = blocks.load(r);
            final SimEngine engine = engines[p];
            reused += engine.serve(blocks.engineHashes(), blocks.routerKeys(), len);
            stored += engine.storedCount();
            removed += engine.removedCount();
            payloads[i] = encoder.encode(blocks, engine, r.timestampMs() / 1e3, p);
            bytes += payloads[i] == null ? 0 : payloads[i].length;
            boolean fresh = false;
            for (int s = 0; s < engine.storedCount(); s++) {
                fresh = everStored.add(blocks.routerKeys()[engine.stored(s)]);
            }
            probes[i] = fresh ? blocks.routerKeys()[engine.stored(engine.storedCount() - 1)] : 0;
            if (k + len > allKeys.length) {
                allKeys = Arrays.copyOf(allKeys, (int) Math.max(allKeys.length * 2L, k + len));
            }
            System.arraycopy(blocks.routerKeys(), 0, allKeys, (int) k, len);
            offsets[i] = k;
            k += len;
            ts[i] = r.timestampMs();
            podOf[i] = p;
        }
        offsets[n] = k;
        return new TracePlan(pods, blockSize, ts, podOf, payloads, offsets, Arrays.copyOf(allKeys, (int) k), probes,
            k, stored, removed, reused, bytes);
    }

    /**
     * Writes what the router process needs: per request its offset in the trace, router keys and probe key.
     * Layout (big-endian): int n, long span ms; then per request: long offset ms, int length, long[length] keys,
     * long probe key (0 = none); then int m, long[m] end-marker keys.
     *
     * @param file    the file.
     * @param markers router keys of the end markers the driver sends after the last batch.
     * @throws IOException when it cannot be written.
     */
    public void writeQueries(final Path file, final long[] markers) throws IOException {
        try (DataOutputStream out = new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(file),
            1 << 16))) {
            out.writeInt(requests());
            out.writeLong(spanMs());
            for (int i = 0; i < requests(); i++) {
                out.writeLong(offsetMs(i));
                final int len = (int) (keyOffset[i + 1] - keyOffset[i]);
                out.writeInt(len);
                for (int j = 0; j < len; j++) {
                    out.writeLong(keys[(int) keyOffset[i] + j]);
                }
                out.writeLong(probeKey[i]);
            }
            out.writeInt(markers.length);
            for (final long m : markers) {
                out.writeLong(m);
            }
        }
    }

    /** @return requests in the plan. */
    public int requests() {
        return timestampMs.length;
    }

    /** @return the trace's span from first to last request, ms (at least 1). */
    public long spanMs() {
        return Math.max(1, timestampMs[timestampMs.length - 1] - timestampMs[0]);
    }

    /**
     * @param i request.
     * @return its offset from the trace's first request, ms.
     */
    public long offsetMs(final int i) {
        return timestampMs[i] - timestampMs[0];
    }

    /**
     * @param i request.
     * @return the pod it was sent to.
     */
    public int pod(final int i) {
        return pod[i];
    }

    /**
     * @param i request.
     * @return its engine's event batch, or null when it stored and evicted nothing.
     */
    public byte[] payload(final int i) {
        return payload[i];
    }

    /**
     * @param i request.
     * @return its probe key, or 0.
     */
    public long probeKey(final int i) {
        return probeKey[i];
    }

    /** @return simulated engines. */
    public int pods() {
        return pods;
    }

    /** @return engine block size. */
    public int blockSize() {
        return blockSize;
    }

    /** @return router keys queried over the replay (one prefix query per request). */
    public long blocksQueried() {
        return blocksQueried;
    }

    /** @return blocks the engines stored (BlockStored hashes). */
    public long blocksStored() {
        return blocksStored;
    }

    /** @return blocks the engines evicted (BlockRemoved hashes). */
    public long blocksRemoved() {
        return blocksRemoved;
    }

    /** @return blocks reused from the engines' caches under the random split. */
    public long blocksReused() {
        return blocksReused;
    }

    /** @return bytes of all event batches. */
    public long payloadBytes() {
        return payloadBytes;
    }

    /** @return block operations the replay offers: queried + stored + removed. */
    public long blockOps() {
        return blocksQueried + blocksStored + blocksRemoved;
    }
}
