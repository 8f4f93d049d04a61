package io.kvidx.routing;

import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The {@link PodRegistry}'s live load figures per pod slot: requests queued and running (and their sum, kept in
 * step with both), tokens in flight, KV-cache utilisation, Dynamo-style prefill tokens and active decode blocks,
 * and the concurrency cap.
 *
 * <p>Plain atomics: the router's request threads update them ({@link #requestStarted} / {@link #requestFinished},
 * or {@link #load} from polled metrics) while deciders read them with opaque reads (always a fresh value, no
 * ordering between figures).
 *
 * <p><b>Note:</b> thread safe and allocation-free; any thread may write. {@link #reset} runs under the registry's
 * lock when it (re-)learns a slot.
 */
final class PodLoad {
    private final AtomicIntegerArray queued = new AtomicIntegerArray(PodRegistry.MAX_PODS);
    private final AtomicIntegerArray running = new AtomicIntegerArray(PodRegistry.MAX_PODS);
    private final AtomicIntegerArray requests = new AtomicIntegerArray(PodRegistry.MAX_PODS);
    private final AtomicIntegerArray maxConcurrency = new AtomicIntegerArray(PodRegistry.MAX_PODS);
    private final AtomicLongArray tokens = new AtomicLongArray(PodRegistry.MAX_PODS);
    private final AtomicLongArray kvUtilizationBits = new AtomicLongArray(PodRegistry.MAX_PODS);
    private final AtomicLongArray prefillTokens = new AtomicLongArray(PodRegistry.MAX_PODS);
    private final AtomicLongArray decodeBlocks = new AtomicLongArray(PodRegistry.MAX_PODS);

    /**
     * Zeroes every figure of the slot and its concurrency cap, for a pod the registry (re-)learns.
     */
    void reset(final int slot) {
        queued.set(slot, 0);
        running.set(slot, 0);
        requests.set(slot, 0);
        tokens.set(slot, 0);
        prefillTokens.set(slot, 0);
        decodeBlocks.set(slot, 0);
        kvUtilizationBits.set(slot, 0);
        maxConcurrency.set(slot, 0);
    }

    void load(final int slot, final int queued, final int running, final long tokens) {
        final int oldQueued = this.queued.getAndSet(slot, queued);
        final int oldRunning = this.running.getAndSet(slot, running);
        this.requests.addAndGet(slot, queued - oldQueued + running - oldRunning);
        this.tokens.set(slot, tokens);
    }

    void requestStarted(final int slot, final int promptTokens) {
        running.incrementAndGet(slot);
        requests.incrementAndGet(slot);
        tokens.addAndGet(slot, promptTokens);
    }

    void requestFinished(final int slot, final int promptTokens) {
        running.decrementAndGet(slot);
        requests.decrementAndGet(slot);
        tokens.addAndGet(slot, -promptTokens);
    }

    int queued(final int slot) {
        return queued.getOpaque(slot);
    }

    int running(final int slot) {
        return running.getOpaque(slot);
    }

    int requests(final int slot) {
        return requests.getOpaque(slot);
    }

    long tokens(final int slot) {
        return tokens.getOpaque(slot);
    }

    void kvUtilization(final int slot, final double utilization) {
        if (!(utilization >= 0 && utilization <= 1)) {
            throw new IllegalArgumentException("utilization must be in [0, 1]: " + utilization);
        }
        kvUtilizationBits.set(slot, Double.doubleToRawLongBits(utilization));
    }

    double kvUtilization(final int slot) {
        return Double.longBitsToDouble(kvUtilizationBits.getOpaque(slot));
    }

    void activeBlocks(final int slot, final long prefillTokens, final long decodeBlocks) {
        this.prefillTokens.set(slot, prefillTokens);
        this.decodeBlocks.set(slot, decodeBlocks);
    }

    long prefillTokens(final int slot) {
        return prefillTokens.getOpaque(slot);
    }

    long decodeBlocks(final int slot) {
        return decodeBlocks.getOpaque(slot);
    }

    void maxConcurrency(final int slot, final int cap) {
        if (cap < 0) {
            throw new IllegalArgumentException("cap must be >= 0: " + cap);
        }
        maxConcurrency.set(slot, cap);
    }

    int maxConcurrency(final int slot) {
        return maxConcurrency.getOpaque(slot);
    }
}
