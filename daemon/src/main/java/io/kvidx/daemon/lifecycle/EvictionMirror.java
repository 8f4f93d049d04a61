package io.kvidx.daemon.lifecycle;

import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.counters.IngestCounters;
import io.kvidx.daemon.index.IndexWriter;
import org.agrona.concurrent.Agent;

/**
 * Mirrors the index's and the tier map's eviction counts into their counters once a second.
 *
 * <p><b>Note:</b> run by one {@link org.agrona.concurrent.AgentRunner}; the index's counts are read racily.
 */
final class EvictionMirror implements Agent {
    private final IndexWriter index;
    private final IngestCounters counters;
    private long next;

    EvictionMirror(final IndexWriter index, final IngestCounters counters) {
        this.index = index;
        this.counters = counters;
    }

    @Override
    public int doWork() {
        final long now = System.currentTimeMillis();
        if (now < next) {
            return 0;
        }
        next = now + 1000;
        counters.get(CounterType.EVICTIONS).setRelease(index.evictions());
        counters.get(CounterType.TIER_MAP_EVICTIONS).setRelease(index.tiers().evictions());
        return 1;
    }

    @Override
    public String roleName() {
        return "kvidx-eviction-mirror";
    }
}
