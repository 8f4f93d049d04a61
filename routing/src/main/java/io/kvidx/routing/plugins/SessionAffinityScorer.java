package io.kvidx.routing.plugins;

import io.kvidx.routing.LongValue;
import io.kvidx.routing.PickListener;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.RoutingPlan;
import io.kvidx.routing.Scorer;
import io.kvidx.routing.Slot;
import io.kvidx.routing.Slots;

import java.util.Objects;
import java.util.Set;

/**
 * Scores 1 for the pod the request's session was last sent to, 0 for the others (all 0 without a session or a
 * remembered pod), and remembers each pick. Reads {@link Slots#SESSION_KEY}.
 *
 * <p><b>Note:</b> thread safe; the {@link SessionTable} is shared.
 */
public final class SessionAffinityScorer implements Scorer, PickListener {
    private final String name;
    private final SessionTable sessions;

    /**
     * @param name     plugin name.
     * @param sessions session to pod memory.
     */
    public SessionAffinityScorer(final String name, final SessionTable sessions) {
        this.name = name;
        this.sessions = Objects.requireNonNull(sessions, "sessions");
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Set<Slot<?>> reads() {
        return Set.of(Slots.SESSION_KEY);
    }

    @Override
    public void score(final RoutingContext ctx, final double[] scores) {
        final LongValue session = ctx.get(Slots.SESSION_KEY);
        final int remembered = session.isPresent() ? sessions.get(session.get(), System.nanoTime())
            : RoutingPlan.NO_POD;
        for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
            final int s = ctx.candidateSlot(ci);
            scores[s] = s == remembered ? 1.0 : 0.0;
        }
    }

    @Override
    public void onPicked(final RoutingContext ctx, final int slot) {
        final LongValue session = ctx.get(Slots.SESSION_KEY);
        if (session.isPresent() && slot != RoutingPlan.NO_POD) {
            sessions.put(session.get(), slot, System.nanoTime());
        }
    }
}
