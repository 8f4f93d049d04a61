package io.kvidx.tools.demo;

import java.util.SplittableRandom;

/**
 * A deterministic synthetic request stream with shared prefixes, as a chat fleet sees it: a few system prompts
 * shared by many conversations, and multi-turn conversations whose prompts grow turn by turn. The writer side
 * (the fleet) and the reader side (the router) build the same chains from the same seed, in different processes.
 *
 * <p>Keys are chained like router keys: key i identifies the whole prefix of blocks 0..i.
 *
 * <p><b>Note:</b> not thread safe; one instance per thread.
 */
public final class SyntheticWorkload implements RequestStream {
    private final int groups;
    private final int conversations;
    private final int maxChain;
    private final int[] groupLength;
    private final int[] conversationGroup;
    private final int[] conversationLength;
    private final SplittableRandom random;

    /**
     * @param seed          shared seed: both sides build the same prefixes and conversations.
     * @param streamSeed    seed of this side's request order.
     * @param groups        shared system prompts.
     * @param conversations distinct conversations.
     * @param maxChain      longest chain in blocks.
     */
    public SyntheticWorkload(final long seed, final long streamSeed, final int groups, final int conversations,
        final int maxChain) {
        if (groups < 1 || conversations < 1 || maxChain < 8) {
            throw new IllegalArgumentException("need groups >= 1, conversations >= 1, maxChain >= 8");
        }
        this.groups = groups;
        this.conversations = conversations;
        this.maxChain = maxChain;
        final SplittableRandom shape = new SplittableRandom(seed);
        groupLength = new int[groups];
        for (int g = 0; g < groups; g++) {
            groupLength[g] = 2 + shape.nextInt(Math.max(1, maxChain / 4));
        }
        conversationGroup = new int[conversations];
        conversationLength = new int[conversations];
        for (int c = 0; c < conversations; c++) {
            conversationGroup[c] = shape.nextInt(groups);
            conversationLength[c] = Math.min(maxChain, groupLength[conversationGroup[c]] + 2
                + shape.nextInt(maxChain));
        }
        random = new SplittableRandom(streamSeed);
    }

    /**
     * @return a conversation id, skewed towards popular ones (quadratic skew).
     */
    @Override
    public int nextConversation() {
        final double r = random.nextDouble();
        return (int) (r * r * conversations);
    }

    /**
     * @param bound exclusive bound.
     * @return a uniform random int from this side's stream.
     */
    @Override
    public int nextInt(final int bound) {
        return random.nextInt(bound);
    }

    /**
     * Writes the chain of a request of conversation {@code c} at a random turn: the group prefix then the
     * conversation's own blocks, cut at a random length.
     *
     * @param c    conversation id.
     * @param keys output, at least {@link #maxChain()} long.
     * @return chain length.
     */
    @Override
    public int chain(final int c, final long[] keys) {
        final int group = conversationGroup[c];
        final int prefix = groupLength[group];
        final int full = conversationLength[c];
        final int length = Math.max(prefix, full - random.nextInt(Math.max(1, (full - prefix) + 1)));
        long parent = mix(0x5EED_0000L + group);
        for (int i = 0; i < length; i++) {
            final long block = i < prefix ? mix(((long) group << 32) | i) : mix((1L << 62) | ((long) c << 20) | i);
            parent = mix(parent ^ block);
            keys[i] = parent;
        }
        return length;
    }

    /**
     * @return longest chain.
     */
    @Override
    public int maxChain() {
        return maxChain;
    }

    /**
     * @return conversations.
     */
    public int conversations() {
        return conversations;
    }

    /**
     * @return shared prefixes.
     */
    public int groups() {
        return groups;
    }

    /**
     * SplitMix64's finaliser: a cheap bijective 64-bit mix used to derive synthetic keys.
     *
     * @param x input.
     * @return mixed value.
     */
    public static long mix(final long x) {
        long z = x + 0x9E37_79B9_7F4A_7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58_476D_1CE4_E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D0_49BB_1331_11EBL;
        return z ^ (z >>> 31);
    }
}
