package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.PodCapacityExceededException;
import io.kvidx.ffm.Layouts;
import io.kvidx.ffm.MappedRegion;
import io.kvidx.ffm.PosixNative;
import io.kvidx.ffm.SharedFiles;
import org.agrona.CloseHelper;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;

/**
 * The only code that writes a cell's index file: opens it ({@link #open}: re-attach and repair, or create; the parts
 * are assembled by {@link IndexParts}), and stores, removes and sweeps pod bits through its parts:
 * <ul>
 *   <li>{@link IndexFiles}: creation, re-attach, and the decision between them;</li>
 *   <li>{@link IndexRepair}: what a crash or a failed writer thread left half-done;</li>
 *   <li>{@link EntryTable}: the shards' tables, their locks ({@link ShardLocks}) and overflow pools
 *   ({@link OverflowPool}), and the writer's side table ({@link WriterMeta});</li>
 *   <li>{@link Eviction}: what a full shard gives up;</li>
 *   <li>{@link PodTable}: pod slots, generations, the alive bitmap and the bounded sweep ({@link ShardSweep});</li>
 *   <li>{@link TierMapWriter}: the host tier map beside the index (where each pod holds its blocks), re-created at
 *   every open; a slot's region follows the pod: given to its generation at registration, emptied when the pod
 *   clears its cache or goes down.</li>
 * </ul>
 *
 * <p>Publication protocol (readers: {@link io.kvidx.client.index.IndexReader}, spec: docs/index-layout.md):
 * <ul>
 *   <li>a new file is built under an unpredictable temporary name, the layout version is stored last with a
 *   release store, then the file is renamed into place, so a reader never maps a half-initialised index;</li>
 *   <li>inserting a key into an empty entry writes its pods word, then the key with a release store;</li>
 *   <li>setting or clearing one pod's bit in an existing entry is a single 64-bit store;</li>
 *   <li>removing an entry or moving entries (backward-shift deletion, eviction, overflow demotion) happens between
 *   an odd and the next even value of the shard's seqlock version, so a reader that overlapped it retries;</li>
 *   <li>a pod table change bumps the pod table version before a reused slot's alive bit is set.</li>
 * </ul>
 *
 * <p><b>Note:</b> thread safe. Writer threads serialise per shard on a writer-private lock; readers never take
 * it. Calls that concern one pod ({@link #store}, {@link #remove}, {@link #clearPod}, {@link #podDown}) must come
 * from one thread (the pod's writer agent): the daemon's sticky pod assignment guarantees it. Every call is
 * idempotent. One writer per cell: {@link #open} and {@link #create} take the cell's {@link CellLock} before they
 * touch any file of the cell (a writer already holding it, e.g. the daemon, hands it in through
 * {@link IndexWriterContext#cellLock(CellLock)}), so a second writer of the cell, in this process or another, fails
 * with a {@link CellLockedException} naming the holder's pid and changes nothing.
 */
public final class IndexWriter implements AutoCloseable {
    private static final VarHandle LONG = Layouts.LONG;

    private final IndexWriterContext context;
    private final MappedRegion region;
    private final MemorySegment segment;
    private final long epoch;
    private final boolean attached;
    private final String openReason;
    private final IndexRepair.Report repair;
    private final WriterMeta meta;
    private final EntryTable entries;
    private final PodTable pods;
    private final TierMapWriter tiers;
    private final CellLock ownLock;
    private volatile boolean closed;

    private IndexWriter(final IndexParts parts) {
        this.context = parts.context();
        this.ownLock = parts.ownLock();
        this.region = parts.opened().region();
        this.segment = region.segment();
        this.epoch = parts.opened().epoch();
        this.attached = parts.opened().attached();
        this.openReason = parts.opened().reason();
        this.meta = parts.meta();
        this.entries = parts.entries();
        this.pods = parts.pods();
        this.repair = parts.repair();
        this.tiers = parts.tiers();
        // The first beat of a re-attached file (IndexFiles.open zeroed it): only once it is repaired.
        heartbeat(System.currentTimeMillis());
    }

