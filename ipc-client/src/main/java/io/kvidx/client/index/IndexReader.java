package io.kvidx.client.index;

import io.kvidx.ffm.Layouts;
import io.kvidx.ffm.MappedRegion;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static io.kvidx.client.index.IndexDescriptor.ALIVE_BITMAP_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.POD_TABLE_VERSION_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.SHARD_HEADER_LENGTH;

/**
 * Read-only view of a cell's block index, mapped from the daemon's file; answers prefix queries.
 *
 * <p>Attach with {@link #attach(IndexReaderContext)}: it waits for the file and its layout version, rejects another
 * major version, a short file and a stale writer heartbeat, each with its own {@link IndexException}.
 *
 * <p>Queries are lock-free and allocation-free: each lookup reads the shard's seqlock version, probes, then checks
 * the version again and retries when the writer moved entries meanwhile (see docs/index-layout.md). The mapping
 * is read-only: this class cannot write to the file.
 *
 * <p>No read waits without a bound. A lookup that finds its shard locked (or changed under it) retries for the
 * context's read bound ({@link IndexReaderContext#readBoundNs(long)}, default 50 us; counted from the first clock
 * reading, so 64 spins more), then throws {@link IndexBusyException} (counted by {@link #busyCount()}), or
 * {@link StaleWriterException} when the writer's heartbeat has stopped; {@link #pod(int)} is bounded the same way.
 * The clock is read only while waiting, once every 64 spins: an uncontended lookup never reads it. The search is
 * {@code ChainSearch} over single-key lookups ({@code KeyLookup}), the attach {@code IndexFileAttach}, the bound
 * {@code ReadWait}.
 *
 * <p>Each query records in its {@link PrefixResult} the pod table version it saw
 * ({@link PrefixResult#podTableVersion()}), loaded after every alive word and entry it read: a caller that maps
 * slots to pod ids compares it with the version its mapping was read at (see {@link #podTableVersion()}).
 *
 * <p><b>Note:</b> thread safe; any number of threads may query one reader, each with its own
 * {@link PrefixResult}. The daemon's IndexWriter is the only writer of the file.
 */
public final class IndexReader implements AutoCloseable {
    private static final VarHandle LONG = Layouts.LONG;
    private static final VarHandle INT = Layouts.INT;

    private final MappedRegion region;
    private final MemorySegment segment;
    private final int shardCount;
    private final int slotsPerShard;
    private final int maxPods;
    private final int maxChain;
    private final int blockSize;
    private final int keyScheme;
    private final int layoutVersion;
    private final long epoch;
    private final long writerPid;
    private final long shardHeadersOffset;
    private final ReadWait wait;
    private final KeyLookup entries;
    private final ChainSearch search;

    /** Built by {@link IndexFileAttach} on a mapping it has validated. */
    IndexReader(final MappedRegion region, final IndexReaderContext context) {
        this.region = region;
        this.segment = region.segment();
        this.layoutVersion = segment.get(ValueLayout.JAVA_INT, IndexDescriptor.LAYOUT_VERSION_OFFSET);
        this.shardCount = segment.get(ValueLayout.JAVA_INT, IndexDescriptor.SHARD_COUNT_OFFSET);
        this.slotsPerShard = segment.get(ValueLayout.JAVA_INT, IndexDescriptor.SLOTS_PER_SHARD_OFFSET);
        this.maxPods = segment.get(ValueLayout.JAVA_INT, IndexDescriptor.MAX_PODS_OFFSET);
        this.maxChain = segment.get(ValueLayout.JAVA_INT, IndexDescriptor.MAX_CHAIN_OFFSET);
        this.blockSize = segment.get(ValueLayout.JAVA_INT, IndexDescriptor.BLOCK_SIZE_OFFSET);
        this.keyScheme = segment.get(ValueLayout.JAVA_INT, IndexDescriptor.KEY_SCHEME_OFFSET);
        this.epoch = segment.get(ValueLayout.JAVA_LONG, IndexDescriptor.EPOCH_OFFSET);
        this.writerPid = segment.get(ValueLayout.JAVA_LONG, IndexDescriptor.WRITER_PID_OFFSET);
        this.shardHeadersOffset = IndexDescriptor.shardHeadersOffset(maxPods);
        this.wait = new ReadWait(segment, region.path(), context.heartbeatTimeoutMs(), context.readBoundNs());
        this.entries = new KeyLookup(segment, wait, shardCount, slotsPerShard, maxPods);
        this.search = new ChainSearch(segment, entries, maxPods, maxChain, context.prefetch());
    }

