package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexException;
import io.kvidx.ffm.ForeignOwnerException;
import io.kvidx.ffm.Layouts;
import io.kvidx.ffm.MappedRegion;
import io.kvidx.ffm.PosixNative;
import io.kvidx.ffm.SharedFiles;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.SecureRandom;

/**
 * Creates a cell's index file, or re-attaches a writer to the one a previous daemon left: the file is re-used
 * when its magic, layout major version and geometry match the writer's context, and re-created otherwise (the
 * reason is returned so the daemon can log it in one line). A re-used file keeps its epoch, so readers keep their
 * mappings; {@link IndexRepair} then makes it consistent before anything is written.
 *
 * <p>A re-created file keeps the previous file's pod ids and generations in free slots (when it could be read),
 * so pods get their slots back as they re-register, in whatever order.
 *
 * <p><b>Note:</b> used by the daemon's startup thread only.
 */
final class IndexFiles {
    private static final VarHandle LONG = Layouts.LONG;
    private static final VarHandle INT = Layouts.INT;
    private static final SecureRandom RANDOM = new SecureRandom();

    /** An index file mapped for writing. */
    record Opened(MappedRegion region, long epoch, boolean attached, String reason) {
    }

    private IndexFiles() {
    }

    /**
     * Re-attaches to the cell's index file when it matches the context, else creates a new one. A re-attached file
     * gets the mode and group of {@link IndexWriterContext#files()} (a restart with another {@code --group} hands
     * the index to the new group's routers; a mode changed behind the writer's back is restored); one owned by
     * another user is refused.
     *
     * @param context concluded writer context.
     * @return the mapped file; {@code attached} tells which happened and {@code reason} why.
     * @throws IndexFileOwnerException when the existing file belongs to another user.
     */
    static Opened open(final IndexWriterContext context) {
        final Path file = context.indexFile();
        final String mismatch = mismatch(file, context);
        if (mismatch == null) {
            final long length = IndexDescriptor.fileLength(context.maxPods(), context.shardCount(),
                context.slotsPerShard());
            final MappedRegion region;
            try (SharedFiles.Directory directory = context.files().openDirectory(file.toAbsolutePath().getParent())) {
                region = MappedRegion.attach(directory, file.getFileName().toString(), length);
            } catch (final ForeignOwnerException ex) {
                throw new IndexFileOwnerException(ex);
            } catch (final IOException ex) {
                return create(context, "cannot map the existing file (" + ex.getMessage() + ")");
            }
            final MemorySegment s = region.segment();
            advise(s, context);
            s.set(ValueLayout.JAVA_LONG, IndexDescriptor.WRITER_PID_OFFSET, ProcessHandle.current().pid());
            // No beat until the repair has run (IndexWriter): a reader that finds a shard the crashed writer left
            // locked sees a stale writer now, not a fresh one that never unlocks it.
            LONG.setRelease(s, (long) IndexDescriptor.HEARTBEAT_OFFSET, 0L);
            // An older minor version of the same major is upgraded in place: its new fields were reserved zeros,
            // except the pod entries' flags (3.2), which held the end of a longer model name.
            if (s.get(ValueLayout.JAVA_INT, IndexDescriptor.LAYOUT_VERSION_OFFSET)
                < IndexDescriptor.FLAGS_MIN_VERSION) {
                PodTable.upgradeToFlags(s, context.maxPods());
            }
            INT.setRelease(s, (long) IndexDescriptor.LAYOUT_VERSION_OFFSET, IndexDescriptor.LAYOUT_VERSION);
            final long epoch = s.get(ValueLayout.JAVA_LONG, IndexDescriptor.EPOCH_OFFSET);
            return new Opened(region, epoch, true, "layout and geometry match");
        }
        return create(context, mismatch);
    }

