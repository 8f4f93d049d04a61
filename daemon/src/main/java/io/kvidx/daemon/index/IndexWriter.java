package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexConfiguration;
import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexException;
import io.kvidx.client.index.PodCapacityExceededException;
import io.kvidx.ffm.Layouts;
import io.kvidx.ffm.MappedRegion;
import io.kvidx.ffm.PosixNative;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.SecureRandom;
import java.util.HashMap;
import java.util.Map;

import static io.kvidx.client.index.IndexDescriptor.ALIVE_BITMAP_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_KEY_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_LENGTH_SHIFT;
import static io.kvidx.client.index.IndexDescriptor.ENTRY_PODS_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.PODS_INLINE_MAX;
import static io.kvidx.client.index.IndexDescriptor.PODS_OVERFLOW_FLAG;
import static io.kvidx.client.index.IndexDescriptor.POD_STATE_ALIVE;
import static io.kvidx.client.index.IndexDescriptor.POD_STATE_DRAINING;
import static io.kvidx.client.index.IndexDescriptor.POD_STATE_FREE;
import static io.kvidx.client.index.IndexDescriptor.SHARD_ENTRY_COUNT_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.SHARD_EVICTIONS_OFFSET;
import static io.kvidx.client.index.IndexDescriptor.SHARD_HEADER_LENGTH;
import static io.kvidx.client.index.IndexDescriptor.SHARD_VERSION_OFFSET;

/**
 * Creates a cell's index file and is the only code that writes it.
 *
 * <p>Publication protocol (readers: {@link io.kvidx.client.index.IndexReader}, spec: docs/index-layout.md):
 * <ul>
 *   <li>the file is built under a temporary name, the layout version is stored last with a release store, then
 *   the file is renamed into place, so a reader never maps a half-initialised index;</li>
 *   <li>inserting a key into an empty entry writes its bitmap and stamp, then the key with a release store;</li>
 *   <li>setting or clearing one pod's bit in an existing entry is a single 64-bit store: readers see the old or
 *   the new word, and each bit belongs to one pod;</li>
 *   <li>removing an entry or moving entries (backward-shift deletion, eviction) happens between an odd and the
 *   next even value of the shard's seqlock version, so a reader that overlapped it retries.</li>
 * </ul>
 *
 * <p><b>Note:</b> thread safe. Writer threads serialise per shard on a writer-private lock; readers never take
 * it. Calls that concern one pod ({@link #store}, {@link #remove}, {@link #clearPod}, {@link #podDown}) must come
 * from one thread (the pod's writer agent): the daemon's sticky pod assignment guarantees it. Every call is
 * idempotent.
 */
public final class IndexWriter implements AutoCloseable {
    private static final VarHandle LONG = Layouts.LONG;
    private static final VarHandle PLAIN = ValueLayout.JAVA_LONG_UNALIGNED.varHandle();
    private static final VarHandle INT = Layouts.INT;
    private static final VarHandle STATE = MethodHandles.arrayElementVarHandle(int[].class);
    private static final int LOCK_STRIDE = 16;
    private static final int EVICTION_SAMPLES = 8;

    private final Context context;
    private final MappedRegion region;
    private final MemorySegment segment;
    private final int shardBits;
    private final int slotBits;
    private final int slotMask;
    private final int maxPods;
    private final int maxCountPerShard;
    private final long shardHeadersOffset;
    private final long tablesOffset;
    private final long shardTableLength;
    private final long overflowOffset;
    private final int overflowPerShard;
    /** Pods words are plain 64-bit bitmaps (a cell of at most 64 pods): no inline lists, no overflow bitmaps. */
    private final boolean direct;
    private final int slotsPerShard;
    private final boolean prefetch;
    /** Writer-private store stamps (eviction clock), one per table slot; moved with entries. */
    private final long[] stamps;
    /** Writer-private free lists of overflow bitmap indexes, one stack per shard. */
    private final int[] overflowFree;
    private final int[] overflowTop;
    private final long epoch;
    private final java.util.concurrent.atomic.AtomicLongArray shardLocks;
    /** Per-shard writer state, guarded by the shard lock: [stamp clock, clock hand] at index shard*LOCK_STRIDE. */
    private final long[] shardState;
    private final int[] podStates;
    private final Map<String, Integer> slotByPodId = new HashMap<>();
    private final String[] podIds;
    private final int[] generations;
    /** Pods downed since the current sweep pass began: swept by the next pass. */
    private final long[] sweepPending = new long[IndexDescriptor.POD_WORDS];
    private final long[] sweepCurrent = new long[IndexDescriptor.POD_WORDS];
    private int sweepShard = -1;
    private volatile boolean closed;

    private IndexWriter(final Context context, final MappedRegion region, final long epoch) {
        this.context = context;
        this.region = region;
        this.segment = region.segment();
        this.epoch = epoch;
        this.shardBits = Integer.numberOfTrailingZeros(context.shardCount);
        this.slotBits = Integer.numberOfTrailingZeros(context.slotsPerShard);
        this.slotMask = context.slotsPerShard - 1;
        this.maxPods = context.maxPods;
        this.maxCountPerShard = Math.max(1, Math.min(context.slotsPerShard - 1,
            (int) (context.slotsPerShard * context.maxLoadFactor)));
        this.shardHeadersOffset = IndexDescriptor.shardHeadersOffset(maxPods);
        this.tablesOffset = IndexDescriptor.tablesOffset(maxPods, context.shardCount);
        this.shardTableLength = (long) context.slotsPerShard * IndexDescriptor.ENTRY_LENGTH;
        this.slotsPerShard = context.slotsPerShard;
        this.prefetch = context.prefetch;
        this.overflowOffset = IndexDescriptor.overflowOffset(maxPods, context.shardCount, context.slotsPerShard);
        this.overflowPerShard = IndexDescriptor.overflowPerShard(maxPods, context.slotsPerShard);
        this.direct = IndexDescriptor.isDirect(maxPods);
        this.stamps = new long[context.shardCount * context.slotsPerShard];
        this.overflowFree = new int[context.shardCount * overflowPerShard];
        this.overflowTop = new int[context.shardCount];
        for (int shard = 0; shard < context.shardCount; shard++) {
            for (int i = 0; i < overflowPerShard; i++) {
                overflowFree[shard * overflowPerShard + i] = overflowPerShard - 1 - i;
            }
            overflowTop[shard] = overflowPerShard;
        }
        this.shardLocks = new java.util.concurrent.atomic.AtomicLongArray(context.shardCount * LOCK_STRIDE);
        this.shardState = new long[context.shardCount * LOCK_STRIDE];
        this.podStates = new int[maxPods];
        this.podIds = new String[maxPods];
        this.generations = new int[maxPods];
    }

