package io.kvidx.daemon.writer;

import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.event.BlockEvent;
import io.kvidx.daemon.event.BlockEventListener;
import io.kvidx.daemon.state.PodBlockMap;
import org.agrona.concurrent.status.AtomicCounter;

import java.util.Arrays;

/**
 * Applies decoded vLLM events of one pod to the index: recomputes router keys from the token ids, the parent's
 * router key and the blocks' {@code extra_keys} ({@link EventKeys}), keeps engine hash to router key, and stores,
 * removes or clears.
 *
 * <p>Defined behaviour for bad events (each counted, and logged once per pod in the distinct error log):
 * <ul>
 *   <li>block size differs from the index's: the event is dropped (never stored under keys no router computes);</li>
 *   <li>token count is not hashes x block size: dropped;</li>
 *   <li>parent hash unknown (its store was missed): dropped; its descendants are then unknown parents too;</li>
 *   <li>removal of a hash the pod does not hold: a no-op;</li>
 *   <li>a LoRA adapter given only by vLLM's deprecated integer {@code lora_id}: keyed as the adapter name
 *   {@code "lora-id:<id>"} (never as the base model);</li>
 *   <li>{@code extra_keys} of the wrong shape, count, element type, order or size: dropped (bad extra keys),
 *   the rest of the batch applies.</li>
 * </ul>
 * A hybrid model's events count only for the KV cache group the index follows ({@link AttentionGroups}).
 * A block stored on several media (GPU, CPU, disk) leaves the index only when removed from all of them; its media
 * and locality are kept in the host tier map ({@link TierRecorder}). Tokenless BlockStored events (CPU offload
 * before vllm#43468: no token ids, block size 0) are applied through the block map ({@link TokenlessStores}). The
 * pod's block map is bounded ({@code --pod-max-blocks}): a pod holding more evicts its least recently stored
 * blocks from the map and the index (counted as block map evictions).
 *
 * <p><b>Note:</b> owned by one writer agent.
 */
final class VllmApplier implements BlockEventListener {
    private final IndexWriter index;
    private final EventKeys eventKeys;
    private final int blockSize;
    private final IngestErrors errors;
    private final AtomicCounter eventsApplied;
    private final AtomicCounter blocksStored;
    private final AtomicCounter blocksRemoved;
    private final AtomicCounter duplicates;
    private final AtomicCounter clears;
    private final AtomicCounter unknownTypes;
    private final AtomicCounter dropped;
    private final AtomicCounter unknownParents;
    private final AtomicCounter blockSizeMismatches;
    private final AtomicCounter tokenCountMismatches;
    private final AtomicCounter unknownRemovals;
    private final AtomicCounter mapEvictions;
    private final AtomicCounter otherGroupEvents;
    private final AtomicCounter badExtraKeys;
    private final long[] evicted = new long[1];
    /** Engine hashes and router keys of the mappings one BlockStored evicted. */
    private long[] evictedHashes = new long[16];
    private long[] evictedKeys = new long[16];
    private long[] keys = new long[256];
    private final TierRecorder tiers;
    private final TokenlessStores tokenless;
    private PodState pod;
    private double batchTimestamp;

    VllmApplier(final IndexWriter index, final IngestCounters counters, final IngestErrors errors) {
        this.index = index;
        this.blockSize = index.context().blockSize();
        this.eventKeys = new EventKeys(new RouterKeyHasher(blockSize), index.context().keyScheme());
        this.errors = errors;
        this.eventsApplied = counters.get(CounterType.EVENTS_APPLIED);
        this.blocksStored = counters.get(CounterType.BLOCKS_STORED);
        this.blocksRemoved = counters.get(CounterType.BLOCKS_REMOVED);
        this.duplicates = counters.get(CounterType.DUPLICATE_BLOCKS);
        this.clears = counters.get(CounterType.POD_CLEARS);
        this.unknownTypes = counters.get(CounterType.UNKNOWN_EVENT_TYPES);
        this.dropped = counters.get(CounterType.EVENTS_DROPPED);
        this.unknownParents = counters.get(CounterType.UNKNOWN_PARENTS);
        this.blockSizeMismatches = counters.get(CounterType.BLOCK_SIZE_MISMATCHES);
        this.tokenCountMismatches = counters.get(CounterType.TOKEN_COUNT_MISMATCHES);
        this.unknownRemovals = counters.get(CounterType.UNKNOWN_REMOVALS);
        this.mapEvictions = counters.get(CounterType.BLOCK_MAP_EVICTIONS);
        this.otherGroupEvents = counters.get(CounterType.OTHER_GROUP_EVENTS);
        this.badExtraKeys = counters.get(CounterType.BAD_EXTRA_KEYS);
        this.tiers = new TierRecorder(index.tiers(), counters, errors);
        this.tokenless = new TokenlessStores(index, tiers, counters, errors);
    }

