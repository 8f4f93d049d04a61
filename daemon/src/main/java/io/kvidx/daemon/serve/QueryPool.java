package io.kvidx.daemon.serve;

import io.netty.util.concurrent.DefaultThreadFactory;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * The HTTP API's query threads: where a query too costly for an event loop is answered (one whose matched pods' tiers
 * take more than {@link #TIER_LOOKUPS_ON_LOOP} tier map lookups), so that the loop goes on serving its other
 * connections. Bounded: {@link #threads()} threads and {@link #QUEUE} queries waiting; beyond, the query is refused
 * (503) and counted. The threads are Netty's {@code FastThreadLocalThread}s, each with its own query scratch.
 *
 * <p><b>Note:</b> {@link #submit} from any thread (the event loops); counters read by the metrics scrape.
 */
final class QueryPool implements AutoCloseable {
    /** Tier map lookups an event loop makes for one answer (about 50-100 µs of lookups). */
    static final int TIER_LOOKUPS_ON_LOOP = 2_048;
    /** Queries that may wait for a query thread. */
    static final int QUEUE = 64;

    private final ThreadPoolExecutor pool;
    private final LongAdder offloaded = new LongAdder();
    private final LongAdder refused = new LongAdder();

    QueryPool() {
        final int threads = Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors() / 2));
        pool = new ThreadPoolExecutor(threads, threads, 0, TimeUnit.MILLISECONDS, new ArrayBlockingQueue<>(QUEUE),
            new DefaultThreadFactory("kvidx-http-query", true), new ThreadPoolExecutor.AbortPolicy());
    }

    /**
     * @param answer the query's answer, to run on a query thread.
     * @return false when the threads and the queue are full (the caller refuses the query).
     */
    boolean submit(final Runnable answer) {
        try {
            pool.execute(answer);
            offloaded.increment();
            return true;
        } catch (final RejectedExecutionException ex) {
            refused.increment();
            return false;
        }
    }

    /**
     * @return query threads.
     */
    int threads() {
        return pool.getMaximumPoolSize();
    }

    /**
     * @return queries answered on the query threads instead of an event loop, since start.
     */
    long offloaded() {
        return offloaded.sum();
    }

    /**
     * @return queries refused (503) because the query threads and their queue were full.
     */
    long refused() {
        return refused.sum();
    }

    /** Stops the threads; queries still waiting are dropped with their connections (the server is closing). */
    @Override
    public void close() {
        pool.shutdownNow();
    }
}