    /**
     * Creates a new index file for the context's cell, replacing any previous one atomically (readers of the old
     * file see its heartbeat stop and reattach to the new epoch).
     *
     * @param context geometry and location; concluded here.
     * @return the writer.
     */
    public static IndexWriter create(final Context context) {
        context.conclude();
        final Path file = context.indexFile();
        final long length = IndexDescriptor.fileLength(context.maxPods, context.shardCount, context.slotsPerShard);
        final long pid = ProcessHandle.current().pid();
        final Path temp = file.resolveSibling(IndexConfiguration.INDEX_FILE_NAME + "." + pid + ".tmp");
        final MappedRegion region = MappedRegion.create(temp, length);
        final long epoch = new SecureRandom().nextLong() & Long.MAX_VALUE;
        try {
            final MemorySegment s = region.segment();
            if (context.adviseRandom) {
                PosixNative.madvise(s, PosixNative.MADV_RANDOM);
            }
            if (context.hugePages) {
                PosixNative.madvise(s, PosixNative.MADV_HUGEPAGE);
            }
            s.set(ValueLayout.JAVA_LONG, IndexDescriptor.MAGIC_OFFSET, IndexDescriptor.MAGIC);
            s.set(ValueLayout.JAVA_INT, IndexDescriptor.HEADER_LENGTH_OFFSET, IndexDescriptor.HEADER_LENGTH);
            s.set(ValueLayout.JAVA_INT, IndexDescriptor.SHARD_COUNT_OFFSET, context.shardCount);
            s.set(ValueLayout.JAVA_INT, IndexDescriptor.SLOTS_PER_SHARD_OFFSET, context.slotsPerShard);
            s.set(ValueLayout.JAVA_INT, IndexDescriptor.MAX_PODS_OFFSET, context.maxPods);
            s.set(ValueLayout.JAVA_INT, IndexDescriptor.MAX_CHAIN_OFFSET, context.maxChainLength);
            s.set(ValueLayout.JAVA_INT, IndexDescriptor.BLOCK_SIZE_OFFSET, context.blockSize);
            s.set(ValueLayout.JAVA_INT, IndexDescriptor.KEY_SCHEME_OFFSET, context.keyScheme);
            s.set(ValueLayout.JAVA_LONG, IndexDescriptor.EPOCH_OFFSET, epoch);
            s.set(ValueLayout.JAVA_LONG, IndexDescriptor.WRITER_PID_OFFSET, pid);
            s.set(ValueLayout.JAVA_LONG, IndexDescriptor.FILE_LENGTH_OFFSET, length);
            LONG.setRelease(s, (long) IndexDescriptor.HEARTBEAT_OFFSET, System.currentTimeMillis());
            INT.setRelease(s, (long) IndexDescriptor.LAYOUT_VERSION_OFFSET, IndexDescriptor.LAYOUT_VERSION);
            Files.move(temp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (final IOException ex) {
            region.close();
            throw new UncheckedIOException("cannot publish index file " + file, ex);
        } catch (final RuntimeException ex) {
            region.close();
            throw ex;
        }
        return new IndexWriter(context, region, epoch);
    }

    // ---------------------------------------------------------------------------------------------------------
    // Pods
    // ---------------------------------------------------------------------------------------------------------

    /**
     * Registers a pod, or returns its slot when it is already alive (idempotent). A pod whose old slot is still
     * being swept gets a new slot.
     *
     * @param podId pod id, 1..112 UTF-8 bytes.
     * @param model model name, 0..120 UTF-8 bytes.
     * @return the pod's slot.
     * @throws PodCapacityExceededException when every slot is alive or still draining.
     */
    public synchronized int registerPod(final String podId, final String model) {
        final byte[] id = podId == null ? new byte[0] : podId.getBytes(StandardCharsets.UTF_8);
        final byte[] modelBytes = model == null ? new byte[0] : model.getBytes(StandardCharsets.UTF_8);
        if (id.length == 0 || id.length > IndexDescriptor.POD_ID_MAX_LENGTH) {
            throw new IllegalArgumentException("pod id must be 1.." + IndexDescriptor.POD_ID_MAX_LENGTH
                + " UTF-8 bytes: '" + podId + "'");
        }
        if (modelBytes.length > IndexDescriptor.POD_MODEL_MAX_LENGTH) {
            throw new IllegalArgumentException("model name must be at most " + IndexDescriptor.POD_MODEL_MAX_LENGTH
                + " UTF-8 bytes: '" + model + "'");
        }
        final Integer existing = slotByPodId.get(podId);
        if (existing != null) {
            return existing;
        }
        int slot = -1;
        for (int i = 0; i < maxPods; i++) {
            if ((int) STATE.getVolatile(podStates, i) == POD_STATE_FREE) {
                slot = i;
                break;
            }
        }
        if (slot < 0) {
            throw new PodCapacityExceededException("cannot register pod '" + podId + "': all " + maxPods
                + " pod slots of cell '" + context.cell + "' are alive or still being swept");
        }
        generations[slot]++;
        final long base = IndexDescriptor.podEntryOffset(slot);
        final long seq = (long) LONG.get(segment, base + IndexDescriptor.POD_SEQ_OFFSET);
        LONG.setOpaque(segment, base + IndexDescriptor.POD_SEQ_OFFSET, seq + 1);
        VarHandle.storeStoreFence();
        segment.set(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_GENERATION_OFFSET, generations[slot]);
        segment.set(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_STATE_OFFSET, POD_STATE_ALIVE);
        segment.set(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_ID_LENGTH_OFFSET, id.length);
        segment.set(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_MODEL_LENGTH_OFFSET, modelBytes.length);
        MemorySegment.copy(id, 0, segment, ValueLayout.JAVA_BYTE, base + IndexDescriptor.POD_ID_OFFSET, id.length);
        MemorySegment.copy(modelBytes, 0, segment, ValueLayout.JAVA_BYTE, base + IndexDescriptor.POD_MODEL_OFFSET,
            modelBytes.length);
        LONG.setRelease(segment, base + IndexDescriptor.POD_SEQ_OFFSET, seq + 2);
        podIds[slot] = podId;
        slotByPodId.put(podId, slot);
        STATE.setVolatile(podStates, slot, POD_STATE_ALIVE);
        // Layout 3.1: the pod table version moves before the new pod's alive bit is set (docs/index-layout.md).
        LONG.getAndAdd(segment, (long) IndexDescriptor.POD_TABLE_VERSION_OFFSET, 1L);
        LONG.getAndBitwiseOr(segment, aliveWordOffset(slot), 1L << slot);
        return slot;
    }

    /**
     * @param podId a pod id.
     * @return its slot while it is alive, else -1.
     */
    public synchronized int slotOf(final String podId) {
        final Integer slot = slotByPodId.get(podId);
        return slot == null ? -1 : slot;
    }

    /**
     * @param slot pod slot.
     * @return true when the pod in that slot is alive.
     */
    public boolean isAlive(final int slot) {
        checkSlot(slot);
        return (int) STATE.getVolatile(podStates, slot) == POD_STATE_ALIVE;
    }

    /**
     * @param slot pod slot.
     * @return the state of the slot, one of {@code IndexDescriptor.POD_STATE_*}.
     */
    public int podState(final int slot) {
        checkSlot(slot);
        return (int) STATE.getVolatile(podStates, slot);
    }

    /**
     * Phase 1 of pod removal: clears the pod's alive bit at once (it drops out of every answer) and queues its
     * bits for the background sweep ({@link #sweepStep()}), which frees the slot when done. No-op for a pod that
     * is not alive.
     *
     * @param slot pod slot.
     * @return true when the pod was alive.
     */
    public synchronized boolean podDown(final int slot) {
        checkSlot(slot);
        if ((int) STATE.getVolatile(podStates, slot) != POD_STATE_ALIVE) {
            return false;
        }
        LONG.getAndBitwiseAnd(segment, aliveWordOffset(slot), ~(1L << slot));
        STATE.setVolatile(podStates, slot, POD_STATE_DRAINING);
        writePodState(slot, POD_STATE_DRAINING);
        LONG.getAndAdd(segment, (long) IndexDescriptor.POD_TABLE_VERSION_OFFSET, 1L);
        slotByPodId.remove(podIds[slot]);
        sweepPending[slot >>> 6] |= 1L << slot;
        return true;
    }

    /**
     * Phase 2 of pod removal, bounded: sweeps one shard for the pods being drained, clearing their bits and
     * freeing entries no pod holds; after the last shard of a pass, frees their slots. Called by the
     * {@link IndexMaintenanceAgent}.
     *
     * @return work done (1 when a shard was swept, else 0).
     */
    public synchronized int sweepStep() {
        if (sweepShard < 0) {
            if (!hasPendingSweep()) {
                return 0;
            }
            System.arraycopy(sweepPending, 0, sweepCurrent, 0, sweepPending.length);
            java.util.Arrays.fill(sweepPending, 0L);
            sweepShard = 0;
        }
        sweepShard(sweepShard, sweepCurrent[0], sweepCurrent[1], sweepCurrent[2], sweepCurrent[3]);
        if (++sweepShard == context.shardCount) {
            sweepShard = -1;
            for (int slot = 0; slot < maxPods; slot++) {
                if ((sweepCurrent[slot >>> 6] & (1L << slot)) != 0) {
                    writePodState(slot, POD_STATE_FREE);
                    LONG.getAndAdd(segment, (long) IndexDescriptor.POD_TABLE_VERSION_OFFSET, 1L);
                    podIds[slot] = null;
                    STATE.setVolatile(podStates, slot, POD_STATE_FREE);
                }
            }
        }
        return 1;
    }

    /**
     * @return true while some pod's bits are still being swept.
     */
    public synchronized boolean isSweeping() {
        return sweepShard >= 0 || hasPendingSweep();
    }

    private boolean hasPendingSweep() {
        return (sweepPending[0] | sweepPending[1] | sweepPending[2] | sweepPending[3]) != 0;
    }

    /**
     * Removes every block of a pod that stays alive (vLLM's AllBlocksCleared). Sweeps all shards synchronously
     * so that the pod's later stores cannot be wiped by a sweep still in flight. No-op for a pod not alive.
     *
     * @param slot pod slot.
     */
    public void clearPod(final int slot) {
        checkSlot(slot);
        if (!isAlive(slot)) {
            return;
        }
        final long bit = 1L << slot;
        final int word = slot >>> 6;
        for (int shard = 0; shard < context.shardCount; shard++) {
            sweepShard(shard, word == 0 ? bit : 0, word == 1 ? bit : 0, word == 2 ? bit : 0, word == 3 ? bit : 0);
        }
    }

    private void writePodState(final int slot, final int state) {
        final long base = IndexDescriptor.podEntryOffset(slot);
        final long seq = (long) LONG.get(segment, base + IndexDescriptor.POD_SEQ_OFFSET);
        LONG.setOpaque(segment, base + IndexDescriptor.POD_SEQ_OFFSET, seq + 1);
        VarHandle.storeStoreFence();
        segment.set(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_STATE_OFFSET, state);
        LONG.setRelease(segment, base + IndexDescriptor.POD_SEQ_OFFSET, seq + 2);
    }

    // ---------------------------------------------------------------------------------------------------------
    // Blocks
    // ---------------------------------------------------------------------------------------------------------

    /**
     * Records that a pod holds the given blocks. Storing a block the pod already holds is a no-op; a full shard
     * evicts its least recently stored entry (sampled) and counts it.
     *
     * @param slot   an alive pod's slot.
     * @param keys   block keys.
     * @param offset first key.
     * @param length number of keys.
     * @return keys that were new for this pod.
     * @throws IllegalStateException when the pod is not alive.
     */
    public int store(final int slot, final long[] keys, final int offset, final int length) {
        checkAlive(slot);
        java.util.Objects.checkFromIndexSize(offset, length, keys.length);
        if (prefetch && length > 1) {
            prefetch(keys, offset, length);
        }
        int added = 0;
        for (int i = offset, end = offset + length; i < end; i++) {
            final long k = IndexDescriptor.storedKey(keys[i]);
            final long h = IndexDescriptor.spread(k);
            final int shard = (int) (h >>> (64 - shardBits));
            lock(shard);
            try {
                if ((int) STATE.getVolatile(podStates, slot) != POD_STATE_ALIVE) {
                    break;
                }
                added += storeLocked(shard, k, IndexDescriptor.homeSlot(h, shardBits, slotBits), slot);
            } finally {
                unlock(shard);
            }
        }
        return added;
    }

    /**
     * Records that a pod no longer holds the given blocks; entries no pod holds any more are freed. Removing a
     * block the pod does not hold is a no-op.
     *
     * @param slot   a pod slot (alive or not: removing is always safe).
     * @param keys   block keys.
     * @param offset first key.
     * @param length number of keys.
     * @return keys the pod held and no longer holds.
     */
    public int remove(final int slot, final long[] keys, final int offset, final int length) {
        checkSlot(slot);
        java.util.Objects.checkFromIndexSize(offset, length, keys.length);
        if (prefetch && length > 1) {
            prefetch(keys, offset, length);
        }
        int removed = 0;
        for (int i = offset, end = offset + length; i < end; i++) {
            final long k = IndexDescriptor.storedKey(keys[i]);
            final long h = IndexDescriptor.spread(k);
            final int shard = (int) (h >>> (64 - shardBits));
            lock(shard);
            try {
                removed += removeLocked(shard, k, IndexDescriptor.homeSlot(h, shardBits, slotBits), slot);
            } finally {
                unlock(shard);
            }
        }
        return removed;
    }

    /**
     * Loads the home entry and the eviction stamp of every key of a batch before storing any: independent loads in
     * a tight loop, so their cache misses overlap instead of being paid one store at a time.
     */
    private void prefetch(final long[] keys, final int offset, final int length) {
        long sink = 0;
        for (int i = offset, end = offset + length; i < end; i++) {
            final long h = IndexDescriptor.spread(IndexDescriptor.storedKey(keys[i]));
            final int index = (int) IndexDescriptor.homeIndex(h, shardBits, slotBits);
            sink += (long) PLAIN.get(segment, tablesOffset + ((long) index << ENTRY_LENGTH_SHIFT)) + stamps[index];
        }
        // Consume the loads so the JIT keeps them, without a store every call: several writer threads share this
        // object, and writing one field on each batch would bounce its cache line between them.
        if (sink == PREFETCH_NEVER) {
            prefetchSink = sink;
        }
    }

    /** A sum the prefetch loads practically never produce; only then is it stored. */
    private static final long PREFETCH_NEVER = 0x6b76_6964_7850_6643L;
    /** Makes the prefetch loads observable to the JIT. */
    @SuppressWarnings("unused")
    private long prefetchSink;

    private int storeLocked(final int shard, final long k, final int home, final int slot) {
        final long table = tablesOffset + shard * shardTableLength;
        final int stateBase = shard * LOCK_STRIDE;
        final int stampBase = shard * slotsPerShard;
        while (true) {
            int idx = home;
            boolean restart = false;
            while (!restart) {
                final long e = table + ((long) idx << ENTRY_LENGTH_SHIFT);
                final long ek = (long) LONG.get(segment, e + ENTRY_KEY_OFFSET);
                if (ek == k) {
                    stamps[stampBase + idx] = ++shardState[stateBase];
                    final long pods = (long) LONG.get(segment, e + ENTRY_PODS_OFFSET);
                    if (direct) {
                        final long bit = 1L << slot;
                        if ((pods & bit) != 0) {
                            return 0;
                        }
                        LONG.setRelease(segment, e + ENTRY_PODS_OFFSET, pods | bit);
                        return 1;
                    }
                    if (pods < 0) {
                        final long word = overflowEntry(shard, (int) pods) + (slot >>> 6) * 8L;
                        final long old = (long) LONG.get(segment, word);
                        final long bit = 1L << slot;
                        if ((old & bit) != 0) {
                            return 0;
                        }
                        LONG.setOpaque(segment, word, old | bit);
                        return 1;
                    }
                    if (inlineIndexOf(pods, slot) >= 0) {
                        return 0;
                    }
                    if (IndexDescriptor.inlineCount(pods) < PODS_INLINE_MAX) {
                        LONG.setRelease(segment, e + ENTRY_PODS_OFFSET, inlineAdd(pods, slot));
                        return 1;
                    }
                    final int overflow = allocOverflow(shard);
                    if (overflow < 0) {
                        evictOverflow(shard, table);
                        restart = true;
                        continue;
                    }
                    // Fill the bitmap first, then publish the overflow index in one release store.
                    final long o = overflowEntry(shard, overflow);
                    for (int w = 0; w < IndexDescriptor.POD_WORDS; w++) {
                        LONG.setOpaque(segment, o + w * 8L, 0L);
                    }
                    orBit(o, slot);
                    for (int i = 0; i < PODS_INLINE_MAX; i++) {
                        orBit(o, IndexDescriptor.inlineSlot(pods, i));
                    }
                    LONG.setRelease(segment, e + ENTRY_PODS_OFFSET, PODS_OVERFLOW_FLAG | overflow);
                    return 1;
                }
                if (ek == 0) {
                    final long countOffset = shardHeader(shard) + SHARD_ENTRY_COUNT_OFFSET;
                    final int count = (int) INT.get(segment, countOffset);
                    if (count >= maxCountPerShard) {
                        evict(shard, table);
                        restart = true;
                        continue;
                    }
                    // Empty entries have a zero pods word: write this pod's bit or list, then publish the key.
                    LONG.setOpaque(segment, e + ENTRY_PODS_OFFSET, direct ? 1L << slot : inlineAdd(0L, slot));
                    stamps[stampBase + idx] = ++shardState[stateBase];
                    LONG.setRelease(segment, e + ENTRY_KEY_OFFSET, k);
                    INT.setRelease(segment, countOffset, count + 1);
                    return 1;
                }
                idx = (idx + 1) & slotMask;
            }
        }
    }

    private int removeLocked(final int shard, final long k, final int home, final int slot) {
        final long table = tablesOffset + shard * shardTableLength;
        final int idx = find(table, k, home);
        if (idx < 0) {
            return 0;
        }
        final long e = table + ((long) idx << ENTRY_LENGTH_SHIFT);
        final long pods = (long) LONG.get(segment, e + ENTRY_PODS_OFFSET);
        if (direct) {
            final long bit = 1L << slot;
            if ((pods & bit) == 0) {
                return 0;
            }
            if (pods == bit) {
                delete(shard, table, idx);
            } else {
                LONG.setRelease(segment, e + ENTRY_PODS_OFFSET, pods & ~bit);
            }
            return 1;
        }
        if (pods < 0) {
            final long o = overflowEntry(shard, (int) pods);
            final long word = o + (slot >>> 6) * 8L;
            final long old = (long) LONG.get(segment, word);
            final long bit = 1L << slot;
            if ((old & bit) == 0) {
                return 0;
            }
            LONG.setOpaque(segment, word, old & ~bit);
            if (isEmptyBitmap(o)) {
                delete(shard, table, idx);
            }
            return 1;
        }
        final int at = inlineIndexOf(pods, slot);
        if (at < 0) {
            return 0;
        }
        if (IndexDescriptor.inlineCount(pods) == 1) {
            delete(shard, table, idx);
        } else {
            LONG.setRelease(segment, e + ENTRY_PODS_OFFSET, inlineRemoveAt(pods, at));
        }
        return 1;
    }

    private int find(final long table, final long k, final int home) {
        int idx = home;
        for (int n = 0; n <= slotMask; n++) {
            final long ek = (long) LONG.get(segment, table + ((long) idx << ENTRY_LENGTH_SHIFT) + ENTRY_KEY_OFFSET);
            if (ek == k) {
                return idx;
            }
            if (ek == 0) {
                return -1;
            }
            idx = (idx + 1) & slotMask;
        }
        return -1;
    }

    static int inlineIndexOf(final long pods, final int slot) {
        for (int i = 0, count = IndexDescriptor.inlineCount(pods); i < count; i++) {
            if (IndexDescriptor.inlineSlot(pods, i) == slot) {
                return i;
            }
        }
        return -1;
    }

    static long inlineAdd(final long pods, final int slot) {
        final int count = IndexDescriptor.inlineCount(pods);
        return (pods & 0x00FF_FFFF_FFFF_FFFFL) | ((long) slot << (count << 3)) | ((long) (count + 1) << 56);
    }

    static long inlineRemoveAt(final long pods, final int index) {
        final int last = IndexDescriptor.inlineCount(pods) - 1;
        final long lastSlot = IndexDescriptor.inlineSlot(pods, last);
        long word = pods & ~(0xFFL << (last << 3));
        if (index != last) {
            word = (word & ~(0xFFL << (index << 3))) | (lastSlot << (index << 3));
        }
        return (word & 0x00FF_FFFF_FFFF_FFFFL) | ((long) last << 56);
    }

    private void orBit(final long overflow, final int slot) {
        final long word = overflow + (slot >>> 6) * 8L;
        LONG.setOpaque(segment, word, (long) LONG.get(segment, word) | (1L << slot));
    }

    private boolean isEmptyBitmap(final long o) {
        return ((long) LONG.get(segment, o) | (long) LONG.get(segment, o + 8)
            | (long) LONG.get(segment, o + 16) | (long) LONG.get(segment, o + 24)) == 0;
    }

    private long shardHeader(final int shard) {
        return shardHeadersOffset + (long) shard * SHARD_HEADER_LENGTH;
    }

    private long overflowEntry(final int shard, final int index) {
        return overflowOffset + ((long) shard * overflowPerShard + (index & (overflowPerShard - 1)))
            * IndexDescriptor.OVERFLOW_LENGTH;
    }

    private int allocOverflow(final int shard) {
        final int top = overflowTop[shard];
        if (top == 0) {
            return -1;
        }
        overflowTop[shard] = top - 1;
        final long inUse = shardHeader(shard) + IndexDescriptor.SHARD_OVERFLOW_IN_USE_OFFSET;
        INT.setRelease(segment, inUse, (int) INT.get(segment, inUse) + 1);
        return overflowFree[shard * overflowPerShard + top - 1];
    }

    private void freeOverflow(final int shard, final int index) {
        overflowFree[shard * overflowPerShard + overflowTop[shard]++] = index;
        final long inUse = shardHeader(shard) + IndexDescriptor.SHARD_OVERFLOW_IN_USE_OFFSET;
        INT.setRelease(segment, inUse, (int) INT.get(segment, inUse) - 1);
    }

    private void evict(final int shard, final long table) {
        evictOldest(shard, table, false);
    }

    private void evictOverflow(final int shard, final long table) {
        if (!evictOldest(shard, table, true)) {
            throw new IllegalStateException("shard " + shard + ": overflow pool exhausted but no entry uses it");
        }
    }

    /**
     * Sampled LRU: among the next few occupied entries after the shard's clock hand (only overflow entries when
     * {@code overflowOnly}), deletes the one stored least recently.
     */
    private boolean evictOldest(final int shard, final long table, final boolean overflowOnly) {
        final int stateBase = shard * LOCK_STRIDE;
        final int stampBase = shard * slotsPerShard;
        int hand = (int) shardState[stateBase + 1];
        int victim = -1;
        long oldest = Long.MAX_VALUE;
        int seen = 0;
        for (int n = 0; n <= slotMask && seen < EVICTION_SAMPLES; n++) {
            final long e = table + ((long) hand << ENTRY_LENGTH_SHIFT);
            if ((long) LONG.get(segment, e + ENTRY_KEY_OFFSET) != 0
                && (!overflowOnly || (long) LONG.get(segment, e + ENTRY_PODS_OFFSET) < 0)) {
                seen++;
                if (stamps[stampBase + hand] < oldest) {
                    oldest = stamps[stampBase + hand];
                    victim = hand;
                }
            }
            hand = (hand + 1) & slotMask;
        }
        shardState[stateBase + 1] = hand;
        if (victim < 0) {
            return false;
        }
        delete(shard, table, victim);
        final long evictionsOffset = shardHeader(shard) + SHARD_EVICTIONS_OFFSET;
        LONG.setRelease(segment, evictionsOffset, (long) LONG.get(segment, evictionsOffset) + 1);
        return true;
    }

    /**
     * Backward-shift deletion of entry {@code idx}, inside an odd shard version so that readers retry.
     */
    private void delete(final int shard, final long table, final int idx) {
        final long header = shardHeader(shard);
        final int stampBase = shard * slotsPerShard;
        final long version = (long) LONG.get(segment, header + SHARD_VERSION_OFFSET);
        LONG.setOpaque(segment, header + SHARD_VERSION_OFFSET, version + 1);
        VarHandle.storeStoreFence();
        final long freedPods = (long) LONG.get(segment, table + ((long) idx << ENTRY_LENGTH_SHIFT) + ENTRY_PODS_OFFSET);
        int hole = idx;
        int j = idx;
        while (true) {
            j = (j + 1) & slotMask;
            final long ej = table + ((long) j << ENTRY_LENGTH_SHIFT);
            final long kj = (long) LONG.get(segment, ej + ENTRY_KEY_OFFSET);
            if (kj == 0) {
                break;
            }
            final int home = IndexDescriptor.homeSlot(IndexDescriptor.spread(kj), shardBits, slotBits);
            final boolean stays = hole < j ? (home > hole && home <= j) : (home > hole || home <= j);
            if (!stays) {
                final long eh = table + ((long) hole << ENTRY_LENGTH_SHIFT);
                LONG.setOpaque(segment, eh + ENTRY_PODS_OFFSET, (long) LONG.get(segment, ej + ENTRY_PODS_OFFSET));
                LONG.setOpaque(segment, eh + ENTRY_KEY_OFFSET, kj);
                stamps[stampBase + hole] = stamps[stampBase + j];
                hole = j;
            }
        }
        final long eh = table + ((long) hole << ENTRY_LENGTH_SHIFT);
        LONG.setOpaque(segment, eh + ENTRY_KEY_OFFSET, 0L);
        LONG.setOpaque(segment, eh + ENTRY_PODS_OFFSET, 0L);
        stamps[stampBase + hole] = 0;
        if (!direct && freedPods < 0) {
            freeOverflow(shard, (int) freedPods & (overflowPerShard - 1));
        }
        final long countOffset = header + SHARD_ENTRY_COUNT_OFFSET;
        INT.setOpaque(segment, countOffset, (int) INT.get(segment, countOffset) - 1);
        LONG.setRelease(segment, header + SHARD_VERSION_OFFSET, version + 2);
    }

    private void sweepShard(final int shard, final long m0, final long m1, final long m2, final long m3) {
        if ((m0 | m1 | m2 | m3) == 0) {
            return;
        }
        lock(shard);
        try {
            final long table = tablesOffset + shard * shardTableLength;
            for (int idx = 0; idx <= slotMask; idx++) {
                while (true) {
                    final long e = table + ((long) idx << ENTRY_LENGTH_SHIFT);
                    if ((long) LONG.get(segment, e + ENTRY_KEY_OFFSET) == 0) {
                        break;
                    }
                    final long pods = (long) LONG.get(segment, e + ENTRY_PODS_OFFSET);
                    final boolean empty;
                    if (direct) {
                        // Slots 0..63 only: the other mask words are empty in a direct cell.
                        final long kept = pods & ~m0;
                        empty = kept == 0;
                        if (!empty && kept != pods) {
                            LONG.setRelease(segment, e + ENTRY_PODS_OFFSET, kept);
                        }
                    } else if (pods < 0) {
                        final long o = overflowEntry(shard, (int) pods);
                        clearBits(o, m0);
                        clearBits(o + 8, m1);
                        clearBits(o + 16, m2);
                        clearBits(o + 24, m3);
                        empty = isEmptyBitmap(o);
                    } else {
                        long kept = 0;
                        for (int i = 0, count = IndexDescriptor.inlineCount(pods); i < count; i++) {
                            final int slot = IndexDescriptor.inlineSlot(pods, i);
                            if (!inMask(slot, m0, m1, m2, m3)) {
                                kept = inlineAdd(kept, slot);
                            }
                        }
                        empty = kept == 0;
                        if (!empty && kept != pods) {
                            LONG.setRelease(segment, e + ENTRY_PODS_OFFSET, kept);
                        }
                    }
                    if (!empty) {
                        break;
                    }
                    // The deletion may shift another entry into idx: examine idx again.
                    delete(shard, table, idx);
                }
            }
        } finally {
            unlock(shard);
        }
    }

    private static boolean inMask(final int slot, final long m0, final long m1, final long m2, final long m3) {
        final long mask = switch (slot >>> 6) {
            case 0 -> m0;
            case 1 -> m1;
            case 2 -> m2;
            default -> m3;
        };
        return (mask & (1L << slot)) != 0;
    }

    private void clearBits(final long offset, final long mask) {
        if (mask != 0) {
            final long old = (long) LONG.get(segment, offset);
            if ((old & mask) != 0) {
                LONG.setOpaque(segment, offset, old & ~mask);
            }
        }
    }

    private void lock(final int shard) {
        final int i = shard * LOCK_STRIDE;
        while (!shardLocks.compareAndSet(i, 0, 1)) {
            Thread.onSpinWait();
        }
    }

    private void unlock(final int shard) {
        shardLocks.setRelease(shard * LOCK_STRIDE, 0);
    }

    private void checkSlot(final int slot) {
        if (slot < 0 || slot >= maxPods) {
            throw new IllegalArgumentException("pod slot must be in [0, " + maxPods + "): " + slot);
        }
    }

    private void checkAlive(final int slot) {
        checkSlot(slot);
        if ((int) STATE.getVolatile(podStates, slot) != POD_STATE_ALIVE) {
            throw new IllegalStateException("pod slot " + slot + " is not alive (state "
                + (int) STATE.getVolatile(podStates, slot) + "); register the pod first");
        }
    }

    private static long aliveWordOffset(final int slot) {
        return ALIVE_BITMAP_OFFSET + (slot >>> 6) * 8L;
    }

    // ---------------------------------------------------------------------------------------------------------
    // Housekeeping
    // ---------------------------------------------------------------------------------------------------------

    /**
     * Stores the current time as the writer's heartbeat.
     *
     * @param nowMs epoch milliseconds.
     */
    public void heartbeat(final long nowMs) {
        LONG.setRelease(segment, (long) IndexDescriptor.HEARTBEAT_OFFSET, nowMs);
    }

    /**
     * @return entries in the index (sum of shard counts).
     */
    public long entryCount() {
        long n = 0;
        for (int shard = 0; shard < context.shardCount; shard++) {
            n += (int) INT.getAcquire(segment, shardHeadersOffset + (long) shard * SHARD_HEADER_LENGTH
                + SHARD_ENTRY_COUNT_OFFSET);
        }
        return n;
    }

    /**
     * @return entries evicted because a shard was full.
     */
    public long evictions() {
        long n = 0;
        for (int shard = 0; shard < context.shardCount; shard++) {
            n += (long) LONG.getAcquire(segment, shardHeadersOffset + (long) shard * SHARD_HEADER_LENGTH
                + SHARD_EVICTIONS_OFFSET);
        }
        return n;
    }

    /**
     * @return the epoch written into this file.
     */
    public long epoch() {
        return epoch;
    }

    /**
     * @return the context, concluded.
     */
    public Context context() {
        return context;
    }

    /**
     * @return the largest number of entries the index holds before it evicts.
     */
    public long capacity() {
        return (long) maxCountPerShard * context.shardCount;
    }

    /**
     * Unmaps the file, leaving it in place (readers keep their mappings; its heartbeat stops). With
     * {@link Context#deleteOnClose(boolean)} the file is also deleted, and its cell directory when that is empty.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        region.close();
        if (context.deleteOnClose) {
            try {
                Files.deleteIfExists(context.indexFile());
            } catch (final IOException ex) {
                throw new IndexException("cannot delete " + context.indexFile(), ex);
            }
            try {
                // The cell directory goes too when nothing else lives in it.
                Files.deleteIfExists(context.indexFile().getParent());
            } catch (final java.nio.file.DirectoryNotEmptyException ex) {
                // Another file shares the directory: keep it.
            } catch (final IOException ex) {
                throw new IndexException("cannot delete " + context.indexFile().getParent(), ex);
            }
        }
    }

    /**
     * Geometry and location of an index. Defaults from {@link IndexConfiguration} and {@link Configuration}.
     */
    public static final class Context {
        private Path dir;
        private String cell;
        private int shardCount = Configuration.SHARD_COUNT_DEFAULT;
        private long capacityBlocks = Configuration.CAPACITY_BLOCKS_DEFAULT;
        private int slotsPerShard;
        private double maxLoadFactor = Configuration.MAX_LOAD_FACTOR_DEFAULT;
        private int maxPods = IndexDescriptor.MAX_PODS;
        private int maxChainLength = Configuration.MAX_CHAIN_LENGTH_DEFAULT;
        private int blockSize = Configuration.BLOCK_SIZE_DEFAULT;
        private int keyScheme = IndexDescriptor.KEY_SCHEME_ROUTER_V1;
        private boolean deleteOnClose;
        private boolean adviseRandom = true;
        private boolean hugePages = true;
        private boolean prefetch = true;
        private boolean concluded;

        /**
         * Applies defaults and validates; computes slots per shard from the capacity.
         *
         * @return this.
         */
        public Context conclude() {
            if (concluded) {
                return this;
            }
            if (dir == null) {
                dir = IndexConfiguration.dir();
            }
            if (cell == null) {
                cell = IndexConfiguration.cell();
            }
            if (!(maxLoadFactor > 0.05 && maxLoadFactor <= 0.95)) {
                throw new IllegalArgumentException("max load factor must be in (0.05, 0.95]: " + maxLoadFactor);
            }
            if (blockSize < 1) {
                throw new IllegalArgumentException("block size must be >= 1: " + blockSize);
            }
            if (slotsPerShard == 0) {
                if (capacityBlocks < 1) {
                    throw new IllegalArgumentException("capacity must be >= 1 block: " + capacityBlocks);
                }
                final long wanted = (long) Math.ceil(capacityBlocks / maxLoadFactor / Math.max(1, shardCount));
                slotsPerShard = (int) Math.min(1 << 24, Math.max(16, Long.highestOneBit(Math.max(1, wanted - 1)) << 1));
            }
            final String problem = IndexDescriptor.validateGeometry(shardCount, slotsPerShard, maxPods, maxChainLength);
            if (problem != null) {
                throw new IllegalArgumentException(problem);
            }
            if ((long) shardCount * slotsPerShard > (1L << 30)) {
                throw new IllegalArgumentException("at most 2^30 entries per index: " + shardCount + " shards x "
                    + slotsPerShard + " slots");
            }
            IndexConfiguration.indexFile(dir, cell);
            concluded = true;
            return this;
        }

        /**
         * @param dir index directory.
         * @return this.
         */
        public Context dir(final Path dir) {
            this.dir = dir;
            return this;
        }

        /**
         * @param cell cell name.
         * @return this.
         */
        public Context cell(final String cell) {
            this.cell = cell;
            return this;
        }

        /**
         * @param shardCount shards, power of two in [2, 65536].
         * @return this.
         */
        public Context shardCount(final int shardCount) {
            this.shardCount = shardCount;
            return this;
        }

        /**
         * @param blocks blocks the index must hold before evicting; sizes slots per shard.
         * @return this.
         */
        public Context capacityBlocks(final long blocks) {
            this.capacityBlocks = blocks;
            return this;
        }

        /**
         * @param slots entries per shard (power of two); overrides the capacity.
         * @return this.
         */
        public Context slotsPerShard(final int slots) {
            this.slotsPerShard = slots;
            return this;
        }

        /**
         * @param factor fraction of a shard's entries in use before it evicts.
         * @return this.
         */
        public Context maxLoadFactor(final double factor) {
            this.maxLoadFactor = factor;
            return this;
        }

        /**
         * @param maxPods pod slots, 1..256.
         * @return this.
         */
        public Context maxPods(final int maxPods) {
            this.maxPods = maxPods;
            return this;
        }

        /**
         * @param maxChainLength longest chain a query accepts.
         * @return this.
         */
        public Context maxChainLength(final int maxChainLength) {
            this.maxChainLength = maxChainLength;
            return this;
        }

        /**
         * @param blockSize router block size in tokens.
         * @return this.
         */
        public Context blockSize(final int blockSize) {
            this.blockSize = blockSize;
            return this;
        }

        /**
         * @param deleteOnClose delete the file when the writer closes (tests, demo).
         * @return this.
         */
        public Context deleteOnClose(final boolean deleteOnClose) {
            this.deleteOnClose = deleteOnClose;
            return this;
        }

        /**
         * @param adviseRandom madvise(MADV_RANDOM) the mapping (default true).
         * @return this.
         */
        public Context adviseRandom(final boolean adviseRandom) {
            this.adviseRandom = adviseRandom;
            return this;
        }

        /**
         * @param hugePages madvise(MADV_HUGEPAGE) the mapping (default true); effective on tmpfs only when
         *                  /sys/kernel/mm/transparent_hugepage/shmem_enabled allows it (see tuning/).
         * @return this.
         */
        public Context hugePages(final boolean hugePages) {
            this.hugePages = hugePages;
            return this;
        }

        /**
         * @param prefetch load the home entries and eviction stamps of a whole store/remove batch before applying
         *                 it (default true): their cache misses overlap. Off only to measure what it is worth.
         * @return this.
         */
        public Context prefetch(final boolean prefetch) {
            this.prefetch = prefetch;
            return this;
        }

        /**
         * @return index directory.
         */
        public Path dir() {
            return dir;
        }

        /**
         * @return cell name.
         */
        public String cell() {
            return cell;
        }

        /**
         * @return shards.
         */
        public int shardCount() {
            return shardCount;
        }

        /**
         * @return entries per shard (after conclude).
         */
        public int slotsPerShard() {
            return slotsPerShard;
        }

        /**
         * @return pod slots.
         */
        public int maxPods() {
            return maxPods;
        }

        /**
         * @return longest chain a query accepts.
         */
        public int maxChainLength() {
            return maxChainLength;
        }

        /**
         * @return router block size.
         */
        public int blockSize() {
            return blockSize;
        }

        /**
         * @return the index file.
         */
        public Path indexFile() {
            return IndexConfiguration.indexFile(dir, cell);
        }
    }

    /**
     * Defaults of the writer's geometry.
     */
    public static final class Configuration {
        /** Default shards. */
        public static final int SHARD_COUNT_DEFAULT = 256;
        /** Default capacity: one million blocks. */
        public static final long CAPACITY_BLOCKS_DEFAULT = 1L << 20;
        /** Default fraction of a shard in use before it evicts. */
        public static final double MAX_LOAD_FACTOR_DEFAULT = 0.75;
        /** Default longest chain: 8192 blocks (128k tokens at block size 16). */
        public static final int MAX_CHAIN_LENGTH_DEFAULT = 8192;
        /** Default router block size (vLLM's default). */
        public static final int BLOCK_SIZE_DEFAULT = 16;

        private Configuration() {
        }
    }
}