    /**
     * @return the host tier map's recorder for this agent's pods.
     */
    TierRecorder tiers() {
        return tiers;
    }

    void pod(final PodState pod) {
        this.pod = pod;
        this.batchTimestamp = 0;
    }

    /**
     * @return the engine's timestamp (epoch seconds) of the last batch decoded for the current pod, 0 when none.
     */
    double batchTimestamp() {
        return batchTimestamp;
    }

    @Override
    public void onBatchEnd(final double timestamp, final int dpRank) {
        this.batchTimestamp = timestamp;
    }

    static long mediumBit(final int medium) {
        return switch (medium) {
            case BlockEvent.MEDIUM_CPU -> 2;
            case BlockEvent.MEDIUM_DISK -> 4;
            case BlockEvent.MEDIUM_OTHER -> 8;
            default -> 1;
        };
    }

    @Override
    public void onBlockStored(final BlockEvent e) {
        final PodState p = pod;
        if (!p.groups.follows(p.blocks, e)) {
            otherGroupEvents.increment();
            return;
        }
        final int n = e.hashCount();
        tiers.check(e, p);
        if (e.isTokenless()) {
            tokenless.apply(p, e);
            eventsApplied.increment();
            return;
        }
        final int bs = e.blockSize() < 0 ? blockSize : e.blockSize();
        if (bs != blockSize) {
            blockSizeMismatches.increment();
            errors.report(CounterType.BLOCK_SIZE_MISMATCHES.typeId(), p.podNumber, () -> "pod " + p.podId
                + ": engine block size " + bs + " differs from the index's block size " + blockSize
                + "; its BlockStored events are dropped (no router could match their keys). Run the daemon with"
                + " --block-size " + bs + " or configure the engine with block size " + blockSize);
            return;
        }
        if ((long) n * bs != e.tokenCount()) {
            tokenCountMismatches.increment();
            errors.report(CounterType.TOKEN_COUNT_MISMATCHES.typeId(), p.podNumber, () -> "pod " + p.podId
                + ": BlockStored with " + n + " hashes carries " + e.tokenCount() + " token ids, expected "
                + (long) n * bs + "; event dropped");
            return;
        }
        final PodBlockMap map = p.blocks;
        long parentKey = 0;
        if (e.hasParent()) {
            parentKey = map.get(e.parentHash());
            if (parentKey == PodState.MISSING) {
                unknownParents.increment();
                errors.report(CounterType.UNKNOWN_PARENTS.typeId(), p.podNumber, () -> "pod " + p.podId
                    + ": BlockStored whose parent hash " + Long.toUnsignedString(e.parentHash())
                    + " is unknown (its store was missed); event dropped");
                return;
            }
        }
        final long indexParent = parentKey;
        if (keys.length < n) {
            keys = Arrays.copyOf(keys, Math.max(n, keys.length * 2));
        }
        final long[] k = keys;
        final int bad = eventKeys.keys(p, e, parentKey, k);
        if (bad != EventKeys.OK) {
            badExtraKeys.increment();
            final int block = eventKeys.badBlock();
            errors.report(CounterType.BAD_EXTRA_KEYS.typeId() * 64 + 16 + bad, p.podNumber, () -> "pod " + p.podId
                + ": BlockStored dropped: the extra_keys of its block " + block + " " + EventKeys.describe(bad));
            return;
        }
        final long[] hashes = e.hashes();
        final long bit = mediumBit(e.medium());
        touch(map, hashes, n);
        makeRoom(p, map, hashes, n);
        int evictions = 0;
        for (int i = 0; i < n; i++) {
            if (map.isFull() && map.get(hashes[i]) == PodState.MISSING) {
                final long key = evictMapping(p, map);
                if (key != PodState.MISSING) {
                    if (evictedHashes.length == evictions) {
                        evictedHashes = Arrays.copyOf(evictedHashes, evictions * 2);
                        evictedKeys = Arrays.copyOf(evictedKeys, evictions * 2);
                    }
                    evictedHashes[evictions] = map.evictedHash();
                    evictedKeys[evictions++] = key;
                }
            }
            map.store(hashes[i], k[i], bit);
            tiers.stored(p.slot, k[i], map, bit, e.locality());
        }
        int added = n == 0 ? 0 : index.store(p.slot, k, 0, n, indexParent);
        // A batch larger than the map's room evicts the mappings of its own first blocks above, before the index
        // holds them: take those out again now that the store put them in (a crash before this leaves them indexed
        // but the replayed batch maps them again).
        for (int i = 0; i < evictions; i++) {
            if (map.get(evictedHashes[i]) == PodState.MISSING) {
                evicted[0] = evictedKeys[i];
                added -= index.remove(p.slot, evicted, 0, 1);
                tiers.forget(p.slot, evictedKeys[i]);
            }
        }
        blocksStored.getAndAdd(added);
        duplicates.getAndAdd(n - added);
        eventsApplied.increment();
    }