    /**
     * Creates a new, empty index file for the context's cell, replacing any previous one atomically (readers of
     * the old file see its heartbeat stop and re-attach to the new epoch). Pod ids of the previous file are kept in
     * free slots so that pods get their slots back. The cell directory (0750) and the file (0640) get the group
     * of {@link IndexWriterContext#files(SharedFiles)}; a symbolic link for either is refused.
     *
     * @param context geometry and location; concluded here.
     * @return the writer; closing it releases the cell's lock when it took it.
     * @throws CellLockedException when another writer (a daemon, a demo, a benchmark) holds the cell's lock.
     */
    public static IndexWriter create(final IndexWriterContext context) {
        return new IndexWriter(IndexParts.create(context));
    }

    /**
     * Re-attaches to the cell's existing index file when its layout major version and geometry match the context
     * (keeping its epoch: readers need not re-map), repairing what a crashed writer left half-done; otherwise
     * creates a new one. {@link #attached()} and {@link #openReason()} tell which and why.
     *
     * @param context geometry and location; concluded here.
     * @return the writer; closing it releases the cell's lock when it took it.
     * @throws CellLockedException     when another writer holds the cell's lock.
     * @throws IndexFileOwnerException when the existing index file belongs to another user.
     */
    public static IndexWriter open(final IndexWriterContext context) {
        return new IndexWriter(IndexParts.open(context));
    }

    /**
     * @return true when this writer re-attached to an existing file, false when it created one.
     */
    public boolean attached() {
        return attached;
    }

    /**
     * @return why the file was re-attached or created (one line, for the log).
     */
    public String openReason() {
        return openReason;
    }

    /**
     * @return what the repair at open found and fixed, one line.
     */
    public String repairSummary() {
        return repair.toString();
    }

    /**
     * @return true when the repair at open found nothing to fix.
     */
    public boolean repairClean() {
        return repair.clean();
    }

    // ---------------------------------------------------------------------------------------------------------
    // Pods
    // ---------------------------------------------------------------------------------------------------------

    /**
     * Registers a pod, or returns its slot when it is already alive (idempotent). A pod gets back the slot it held
     * last (in this file or the one it replaced) when that slot is free.
     *
     * @param podId pod id, 1..112 UTF-8 bytes.
     * @param model model name, 0..116 UTF-8 bytes.
     * @return the pod's slot.
     * @throws PodCapacityExceededException when every slot is alive or still draining.
     */
    public int registerPod(final String podId, final String model) {
        final int slot = pods.register(podId, model);
        tiers.attach(slot, pods.generation(slot));
        return slot;
    }

    /**
     * @param podId a pod id.
     * @return its slot while it is alive, else -1.
     */
    public int slotOf(final String podId) {
        return pods.slotOf(podId);
    }

    /**
     * @param slot pod slot.
     * @return the pod id that holds or last held the slot, or null.
     */
    public String podId(final int slot) {
        checkSlot(slot);
        return pods.podId(slot);
    }

    /**
     * @param slot pod slot.
     * @return the model the pod that holds or last held the slot registered with, or null when it gave none.
     */
    public String model(final int slot) {
        checkSlot(slot);
        return pods.model(slot);
    }

    /**
     * @param slot pod slot.
     * @return the slot's generation: how many times it was given to a pod.
     */
    public int generation(final int slot) {
        checkSlot(slot);
        return pods.generation(slot);
    }

    /**
     * @param slot pod slot.
     * @return true when the pod in that slot is alive.
     */
    public boolean isAlive(final int slot) {
        checkSlot(slot);
        return pods.isAlive(slot);
    }

    /**
     * @param slot pod slot.
     * @return the state of the slot, one of {@code IndexDescriptor.POD_STATE_*}.
     */
    public int podState(final int slot) {
        checkSlot(slot);
        return pods.state(slot);
    }

    /**
     * Phase 1 of pod removal: clears the pod's alive bit at once (it drops out of every answer) and queues its
     * bits for the background sweep ({@link #sweepStep()}), which frees the slot when done. No-op for a pod that
     * is not alive.
     *
     * @param slot pod slot.
     * @return true when the pod was alive.
     */
    public boolean podDown(final int slot) {
        checkSlot(slot);
        final boolean wasAlive = pods.down(slot);
        tiers.detach(slot);
        return wasAlive;
    }