    /**
     * Maps a cell's index read-only, waiting up to the context's attach timeout for it to appear.
     *
     * @param context where and how to attach.
     * @return the reader.
     * @throws IndexNotFoundException   when no ready file appears in time.
     * @throws IndexFormatException     when the file is not a kvidx index.
     * @throws IndexVersionException    when its layout major version differs.
     * @throws IndexTruncatedException  when the file is shorter than its header says.
     * @throws StaleWriterException     when the writer's heartbeat is older than the heartbeat timeout.
     * @throws IndexAccessDeniedException when this process may not read the file (or search its directory).
     */
    public static IndexReader attach(final IndexReaderContext context) {
        return IndexFileAttach.attach(context);
    }

    /**
     * Answers how many leading blocks of a chain each candidate pod holds, by binary search over the chain:
     * probe the middle key, split the surviving pods into those that hold it and those that do not, and recurse
     * into both halves. Costs O(K log N) lookups for K distinct depths among the pods.
     *
     * <p>For a pod whose blocks form a prefix of the chain the answer is exact. For a pod holding a non-contiguous
     * subset, the depth d returned is a drop-off point: the pod holds block d-1 (or d = 0) and not block d (or
     * d = N); use {@link #queryExact} for the longest contiguous prefix.
     *
     * @param keys       the chain's block keys; keys[i] identifies the prefix of blocks 0..i.
     * @param length     chain length N, in [0, maxChainLength()].
     * @param candidates pods to consider, or null for every pod; dead pods are always excluded.
     * @param result     caller-owned result, overwritten.
     * @return the maximum depth over all pods.
     * @throws ChainTooLongException when length exceeds the index's maximum chain length.
     * @throws IndexBusyException    when a shard stays locked longer than the read bound.
     * @throws StaleWriterException  when a shard stays locked by a writer whose heartbeat has stopped.
     */
    public int query(final long[] keys, final int length, final PodSet candidates, final PrefixResult result) {
        return search.query(keys, length, candidates, result);
    }

    /**
     * Like {@link #query} but walks the chain from its first block and stops at the first block each pod lacks:
     * the exact longest contiguous prefix per pod, at the cost of up to N lookups.
     *
     * @param keys       the chain's block keys.
     * @param length     chain length N, in [0, maxChainLength()].
     * @param candidates pods to consider, or null for every pod; dead pods are always excluded.
     * @param result     caller-owned result, overwritten.
     * @return the maximum depth over all pods.
     * @throws IndexBusyException   when a shard stays locked longer than the read bound.
     * @throws StaleWriterException when a shard stays locked by a writer whose heartbeat has stopped.
     */
    public int queryExact(final long[] keys, final int length, final PodSet candidates, final PrefixResult result) {
        return search.queryExact(keys, length, candidates, result);
    }

    /**
     * Reads the pod bitmap of one key into {@code out[0..3]} (all zero when the key is absent).
     *
     * @param key block key.
     * @param out at least 4 words, written.
     * @return true when the key is in the index.
     * @throws IndexBusyException   when the key's shard stays locked longer than the read bound.
     * @throws StaleWriterException when the shard stays locked by a writer whose heartbeat has stopped.
     */
    public boolean lookup(final long key, final long[] out) {
        return entries.lookup(key, out);
    }

    /**
     * @param slot pod slot.
     * @return true when the pod's alive bit is set.
     */
    public boolean isAlive(final int slot) {
        checkSlot(slot);
        final long word = (long) LONG.getAcquire(segment, (long) ALIVE_BITMAP_OFFSET + (slot >>> 6) * 8L);
        return (word & (1L << slot)) != 0;
    }

    /**
     * @param index word 0..3.
     * @return that word of the alive bitmap.
     */
    public long aliveWord(final int index) {
        return (long) LONG.getAcquire(segment, (long) ALIVE_BITMAP_OFFSET + index * 8L);
    }

