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
 * <p>Scaled ({@code --scale K}): K copies of the trace in disjoint hash spaces and pods. Copy {@code c} maps each
 * hash id to {@code id + c * 2^40} ({@link #copyHashId}), so its tokens, engine hashes and router keys are its own;
 * its requests go to pods {@code c * podsPerCopy ..}, split exactly as copy 0's (copy c's pod p is pod
 * {@code c * podsPerCopy + p}), so each copy's engines do the same work. Requests of all copies are interleaved by
 * timestamp: request {@code m} of the plan is request {@code m / K} of the trace in copy {@code m % K}.
 *
 * <p><b>Note:</b> built by one thread, then read only.
 */
public final class TracePlan {
    /** Copy c adds c times this to every hash id: the trace's ids must stay below it when scaled. */
    public static final long COPY_ID_STRIDE = 1L << 40;
    /** Slack over the measured size of one copy when checking that K copies fit the heap. */
    static final double HEAP_MARGIN = 1.25;

    private final int podsPerCopy;
    private final int copies;
    private final int blockSize;
    private final long[] timestampMs;
    private final int[] split;
    private final byte[][][] payload;
    private final long[][] keyOffset;
    private final long[][] keys;
    private final long[][] probeKey;
    private final int[][] storedPer;
    private final int[][] removedPer;
    private final long blocksQueried;
    private final long blocksStored;
    private final long blocksRemoved;
    private final long blocksReused;
    private final long payloadBytes;

    private TracePlan(final int podsPerCopy, final int blockSize, final long[] timestampMs, final int[] split,
        final Copy[] copies) {
        this.podsPerCopy = podsPerCopy;
        this.copies = copies.length;
        this.blockSize = blockSize;
        this.timestampMs = timestampMs;
        this.split = split;
        this.payload = new byte[copies.length][][];
        this.keyOffset = new long[copies.length][];
        this.keys = new long[copies.length][];
        this.probeKey = new long[copies.length][];
        this.storedPer = new int[copies.length][];
        this.removedPer = new int[copies.length][];
        long queried = 0;
        long stored = 0;
        long removed = 0;
        long reused = 0;
        long bytes = 0;
        for (int c = 0; c < copies.length; c++) {
            payload[c] = copies[c].payloads;
            keyOffset[c] = copies[c].offsets;
            keys[c] = copies[c].keys;
            probeKey[c] = copies[c].probes;
            storedPer[c] = copies[c].storedPer;
            removedPer[c] = copies[c].removedPer;
            queried += copies[c].keys.length;
            stored += copies[c].stored;
            removed += copies[c].removed;
            reused += copies[c].reused;
            bytes += copies[c].bytes;
        }
        this.blocksQueried = queried;
        this.blocksStored = stored;
        this.blocksRemoved = removed;
        this.blocksReused = reused;
        this.payloadBytes = bytes;
    }

    /** One copy of the trace, simulated and encoded. */
    private record Copy(byte[][] payloads, long[] offsets, long[] keys, long[] probes, int[] storedPer,
        int[] removedPer, long stored, long removed, long reused, long bytes) {
        /** @return bytes of heap it holds, about (payloads with their array headers, keys, offsets, probes). */
        long heapBytes() {
            return bytes + 24L * payloads.length + 8L * (keys.length + offsets.length + probes.length)
                + 4L * (storedPer.length + removedPer.length);
        }
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
        return build(trace, pods, blockSize, budget, maxChain, seed, encoder, 1);
    }

    /**
     * The plan of vLLM msgpack batches over ZeroMQ ({@link VllmEventEncoder}), one copy, chains at most the index's
     * default maximum chain length: what a bench outside this package replays through {@link ZmqTransport}.
     *
     * @param trace     requests sorted by timestamp.
     * @param pods      simulated engines.
     * @param blockSize engine block size in tokens.
     * @param budget    blocks per engine.
     * @param seed      seed of the random split.
     * @return the plan.
     */
    public static TracePlan vllm(final List<TraceRequest> trace, final int pods, final int blockSize,
        final int budget, final long seed) {
        return build(trace, pods, blockSize, budget,
            io.kvidx.daemon.index.IndexWriterContext.Configuration.MAX_CHAIN_LENGTH_DEFAULT, seed,
            new VllmEventEncoder());
    }

    /**
     * Builds copy 0, then, when K copies would not fit the JVM's heap (estimated from copy 0), fails before building
     * the others.
     *
     * @param trace     requests sorted by timestamp.
     * @param pods      simulated engines of one copy.
     * @param blockSize engine block size in tokens.
     * @param budget    blocks per engine.
     * @param maxChain  most blocks per request (the index's maximum chain length).
     * @param seed      seed of the random split.
     * @param encoder   encodes each request's events for the transport.
     * @param copies    copies of the trace (K of {@code --scale K}), in disjoint hash spaces and pods.
     * @return the plan.
     * @throws IllegalArgumentException when the trace's hash ids are too large to scale, or the copies would not
     *                                  fit the heap.
     */
    static TracePlan build(final List<TraceRequest> trace, final int pods, final int blockSize,
        final int budget, final int maxChain, final long seed, final BatchEncoder encoder, final int copies) {
        if (copies < 1) {
            throw new IllegalArgumentException("--scale must be >= 1: " + copies);
        }
        final int n = trace.size();
        final long[] ts = new long[n];
        final int[] split = split(n, pods, seed);
        for (int i = 0; i < n; i++) {
            final TraceRequest r = trace.get(i);
            ts[i] = r.timestampMs();
            if (copies > 1) {
                for (final long id : r.hashIds()) {
                    if (id < 0 || id >= COPY_ID_STRIDE) {
                        throw new IllegalArgumentException("--scale needs hash ids in 0..2^40: request " + i
                            + " has " + id);
                    }
                }
            }
        }
        final Copy[] built = new Copy[copies];
        int c = 0;
        try {
            built[0] = copy(trace, 0, split, pods, blockSize, budget, maxChain, encoder);
            if (copies > 1) {
                checkHeap(built[0].heapBytes(), copies);
            }
            for (c = 1; c < copies; c++) {
                built[c] = copy(trace, c, split, pods, blockSize, budget, maxChain, encoder);
            }
        } catch (final OutOfMemoryError ex) {
            // Copy 0 alone did not fit, or the estimate fell short: what was built is garbage once this unwinds.
            Arrays.fill(built, null);
            throw new IllegalArgumentException(String.format("the replay plan (%d request%s x %d cop%s) does not fit "
                    + "the JVM's %,d MB max heap (it ran out building copy %d); lower --scale or --requests, or give "
                    + "the bench JVM more heap (KVIDX_JAVA_OPTS=-Xmx...)", n, n == 1 ? "" : "s", copies,
                copies == 1 ? "y" : "ies", Runtime.getRuntime().maxMemory() >> 20, c), ex);
        }
        return new TracePlan(pods, blockSize, ts, split, built);
    }

    /**
     * Fails when {@code copies - 1} more copies of {@code oneCopy} bytes (with {@link #HEAP_MARGIN}) would not fit
     * the heap left (max heap - used, after a collection).
     */
    private static void checkHeap(final long oneCopy, final int copies) {
        final Runtime rt = Runtime.getRuntime();
        System.gc();
        final long used = rt.totalMemory() - rt.freeMemory();
        final long free = rt.maxMemory() - used;
        final long need = (long) ((copies - 1) * (double) oneCopy * HEAP_MARGIN);
        if (need > free) {
            throw new IllegalArgumentException(String.format("--scale %d does not fit the heap: one copy of the plan "
                    + "holds about %,d MB (batches, router keys), so %d more need about %,d MB, and the JVM has "
                    + "%,d MB free of its %,d MB max heap; lower --scale or --requests, or give the bench JVM more "
                    + "heap (KVIDX_JAVA_OPTS=-Xmx...)", copies, oneCopy >> 20, copies - 1, need >> 20, free >> 20,
                rt.maxMemory() >> 20));
        }
    }

    /**
     * @param id   a trace hash id (below {@link #COPY_ID_STRIDE} when scaled).
     * @param copy copy number.
     * @return the id in that copy's hash space (copy 0: the id itself).
     */
    static long copyHashId(final long id, final int copy) {
        return id + copy * COPY_ID_STRIDE;
    }

    /**
     * The random split of a trace's requests across the pods: the one {@code bench trace} replays and
     * {@code TraceWorkload} serves.
     *
     * @param requests requests, in time order.
     * @param pods     pods.
     * @param seed     seed of the split.
     * @return the pod of each request.
     */
    public static int[] split(final int requests, final int pods, final long seed) {
        final SplittableRandom random = new SplittableRandom(seed);
        final int[] split = new int[requests];
        for (int i = 0; i < requests; i++) {
            split[i] = random.nextInt(pods);
        }
        return split;
    }

    /** Simulates and encodes one copy of the trace on its own engines. */
    private static Copy copy(final List<TraceRequest> trace, final int copy, final int[] split, final int pods,
        final int blockSize, final int budget, final int maxChain, final BatchEncoder encoder) {
        final int maxBlocks = Math.min(budget, maxChain);
        final int n = trace.size();
        final SimEngine[] engines = new SimEngine[pods];
        final TraceBlocks blocks = new TraceBlocks(blockSize, maxBlocks);
        final LongHashSet everStored = new LongHashSet();
        final byte[][] payloads = new byte[n][];
        final long[] offsets = new long[n + 1];
        long[] allKeys = new long[1 << 20];
        final long[] probes = new long[n];
        final int[] storedPer = new int[n];
        final int[] removedPer = new int[n];
        long stored = 0;
        long removed = 0;
        long reused = 0;
        long bytes = 0;
        long k = 0;
        for (int i = 0; i < n; i++) {
            TraceRequest r = trace.get(i);
            if (copy > 0) {
                final long[] ids = r.hashIds().clone();
                for (int j = 0; j < ids.length; j++) {
                    ids[j] = copyHashId(ids[j], copy);
                }
                r = new TraceRequest(r.timestampMs(), r.inputLength(), r.outputLength(), ids);
            }
            final int p = split[i];
            if (engines[p] == null) {
                engines[p] = new SimEngine(budget, maxBlocks);
            }
            final int len = blocks.load(r);
            final SimEngine engine = engines[p];
            reused += engine.serve(blocks.engineHashes(), blocks.routerKeys(), len);
            stored += engine.storedCount();
            removed += engine.removedCount();
            storedPer[i] = engine.storedCount();
            removedPer[i] = engine.removedCount();
            payloads[i] = encoder.encode(blocks, engine, r.timestampMs() / 1e3, copy * pods + p);
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
        }
        offsets[n] = k;
        return new Copy(payloads, offsets, Arrays.copyOf(allKeys, (int) k), probes, storedPer, removedPer, stored,
            removed, reused, bytes);
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
                final long[] k = routerKeys(i);
                out.writeInt(k.length);
                for (final long key : k) {
                    out.writeLong(key);
                }
                out.writeLong(probeKey(i));
            }
            out.writeInt(markers.length);
            for (final long m : markers) {
                out.writeLong(m);
            }
        }
    }

    /** @return requests in the plan (all copies). */
    public int requests() {
        return timestampMs.length * copies;
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
        return timestampMs[i / copies] - timestampMs[0];
    }

    /**
     * @param i request.
     * @return the pod it was sent to.
     */
    public int pod(final int i) {
        return i % copies * podsPerCopy + split[i / copies];
    }

    /**
     * @param i request.
     * @return its engine's event batch, or null when it stored and evicted nothing.
     */
    public byte[] payload(final int i) {
        return payload[i % copies][i / copies];
    }

    /**
     * @param i request.
     * @return the router keys a router queries for it (a copy).
     */
    public long[] routerKeys(final int i) {
        final int c = i % copies;
        final int r = i / copies;
        return Arrays.copyOfRange(keys[c], (int) keyOffset[c][r], (int) keyOffset[c][r + 1]);
    }

    /**
     * @param i request.
     * @return its probe key, or 0.
     */
    public long probeKey(final int i) {
        return probeKey[i % copies][i / copies];
    }

    /**
     * What a run of the plan's requests carries.
     *
     * @param stored  blocks stored (BlockStored hashes).
     * @param removed blocks evicted (BlockRemoved hashes).
     * @param batches requests with a batch (non-null {@link #payload}).
     */
    public record Counts(long stored, long removed, long batches) {
    }

    /**
     * @param from first request.
     * @param to   one past the last request.
     * @return the blocks and batches of requests {@code [from, to)}.
     */
    public Counts counts(final int from, final int to) {
        long stored = 0;
        long removed = 0;
        long batches = 0;
        for (int i = from; i < to; i++) {
            stored += storedPer[i % copies][i / copies];
            removed += removedPer[i % copies][i / copies];
            batches += payload(i) == null ? 0 : 1;
        }
        return new Counts(stored, removed, batches);
    }

    /** @return simulated engines of all copies. */
    public int pods() {
        return podsPerCopy * copies;
    }

    /** @return simulated engines of one copy. */
    public int podsPerCopy() {
        return podsPerCopy;
    }

    /** @return copies of the trace ({@code --scale}). */
    public int copies() {
        return copies;
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
