package io.kvidx.daemon.serve;

import io.kvidx.client.index.IndexException;
import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.PodSet;
import io.kvidx.client.index.DataParallelRanks;
import io.kvidx.daemon.membership.Engine;
import io.kvidx.daemon.membership.Membership;

import java.util.HashMap;
import java.util.Map;

/**
 * What the API needs to know about the cell's pods, rebuilt only when the index's pod table or the membership
 * table changed: per slot the pod's instance id and data-parallel rank (so answers come back in the peers' shape),
 * its generation (for the tier map), and per (model, routing group) the pod set a query considers. Queries read the
 * current view without a lock; a thread that sees the pod table's version move builds a new one and publishes it
 * (several may build at once; each builds the same thing).
 *
 * <p><b>Note:</b> immutable once built; {@link Source} publishes it through a volatile field.
 */
final class PodTableView {
    final long podTableVersion;
    final Map<String, Engine> engines;
    final String[] instance;
    /** Per slot, a small number shared by the slots of one instance (to group an answer without comparing ids). */
    final int[] instanceIndex;
    /** Per slot, its rank as the JSON key ("0", "1", ...). */
    final String[] rankName;
    final int[] dpRank;
    /** Per slot, the model its pod serves ("" when it named none). */
    final String[] model;
    final int[] generation;
    final boolean[] present;
    /** model → routing group → candidate pods. */
    private final Map<String, Map<String, PodSet>> candidates;

    private PodTableView(final IndexReader reader, final Membership membership, final long version) {
        this.podTableVersion = version;
        this.engines = membership == null ? Map.of() : membership.engines();
        final int n = reader.maxPods();
        instance = new String[n];
        instanceIndex = new int[n];
        rankName = new String[n];
        dpRank = new int[n];
        model = new String[n];
        final Map<String, Integer> indices = new HashMap<>();
        generation = new int[n];
        present = new boolean[n];
        candidates = new HashMap<>();
        for (int slot = 0; slot < n; slot++) {
            final IndexReader.PodInfo info = reader.pod(slot);
            if (info == null || info.state() == 0 || info.podId() == null) {
                continue;
            }
            present[slot] = true;
            generation[slot] = info.generation();
            final int rank = DataParallelRanks.rankOf(info.podId());
            dpRank[slot] = rank;
            instance[slot] = rank == 0 ? info.podId() : DataParallelRanks.basePodId(info.podId());
            instanceIndex[slot] = indices.computeIfAbsent(instance[slot], k -> indices.size());
            rankName[slot] = Integer.toString(rank);
            final Engine e = engines.get(info.podId());
            final String group = e == null ? Engine.DEFAULT_GROUP : e.routingGroup();
            model[slot] = info.model() == null ? "" : info.model();
            if (info.state() != IndexDescriptor.POD_STATE_ALIVE) {
                // Down and being swept (draining): named while its entries go, but it serves its model no more, so
                // a model whose pods are all down is unknown at once (Dynamo's 404), not once the sweep ends.
                continue;
            }
            candidates.computeIfAbsent(model[slot], k -> new HashMap<>()).computeIfAbsent(group, k -> new PodSet())
                .add(slot);
        }
        // Registered engines that have published nothing yet: their model is known, with no pod to answer.
        for (final Engine e : engines.values()) {
            candidates.computeIfAbsent(e.model() == null ? "" : e.model(), k -> new HashMap<>())
                .computeIfAbsent(e.routingGroup(), k -> new PodSet());
        }
    }

    /**
     * @param model a model name ("" for pods registered without one).
     * @param group a routing group.
     * @return the pods serving it in that group, or null when none is known (an unknown model).
     */
    PodSet candidates(final String model, final String group) {
        final Map<String, PodSet> byGroup = candidates.get(model);
        return byGroup == null ? null : byGroup.get(group);
    }

    /**
     * @return the only model the cell serves, or null when it serves none or several.
     */
    String onlyModel() {
        return candidates.size() == 1 ? candidates.keySet().iterator().next() : null;
    }

    /** Publishes the current view and rebuilds it when the pod table or the membership table moved. */
    static final class Source {
        /** Attempts at reading the pod table, each bounded by the reader's read bound per entry. */
        static final int REBUILD_ATTEMPTS = 4;

        private final IndexReader reader;
        private final Membership membership;
        private volatile PodTableView current;

        Source(final IndexReader reader, final Membership membership) {
            this.reader = reader;
            this.membership = membership;
        }

        PodTableView current() {
            final PodTableView v = current;
            final long version = reader.podTableVersion();
            if (v != null && v.podTableVersion == version
                && (membership == null || v.engines == membership.engines())) {
                return v;
            }
            // A pod entry the writer is changing stays locked for microseconds, longer when its thread is preempted:
            // a few bounded attempts, then the documented "unavailable" answer (never an internal error).
            for (int attempt = 1; ; attempt++) {
                try {
                    final PodTableView fresh = new PodTableView(reader, membership, version);
                    current = fresh;
                    return fresh;
                } catch (final IndexException ex) {
                    if (attempt == REBUILD_ATTEMPTS) {
                        throw new ApiException(503, ApiException.UNAVAILABLE, "the pod table is changing: "
                            + ex.getMessage());
                    }
                    Thread.onSpinWait();
                }
            }
        }

        /**
         * @param slot a slot.
         * @return the generation of the pod the current view saw in it (for the tier map).
         */
        int generation(final int slot) {
            final PodTableView v = current;
            return v == null ? -1 : v.generation[slot];
        }
    }
}
