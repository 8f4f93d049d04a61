package io.kvidx.daemon.index;

import org.agrona.CloseHelper;

import java.nio.file.Path;

/**
 * What opening a cell's index assembles for its {@link IndexWriter}: the cell's lock (taken here unless the caller
 * holds it), the mapped file ({@link IndexFiles}: created, or re-attached and repaired), the writer's side table
 * ({@link WriterMeta}), the shards ({@link EntryTable}), the pod table ({@link PodTable}), the repair report
 * ({@link IndexRepair}) and the host tier map ({@link TierMapWriter}). Whatever was opened is closed again when a
 * later part fails.
 *
 * @param context    geometry and location, concluded.
 * @param ownLock    the cell's lock when taken here, null when the caller handed in the one it holds.
 * @param opened     the mapped file and how it was opened.
 * @param meta       the writer's side table.
 * @param entries    the shards.
 * @param pods       the pod table.
 * @param repair     what the open repaired.
 * @param tiers      the host tier map.
 */
record IndexParts(IndexWriterContext context, CellLock ownLock, IndexFiles.Opened opened, WriterMeta meta,
    EntryTable entries, PodTable pods, IndexRepair.Report repair, TierMapWriter tiers) {

    /**
     * @param context geometry and location; concluded here.
     * @return the parts of a new, empty index replacing any previous one.
     */
    static IndexParts create(final IndexWriterContext context) {
        context.conclude();
        final CellLock lock = lock(context);
        try {
            return assemble(context, lock, IndexFiles.create(context, "asked to create a new index"));
        } catch (final RuntimeException ex) {
            CloseHelper.quietClose(lock);
            throw ex;
        }
    }

    /**
     * @param context geometry and location; concluded here.
     * @return the parts of the cell's existing index when it matches the context (repaired), else of a new one.
     */
    static IndexParts open(final IndexWriterContext context) {
        context.conclude();
        final CellLock lock = lock(context);
        try {
            return assemble(context, lock, IndexFiles.open(context));
        } catch (final RuntimeException ex) {
            CloseHelper.quietClose(lock);
            throw ex;
        }
    }

    private static IndexParts assemble(final IndexWriterContext context, final CellLock ownLock,
        final IndexFiles.Opened opened) {
        final IndexGeometry g = new IndexGeometry(context.shardCount, context.slotsPerShard, context.maxPods,
            context.maxLoadFactor);
        final WriterMeta meta;
        try {
            meta = WriterMeta.open(context.files, metaFile(context), opened.epoch(), g.totalSlots());
        } catch (final RuntimeException ex) {
            opened.region().close();
            throw ex;
        }
        final EntryTable entries = new EntryTable(g, opened.region().segment(), meta, context.prefetch);
        final PodTable pods = new PodTable(opened.region().segment(), entries, context.cell, context.maxPods);
        // A new file needs no repair but the same scan rebuilds the writer's heap state (free lists, clocks).
        final IndexRepair.Report repair = IndexRepair.attach(entries);
        pods.load();
        final TierMapWriter tiers;
        try {
            tiers = TierMapWriter.create(context.files, context.indexFile(), context.maxPods, context.tierMapBlocks);
        } catch (final RuntimeException ex) {
            meta.close();
            opened.region().close();
            throw ex;
        }
        return new IndexParts(context, ownLock, opened, meta, entries, pods, repair, tiers);
    }

    /**
     * @return the cell's lock, taken here; null when the caller handed in the one it holds.
     */
    private static CellLock lock(final IndexWriterContext context) {
        final CellLock held = context.cellLock();
        if (held == null) {
            return CellLock.acquire(context.dir(), context.cell(), context.files());
        }
        final Path cellDirectory = context.indexFile().toAbsolutePath().normalize().getParent();
        if (!held.file().toAbsolutePath().normalize().getParent().equals(cellDirectory)) {
            throw new IllegalArgumentException("the handed-in lock " + held.file() + " is not the lock of cell "
                + cellDirectory);
        }
        return null;
    }

    private static Path metaFile(final IndexWriterContext context) {
        final Path file = context.indexFile();
        return file.resolveSibling(file.getFileName() + WriterMeta.FILE_SUFFIX);
    }
}
