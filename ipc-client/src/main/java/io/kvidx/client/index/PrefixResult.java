package io.kvidx.client.index;

/**
 * Caller-owned result of a prefix query: for each pod that holds at least one leading block, its slot and depth
 * (the number of leading blocks of the chain it holds). Pods not listed hold depth 0.
 *
 * <p>Reused across queries without allocation: each query overwrites it. {@link #depthOf(int)} answers for any
 * slot in O(1).
 *
 * <p><b>Note:</b> not thread safe; one per querying thread.
 */
public final class PrefixResult {
    static final int FRAME = 6;
    static final int MAX_FRAMES = 64;
    /** Prompt roots whose common depths a result keeps (a power of two). */
    static final int ROOT_SLOTS = 64;
    /** A root's slot: the top bits of its Fibonacci hash ({@link IndexDescriptor#spread}). */
    private static final int ROOT_SHIFT = Long.SIZE - Integer.numberOfTrailingZeros(ROOT_SLOTS);

    final long[] stack = new long[FRAME * MAX_FRAMES];
    /** The ranges of one level of a long chain's search ({@link LevelSearch}): at most one per pod. */
    final long[] level = new long[FRAME * IndexDescriptor.MAX_PODS];
    /** The next level's ranges. */
    final long[] nextLevel = new long[FRAME * IndexDescriptor.MAX_PODS];
    final long[] words = new long[IndexDescriptor.POD_WORDS];
    private final int[] slots = new int[IndexDescriptor.MAX_PODS];
    private final int[] depthBySlot = new int[IndexDescriptor.MAX_PODS];
    /** Scratch: the home entry offsets of the chain being prefetched; grown, never shrunk. */
    private long[] offsets = new long[64];
    /** Sum of prefetched words: keeps the prefetch loads observable so the JIT cannot drop them. */
    long sink;
    /** The pod table version the query saw, loaded after all its other loads. */
    long podTableVersion;
    private int count;
    private int chainLength;
    private int probes;
    /**
     * The share of the lines loaded up front that the recent searches made with this result probed, in 1/256ths,
     * averaged over about the last 8 (each search weighs 1/8): probes over the 64 lines a search loads before it
     * starts when it loads ahead in bulk (a chain of up to 64 blocks whole, block 0 and 6 tree levels of a longer
     * one). Starts at 256, as if every line were probed. It chooses how far ahead the next search loads
     * ({@link ChainSearch}): pods that hold a prompt to several depths make the search probe many of those lines,
     * pods that hold it to one depth (a shared system prompt, the Mooncake trace's shape) a handful.
     */
    private int probedShare = 256;
    /**
     * The depth that the most pods held in the last answer of a narrow search (0 before one): the next narrow search
     * of a prompt whose root ({@link #rootKeys}) has no depth of its own probes there first ({@link LevelSearch}).
     */
    private int commonDepth;
    /**
     * Per prompt root (the key of a chain's block 0; direct-mapped by its Fibonacci hash, {@value #ROOT_SLOTS}
     * slots, a root replacing the one in its slot): the depth that the most pods held in the last narrow answer for a
     * prompt with that root, in {@link #rootDepths}. The next narrow search of a prompt with that root probes there
     * first, so a prompt whose holders stop at a common prefix, as the trace's do at its shared system prompt, is
     * answered in three probes, and a thread that alternates between tenants with system prompts of different
     * lengths guesses each one's own (ADR 0023, decision 7).
     */
    private final long[] rootKeys = new long[ROOT_SLOTS];
    private final int[] rootDepths = new int[ROOT_SLOTS];

    void reset(final int chainLength) {
        for (int i = 0; i < count; i++) {
            depthBySlot[slots[i]] = 0;
        }
        count = 0;
        probes = 0;
        this.chainLength = chainLength;
    }

