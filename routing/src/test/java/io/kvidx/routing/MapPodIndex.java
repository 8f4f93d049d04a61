package io.kvidx.routing;

import io.kvidx.client.index.IndexException;

import java.util.HashMap;
import java.util.Map;

/**
 * Reference-model {@link PodIndex} for unit tests: a plain map of block key to the set of pods holding it,
 * answering depths by walking the chain from its first block.
 */
class MapPodIndex implements PodIndex {
    private final Map<Long, long[]> blocks = new HashMap<>();
    private final long[] alive = new long[4];
    private final Map<Integer, PodDescription> pods = new HashMap<>();
    private final int[] generations = new int[256];
    private long podTableVersion;
    volatile boolean available = true;
    volatile boolean failQueries;
    int queries;

    /** Gives a slot to a pod (a new generation), in the writer's order: entry, version, alive bit. */
    MapPodIndex pod(final int slot, final String id, final String model) {
        pods.put(slot, new PodDescription(slot, id, model, ++generations[slot],
            io.kvidx.client.index.IndexDescriptor.POD_STATE_ALIVE));
        podTableVersion++;
        alive[slot >>> 6] |= 1L << slot;
        return this;
    }

    /** Sets or clears a pod's suspect flag (the pod table's, layout 3.2), bumping the pod table version. */
    MapPodIndex suspect(final int slot, final boolean suspect) {
        final PodDescription d = pods.get(slot);
        pods.put(slot, new PodDescription(slot, d.podId(), d.model(), d.generation(), d.state(), suspect));
        podTableVersion++;
        return this;
    }

    MapPodIndex down(final int slot) {
        alive[slot >>> 6] &= ~(1L << slot);
        return this;
    }

    /** Frees a slot: down, its bits swept, its entry free. */
    MapPodIndex free(final int slot) {
        down(slot);
        for (final long[] holders : blocks.values()) {
            holders[slot >>> 6] &= ~(1L << slot);
        }
        pods.remove(slot);
        podTableVersion++;
        return this;
    }

    MapPodIndex store(final int slot, final long[] keys, final int length) {
        for (int i = 0; i < length; i++) {
            blocks.computeIfAbsent(keys[i], k -> new long[4])[slot >>> 6] |= 1L << slot;
        }
        return this;
    }

    @Override
    public boolean isAvailable() {
        return available;
    }

    @Override
    public long aliveWord(final int word) {
        return available ? alive[word] : 0;
    }

    @Override
    public long podTableVersion() {
        return available ? podTableVersion : NO_POD_TABLE_VERSION;
    }

    @Override
    public int maxChainLength() {
        return 8192;
    }

    @Override
    public PodDescription describe(final int slot) {
        return pods.get(slot);
    }

    @Override
    public Cursor newCursor() {
        return (keys, length, candidates, depthBySlot) -> {
            queries++;
            if (failQueries) {
                throw new IndexException("test: index failed");
            }
            int max = 0;
            for (int w = 0; w < 4; w++) {
                long bits = candidates[w] & alive[w];
                long all = candidates[w];
                while (all != 0) {
                    depthBySlot[(w << 6) + Long.numberOfTrailingZeros(all)] = 0;
                    all &= all - 1;
                }
                while (bits != 0) {
                    final int slot = (w << 6) + Long.numberOfTrailingZeros(bits);
                    bits &= bits - 1;
                    int d = 0;
                    while (d < length) {
                        final long[] holders = blocks.get(keys[d]);
                        if (holders == null || (holders[slot >>> 6] & (1L << slot)) == 0) {
                            break;
                        }
                        d++;
                    }
                    depthBySlot[slot] = d;
                    max = Math.max(max, d);
                }
            }
            return max;
        };
    }
}
