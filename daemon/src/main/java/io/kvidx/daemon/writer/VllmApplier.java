package io.kvidx.daemon.writer;

import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.ingest.vllm.VllmEvent;
import io.kvidx.daemon.ingest.vllm.VllmEventListener;
import org.agrona.collections.Long2LongHashMap;
import org.agrona.concurrent.status.AtomicCounter;

import java.util.Arrays;

/**
 * Applies decoded vLLM events of one pod to the index: recomputes router keys from the token ids and the parent's
 * router key, keeps engine hash to router key, and stores, removes or clears.
 *
 * <p>Defined behaviour for bad events (each counted, and logged once per pod in the distinct error log):
 * <ul>
 *   <li>block size differs from the index's: the event is dropped (never stored under keys no router computes);</li>
 *   <li>token count is not hashes x block size: dropped;</li>
 *   <li>parent hash unknown (its store was missed): dropped; its descendants are then unknown parents too;</li>
 *   <li>removal of a hash the pod does not hold: a no-op;</li>
 *   <li>a LoRA adapter given only by vLLM's deprecated integer {@code lora_id}: keyed as the adapter name
 *   {@code "lora-id:<id>"} (never as the base model).</li>
 * </ul>
 * A block stored on several media (GPU, CPU, disk) leaves the index only when removed from all of them.
 *
 * <p><b>Note:</b> owned by one writer agent.
 */
final class VllmApplier implements VllmEventListener {
    private final IndexWriter index;
    private final RouterKeyHasher hasher;
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
    private long[] keys = new long[256];
    private PodState pod;

    VllmApplier(final IndexWriter index, final IngestCounters counters, final IngestErrors errors) {
        this.index = index;
        this.blockSize = index.context().blockSize();
        this.hasher = new RouterKeyHasher(blockSize);
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
    }

    void pod(final PodState pod) {
        this.pod = pod;
    }

    private static final long GPU = 1;

    static long mediumBit(final int medium) {
        return switch (medium) {
            case VllmEvent.MEDIUM_CPU -> 2;
            case VllmEvent.MEDIUM_DISK -> 4;
            case VllmEvent.MEDIUM_OTHER -> 8;
            default -> 1;
        };
    }

    @Override
    public void onBlockStored(final VllmEvent e) {
        final PodState p = pod;
        final int n = e.hashCount();
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
        final Long2LongHashMap map = p.routerKeyByHash;
        final long parentKey;
        if (e.hasParent()) {
            parentKey = map.get(e.parentHash());
            if (parentKey == PodState.MISSING) {
                unknownParents.increment();
                errors.report(CounterType.UNKNOWN_PARENTS.typeId(), p.podNumber, () -> "pod " + p.podId
                    + ": BlockStored whose parent hash " + Long.toUnsignedString(e.parentHash())
                    + " is unknown (its store was missed); event dropped");
                return;
            }
        } else if (!e.hasLoraName() && e.loraId() >= 0) {
            parentKey = p.seedForLoraId(e.loraId());
        } else {
            parentKey = p.seed(e.hasLoraName(), e.loraNameBytes(), e.loraNameLength());
        }
        if (keys.length < n) {
            keys = Arrays.copyOf(keys, Math.max(n, keys.length * 2));
        }
        final long[] k = keys;
        hasher.extend(parentKey, e.tokens(), 0, n * bs, k, 0);
        final long[] hashes = e.hashes();
        final long bit = mediumBit(e.medium());
        final Long2LongHashMap media = p.mediaByHash;
        touch(map, hashes, n);
        for (int i = 0; i < n; i++) {
            final long h = hashes[i];
            final long previous = map.put(h, k[i]);
            // Media: a held block without an entry in the media map is held on GPU only (the common case costs
            // no second map operation).
            if (bit != GPU) {
                final long explicit = previous == PodState.MISSING ? 0 : media.get(h);
                final long old = previous == PodState.MISSING ? 0 : explicit == 0 ? GPU : explicit;
                media.put(h, old | bit);
            } else if (previous != PodState.MISSING && !media.isEmpty()) {
                final long explicit = media.get(h);
                if (explicit != 0) {
                    media.put(h, explicit | GPU);
                }
            }
        }
        final int added = n == 0 ? 0 : index.store(p.slot, k, 0, n);
        blocksStored.getAndAdd(added);
        duplicates.getAndAdd(n - added);
        eventsApplied.increment();
    }

    /** Keeps the prefetch lookups observable. */
    @SuppressWarnings("unused")
    private long prefetchSink;

    /**
     * Looks every hash of an event up once in a tight loop before the event is applied: the lookups are
     * independent, so their cache misses overlap, and the slower apply loop then finds the map's slots in cache.
     */
    private void touch(final Long2LongHashMap map, final long[] hashes, final int n) {
        long sink = 0;
        for (int i = 0; i < n; i++) {
            sink += map.get(hashes[i]);
        }
        prefetchSink = sink;
    }

    @Override
    public void onBlockRemoved(final VllmEvent e) {
        final PodState p = pod;
        final int n = e.hashCount();
        if (keys.length < n) {
            keys = Arrays.copyOf(keys, Math.max(n, keys.length * 2));
        }
        final long[] k = keys;
        final long[] hashes = e.hashes();
        final long bit = mediumBit(e.medium());
        final Long2LongHashMap map = p.routerKeyByHash;
        final Long2LongHashMap media = p.mediaByHash;
        int m = 0;
        int unknown = 0;
        touch(map, hashes, n);
        for (int i = 0; i < n; i++) {
            final long h = hashes[i];
            final long key = map.get(h);
            if (key == PodState.MISSING) {
                unknown++;
                continue;
            }
            final long explicit = media.isEmpty() ? 0 : media.get(h);
            final long left = (explicit == 0 ? GPU : explicit) & ~bit;
            if (left != 0) {
                if (left == GPU) {
                    media.remove(h);
                } else {
                    media.put(h, left);
                }
                continue;
            }
            if (explicit != 0) {
                media.remove(h);
            }
            map.remove(h);
            k[m++] = key;
        }
        if (unknown > 0) {
            unknownRemovals.getAndAdd(unknown);
        }
        final int removed = m == 0 ? 0 : index.remove(p.slot, k, 0, m);
        blocksRemoved.getAndAdd(removed);
        eventsApplied.increment();
    }

    @Override
    public void onAllBlocksCleared(final VllmEvent e) {
        index.clearPod(pod.slot);
        pod.forgetBlocks();
        clears.increment();
        eventsApplied.increment();
    }

    @Override
    public void onDropped(final VllmEvent e) {
        final PodState p = pod;
        final int problem = e.problem();
        if (problem == VllmEvent.PROBLEM_UNKNOWN_TYPE) {
            unknownTypes.increment();
            errors.report(CounterType.UNKNOWN_EVENT_TYPES.typeId(), p.podNumber,
                () -> "pod " + p.podId + ": unknown vLLM event type ignored");
        } else {
            dropped.increment();
            errors.report(CounterType.EVENTS_DROPPED.typeId() * 64 + problem, p.podNumber,
                () -> "pod " + p.podId + ": " + VllmEvent.typeName(e.type()) + " dropped: "
                    + VllmEvent.problemName(problem));
        }
    }
}
