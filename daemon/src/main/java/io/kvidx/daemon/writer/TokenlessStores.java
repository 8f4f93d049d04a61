package io.kvidx.daemon.writer;

import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.event.BlockEvent;
import io.kvidx.daemon.state.PodBlockMap;
import org.agrona.concurrent.status.AtomicCounter;

import java.util.Arrays;

/**
 * Applies tokenless BlockStored events: vLLM's CPU-offload events before vllm#43468 carry {@code token_ids = []}
 * and {@code block_size = 0}, naming blocks only by engine hash. No router key can be computed from them, but the
 * blocks were stored (with their tokens) on the GPU first, so the pod's block map knows their router keys: each
 * known block gains the event's medium (block map, tier map) and is stored again for the pod in the index
 * (idempotent: normally it is still there). Blocks the map does not know are counted and skipped, never indexed
 * under a guessed key. Such events are never dropped as block-size mismatches.
 *
 * <p><b>Note:</b> owned by one writer agent.
 */
final class TokenlessStores {
    private final IndexWriter index;
    private final TierRecorder tiers;
    private final IngestErrors errors;
    private final AtomicCounter applied;
    private final AtomicCounter unknownBlocks;
    private final AtomicCounter blocksStored;
    private long[] keys = new long[64];

    TokenlessStores(final IndexWriter index, final TierRecorder tiers, final IngestCounters counters,
        final IngestErrors errors) {
        this.index = index;
        this.tiers = tiers;
        this.errors = errors;
        this.applied = counters.get(CounterType.TOKENLESS_STORES);
        this.unknownBlocks = counters.get(CounterType.TOKENLESS_UNKNOWN_BLOCKS);
        this.blocksStored = counters.get(CounterType.BLOCKS_STORED);
    }

    /**
     * @param p the pod (registered).
     * @param e a BlockStored for which {@link BlockEvent#isTokenless()} holds.
     */
    void apply(final PodState p, final BlockEvent e) {
        final PodBlockMap map = p.blocks;
        final int n = e.hashCount();
        if (keys.length < n) {
            keys = Arrays.copyOf(keys, Math.max(n, keys.length * 2));
        }
        final long[] k = keys;
        final long[] hashes = e.hashes();
        final long bit = VllmApplier.mediumBit(e.medium());
        int m = 0;
        for (int i = 0; i < n; i++) {
            final long key = map.get(hashes[i]);
            if (key == PodState.MISSING) {
                continue;
            }
            map.store(hashes[i], key, bit);
            tiers.stored(p.slot, key, map, bit, e.locality());
            k[m++] = key;
        }
        if (m < n) {
            final int unknown = n - m;
            unknownBlocks.getAndAdd(unknown);
            errors.report(CounterType.TOKENLESS_UNKNOWN_BLOCKS.typeId(), p.podNumber, () -> "pod " + p.podId
                + ": tokenless BlockStored (offload without token ids) names " + unknown + " block(s) the pod's map"
                + " does not know (their GPU store was missed or they already left); those blocks are skipped");
        }
        if (m > 0) {
            // Normally a no-op: the GPU store indexed them. Parent links are unknown here (0): they only guide
            // which entries a full shard evicts first.
            blocksStored.getAndAdd(index.store(p.slot, k, 0, m));
        }
        applied.increment();
    }
}
