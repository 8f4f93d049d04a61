package io.kvidx.routing.plugins;

import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.Scorer;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Gives 1 to one candidate and 0 to the others, moving one candidate on per decision (in slot order): with a
 * max-score picker, plain round robin over whatever the filters leave.
 *
 * <p><b>Note:</b> thread safe; the turn counter is shared by all threads.
 */
public final class RoundRobinScorer implements Scorer {
    private final String name;
    private final AtomicLong turn = new AtomicLong();

    /**
     * @param name plugin name.
     */
    public RoundRobinScorer(final String name) {
        this.name = name;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public void score(final RoutingContext ctx, final double[] scores) {
        final int n = ctx.candidateCount();
        final int chosen = ctx.candidateAt((int) Long.remainderUnsigned(turn.getAndIncrement(), n));
        for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
            final int s = ctx.candidateSlot(ci);
            scores[s] = s == chosen ? 1.0 : 0.0;
        }
    }
}