    /**
     * Phase 2 of pod removal, bounded: sweeps one shard for the pods being drained, clearing their bits and
     * freeing entries no pod holds; after the last shard of a pass, frees their slots. Called by the
     * {@link IndexMaintenanceAgent}.
     *
     * @return work done (1 when a shard was swept, else 0).
     */
    public int sweepStep() {
        return pods.sweepStep();
    }

    /**
     * @return true while some pod's bits are still being swept.
     */
    public boolean isSweeping() {
        return pods.isSweeping();
    }

    /**
     * Sets or clears an alive pod's suspect flag in the pod table (layout 3.2; under the entry's seqlock, then the
     * pod table version is bumped so that routers re-read the table). Call from the pod's writer agent.
     *
     * @param slot    pod slot.
     * @param suspect true: the pod's state may be incomplete; false: it was resynced.
     * @return true when the flag changed (false also for a pod not alive).
     */
    public boolean markSuspect(final int slot, final boolean suspect) {
        checkSlot(slot);
        return pods.suspect(slot, suspect);
    }

    /**
     * @param slot pod slot.
     * @return true when the slot's pod table entry carries the suspect flag (it survives a warm restart).
     */
    public boolean isSuspect(final int slot) {
        checkSlot(slot);
        return pods.isSuspect(slot);
    }

    /**
     * Removes every block of a pod that stays alive (vLLM's AllBlocksCleared). Sweeps all shards synchronously
     * so that the pod's later stores cannot be wiped by a sweep still in flight. No-op for a pod not alive.
     *
     * @param slot pod slot.
     */
    public void clearPod(final int slot) {
        checkSlot(slot);
        pods.clear(slot);
        tiers.clear(slot);
    }

    /**
     * @return the host tier map beside the index; its regions are written by the pods' writer threads (one thread
     * per pod, as for {@link #store}).
     */
    public TierMapWriter tiers() {
        return tiers;
    }

    // ---------------------------------------------------------------------------------------------------------
    // Blocks
    // ---------------------------------------------------------------------------------------------------------

    /**
     * Records that a pod holds the given blocks, a run of one chain starting at its first block. Storing a block
     * the pod already holds is a no-op; a full shard evicts (see {@link Eviction}) and counts it.
     *
     * @param slot   an alive pod's slot.
     * @param keys   block keys.
     * @param offset first key.
     * @param length number of keys.
     * @return keys that were new for this pod.
     * @throws IllegalStateException when the pod is not alive.
     */
    public int store(final int slot, final long[] keys, final int offset, final int length) {
        return store(slot, keys, offset, length, 0);
    }

    /**
     * Records that a pod holds the given blocks: {@code keys[offset]} follows the block {@code parentKey} in its
     * chain (0 when it is the chain's first block), each further key follows the one before it. The parent links
     * let eviction trim chains from their tails.
     *
     * @param slot      an alive pod's slot.
     * @param keys      block keys.
     * @param offset    first key.
     * @param length    number of keys.
     * @param parentKey the router key of the block before {@code keys[offset]}, or 0.
     * @return keys that were new for this pod.
     * @throws IllegalStateException when the pod is not alive.
     */
    public int store(final int slot, final long[] keys, final int offset, final int length, final long parentKey) {
        checkAlive(slot);
        java.util.Objects.checkFromIndexSize(offset, length, keys.length);
        return entries.store(slot, keys, offset, length, parentKey, pods);
    }

    /**
     * Loads the index lines that storing or removing these keys will touch, so that a caller that stores keys one
     * call at a time (blocks not in chain order, such as a snapshot's) overlaps their cache misses instead of paying
     * them one store at a time; a run of one chain is prefetched by {@link #store} itself. No-op when the context
     * turned prefetching off. Any thread; writes nothing.
     *
     * @param keys   block keys.
     * @param offset first key.
     * @param length number of keys.
     */
    public void prefetch(final long[] keys, final int offset, final int length) {
        java.util.Objects.checkFromIndexSize(offset, length, keys.length);
        entries.prefetch(keys, offset, length);
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
        return entries.remove(slot, keys, offset, length);
    }

