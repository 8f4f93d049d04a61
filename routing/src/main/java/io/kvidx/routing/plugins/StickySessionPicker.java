package io.kvidx.routing.plugins;

import io.kvidx.routing.LongValue;
import io.kvidx.routing.PickListener;
import io.kvidx.routing.Picker;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.RoutingPlan;
import io.kvidx.routing.Slot;
import io.kvidx.routing.Slots;

import java.util.HashSet;
import java.util.Objects;
import java.util.Set;

/**
 * Sends a session back to the pod it was last sent to while that pod is still a candidate; otherwise (new
 * session, pod filtered out or gone) asks its delegate picker, and remembers the pick. Reads
 * {@link Slots#SESSION_KEY} and whatever the delegate reads.
 *
 * <p><b>Note:</b> thread safe; the {@link SessionTable} is shared.
 */
public final class StickySessionPicker implements Picker, PickListener {
    private final String name;
    private final SessionTable sessions;
    private final Picker delegate;

    /**
     * @param name     plugin name.
     * @param sessions session to pod memory.
     * @param delegate picker for sessions without a usable pod.
     */
    public StickySessionPicker(final String name, final SessionTable sessions, final Picker delegate) {
        this.name = name;
        this.sessions = Objects.requireNonNull(sessions, "sessions");
        this.delegate = Objects.requireNonNull(delegate, "delegate");
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Set<Slot<?>> reads() {
        final Set<Slot<?>> r = new HashSet<>(delegate.reads());
        r.add(Slots.SESSION_KEY);
        return r;
    }

    @Override
    public int pick(final RoutingContext ctx, final double[] totals) {
        final LongValue session = ctx.get(Slots.SESSION_KEY);
        if (session.isPresent()) {
            final int slot = sessions.get(session.get(), System.nanoTime());
            if (slot != RoutingPlan.NO_POD && ctx.isCandidate(slot)) {
                return slot;
            }
        }
        return delegate.pick(ctx, totals);
    }

    @Override
    public void onPicked(final RoutingContext ctx, final int slot) {
        final LongValue session = ctx.get(Slots.SESSION_KEY);
        if (session.isPresent() && slot != RoutingPlan.NO_POD) {
            sessions.put(session.get(), slot, System.nanoTime());
        }
    }
}