    /**
     * Reads a pod table entry consistently (retrying while the writer changes it, up to the read bound). Allocates:
     * not for the hot path.
     *
     * <p>To map the slots of query answers to pods, read the entries after {@link #podTableVersion()} and compare
     * that version with each answer's {@link PrefixResult#podTableVersion()}: when they differ, a slot may have
     * changed hands since, and the entries must be read again.
     *
     * @param slot pod slot.
     * @return the pod's entry.
     * @throws IndexBusyException   when the entry stays locked longer than the read bound.
     * @throws StaleWriterException when it stays locked by a writer whose heartbeat has stopped.
     */
    public PodInfo pod(final int slot) {
        checkSlot(slot);
        final long base = IndexDescriptor.podEntryOffset(slot);
        // The version, not the one seen at attach: a restarted writer may have upgraded the file in place.
        final boolean hasFlags = (int) INT.getAcquire(segment, (long) IndexDescriptor.LAYOUT_VERSION_OFFSET)
            >= IndexDescriptor.FLAGS_MIN_VERSION;
        final int maxModel = hasFlags ? IndexDescriptor.POD_MODEL_MAX_LENGTH
            : IndexDescriptor.POD_MODEL_MAX_LENGTH_BEFORE_FLAGS;
        int spins = 0;
        long waitStartNs = 0;
        while (true) {
            final long seq = Seqlock.beginRead(segment, base + IndexDescriptor.POD_SEQ_OFFSET);
            if (!Seqlock.isWriting(seq)) {
                final int generation = segment.get(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_GENERATION_OFFSET);
                final int state = segment.get(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_STATE_OFFSET);
                final int idLength = Math.clamp(segment.get(ValueLayout.JAVA_INT,
                    base + IndexDescriptor.POD_ID_LENGTH_OFFSET), 0, IndexDescriptor.POD_ID_MAX_LENGTH);
                final int modelLength = Math.clamp(segment.get(ValueLayout.JAVA_INT,
                    base + IndexDescriptor.POD_MODEL_LENGTH_OFFSET), 0, maxModel);
                final int flags = hasFlags ? segment.get(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_FLAGS_OFFSET)
                    : 0;
                final byte[] id = new byte[idLength];
                final byte[] model = new byte[modelLength];
                MemorySegment.copy(segment, ValueLayout.JAVA_BYTE, base + IndexDescriptor.POD_ID_OFFSET, id, 0,
                    idLength);
                MemorySegment.copy(segment, ValueLayout.JAVA_BYTE, base + IndexDescriptor.POD_MODEL_OFFSET, model, 0,
                    modelLength);
                if (ProtocolFaults.OMIT_POD_SEQ_CHECK
                    || Seqlock.validate(segment, base + IndexDescriptor.POD_SEQ_OFFSET, seq)) {
                    return new PodInfo(slot, generation, state, new String(id, StandardCharsets.UTF_8),
                        new String(model, StandardCharsets.UTF_8),
                        (flags & IndexDescriptor.POD_FLAG_SUSPECT) != 0);
                }
            }
            Thread.onSpinWait();
            if ((++spins & (ReadWait.SPINS_PER_CLOCK_CHECK - 1)) == 0) {
                waitStartNs = wait.check(waitStartNs, spins, -1, slot);
            }
        }
    }

    /**
     * The pod table version (layout 3.1): the writer increments it after every change of a pod table entry, and
     * before it sets the alive bit of a slot it has just given to a new pod. Load it after the alive words (or the
     * query answers) it is to vouch for: an alive bit seen before this load that belongs to a new pod comes with a
     * version at least as new as that pod's. One acquire load; allocation-free.
     *
     * @return the current pod table version.
     */
    public long podTableVersion() {
        return (long) LONG.getAcquire(segment, (long) POD_TABLE_VERSION_OFFSET);
    }

    /**
     * @return reads (lookups, queries, {@link #pod}) that gave up with {@link IndexBusyException} since attach.
     */
    public long busyCount() {
        return wait.busyCount();
    }

    /**
     * @return entries currently in the index (sum over shards; racy but never torn per shard).
     */
    public long entryCount() {
        long n = 0;
        for (int i = 0; i < shardCount; i++) {
            n += shardEntryCount(i);
        }
        return n;
    }

    /**
     * @param shard a shard, 0 .. {@link #shardCount()} - 1.
     * @return entries the shard holds now (one acquire load).
     */
    public int shardEntryCount(final int shard) {
        java.util.Objects.checkIndex(shard, shardCount);
        return (int) Layouts.INT.getAcquire(segment, shardHeadersOffset + (long) shard * SHARD_HEADER_LENGTH
            + IndexDescriptor.SHARD_ENTRY_COUNT_OFFSET);
    }

    /**
     * @return entries evicted so far because a shard was full.
     */
    public long evictions() {
        long n = 0;
        for (int i = 0; i < shardCount; i++) {
            n += (long) LONG.getAcquire(segment, shardHeadersOffset + (long) i * SHARD_HEADER_LENGTH
                + IndexDescriptor.SHARD_EVICTIONS_OFFSET);
        }
        return n;
    }