    private void checkSlot(final int slot) {
        if (slot < 0 || slot >= context.maxPods) {
            throw new IllegalArgumentException("pod slot must be in [0, " + context.maxPods + "): " + slot);
        }
    }

    private void checkAlive(final int slot) {
        checkSlot(slot);
        if (!pods.isAlive(slot)) {
            throw new IllegalStateException("pod slot " + slot + " is not alive (state " + pods.state(slot)
                + "); register the pod first");
        }
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
        return entries.counters().entryCount();
    }

    /**
     * @return entries evicted because a shard was full.
     */
    public long evictions() {
        return entries.counters().sum(IndexDescriptor.SHARD_EVICTIONS_OFFSET);
    }

    /**
     * @return of {@link #evictions()}, entries evicted while later blocks of their chain were still indexed.
     */
    public long innerEvictions() {
        return entries.counters().sum(IndexDescriptor.SHARD_EVICTIONS_INNER_OFFSET);
    }

    /**
     * @return holders not recorded because a shard's overflow pool was full.
     */
    public long holdersRefused() {
        return entries.counters().sum(IndexDescriptor.SHARD_HOLDERS_REFUSED_OFFSET);
    }

    /**
     * @return overflow entries turned inline again to give their bitmap back.
     */
    public long overflowDemotions() {
        return entries.counters().sum(IndexDescriptor.SHARD_OVERFLOW_DEMOTIONS_OFFSET);
    }

    /**
     * Test hook: runs before the repair of a shard whose change failed, to fail the repair too.
     *
     * @param fault what to run, or null.
     */
    void repairFault(final Runnable fault) {
        entries.repairFault = fault;
    }

    /**
     * Test hook: runs inside every deletion while the shard's version is odd, to fail a writer mid-change.
     *
     * @param fault what to run, or null.
     */
    void deleteFault(final Runnable fault) {
        entries.deleteFault = fault;
    }

    /**
     * @param key a block key.
     * @return the key of the block before it in the chain it was first stored with (stored form), or 0 when it was
     * stored as a chain's first block, its parent is unknown (a repaired shard), or it is not indexed. Takes the
     * key's shard lock: any writer thread may call it.
     */
    public long parentOf(final long key) {
        return entries.parentOf(IndexDescriptor.storedKey(key));
    }

    /**
     * Recounts every entry's indexed children from the parent keys, as a re-attach does: for blocks stored in an
     * order other than their chains' (a snapshot loaded at start). Takes no lock.
     *
     * <p><b>Note:</b> call before any writer thread uses the index.
     */
    public void recountChildren() {
        IndexRepair.rebuildChildren(entries);
    }

    /**
     * @param key a block key.
     * @return its entry's count of indexed children (blocks stored after it in a chain), or -1 when not indexed.
     */
    int children(final long key) {
        return entries.childrenOf(IndexDescriptor.storedKey(key));
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
    public IndexWriterContext context() {
        return context;
    }

    /**
     * Locks the index file's pages into RAM ({@code mlock}), so that neither the writer nor a router ever takes a
     * major fault on them (tmpfs pages can otherwise go to swap). Opt-in: needs {@code RLIMIT_MEMLOCK} covering the
     * file, or {@code CAP_IPC_LOCK}.
     *
     * @return 0 on success, else the errno ({@link PosixNative#errnoName(int)}).
     */
    public int mlock() {
        return PosixNative.mlock(segment);
    }

    /**
     * @return bytes of the index file's mapping.
     */
    public long mappedBytes() {
        return segment.byteSize();
    }

    /**
     * @return the largest number of entries the index holds before it evicts.
     */
    public long capacity() {
        return (long) entries.g.maxCountPerShard * context.shardCount;
    }

    /**
     * Unmaps the file, leaving it in place (readers keep their mappings; its heartbeat stops). With
     * {@link IndexWriterContext#deleteOnClose(boolean)} the file and the writer's side table are also deleted (the
     * cell directory stays with its lock file, see {@link CellLock}). Releases the cell's lock last when this
     * writer took it.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            tiers.close();
            meta.close();
            region.close();
            if (context.deleteOnClose) {
                IndexFiles.delete(context.indexFile(), meta.path(), tiers.path());
            }
        } finally {
            CloseHelper.close(ownLock);
        }
    }
}
