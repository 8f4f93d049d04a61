package io.kvidx.tools.demo;

import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.tokenize.HfTokenizer;

import java.util.SplittableRandom;

/**
 * The demo's request stream as text, for {@code kvidx demo --tokenizer PATH}: a few system prompts shared by many
 * multi-turn conversations, each request a completion prompt of a conversation at a random turn
 * ({@code System: ...}, then {@code User: ...} / {@code Assistant: ...} turns, ending with {@code Assistant:}), so
 * that later turns of a conversation extend earlier ones and every conversation of a group shares its system
 * prompt. The text is generated from the seed (English words, some numbers), the same on the fleet's side and the
 * router's.
 *
 * <p>The fleet, standing for the engines, tokenizes each prompt with the model's tokenizer and stores the router
 * keys of its blocks ({@link #chain}); the demo's router receives only the text ({@link #prompt}) and tokenizes it
 * in its Prepare stage. Prompts are about 150 to 3,000 tokens long.
 *
 * <p><b>Note:</b> not thread safe; one instance per thread.
 */
public final class TextWorkload implements RequestStream {
    /** The model the demo's pods serve, and the seed of its router keys. */
    public static final String MODEL = "demo-model";
    /** Blocks of the longest prompt kept (4,096 tokens at block size 16). */
    public static final int MAX_CHAIN = 256;
    /** Most user turns in a conversation. */
    static final int MAX_TURNS = 8;

    private static final String[] WORDS = ("the a of and to in is that for it as with be by on not this are or"
        + " from at which but have an they you we their has would when if so no will more what about up out into"
        + " can only some could time these two may then first any like now over such our even most made after"
        + " also did many before must through back years where much your way well down should because each just"
        + " those people how too little good very make world still own see work long get here between both life"
        + " being under never day same another know while last might great old year off come since against go"
        + " right used take three request router cache prefix model token block index memory latency engine"
        + " server prompt decode schedule queue worker cluster network storage policy result value number system"
        + " process thread buffer stream record answer question document summary report customer order invoice"
        + " payment account balance transfer ticket issue release version update feature design review change"
        + " table column query filter score weight option default history context conversation message reply"
        + " explain describe compare improve rewrite translate please thanks").split(" ");

    private final long seed;
    private final int conversations;
    private final int[] conversationGroup;
    private final int[] conversationTurns;
    private final String[] systemPrompts;
    private final SplittableRandom random;
    private final HfTokenizer tokenizer;
    private final RouterKeyHasher hasher;
    private final long chainSeed;

    /**
     * @param seed          shared seed: both sides build the same system prompts and conversations.
     * @param streamSeed    seed of this side's request order.
     * @param groups        shared system prompts.
     * @param conversations distinct conversations.
     * @param tokenizer     the model's tokenizer, for {@link #chain}; null on a side that only needs the text.
     * @param blockSize     tokens per block of the router keys.
     */
    public TextWorkload(final long seed, final long streamSeed, final int groups, final int conversations,
        final HfTokenizer tokenizer, final int blockSize) {
        if (groups < 1 || conversations < 1) {
            throw new IllegalArgumentException("need groups >= 1 and conversations >= 1");
        }
        this.seed = seed;
        this.conversations = conversations;
        final SplittableRandom shape = new SplittableRandom(seed);
        systemPrompts = new String[groups];
        for (int g = 0; g < groups; g++) {
            systemPrompts[g] = "System: You are assistant " + g + "." + words(new SplittableRandom(mix(seed, -1 - g)),
                60 + shape.nextInt(240));
        }
        conversationGroup = new int[conversations];
        conversationTurns = new int[conversations];
        for (int c = 0; c < conversations; c++) {
            conversationGroup[c] = shape.nextInt(groups);
            conversationTurns[c] = 1 + shape.nextInt(MAX_TURNS);
        }
        this.random = new SplittableRandom(streamSeed);
        this.tokenizer = tokenizer;
        this.hasher = new RouterKeyHasher(blockSize);
        this.chainSeed = RouterKeyHasher.chainSeed(MODEL, null, null);
    }

    @Override
    public int nextConversation() {
        final double r = random.nextDouble();
        return (int) (r * r * conversations);
    }

    @Override
    public int nextInt(final int bound) {
        return random.nextInt(bound);
    }

    /**
     * @param c conversation id.
     * @return the prompt of a request of conversation {@code c} at a random turn.
     */
    public String prompt(final int c) {
        return prompt(c, 1 + random.nextInt(conversationTurns[c]));
    }

    /**
     * @param c     conversation id.
     * @param turns user turns so far (1 and more).
     * @return the completion prompt after the {@code turns}-th user message.
     */
    public String prompt(final int c, final int turns) {
        final StringBuilder sb = new StringBuilder(systemPrompts[conversationGroup[c]]);
        for (int t = 0; t < turns; t++) {
            if (t > 0) {
                sb.append("\n\nAssistant:").append(words(new SplittableRandom(mix(seed, ((long) c << 8) | 2 * t - 1)),
                    30 + (c + t) % 90));
            }
            sb.append("\n\nUser:").append(words(new SplittableRandom(mix(seed, ((long) c << 8) | 2 * t)),
                15 + (c * 7 + t) % 45));
        }
        return sb.append("\n\nAssistant:").toString();
    }

    /**
     * Tokenizes a prompt of conversation {@code c} (at a random turn) and writes its router keys, as the engine
     * serving it would store its blocks.
     *
     * @param c    conversation id.
     * @param keys output, at least {@link #maxChain()} long.
     * @return chain length.
     * @throws IllegalStateException when this side has no tokenizer.
     */
    @Override
    public int chain(final int c, final long[] keys) {
        if (tokenizer == null) {
            throw new IllegalStateException("this text workload has no tokenizer");
        }
        final int[] ids = tokenizer.encode(prompt(c));
        return hasher.keys(chainSeed, ids, ids.length, keys);
    }

    @Override
    public int maxChain() {
        return MAX_CHAIN;
    }

    private static String words(final SplittableRandom random, final int count) {
        final StringBuilder sb = new StringBuilder();
        for (int i = 0; i < count; i++) {
            sb.append(' ');
            if (random.nextInt(25) == 0) {
                sb.append(random.nextInt(10_000));
            } else {
                sb.append(WORDS[random.nextInt(WORDS.length)]);
            }
            if (random.nextInt(12) == 0) {
                sb.append('.');
            }
        }
        return sb.toString();
    }

    private static long mix(final long seed, final long x) {
        return SyntheticWorkload.mix(seed ^ SyntheticWorkload.mix(x));
    }
}
