package io.kvidx.routing.plugins;

import io.kvidx.routing.Filter;
import io.kvidx.routing.PodIndex;
import io.kvidx.routing.RoutingContext;

import java.util.Objects;

/**
 * Removes pods whose alive bit in the index is clear (the daemon declared them down). Needs the index: skipped
 * while the selector falls back.
 *
 * <p><b>Note:</b> thread safe (stateless).
 */
public final class AliveFilter implements Filter {
    private final String name;
    private final PodIndex index;

    /**
     * @param name  plugin name.
     * @param index the index.
     */
    public AliveFilter(final String name, final PodIndex index) {
        this.name = name;
        this.index = Objects.requireNonNull(index, "index");
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public boolean needsIndex() {
        return true;
    }

    @Override
    public void filter(final RoutingContext ctx) {
        for (int w = 0; w < 4; w++) {
            long dead = ctx.candidateWord(w) & ~index.aliveWord(w);
            while (dead != 0) {
                ctx.removeCandidate((w << 6) + Long.numberOfTrailingZeros(dead));
                dead &= dead - 1;
            }
        }
    }
}