    /**
     * Records the search just made.
     *
     * @param probes keys it probed.
     * @param length the chain's length.
     */
    void searched(final int probes, final int length) {
        final int bulk = Math.max(1, Math.min(length, LevelSearch.WHOLE_CHAIN_PREFETCH));
        final int share = Math.min(256, (probes << 8) / bulk);
        probedShare += (share - probedShare) >> 3;
    }

    /**
     * @param root the key of the chain's block 0.
     * @return the depth to probe first: the last narrow answer's common depth for that root, else for any root (0
     * before any narrow search).
     */
    int commonDepth(final long root) {
        final int i = rootSlot(root);
        return rootKeys[i] == root ? rootDepths[i] : commonDepth;
    }

    /**
     * Records a narrow answer's common depth for the chain's root (and as the thread's latest).
     *
     * @param root  the key of the chain's block 0.
     * @param depth the depth that the most pods held.
     */
    void commonDepth(final long root, final int depth) {
        final int i = rootSlot(root);
        rootKeys[i] = root;
        rootDepths[i] = depth;
        commonDepth = depth;
    }

    private static int rootSlot(final long root) {
        return (int) (IndexDescriptor.spread(root) >>> ROOT_SHIFT);
    }

    /** @return true when the recent searches probed at least a quarter of what a bulk load brings in up front. */
    boolean bulkPays() {
        return probedShare >= 64;
    }

    long[] offsets(final int length) {
        if (offsets.length < length) {
            offsets = new long[Math.max(length, offsets.length * 2)];
        }
        return offsets;
    }

    void addAll(final long w0, final long w1, final long w2, final long w3, final int depth) {
        if (depth > 0) {
            addWord(w0, 0, depth);
            addWord(w1, 64, depth);
            addWord(w2, 128, depth);
            addWord(w3, 192, depth);
        }
    }

    /** Adds the pods of word 0 (slots 0..63) at a depth {@code >= 1}. */
    void addWord0(final long word, final int depth) {
        addWord(word, 0, depth);
    }

    private void addWord(final long word, final int base, final int depth) {
        long w = word;
        while (w != 0) {
            final int slot = base + Long.numberOfTrailingZeros(w);
            w &= w - 1;
            slots[count++] = slot;
            depthBySlot[slot] = depth;
        }
    }

    void probes(final int probes) {
        this.probes = probes;
    }

    /**
     * @return number of pods with depth {@code >= 1}.
     */
    public int count() {
        return count;
    }

    /**
     * @param i index in [0, count()).
     * @return the pod slot of the i-th listed pod (no particular order).
     */
    public int slot(final int i) {
        return slots[i];
    }

    /**
     * @param i index in [0, count()).
     * @return the depth of the i-th listed pod.
     */
    public int depth(final int i) {
        return depthBySlot[slots[i]];
    }

    /**
     * @param slot a pod slot.
     * @return its depth, 0 when it holds no leading block (or was not a candidate).
     */
    public int depthOf(final int slot) {
        return depthBySlot[slot];
    }

    /**
     * @return the deepest depth of any pod, 0 when none holds the first block.
     */
    public int maxDepth() {
        int max = 0;
        for (int i = 0; i < count; i++) {
            max = Math.max(max, depthBySlot[slots[i]]);
        }
        return max;
    }

    /**
     * @return the length of the chain queried.
     */
    public int chainLength() {
        return chainLength;
    }

    /**
     * The pod table version the query saw, loaded after every alive word and entry it read (layout 3.1). When it
     * equals the version a caller's slot-to-pod mapping was read at, every slot of this answer belongs to the pod
     * that mapping names; when it differs, read the pod table again before naming pods (a slot may have been given
     * to another pod). See {@link IndexReader#podTableVersion()}.
     *
     * @return the pod table version of the query's answer.
     */
    public long podTableVersion() {
        return podTableVersion;
    }

    /**
     * @return index lookups the query made (a cost measure).
     */
    public int probes() {
        return probes;
    }
}