    /** Most mappings evicted in one batch. */
    private static final int EVICTION_BATCH = 256;
    private final long[] victimKeys = new long[EVICTION_BATCH];
    private final long[] victimHashes = new long[EVICTION_BATCH];
    private final boolean[] victimTiered = new boolean[EVICTION_BATCH];

    /**
     * Before a BlockStored is applied, evicts as many mappings as its new hashes need beyond the map's room, in
     * batches: their blocks leave the index in one {@code remove} (its misses overlapped by the batch prefetch),
     * then their mappings go (index first, as {@link #evictMapping}). A map too small for distinct batch choices,
     * and an event larger than the map, fall back to {@link #evictMapping} one block at a time.
     */
    private void makeRoom(final PodState p, final PodBlockMap map, final long[] hashes, final int n) {
        final int room = map.maxBlocks() - map.size();
        if (n <= room) {
            return;
        }
        int fresh = 0;
        for (int i = 0; i < n; i++) {
            if (map.get(hashes[i]) == PodState.MISSING) {
                fresh++;
            }
        }
        int need = Math.min(fresh - room, map.size());
        while (need > 0) {
            final int k = map.selectOldest(Math.min(need, EVICTION_BATCH), victimKeys, victimHashes, victimTiered);
            if (k == 0) {
                return;
            }
            index.remove(p.slot, victimKeys, 0, k);
            for (int j = 0; j < k; j++) {
                map.remove(victimHashes[j]);
                if (victimTiered[j]) {
                    tiers.forget(p.slot, victimKeys[j]);
                }
            }
            mapEvictions.getAndAdd(k);
            errors.report(CounterType.BLOCK_MAP_EVICTIONS.typeId(), p.podNumber, () -> "pod " + p.podId
                + ": more than " + map.maxBlocks() + " blocks held (removals lost, or --pod-max-blocks too small);"
                + " its least recently stored blocks leave the index");
            need -= k;
        }
    }

    /**
     * Makes room in a full block map: its least recently stored mapping goes, and so does that block from the
     * index for this pod (the pod's removal of it could no longer be applied).
     *
     * @return the evicted block's router key (its engine hash is the map's {@code evictedHash()}), or 0 for none.
     */
    private long evictMapping(final PodState p, final PodBlockMap map) {
        // The index first, then the map: a crash in between leaves the mapping, not an indexed block no mapping
        // reaches any more.
        final long key = map.selectOldest();
        if (key != PodState.MISSING) {
            final boolean tiered = map.evictedTiered();
            evicted[0] = key;
            index.remove(p.slot, evicted, 0, 1);
            map.evictSelected();
            if (tiered) {
                tiers.forget(p.slot, key);
            }
            mapEvictions.increment();
            errors.report(CounterType.BLOCK_MAP_EVICTIONS.typeId(), p.podNumber, () -> "pod " + p.podId
                + ": more than " + map.maxBlocks() + " blocks held (removals lost, or --pod-max-blocks too small);"
                + " its least recently stored blocks leave the index");
        }
        return key;
    }

