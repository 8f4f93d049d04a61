package io.kvidx.bench.epp;

import io.kvidx.bench.tokenize.BenchTexts;
import io.kvidx.bench.trace.TraceBlocks;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;
import io.kvidx.tokenize.HfTokenizer;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * What {@code bench epp} routes over: a real index written by the daemon's {@link IndexWriter} into a temporary cell
 * (a 64-pod cell, as {@code kvidx daemon --max-pods 64}; the writer heartbeats as the daemon does, so readers take
 * it for live), {@code pods} pods of one model, and the prompts. Each prompt's block chain is held whole by its
 * "home" pod and to random shallower depths by {@value #OTHER_HOLDERS} other pods, so the cache-aware decision reads
 * several pods' drop-off points and has one deepest pod; unrelated chains of {@value #FILLER_CHAIN} blocks on random
 * pods then fill the index to {@code indexBlocks} distinct blocks, so the decisions meet an index of a realistic size
 * (2^20 blocks: a 32 MiB file, not in this VM's cache) rather than a few hot lines.
 *
 * <p><b>Note:</b> built and closed by one thread; the heartbeat runs on its own.
 */
final class EppFixture implements AutoCloseable {
    /** The model every pod serves and every request names (the router keys are seeded with it). */
    static final String MODEL = TraceBlocks.MODEL;
    /** Tokens per block (the router's and vLLM's default). */
    static final int BLOCK = 16;
    /** The cell's pod capacity. */
    static final int MAX_PODS = 64;
    /** Pods holding a prompt to a shallower depth than its home pod. */
    static final int OTHER_HOLDERS = 3;
    /** Blocks per filler chain. */
    static final int FILLER_CHAIN = 32;
    /** The index cell's name. */
    static final String CELL = "epp-bench";
    private static final int SHARDS = 256;

    /**
     * The prompts of one length, in the order they are sent.
     *
     * @param name    a label: {@code "<tokens> ids"} or {@code "<tokens> text"}.
     * @param tokens  tokens per prompt.
     * @param text    a text prompt (tokenized by the picker) rather than token ids.
     * @param bodies  the completions request bodies.
     * @param texts   the prompts' text (text prompts), else null.
     * @param home    the endpoint of the pod holding each prompt whole (the deepest holder).
     */
    record PromptSet(String name, int tokens, boolean text, List<byte[]> bodies, List<String> texts,
        List<String> home) {
        /** @return the mean body size, bytes. */
        long meanBodyBytes() {
            long sum = 0;
            for (final byte[] b : bodies) {
                sum += b.length;
            }
            return bodies.isEmpty() ? 0 : sum / bodies.size();
        }
    }

    private final Path dir;
    private final IndexWriter writer;
    private final ScheduledExecutorService beats;
    private final int[] slots;
    private final RouterKeyHasher hasher = new RouterKeyHasher(BLOCK);
    private final long seed = RouterKeyHasher.chainSeed(MODEL, null, null);
    private final SplittableRandom random;
    private final List<PromptSet> sets = new ArrayList<>();

    /**
     * Creates the cell and registers the pods; prompts are added with {@link #idPrompts} and {@link #textPrompts},
     * then {@link #fill} completes the index.
     *
     * @param pods        pods (at most {@value #MAX_PODS}).
     * @param indexBlocks distinct blocks the index holds once filled.
     * @param randomSeed  seed of the prompts, depths and filler.
     * @throws IOException when the directory cannot be made.
     */
    EppFixture(final int pods, final long indexBlocks, final long randomSeed) throws IOException {
        final Path shm = Path.of("/dev/shm");
        this.dir = Files.createTempDirectory(Files.isDirectory(shm) ? shm
            : Path.of(System.getProperty("java.io.tmpdir")), "kvidx-epp-bench-");
        // 30 % headroom (shards fill unevenly) so that nothing is evicted while loading.
        this.writer = IndexWriter.create(new IndexWriterContext().dir(dir).cell(CELL).shardCount(SHARDS)
            .capacityBlocks(indexBlocks * 13 / 10 + (long) MAX_PODS * SHARDS).blockSize(BLOCK).maxPods(MAX_PODS)
            .deleteOnClose(true));
        this.slots = new int[pods];
        for (int p = 0; p < pods; p++) {
            slots[p] = writer.registerPod(podId(p), MODEL);
        }
        this.random = new SplittableRandom(randomSeed);
        this.beats = Executors.newSingleThreadScheduledExecutor(r -> {
            final Thread t = new Thread(r, "kvidx-bench-epp-heartbeat");
            t.setDaemon(true);
            return t;
        });
        beats.scheduleAtFixedRate(() -> writer.heartbeat(System.currentTimeMillis()), 0, 100,
            TimeUnit.MILLISECONDS);
    }

    /**
     * @param p pod number.
     * @return its id.
     */
    static String podId(final int p) {
        return String.format("pod-%02d", p);
    }

    /**
     * @param p pod number.
     * @return the URL the picker is told for it (its host:port is the endpoint answered).
     */
    static String podUrl(final int p) {
        return "http://" + endpoint(p);
    }

    /**
     * @param p pod number.
     * @return the endpoint the picker answers for it.
     */
    static String endpoint(final int p) {
        return "10.1." + (p / 200) + "." + (p % 200 + 1) + ":8000";
    }

    /**
     * Adds {@code count} token-id prompts of {@code tokens} tokens and stores their chains.
     *
     * @param count  prompts.
     * @param tokens tokens each.
     * @return the prompts.
     */
    PromptSet idPrompts(final int count, final int tokens) {
        final List<byte[]> bodies = new ArrayList<>();
        final List<String> home = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            final int[] ids = new int[tokens];
            for (int t = 0; t < tokens; t++) {
                ids[t] = random.nextInt(TraceBlocks.VOCABULARY);
            }
            home.add(store(ids));
            bodies.add(idsBody(ids));
        }
        final PromptSet s = new PromptSet(tokens + " ids", tokens, false, List.copyOf(bodies), null,
            List.copyOf(home));
        sets.add(s);
        return s;
    }

    /**
     * Adds {@code count} text prompts of exactly {@code tokens} tokens under {@code tokenizer} (the picker's) and
     * stores their chains (of the token ids the tokenizer makes of them, as the picker will).
     *
     * @param tokenizer the tokenizer (adding special tokens, as the router's tokenize stage).
     * @param count     prompts.
     * @param tokens    tokens each.
     * @return the prompts.
     */
    PromptSet textPrompts(final HfTokenizer tokenizer, final int count, final int tokens) {
        final BenchTexts pool = BenchTexts.generate(tokenizer, count, tokens, random.nextLong());
        final List<byte[]> bodies = new ArrayList<>();
        final List<String> texts = new ArrayList<>();
        final List<String> home = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            home.add(store(pool.ids(i)));
            texts.add(pool.text(i));
            bodies.add(("{\"model\":\"" + MODEL + "\",\"max_tokens\":1,\"prompt\":" + quote(pool.text(i)) + "}")
                .getBytes(StandardCharsets.UTF_8));
        }
        final PromptSet s = new PromptSet(tokens + " text", tokens, true, List.copyOf(bodies), List.copyOf(texts),
            List.copyOf(home));
        sets.add(s);
        return s;
    }

    /** Stores a prompt's chain: whole on a random home pod, shallower on others. @return the home's endpoint. */
    private String store(final int[] ids) {
        final long[] keys = new long[ids.length / BLOCK + 1];
        final int n = hasher.keys(seed, ids, ids.length, keys);
        final int homePod = random.nextInt(slots.length);
        writer.store(slots[homePod], keys, 0, n);
        final int others = Math.min(OTHER_HOLDERS, slots.length - 1);
        final boolean[] used = new boolean[slots.length];
        used[homePod] = true;
        for (int h = 0; h < others && n > 1; h++) {
            int p;
            do {
                p = random.nextInt(slots.length);
            } while (used[p]);
            used[p] = true;
            writer.store(slots[p], keys, 0, 1 + random.nextInt(n - 1));
        }
        return endpoint(homePod);
    }

    /**
     * Fills the index with unrelated chains to {@code indexBlocks} distinct blocks.
     *
     * @param indexBlocks the distinct blocks wanted.
     * @throws IllegalStateException when the index evicted anything (it would then miss some prompts' blocks).
     */
    void fill(final long indexBlocks) {
        final long[] chain = new long[FILLER_CHAIN];
        while (writer.entryCount() < indexBlocks) {
            for (int k = 0; k < FILLER_CHAIN; k++) {
                chain[k] = random.nextLong();
            }
            writer.store(slots[random.nextInt(slots.length)], chain, 0, FILLER_CHAIN);
        }
        if (writer.evictions() != 0) {
            throw new IllegalStateException("the index evicted " + writer.evictions() + " entries while loading");
        }
        writer.heartbeat(System.currentTimeMillis());
    }

    /** @return the index directory. */
    Path dir() {
        return dir;
    }

    /** @return distinct blocks indexed. */
    long blocks() {
        return writer.entryCount();
    }

    /** @return bytes mapped by the index (what the decisions may read). */
    long mappedBytes() {
        return writer.mappedBytes();
    }

    /** @return the prompt sets, in the order added. */
    List<PromptSet> sets() {
        return sets;
    }

    /**
     * @param tokens the prompt's token ids.
     * @return a completions body with them as {@code prompt}, as a client of the gateway sends it.
     */
    static byte[] idsBody(final int[] tokens) {
        final StringBuilder sb = new StringBuilder(tokens.length * 7 + 64).append("{\"model\":\"").append(MODEL)
            .append("\",\"max_tokens\":1,\"prompt\":[");
        for (int k = 0; k < tokens.length; k++) {
            sb.append(k == 0 ? "" : ",").append(tokens[k]);
        }
        return sb.append("]}").toString().getBytes(StandardCharsets.US_ASCII);
    }

    static String quote(final String s) {
        return io.kvidx.client.json.MiniJson.write(s);
    }

    @Override
    public void close() {
        beats.shutdownNow();
        try {
            beats.awaitTermination(2, TimeUnit.SECONDS);
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
        writer.close();
        try (var files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (final IOException | RuntimeException ex) {
            System.err.println("kvidx bench epp: cannot delete " + dir + ": " + ex);
        }
    }
}
