package io.kvidx.daemon.ops;

import io.kvidx.ffm.MappedRegion;
import io.kvidx.ffm.SharedFiles;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;

/**
 * Per-pod activity, {@code <cell>/pods}: one 64-byte row per index pod slot, for {@code kvidx status} and the
 * metrics endpoint. Which pod a row describes comes from the index's pod table: a row counts for the pod whose slot
 * generation it carries.
 *
 * <pre>
 *   0 | common header ({@link CellFile}), magic "KVIDXPS1"; 40: slots i32      |
 * 128 | row of slot 0                                                          |
 *     |   0 generation i32 (of the slot's pod these figures are for) | pad    |
 *     |   8 events applied u64                                                 |
 *     |  16 blocks held u64 (mappings in the pod's block map)                  |
 *     |  24 last event, epoch ms u64                                           |
 *     |  32 events per second over the last full second, x 1000 u64           |
 *     |  40 .. 63 reserved                                                     |
 * 192 | row of slot 1 ...                                                      |
 * </pre>
 *
 * <p><b>Note:</b> one writer per row: the writer agent that owns the slot's pod (plain release stores of whole
 * 64-bit fields); readers see each field atomically, not the row as one snapshot, which a status display tolerates.
 */
public final class PodStatsFile implements AutoCloseable {
    /** File name in the cell directory. */
    public static final String FILE_NAME = "pods";
    static final long MAGIC = 0x3153_5058_4449_564BL;
    static final int HEADER_LENGTH = 128;
    static final int SLOTS_OFFSET = 40;
    static final int ROW_LENGTH = 64;
    static final int GENERATION = 0;
    static final int EVENTS = 8;
    static final int BLOCKS = 16;
    static final int LAST_EVENT = 24;
    static final int RATE = 32;

    private final MappedRegion region;
    private final MemorySegment s;
    private final int slots;

    private PodStatsFile(final MappedRegion region) {
        this.region = region;
        this.s = region.segment();
        this.slots = s.get(ValueLayout.JAVA_INT, SLOTS_OFFSET);
    }

    /**
     * Creates the cell's pod statistics file (replacing a previous daemon's).
     *
     * @param files         the cell's file policy.
     * @param cellDirectory the cell directory.
     * @param slots         the index's pod slots.
     * @return the file, for the writer agents.
     */
    public static PodStatsFile create(final SharedFiles files, final Path cellDirectory, final int slots) {
        final MappedRegion region = CellFile.create(files, cellDirectory, FILE_NAME, MAGIC, HEADER_LENGTH,
            (long) slots * ROW_LENGTH);
        region.segment().set(ValueLayout.JAVA_INT, SLOTS_OFFSET, slots);
        CellFile.publish(region);
        return new PodStatsFile(region);
    }

    /**
     * Opens a cell's pod statistics read-only.
     *
     * @param cellDirectory the cell directory.
     * @return the file, for reading.
     * @throws CellFileException when it cannot be read; the message says why and what to do.
     */
    public static PodStatsFile open(final Path cellDirectory) {
        return new PodStatsFile(CellFile.open(cellDirectory.resolve(FILE_NAME), MAGIC, "pod statistics"));
    }

    /**
     * @return pod slots.
     */
    public int slots() {
        return slots;
    }

    private long row(final int slot) {
        if (slot < 0 || slot >= slots) {
            throw new IndexOutOfBoundsException("slot " + slot + " of " + slots);
        }
        return HEADER_LENGTH + (long) slot * ROW_LENGTH;
    }

    /**
     * Starts a slot's row for a pod (its figures start at zero). Writer agent of the pod only.
     *
     * @param slot       the pod's slot.
     * @param generation the slot's generation.
     */
    public void reset(final int slot, final int generation) {
        final long r = row(slot);
        set(r + EVENTS, 0);
        set(r + BLOCKS, 0);
        set(r + LAST_EVENT, 0);
        set(r + RATE, 0);
        ValueLayout.JAVA_INT.varHandle().setRelease(s, r + GENERATION, generation);
    }

    /**
     * Records applied events. Writer agent of the pod only.
     *
     * @param slot   the pod's slot.
     * @param events events applied.
     * @param blocks blocks the pod now holds.
     * @param nowMs  now, epoch ms.
     */
    public void applied(final int slot, final long events, final long blocks, final long nowMs) {
        final long r = row(slot);
        set(r + EVENTS, get(r + EVENTS) + events);
        set(r + BLOCKS, blocks);
        set(r + LAST_EVENT, nowMs);
    }

    /**
     * Sets the events-per-second figure. Writer agent of the pod only.
     *
     * @param slot          the pod's slot.
     * @param perSecondX1000 events per second x 1000.
     */
    public void rate(final int slot, final long perSecondX1000) {
        set(row(slot) + RATE, perSecondX1000);
    }

    /**
     * @param slot a slot.
     * @return the slot generation the row's figures are for.
     */
    public int generation(final int slot) {
        return (int) ValueLayout.JAVA_INT.varHandle().getAcquire(s, row(slot) + GENERATION);
    }

    /**
     * @param slot a slot.
     * @return events applied.
     */
    public long events(final int slot) {
        return get(row(slot) + EVENTS);
    }

    /**
     * @param slot a slot.
     * @return blocks held.
     */
    public long blocks(final int slot) {
        return get(row(slot) + BLOCKS);
    }

    /**
     * @param slot a slot.
     * @return last event, epoch ms (0: none yet).
     */
    public long lastEventMs(final int slot) {
        return get(row(slot) + LAST_EVENT);
    }

    /**
     * @param slot a slot.
     * @return events per second over the last full second.
     */
    public double eventsPerSecond(final int slot) {
        return get(row(slot) + RATE) / 1000.0;
    }

    /**
     * @return the pid of the daemon that wrote the file.
     */
    public long writerPid() {
        return CellFile.pid(s);
    }

    private long get(final long offset) {
        return (long) ValueLayout.JAVA_LONG.varHandle().getAcquire(s, offset);
    }

    private void set(final long offset, final long value) {
        ValueLayout.JAVA_LONG.varHandle().setRelease(s, offset, value);
    }

    @Override
    public void close() {
        region.close();
    }
}
