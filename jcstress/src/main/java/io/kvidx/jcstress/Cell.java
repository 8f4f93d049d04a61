package io.kvidx.jcstress;

import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexReaderContext;
import io.kvidx.client.tiers.TierMapReader;
import io.kvidx.daemon.index.IndexWriter;
import io.kvidx.daemon.index.IndexWriterContext;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/**
 * One real, small cell for the jcstress tests: an index file created by the daemon's {@link IndexWriter} (with its
 * host tier map), attached by the router's {@link IndexReader} and {@link TierMapReader}.
 *
 * <p>Cells live in one temporary directory per JVM (under {@code /dev/shm} when it is writable, as the daemon's
 * files do), created on first use and deleted by a shutdown hook. Creating a cell costs milliseconds, far too much
 * for each of the thousands of states a jcstress run creates, so tests share cells and take <i>lanes</i> of them
 * ({@link LanePool}): disjoint keys, slots or regions, set up in a state's constructor and reset by its arbiter.
 *
 * <p>Readers get a read bound of one second and no heartbeat check, so that a lookup waits out a writer the
 * scheduler preempted on a busy 2-core host instead of giving up (a give-up is still reported, never hidden).
 *
 * <p><b>Note:</b> thread safe. Writes that set a lane up or reset it ({@link #setup}) are serialised per cell, so
 * that the daemon's one-writer-thread-per-pod rule holds: jcstress runs constructors and arbiters on two threads at
 * once, but never while the actors run; during the actors the writer actor is the cell's only writer thread.
 */
public final class Cell implements AutoCloseable {
    /** Read bound of the tests' readers: long enough that a preempted writer is waited for. */
    static final long READ_BOUND_NS = TimeUnit.SECONDS.toNanos(1);
    private static final AtomicInteger CELLS = new AtomicInteger();
    private static final List<Cell> OPEN = new ArrayList<>();
    private static Path root;

    private final IndexWriter writer;
    private final IndexReader reader;
    private final TierMapReader tiers;

    private Cell(final IndexWriterContext context) {
        this.writer = IndexWriter.create(context);
        try {
            this.reader = IndexReader.attach(new IndexReaderContext().dir(context.dir()).cell(context.cell())
                .attachTimeoutMs(5_000).heartbeatTimeoutMs(0).readBoundNs(READ_BOUND_NS));
            this.tiers = TierMapReader.attach(writer.tiers().path(), READ_BOUND_NS);
        } catch (final RuntimeException ex) {
            writer.close();
            throw ex;
        }
    }

    /**
     * Creates a cell in this JVM's temporary directory.
     *
     * @param kind          a name prefix, for whoever looks at the directory.
     * @param shardCount    shards.
     * @param slotsPerShard entries per shard.
     * @param maxPods       pod slots (more than 64: the general cell with inline pod lists).
     * @param tierMapBlocks keys per tier map region before it evicts.
     * @return the cell, closed at JVM exit.
     */
    static Cell create(final String kind, final int shardCount, final int slotsPerShard, final int maxPods,
        final int tierMapBlocks) {
        final IndexWriterContext context = new IndexWriterContext().dir(root())
            .cell(kind + "-" + CELLS.getAndIncrement()).shardCount(shardCount).slotsPerShard(slotsPerShard)
            .maxPods(maxPods).tierMapBlocks(tierMapBlocks).maxChainLength(64).hugePages(false).deleteOnClose(true);
        final Cell cell = new Cell(context);
        synchronized (Cell.class) {
            OPEN.add(cell);
        }
        return cell;
    }

    private static synchronized Path root() {
        if (root == null) {
            try {
                final Path shm = Path.of("/dev/shm");
                root = Files.isDirectory(shm) && Files.isWritable(shm)
                    ? Files.createTempDirectory(shm, "kvidx-jcstress-") : Files.createTempDirectory("kvidx-jcstress-");
            } catch (final IOException ex) {
                throw new UncheckedIOException(ex);
            }
            Runtime.getRuntime().addShutdownHook(new Thread(Cell::closeAll, "kvidx-jcstress-cells"));
        }
        return root;
    }

    private static void closeAll() {
        final List<Cell> cells;
        synchronized (Cell.class) {
            cells = new ArrayList<>(OPEN);
            OPEN.clear();
        }
        for (final Cell cell : cells) {
            cell.close();
        }
        try (Stream<Path> paths = Files.walk(root)) {
            for (final Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (final IOException ex) {
            System.err.println("kvidx-jcstress: cannot delete " + root + ": " + ex);
        }
    }

    /**
     * Runs a lane's set-up or reset writes as the cell's only writer thread at the time.
     *
     * @param writes the writes.
     */
    public void setup(final Runnable writes) {
        synchronized (this) {
            writes.run();
        }
    }

    /**
     * @return the cell's writer (the daemon's).
     */
    public IndexWriter writer() {
        return writer;
    }

    /**
     * @return the cell's index reader (the router's).
     */
    public IndexReader reader() {
        return reader;
    }

    /**
     * @return the cell's tier map reader (the router's).
     */
    public TierMapReader tiers() {
        return tiers;
    }

    @Override
    public synchronized void close() {
        try {
            tiers.close();
            reader.close();
        } finally {
            writer.close();
        }
    }
}