    /**
     * Creates a new index file for the context's cell, replacing any previous one atomically.
     *
     * @param context concluded writer context.
     * @param reason  why it is created (for the log).
     * @return the mapped file.
     */
    static Opened create(final IndexWriterContext context, final String reason) {
        final Path file = context.indexFile();
        final long length = IndexDescriptor.fileLength(context.maxPods(), context.shardCount(),
            context.slotsPerShard());
        final long pid = ProcessHandle.current().pid();
        final StagedIndexFile staged = StagedIndexFile.create(context.files(), file, length, RANDOM);
        final MappedRegion region = staged.region();
        final long epoch = RANDOM.nextLong() & Long.MAX_VALUE;
        try {
            final MemorySegment s = region.segment();
            advise(s, context);
            s.set(ValueLayout.JAVA_LONG, IndexDescriptor.MAGIC_OFFSET, IndexDescriptor.MAGIC);
            s.set(ValueLayout.JAVA_INT, IndexDescriptor.HEADER_LENGTH_OFFSET, IndexDescriptor.HEADER_LENGTH);
            s.set(ValueLayout.JAVA_INT, IndexDescriptor.SHARD_COUNT_OFFSET, context.shardCount());
            s.set(ValueLayout.JAVA_INT, IndexDescriptor.SLOTS_PER_SHARD_OFFSET, context.slotsPerShard());
            s.set(ValueLayout.JAVA_INT, IndexDescriptor.MAX_PODS_OFFSET, context.maxPods());
            s.set(ValueLayout.JAVA_INT, IndexDescriptor.MAX_CHAIN_OFFSET, context.maxChainLength());
            s.set(ValueLayout.JAVA_INT, IndexDescriptor.BLOCK_SIZE_OFFSET, context.blockSize());
            s.set(ValueLayout.JAVA_INT, IndexDescriptor.KEY_SCHEME_OFFSET, context.keyScheme());
            s.set(ValueLayout.JAVA_LONG, IndexDescriptor.EPOCH_OFFSET, epoch);
            s.set(ValueLayout.JAVA_LONG, IndexDescriptor.WRITER_PID_OFFSET, pid);
            s.set(ValueLayout.JAVA_LONG, IndexDescriptor.FILE_LENGTH_OFFSET, length);
            carryPodIds(file, s, context.maxPods());
            LONG.setRelease(s, (long) IndexDescriptor.HEARTBEAT_OFFSET, System.currentTimeMillis());
            INT.setRelease(s, (long) IndexDescriptor.LAYOUT_VERSION_OFFSET, IndexDescriptor.LAYOUT_VERSION);
            staged.publish();
        } catch (final IOException ex) {
            staged.abandon(ex);
            throw new UncheckedIOException("cannot publish index file " + file, ex);
        } catch (final RuntimeException ex) {
            staged.abandon(ex);
            throw ex;
        }
        return new Opened(region, epoch, false, reason);
    }

    /**
     * Deletes a closed writer's files and then the cell directory, when nothing else lives in it
     * ({@link IndexWriterContext#deleteOnClose(boolean)}).
     *
     * @param indexFile the index file.
     * @param siblings  the writer's other files in the same directory (side table, tier map).
     * @throws IndexException when a file or the directory cannot be deleted.
     */
    static void delete(final Path indexFile, final Path... siblings) {
        try {
            Files.deleteIfExists(indexFile);
            for (final Path sibling : siblings) {
                Files.deleteIfExists(sibling);
            }
        } catch (final IOException ex) {
            throw new IndexException("cannot delete " + indexFile, ex);
        }
        try {
            Files.deleteIfExists(indexFile.getParent());
        } catch (final DirectoryNotEmptyException ex) {
            // Another file shares the directory: keep it.
        } catch (final IOException ex) {
            throw new IndexException("cannot delete " + indexFile.getParent(), ex);
        }
    }

    private static void advise(final MemorySegment s, final IndexWriterContext context) {
        if (context.adviseRandom()) {
            PosixNative.madvise(s, PosixNative.MADV_RANDOM);
        }
        if (context.hugePages()) {
            PosixNative.madvise(s, PosixNative.MADV_HUGEPAGE);
        }
    }