    /** Keeps the prefetch lookups observable. */
    @SuppressWarnings("unused")
    private long prefetchSink;

    /**
     * Looks every hash of an event up once in a tight loop before the event is applied: the lookups are
     * independent, so their cache misses overlap, and the slower apply loop then finds the map's slots in cache.
     */
    private void touch(final PodBlockMap map, final long[] hashes, final int n) {
        long sink = 0;
        for (int i = 0; i < n; i++) {
            sink += map.touch(hashes[i]);
        }
        prefetchSink = sink;
    }

    @Override
    public void onBlockRemoved(final BlockEvent e) {
        final PodState p = pod;
        if (!p.groups.follows(p.blocks, e)) {
            otherGroupEvents.increment();
            return;
        }
        final int n = e.hashCount();
        if (keys.length < n) {
            keys = Arrays.copyOf(keys, Math.max(n, keys.length * 2));
        }
        final long[] k = keys;
        final long[] hashes = e.hashes();
        final long bit = mediumBit(e.medium());
        final PodBlockMap map = p.blocks;
        tiers.check(e, p);
        int m = 0;
        int unknown = 0;
        touch(map, hashes, n);
        // The index first, then the map: a daemon killed in between still maps these hashes, so the removal, which
        // its successor replays (the checkpoint never passes a batch being applied), finds them again. Released
        // first, they would leave indexed blocks that no mapping reaches any more.
        for (int i = 0; i < n; i++) {
            final long key = map.keyIfLastMedium(hashes[i], bit);
            if (key != PodState.MISSING) {
                k[m++] = key;
            }
        }
        final int removed = m == 0 ? 0 : index.remove(p.slot, k, 0, m);
        for (int i = 0; i < n; i++) {
            final long key = map.release(hashes[i], bit);
            if (key == PodState.MISSING) {
                unknown++;
            } else {
                tiers.released(p.slot, key, map);
            }
        }
        if (unknown > 0) {
            unknownRemovals.getAndAdd(unknown);
        }
        blocksRemoved.getAndAdd(removed);
        eventsApplied.increment();
    }

    @Override
    public void onAllBlocksCleared(final BlockEvent e) {
        index.clearPod(pod.slot);
        pod.forgetBlocks();
        clears.increment();
        eventsApplied.increment();
    }

    @Override
    public void onDropped(final BlockEvent e) {
        final PodState p = pod;
        final int problem = e.problem();
        if (problem == BlockEvent.PROBLEM_UNKNOWN_TYPE) {
            unknownTypes.increment();
            errors.report(CounterType.UNKNOWN_EVENT_TYPES.typeId(), p.podNumber,
                () -> "pod " + p.podId + ": unknown vLLM event type ignored");
        } else if (problem == BlockEvent.PROBLEM_EXTRA_KEYS_TYPE || problem == BlockEvent.PROBLEM_EXTRA_KEYS_LENGTH
            || problem == BlockEvent.PROBLEM_EXTRA_KEYS_TOO_LARGE) {
            badExtraKeys.increment();
            errors.report(CounterType.BAD_EXTRA_KEYS.typeId() * 64 + problem, p.podNumber,
                () -> "pod " + p.podId + ": " + BlockEvent.typeName(e.type()) + " dropped: "
                    + BlockEvent.problemName(problem));
        } else {
            dropped.increment();
            errors.report(CounterType.EVENTS_DROPPED.typeId() * 64 + problem, p.podNumber,
                () -> "pod " + p.podId + ": " + BlockEvent.typeName(e.type()) + " dropped: "
                    + BlockEvent.problemName(problem));
        }
    }
}
