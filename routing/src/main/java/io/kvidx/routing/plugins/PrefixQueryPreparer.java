package io.kvidx.routing.plugins;

import io.kvidx.routing.BlockKeys;
import io.kvidx.routing.PickListener;
import io.kvidx.routing.PodDepths;
import io.kvidx.routing.Preparer;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.RoutingPlan;
import io.kvidx.routing.Slot;
import io.kvidx.routing.Slots;
import io.kvidx.routing.overlay.PickOverlay;

import java.util.Objects;
import java.util.Set;

/**
 * Finds how many leading blocks of the request's chain each candidate holds. Reads {@link Slots#BLOCK_KEYS},
 * writes {@link Slots#PREFIX_DEPTHS}.
 *
 * <ul>
 *   <li>{@link Mode#INDEX}: from the shared-memory index only.</li>
 *   <li>{@link Mode#INDEX_AND_OVERLAY}: the deeper of the index's answer and the router's own recent picks
 *   ({@link PickOverlay}), so a burst of one prefix sticks to one pod before the engine's events arrive.</li>
 *   <li>{@link Mode#APPROXIMATE}: from the overlay only, for fleets without an event stream (no index needed).</li>
 * </ul>
 * In the overlay modes it also records every pick into the overlay (it is a {@link PickListener}).
 *
 * <p><b>Note:</b> thread safe; the overlay is shared and synchronised.
 */
public final class PrefixQueryPreparer implements Preparer, PickListener {
    /**
     * Where depths come from.
     */
    public enum Mode {
        /** The index. */
        INDEX,
        /** The index, deepened by the overlay. */
        INDEX_AND_OVERLAY,
        /** The overlay alone. */
        APPROXIMATE
    }

    private final String name;
    private final Mode mode;
    private final PickOverlay overlay;

    /**
     * @param name    plugin name.
     * @param mode    where depths come from.
     * @param overlay the overlay (required unless mode is {@link Mode#INDEX}).
     */
    public PrefixQueryPreparer(final String name, final Mode mode, final PickOverlay overlay) {
        this.name = name;
        this.mode = Objects.requireNonNull(mode, "mode");
        if (mode != Mode.INDEX) {
            Objects.requireNonNull(overlay, "overlay is required in mode " + mode);
        }
        this.overlay = mode == Mode.INDEX ? null : overlay;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Set<Slot<?>> reads() {
        return Set.of(Slots.BLOCK_KEYS);
    }

    @Override
    public Set<Slot<?>> writes() {
        return Set.of(Slots.PREFIX_DEPTHS);
    }

    @Override
    public boolean needsIndex() {
        return mode != Mode.APPROXIMATE;
    }

    /**
     * @return the mode.
     */
    public Mode mode() {
        return mode;
    }

    @Override
    public void prepare(final RoutingContext ctx) {
        final BlockKeys keys = ctx.get(Slots.BLOCK_KEYS);
        final PodDepths depths = ctx.get(Slots.PREFIX_DEPTHS);
        final int[] d = depths.depths();
        depths.chainLength(keys.length());
        if (mode == Mode.APPROXIMATE) {
            for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
                final int s = ctx.candidateSlot(ci);
                d[s] = 0;
            }
        } else {
            ctx.cursor().prefixDepths(keys.keys(), keys.length(), ctx.candidateWords(), d);
        }
        if (overlay != null) {
            overlay.deepen(keys.keys(), keys.length(), ctx.candidateWords(), d, System.nanoTime());
        }
    }

    @Override
    public void onPicked(final RoutingContext ctx, final int slot) {
        if (overlay != null && slot != RoutingPlan.NO_POD) {
            final BlockKeys keys = ctx.get(Slots.BLOCK_KEYS);
            overlay.record(keys.keys(), keys.length(), slot, System.nanoTime());
        }
    }
}