    /**
     * Milliseconds since the writer's last heartbeat: this host's {@link System#currentTimeMillis()} minus the epoch
     * milliseconds the writer last stored (both processes read the same host clock). A live writer beats every
     * heartbeat interval (default 500 ms), so a healthy index shows 0 to about that; the value grows without bound
     * once the daemon is gone or hung, and is negative only when the clock stepped back. One acquire load and one
     * clock read; allocation-free.
     *
     * @return milliseconds since the writer's last heartbeat.
     */
    public long heartbeatAgeMs() {
        return wait.heartbeatAgeMs();
    }

    /**
     * Whether the writer is stale: its heartbeat is older than the context's heartbeat timeout. The cheap way to
     * tell that answers have stopped being maintained: one acquire load and one {@link System#currentTimeMillis()}
     * (some 20 ns), allocation-free, so a router may ask before every decision.
     *
     * @return true when the heartbeat is older than the heartbeat timeout (never when the timeout is 0).
     */
    public boolean isWriterStale() {
        return wait.isWriterStale();
    }

    /**
     * @return true when the file at this reader's path is no longer the one mapped (the daemon re-created it);
     * reattach to follow it. Reads the file system: not for the hot path.
     */
    public boolean isReplaced() {
        final java.nio.ByteBuffer header = java.nio.ByteBuffer.allocate(IndexDescriptor.EPOCH_OFFSET + 8)
            .order(java.nio.ByteOrder.LITTLE_ENDIAN);
        try (java.nio.channels.FileChannel channel = java.nio.channels.FileChannel.open(region.path(),
            java.nio.file.StandardOpenOption.READ)) {
            while (header.hasRemaining()) {
                if (channel.read(header, header.position()) < 0) {
                    return true;
                }
            }
        } catch (final IOException ex) {
            return true;
        }
        return header.getLong(IndexDescriptor.MAGIC_OFFSET) != IndexDescriptor.MAGIC
            || header.getLong(IndexDescriptor.EPOCH_OFFSET) != epoch;
    }

    private void checkSlot(final int slot) {
        if (slot < 0 || slot >= maxPods) {
            throw new IllegalArgumentException("pod slot must be in [0, " + maxPods + "): " + slot);
        }
    }

    /**
     * @return shards in the index.
     */
    public int shardCount() {
        return shardCount;
    }

    /**
     * @return entries per shard.
     */
    public int slotsPerShard() {
        return slotsPerShard;
    }

    /**
     * @return pod slots in the cell.
     */
    public int maxPods() {
        return maxPods;
    }

    /**
     * @return the longest chain a query accepts.
     */
    public int maxChainLength() {
        return maxChain;
    }

    /**
     * @return the router block size the daemon keys blocks with.
     */
    public int blockSize() {
        return blockSize;
    }

    /**
     * @return the key scheme, e.g. {@link IndexDescriptor#KEY_SCHEME_ROUTER_V1}.
     */
    public int keyScheme() {
        return keyScheme;
    }

    /**
     * @return the packed layout version of the file.
     */
    public int layoutVersion() {
        return layoutVersion;
    }

    /**
     * @return the epoch of this file (distinct per creation).
     */
    public long epoch() {
        return epoch;
    }

    /**
     * @return the writer's process id.
     */
    public long writerPid() {
        return writerPid;
    }

    /**
     * @return the mapped file.
     */
    public Path path() {
        return region.path();
    }

    /**
     * @return true once {@link #close()} unmapped the index.
     */
    public boolean isClosed() {
        return !segment.scope().isAlive();
    }

    /**
     * Unmaps the index. Any use after close, or racing with it, fails with {@link IllegalStateException} (never
     * touches unmapped memory): the caller must make sure no other thread still reads through this reader, as
     * {@code IndexReaderPodIndex} does.
     */
    @Override
    public void close() {
        region.close();
    }

    /**
     * A pod table entry.
     *
     * @param slot       pod slot.
     * @param generation times the slot was assigned.
     * @param state      one of the {@code IndexDescriptor.POD_STATE_*} values.
     * @param podId      pod id.
     * @param model      model name.
     * @param suspect    the pod is suspect (layout 3.2 flag; false in older files): the daemon could not keep its
     *                   state complete (an event gap its engine could not replay) and has not resynced it since, so
     *                   its depths may be wrong either way. A router may prefer other pods.
     */
    public record PodInfo(int slot, int generation, int state, String podId, String model, boolean suspect) {
        /**
         * An entry without flags.
         *
         * @param slot       pod slot.
         * @param generation times the slot was assigned.
         * @param state      one of the {@code IndexDescriptor.POD_STATE_*} values.
         * @param podId      pod id.
         * @param model      model name.
         */
        public PodInfo(final int slot, final int generation, final int state, final String podId, final String model) {
            this(slot, generation, state, podId, model, false);
        }
    }
}