    /**
     * @return null when the file can be re-attached, else why not.
     */
    static String mismatch(final Path file, final IndexWriterContext context) {
        final ByteBuffer h = ByteBuffer.allocate(IndexDescriptor.HEADER_LENGTH).order(ByteOrder.LITTLE_ENDIAN);
        final long size;
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            size = channel.size();
            while (h.hasRemaining() && channel.read(h, h.position()) > 0) {
                // read the header
            }
        } catch (final NoSuchFileException ex) {
            return "no index file yet";
        } catch (final IOException ex) {
            return "the existing file cannot be read (" + ex.getMessage() + ")";
        }
        if (h.position() < IndexDescriptor.HEADER_LENGTH) {
            return "the existing file is " + size + " bytes, shorter than a header";
        }
        if (h.getLong(IndexDescriptor.MAGIC_OFFSET) != IndexDescriptor.MAGIC) {
            return "the existing file is not a kvidx index";
        }
        final int version = h.getInt(IndexDescriptor.LAYOUT_VERSION_OFFSET);
        if (version == 0) {
            return "the existing file was never completed (layout version 0)";
        }
        if (IndexDescriptor.majorVersion(version) != IndexDescriptor.VERSION_MAJOR || version
            > IndexDescriptor.LAYOUT_VERSION) {
            return "the existing file has layout " + IndexDescriptor.versionString(version) + ", this writer writes "
                + IndexDescriptor.versionString(IndexDescriptor.LAYOUT_VERSION);
        }
        final StringBuilder diff = new StringBuilder();
        compare(diff, "shards", h.getInt(IndexDescriptor.SHARD_COUNT_OFFSET), context.shardCount());
        compare(diff, "slots per shard", h.getInt(IndexDescriptor.SLOTS_PER_SHARD_OFFSET), context.slotsPerShard());
        compare(diff, "max pods", h.getInt(IndexDescriptor.MAX_PODS_OFFSET), context.maxPods());
        compare(diff, "max chain", h.getInt(IndexDescriptor.MAX_CHAIN_OFFSET), context.maxChainLength());
        compare(diff, "block size", h.getInt(IndexDescriptor.BLOCK_SIZE_OFFSET), context.blockSize());
        compare(diff, "key scheme", h.getInt(IndexDescriptor.KEY_SCHEME_OFFSET), context.keyScheme());
        if (!diff.isEmpty()) {
            return "the existing file's geometry differs:" + diff;
        }
        final long expected = IndexDescriptor.fileLength(context.maxPods(), context.shardCount(),
            context.slotsPerShard());
        if (h.getLong(IndexDescriptor.FILE_LENGTH_OFFSET) != expected || size < expected) {
            return "the existing file is " + size + " bytes, expected " + expected;
        }
        return null;
    }

    private static void compare(final StringBuilder diff, final String name, final int found, final int wanted) {
        if (found != wanted) {
            diff.append(' ').append(name).append(' ').append(found).append(" -> ").append(wanted);
        }
    }

    /**
     * Copies the previous file's pod ids and generations into the new file's (free) slots, so a pod that
     * re-registers gets its old slot back and readers see a new generation for every slot that changes hands.
     */
    private static void carryPodIds(final Path file, final MemorySegment s, final int maxPods) {
        final int oldPods;
        final ByteBuffer table;
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            final ByteBuffer h = ByteBuffer.allocate(IndexDescriptor.HEADER_LENGTH).order(ByteOrder.LITTLE_ENDIAN);
            channel.read(h, 0);
            if (h.position() < IndexDescriptor.HEADER_LENGTH || h.getLong(0) != IndexDescriptor.MAGIC
                || IndexDescriptor.majorVersion(h.getInt(IndexDescriptor.LAYOUT_VERSION_OFFSET))
                != IndexDescriptor.VERSION_MAJOR) {
                return;
            }
            oldPods = Math.clamp(h.getInt(IndexDescriptor.MAX_PODS_OFFSET), 0, IndexDescriptor.MAX_PODS);
            table = ByteBuffer.allocate(oldPods * IndexDescriptor.POD_ENTRY_LENGTH).order(ByteOrder.LITTLE_ENDIAN);
            channel.read(table, IndexDescriptor.POD_TABLE_OFFSET);
        } catch (final IOException ex) {
            return;
        }
        for (int slot = 0; slot < Math.min(oldPods, maxPods); slot++) {
            final int o = slot * IndexDescriptor.POD_ENTRY_LENGTH;
            if (o + IndexDescriptor.POD_ENTRY_LENGTH > table.position()) {
                break;
            }
            final int generation = table.getInt(o + IndexDescriptor.POD_GENERATION_OFFSET);
            final int idLength = table.getInt(o + IndexDescriptor.POD_ID_LENGTH_OFFSET);
            final int modelLength = table.getInt(o + IndexDescriptor.POD_MODEL_LENGTH_OFFSET);
            if (generation <= 0 || idLength <= 0 || idLength > IndexDescriptor.POD_ID_MAX_LENGTH || modelLength < 0
                || modelLength > IndexDescriptor.POD_MODEL_MAX_LENGTH) {
                continue;
            }
            final long base = IndexDescriptor.podEntryOffset(slot);
            s.set(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_GENERATION_OFFSET, generation);
            s.set(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_STATE_OFFSET, IndexDescriptor.POD_STATE_FREE);
            s.set(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_ID_LENGTH_OFFSET, idLength);
            s.set(ValueLayout.JAVA_INT, base + IndexDescriptor.POD_MODEL_LENGTH_OFFSET, modelLength);
            MemorySegment.copy(table.array(), o + IndexDescriptor.POD_ID_OFFSET, s, ValueLayout.JAVA_BYTE,
                base + IndexDescriptor.POD_ID_OFFSET, idLength);
            MemorySegment.copy(table.array(), o + IndexDescriptor.POD_MODEL_OFFSET, s, ValueLayout.JAVA_BYTE,
                base + IndexDescriptor.POD_MODEL_OFFSET, modelLength);
        }
    }
}
