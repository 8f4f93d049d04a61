package io.kvidx.bench;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.index.PrefixResult;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * kvidx's shared-memory index: an {@link IndexWriter} in a temporary directory (tmpfs when there is one) loaded
 * with the workload, and an {@link IndexReader} attached to the same file, as a router would.
 *
 * <p><b>Note:</b> one querying thread per instance ({@link #exactView()} shares the reader, not the result).
 */
public final class KvidxStore implements QueryStore {
    private final Path dir;
    private final IndexWriter writer;
    private final IndexReader reader;
    private final int[] slots;
    private final PrefixResult result = new PrefixResult();
    private final boolean exact;
    private final boolean owner;
    private final long loadStores;
    private final long loadNanos;
    private String name;
    private IndexReader ownReader;

    private KvidxStore(final Path dir, final IndexWriter writer, final IndexReader reader, final int[] slots,
        final boolean exact, final boolean owner, final long loadStores, final long loadNanos) {
        this.dir = dir;
        this.writer = writer;
        this.reader = reader;
        this.slots = slots;
        this.exact = exact;
        this.owner = owner;
        this.loadStores = loadStores;
        this.loadNanos = loadNanos;
    }

    /**
     * Creates an index sized for the workload plus {@code spareBlocks}, registers the pods, stores every holding
     * and attaches a reader.
     *
     * @param workload    the workload.
     * @param spareBlocks capacity beyond the workload's blocks (e.g. for churn), so that loading never evicts.
     * @return the store; close it to delete the index.
     */
    public static KvidxStore load(final Workload workload, final long spareBlocks) {
        return load(workload, spareBlocks, null);
    }

    /**
     * Like {@link #load(Workload, long)} with the index in a temporary directory under {@code parent}.
     *
     * @param workload    the workload.
     * @param spareBlocks capacity beyond the workload's blocks.
     * @param parent      parent of the index's temporary directory; null for /dev/shm (or java.io.tmpdir).
     * @return the store; close it to delete the index.
     */
    public static KvidxStore load(final Workload workload, final long spareBlocks, final Path parent) {
        return load(workload, spareBlocks, parent, Math.max(workload.pods(), IndexDescriptor.DIRECT_MAX_PODS));
    }

    /**
     * Like {@link #load(Workload, long, Path)} with the cell's pod capacity given: the default sizes the cell to
     * the fleet (64 slots for up to 64 pods, whose entries then hold plain 64-bit bitmaps); 256 gives the general
     * layout (inline lists and overflow bitmaps).
     *
     * @param workload    the workload.
     * @param spareBlocks capacity beyond the workload's blocks.
     * @param parent      parent of the index's temporary directory; null for /dev/shm (or java.io.tmpdir).
     * @param maxPods     pod slots of the cell, at least the workload's pods.
     * @return the store; close it to delete the index.
     */
    public static KvidxStore load(final Workload workload, final long spareBlocks, final Path parent,
        final int maxPods) {
        final Path dir = parent == null ? tempDir("kvidx-bench-") : tempDir(parent, "kvidx-bench-");
        final IndexWriter writer = IndexWriter.create(new IndexWriterContext()
            .dir(dir)
            .cell("bench")
            .capacityBlocks(capacityFor(workload.blocks() + spareBlocks))
            .maxPods(maxPods)
            .deleteOnClose(true));
        final int[] slots = new int[workload.pods()];
        for (int p = 0; p < slots.length; p++) {
            slots[p] = writer.registerPod("pod-" + p, "bench-model");
            if (slots[p] != p) {
                throw new IllegalStateException("expected pod " + p + " in slot " + p + ", got " + slots[p]);
            }
        }
        // Counts the (pod, block) stores that were new for the pod: re-storing a shared prefix the pod already holds
        // is a no-op for the index and is not counted as work (the time spent on it is, as an engine's re-stores).
        final long[] stores = new long[1];
        final long start = System.nanoTime();
        workload.forEachHolding((pod, chain, depth) -> stores[0] += writer.store(slots[pod], chain, 0, depth));
        final long nanos = System.nanoTime() - start;
        if (writer.evictions() != 0) {
            throw new IllegalStateException("index evicted " + writer.evictions() + " entries while loading");
        }
        writer.heartbeat(System.currentTimeMillis());
        final IndexReader reader = IndexReader.attach(new IndexReaderContext().dir(dir).cell("bench"));
        return new KvidxStore(dir, writer, reader, slots, false, true, stores[0], nanos);
    }

    /**
     * Capacity to configure so that {@code blocks} keys fit without evicting: shards fill unevenly (binomially),
     * so a shard sized for the mean would evict in small indexes; 30% headroom plus 64 keys per shard suffice.
     *
     * @param blocks keys to hold.
     * @return capacity in blocks.
     */
    public static long capacityFor(final long blocks) {
        return (long) Math.ceil(blocks * 1.3) + 64L * IndexWriterContext.Configuration.SHARD_COUNT_DEFAULT;
    }

    /**
     * Creates a temporary directory in /dev/shm (tmpfs) when writable, else in java.io.tmpdir; a shutdown hook
     * deletes it if the run is interrupted before {@link #deleteTree} does.
     */
    public static Path tempDir(final String prefix) {
        final Path shm = Path.of("/dev/shm");
        return tempDir(Files.isDirectory(shm) && Files.isWritable(shm) ? shm : null, prefix);
    }

    static Path tempDir(final Path parent, final String prefix) {
        try {
            final Path dir = parent == null ? Files.createTempDirectory(prefix)
                : Files.createTempDirectory(parent, prefix);
            TempDirs.LIVE.add(dir);
            return dir;
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /**
     * Deletes a directory and everything in it (a bench's scratch cell: its index, state and the cell's lock file,
     * which a writer leaves behind on purpose).
     *
     * @param dir the directory; nothing happens when it does not exist.
     */
    public static void deleteTree(final Path dir) {
        TempDirs.LIVE.remove(dir);
        if (!Files.exists(dir)) {
            return;
        }
        try (var paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /**
     * Temporary directories not deleted yet, and the shutdown hook that deletes them (Ctrl-C during a run).
     */
    private static final class TempDirs {
        static final Set<Path> LIVE = ConcurrentHashMap.newKeySet();

        static {
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                for (final Path dir : LIVE.toArray(new Path[0])) {
                    try {
                        deleteTree(dir);
                    } catch (final RuntimeException ignored) {
                        // best effort at exit
                    }
                }
            }, "kvidx-bench-cleanup"));
        }

        private TempDirs() {
        }
    }

    /**
     * @return a store over the same index that answers with {@link IndexReader#queryExact} (linear walk).
     */
    public KvidxStore exactView() {
        return new KvidxStore(dir, writer, reader, slots, true, false, loadStores, loadNanos);
    }

    /**
     * @return a store with its own reader of the same index, attached with prefetching off (the reader's option
     *         that loads every key's home entry before the search); closing it closes only that reader.
     */
    public KvidxStore noPrefetchView() {
        // The bench's writer beats only when it writes: after a long load its heartbeat would look stale to a
        // new reader.
        writer.heartbeat(System.currentTimeMillis());
        final IndexReader plain = IndexReader.attach(new IndexReaderContext().dir(dir).cell("bench").prefetch(false));
        final KvidxStore view = new KvidxStore(dir, writer, plain, slots, false, false, loadStores, loadNanos);
        view.name = "kvidx_noprefetch";
        view.ownReader = plain;
        return view;
    }

    /**
     * @param label the name this store reports.
     * @return this.
     */
    public KvidxStore named(final String label) {
        this.name = label;
        return this;
    }

    @Override
    public String name() {
        return name != null ? name : exact ? "kvidx_exact" : "kvidx";
    }


    @Override
    public int query(final long[] keys, final int length) {
        return exact
            ? reader.queryExact(keys, length, null, result)
            : reader.query(keys, length, null, result);
    }

    @Override
    public int depthOf(final int pod) {
        return result.depthOf(slots[pod]);
    }

    /**
     * @param pod pod index in [0, pods).
     * @return the index slot the pod was registered in.
     */
    public int slotOf(final int pod) {
        return slots[pod];
    }

    /**
     * @return lookups (probes) the last query made.
     */
    public int lastProbes() {
        return result.probes();
    }

    @Override
    public long footprintBytes() {
        try {
            return Files.size(reader.path());
        } catch (final IOException ex) {
            return -1;
        }
    }

    /**
     * @return (pod, block) stores made while loading that were new for the pod (no-op re-stores not counted).
     */
    public long loadStores() {
        return loadStores;
    }

    /**
     * @return new (pod, block) stores per second while loading (one writer thread, into a growing index); the time
     *         includes the no-op re-stores of prefixes a pod already held.
     */
    public double loadStoresPerSecond() {
        return loadStores * 1e9 / Math.max(1, loadNanos);
    }

    /**
     * @return the writer (churn drivers store through it).
     */
    public IndexWriter writer() {
        return writer;
    }

    /**
     * @return the reader.
     */
    public IndexReader reader() {
        return reader;
    }

    /**
     * @return the index directory.
     */
    public Path dir() {
        return dir;
    }

    @Override
    public void close() {
        if (ownReader != null) {
            ownReader.close();
        }
        if (owner) {
            reader.close();
            writer.close();
            deleteTree(dir);
        }
    }
}
