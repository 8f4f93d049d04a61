package io.kvidx.daemon.index;

import io.kvidx.ffm.ForeignOwnerException;
import io.kvidx.ffm.Layouts;
import io.kvidx.ffm.MappedRegion;
import io.kvidx.ffm.SharedFiles;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;

/**
 * The writer's private side table of the index, one record per table slot, in its own mapped file beside the index
 * ({@code <cell>/index.writer}) so that it survives a daemon restart with the index. Routers never map it.
 *
 * <pre>
 *   0 +-------------------------------------------+
 *     | magic u64 = "KVIDXWM1"                    |
 *   8 | index epoch i64 (the index it belongs to) |
 *  16 | slots i64 (shard count x slots per shard) |
 *  24 .. 63 reserved                              |
 *  64 +-------------------------------------------+
 *     | per table slot, 16 bytes:                 |
 *     |   0 parent key u64 (0 = a chain's first)  |
 *     |   8 store stamp: bits 16..63 (the shard's |
 *     |     store clock), indexed children:       |
 *     |     bits 0..15 (saturating at 65535)      |
 *     +-------------------------------------------+
 * </pre>
 *
 * A record moves with its entry (backward-shift deletion). A crash inside a shard's odd version can leave that
 * shard's records out of step with its entries; {@link IndexRepair} resets them (parent unknown, oldest stamp).
 *
 * <p><b>Note:</b> written only under the shard lock of the slot's shard, like the entry it describes.
 */
final class WriterMeta implements AutoCloseable {
    /** Native-order 64-bit loads and stores without the alignment check (every field is 8-byte aligned). */
    private static final ValueLayout.OfLong LONG_LAYOUT = ValueLayout.JAVA_LONG_UNALIGNED;
    static final long MAGIC = 0x314D_5758_4449_564BL;
    static final int HEADER_LENGTH = 64;
    static final int RECORD_LENGTH = 16;
    static final String FILE_SUFFIX = ".writer";
    private static final int EPOCH_OFFSET = 8;
    private static final int SLOTS_OFFSET = 16;
    private static final VarHandle LONG = Layouts.LONG;

    private final MappedRegion region;
    private final MemorySegment segment;
    private final boolean fresh;

    private WriterMeta(final MappedRegion region, final boolean fresh) {
        this.region = region;
        this.segment = region.segment();
        this.fresh = fresh;
    }

    /**
     * Maps the side table of an index, re-using the existing file when it belongs to that index (same epoch and
     * geometry), else creating it empty.
     *
     * <p>An existing file owned by another user is refused, as the index is; a re-used one gets back its private
     * mode ({@code 0600}) when it was changed.
     *
     * @param files the writer's file policy (its user).
     * @param file  the side table's file.
     * @param epoch the index's epoch.
     * @param slots table slots of the index.
     * @return the mapped table.
     * @throws IndexFileOwnerException when the existing file belongs to another user.
     */
    static WriterMeta open(final SharedFiles files, final Path file, final long epoch, final int slots) {
        final long length = HEADER_LENGTH + (long) slots * RECORD_LENGTH;
        try {
            final PosixFileAttributes existing = attributes(file);
            if (existing != null && !existing.owner().equals(files.owner())) {
                throw new IndexFileOwnerException(new ForeignOwnerException(file, existing.owner().getName(),
                    files.owner().getName()));
            }
            if (existing != null && existing.isRegularFile() && existing.size() == length) {
                if (!existing.permissions().equals(SharedFiles.PRIVATE_FILE_PERMISSIONS)) {
                    Files.setPosixFilePermissions(file, SharedFiles.PRIVATE_FILE_PERMISSIONS);
                }
                final MappedRegion region = MappedRegion.mapReadWrite(file, length);
                final MemorySegment s = region.segment();
                if (s.get(LONG_LAYOUT, 0) == MAGIC && s.get(LONG_LAYOUT, EPOCH_OFFSET) == epoch
                    && s.get(LONG_LAYOUT, SLOTS_OFFSET) == slots) {
                    return new WriterMeta(region, false);
                }
                region.close();
            }
            final MappedRegion region = MappedRegion.createPrivate(file, length);
            final MemorySegment s = region.segment();
            s.set(LONG_LAYOUT, EPOCH_OFFSET, epoch);
            s.set(LONG_LAYOUT, SLOTS_OFFSET, slots);
            LONG.setRelease(s, 0L, MAGIC);
            return new WriterMeta(region, true);
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot open the writer's side table " + file, ex);
        }
    }

    /**
     * @return the file's attributes (a link's own, not its target's), or null when there is no such file.
     */
    private static PosixFileAttributes attributes(final Path file) throws IOException {
        try {
            return Files.readAttributes(file, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (final NoSuchFileException ex) {
            return null;
        }
    }

    /**
     * @return true when the file was created empty (its records say nothing about the index's entries).
     */
    boolean fresh() {
        return fresh;
    }

    long parent(final int slot) {
        return segment.get(LONG_LAYOUT, HEADER_LENGTH + (long) slot * RECORD_LENGTH);
    }

    long stamp(final int slot) {
        return segment.get(LONG_LAYOUT, HEADER_LENGTH + (long) slot * RECORD_LENGTH + 8) >>> 16;
    }

    int children(final int slot) {
        return (int) segment.get(LONG_LAYOUT, HEADER_LENGTH + (long) slot * RECORD_LENGTH + 8) & 0xFFFF;
    }

    /** Sets a new entry's record: its parent and stamp, no children. */
    void set(final int slot, final long parent, final long stamp) {
        final long o = HEADER_LENGTH + (long) slot * RECORD_LENGTH;
        segment.set(LONG_LAYOUT, o, parent);
        segment.set(LONG_LAYOUT, o + 8, stamp << 16);
    }

    /** Sets the stamp, keeping the children count. */
    void stamp(final int slot, final long stamp) {
        final long o = HEADER_LENGTH + (long) slot * RECORD_LENGTH + 8;
        segment.set(LONG_LAYOUT, o, (stamp << 16) | (segment.get(LONG_LAYOUT, o) & 0xFFFF));
    }

    /** Adds to the children count, within 0..65535. */
    void addChildren(final int slot, final int delta) {
        final long o = HEADER_LENGTH + (long) slot * RECORD_LENGTH + 8;
        final long word = segment.get(LONG_LAYOUT, o);
        final int children = Math.clamp((int) (word & 0xFFFF) + delta, 0, 0xFFFF);
        segment.set(LONG_LAYOUT, o, (word & ~0xFFFFL) | children);
    }

    void move(final int from, final int to) {
        MemorySegment.copy(segment, HEADER_LENGTH + (long) from * RECORD_LENGTH, segment,
            HEADER_LENGTH + (long) to * RECORD_LENGTH, RECORD_LENGTH);
    }

    /**
     * Loads a slot's record without using it (to overlap its cache miss with others).
     *
     * @param slot table slot.
     * @return the stamp.
     */
    long touch(final int slot) {
        return stamp(slot);
    }

    Path path() {
        return region.path();
    }

    @Override
    public void close() {
        region.close();
    }
}
