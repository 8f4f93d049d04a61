package io.kvidx.routing.plugins;

import io.kvidx.routing.PodDepths;
import io.kvidx.routing.PodRegistry;
import io.kvidx.routing.RoutingContext;
import io.kvidx.routing.Scorer;
import io.kvidx.routing.Slot;
import io.kvidx.routing.Slots;

import java.util.Objects;
import java.util.Set;

/**
 * Dynamo's KV-router cost, turned into a score. For each candidate:
 * <pre>
 *   prefill_blocks = (queued_prefill_tokens + prompt_tokens - cached_blocks * block_size) / block_size
 *   decode_blocks  = active_decode_blocks + ceil(prompt_tokens / block_size)
 *   cost           = overlap_weight * prefill_blocks + decode_blocks          (lower is better)
 * </pre>
 * where {@code cached_blocks} is the pod's prefix depth and the queued prefill tokens and active decode blocks
 * are the pod's load ({@link PodRegistry#activeBlocks}). The score is {@code (max - cost) / (max - min)} over the
 * candidates (1 for all when costs are equal), so the cheapest pod scores 1. Reads {@link Slots#PREFIX_DEPTHS},
 * {@link Slots#TOKENS} and {@link Slots#REQUEST} (prompt length when no token ids are given).
 *
 * <p><b>Note:</b> thread safe (stateless).
 */
public final class DynamoCostScorer implements Scorer {
    /** Dynamo's default overlap score weight. */
    public static final double OVERLAP_WEIGHT_DEFAULT = 1.0;

    private final String name;
    private final PodRegistry registry;
    private final int blockSize;
    private final double overlapWeight;

    /**
     * @param name          plugin name.
     * @param registry      per-pod prefill tokens and decode blocks.
     * @param blockSize     tokens per block.
     * @param overlapWeight weight of the prefill term (>= 0).
     */
    public DynamoCostScorer(final String name, final PodRegistry registry, final int blockSize,
        final double overlapWeight) {
        if (blockSize <= 0 || !(overlapWeight >= 0) || Double.isInfinite(overlapWeight)) {
            throw new IllegalArgumentException("blockSize > 0 and finite overlapWeight >= 0 required: " + blockSize
                + ", " + overlapWeight);
        }
        this.name = name;
        this.registry = Objects.requireNonNull(registry, "registry");
        this.blockSize = blockSize;
        this.overlapWeight = overlapWeight;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Set<Slot<?>> reads() {
        return Set.of(Slots.PREFIX_DEPTHS, Slots.TOKENS, Slots.REQUEST);
    }

    /**
     * @param cachedBlocks        pod's prefix depth.
     * @param promptTokens        request's prompt length.
     * @param queuedPrefillTokens pod's queued prefill tokens.
     * @param activeDecodeBlocks  pod's active decode blocks.
     * @return the cost.
     */
    public double cost(final int cachedBlocks, final int promptTokens, final long queuedPrefillTokens,
        final long activeDecodeBlocks) {
        final long newTokens = Math.max(0, promptTokens - (long) cachedBlocks * blockSize);
        final double prefillBlocks = (double) (queuedPrefillTokens + newTokens) / blockSize;
        final double decodeBlocks = activeDecodeBlocks + (promptTokens + blockSize - 1) / blockSize;
        return overlapWeight * prefillBlocks + decodeBlocks;
    }

    @Override
    public void score(final RoutingContext ctx, final double[] scores) {
        final PodDepths depths = ctx.get(Slots.PREFIX_DEPTHS);
        final int tokens = ctx.get(Slots.TOKENS).length();
        final int fromMeta = ctx.get(Slots.REQUEST).promptTokens();
        final int isl = tokens > 0 ? tokens : Math.max(fromMeta, depths.chainLength() * blockSize);
        double min = Double.MAX_VALUE;
        double max = -Double.MAX_VALUE;
        for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
            final int s = ctx.candidateSlot(ci);
            final double c = cost(depths.depth(s), isl, registry.prefillTokens(s), registry.decodeBlocks(s));
            scores[s] = c;
            min = Math.min(min, c);
            max = Math.max(max, c);
        }
        final double range = max - min;
        final double inv = range <= 0 ? 0 : 1.0 / range;
        for (int ci = 0, cn = ctx.sealCandidates(); ci < cn; ci++) {
            final int s = ctx.candidateSlot(ci);
            scores[s] = range <= 0 ? 1.0 : (max - scores[s]) * inv;
        }
    }
}
