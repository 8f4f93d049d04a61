package io.kvidx.client.tiers;

import io.kvidx.client.index.IndexAccessDeniedException;
import io.kvidx.client.index.IndexException;
import io.kvidx.client.index.IndexFormatException;
import io.kvidx.client.index.IndexNotFoundException;
import io.kvidx.client.index.IndexTruncatedException;
import io.kvidx.client.index.IndexVersionException;
import io.kvidx.client.index.ProtocolFaults;
import io.kvidx.client.index.ReadWait;
import io.kvidx.client.index.Seqlock;
import io.kvidx.ffm.Layouts;
import io.kvidx.ffm.MappedRegion;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Objects;
import java.util.function.BooleanSupplier;

import static io.kvidx.client.tiers.TierMapDescriptor.ENTRY_KEY_OFFSET;
import static io.kvidx.client.tiers.TierMapDescriptor.ENTRY_LENGTH;
import static io.kvidx.client.tiers.TierMapDescriptor.ENTRY_VALUE_OFFSET;
import static io.kvidx.client.tiers.TierMapDescriptor.REGION_GENERATION_OFFSET;
import static io.kvidx.client.tiers.TierMapDescriptor.REGION_HEADER_LENGTH;
import static io.kvidx.client.tiers.TierMapDescriptor.REGION_VERSION_OFFSET;

/**
 * Read-only view of a cell's host tier map file (layout: {@link TierMapDescriptor}, protocol: docs/index-layout.md,
 * "Host tier map"). JDK only: a {@code java.lang.foreign} mapping read through VarHandles, no JVM flag needed.
 *
 * <p>{@link #tierBits} reads one (pod slot, router key) under its region's {@link Seqlock}: load the version
 * (acquire), check the region's generation, probe, load-load fence, load the version again; retry while it was odd
 * or changed, for at most the read bound ({@link ReadWait}, as the index's reads: the clock is read once every
 * {@value ReadWait#SPINS_PER_CLOCK_CHECK} spins, never on an uncontended read), then give up with {@link #BUSY}
 * (counted). It never returns tiers that belonged to another generation of the slot: the generation is read inside
 * the same validated window as the entry.
 *
 * <p>Stale writer, as the index's reads rule it: at each of those clock checks the wait first asks whether the
 * writer's heartbeat has stopped, and answers {@link #STALE} at once when it has (a region left locked by a dead or
 * hung daemon never reads as merely busy). The tier map file has no heartbeat of its own: its writers are the
 * daemon's writer agents, the process that beats the index's heartbeat, so the check is the index's
 * ({@link io.kvidx.client.index.IndexReader#isWriterStale}, passed to {@link #attach(Path, long, BooleanSupplier)}),
 * with the index reader's heartbeat timeout.
 *
 * <p><b>Note:</b> thread safe, allocation free after {@link #attach}. The daemon's writer agents are the only
 * writers of the file (one per pod region).
 */
public final class TierMapReader implements AutoCloseable {
    /** {@link #tierBits} result: the region holds no entry for the key (or the key was evicted from it). */
    public static final int ABSENT = -1;
    /** {@link #tierBits} result: the region belongs to another generation of the slot (or to no pod). */
    public static final int OTHER_GENERATION = -2;
    /** {@link #tierBits} result: the writer kept the region busy past the read bound. */
    public static final int BUSY = -3;
    /**
     * {@link #tierBits} result: the region stayed locked and the writer's heartbeat has stopped (the daemon died or
     * hung inside a change): the index's {@link io.kvidx.client.index.StaleWriterException} as a result code.
     */
    public static final int STALE = -5;
    /** Default read bound: 50 us, as the index's. */
    public static final long READ_BOUND_NS_DEFAULT = 50_000;

    private static final VarHandle LONG = Layouts.LONG;
    private static final VarHandle PLAIN = ValueLayout.JAVA_LONG_UNALIGNED.varHandle();

    private final MappedRegion region;
    private final MemorySegment segment;
    private final int maxPods;
    private final int slots;
    private final int slotMask;
    private final int slotBits;
    private final long regionLength;
    private final long epoch;
    private final ReadWait wait;

    private TierMapReader(final MappedRegion region, final long readBoundNs, final BooleanSupplier writerStale) {
        this.region = region;
        this.segment = region.segment();
        this.maxPods = segment.get(ValueLayout.JAVA_INT, TierMapDescriptor.MAX_PODS_OFFSET);
        this.slots = segment.get(ValueLayout.JAVA_INT, TierMapDescriptor.SLOTS_OFFSET);
        this.slotMask = slots - 1;
        this.slotBits = Integer.numberOfTrailingZeros(slots);
        this.regionLength = TierMapDescriptor.regionLength(slots);
        this.epoch = segment.get(ValueLayout.JAVA_LONG, TierMapDescriptor.EPOCH_OFFSET);
        this.wait = new ReadWait(readBoundNs, writerStale);
    }

    /**
     * Maps a tier map file read-only without a stale-writer check: a region left locked always reads as
     * {@link #BUSY} (as an index reader with heartbeat timeout 0). Tests and tools; routers use
     * {@link #attach(Path, long, BooleanSupplier)}.
     *
     * @param file        the file ({@code <dir>/<cell>/tiers}).
     * @param readBoundNs how long one read may retry while the writer holds its region, {@code > 0}.
     * @return the reader.
     * @throws IndexNotFoundException      when the file does not exist or is not ready (layout version 0).
     * @throws IndexFormatException        when it is not a tier map or its geometry is impossible.
     * @throws IndexVersionException       when its layout major version differs.
     * @throws IndexTruncatedException     when it is shorter than its header says.
     * @throws IndexAccessDeniedException  when this process may not read it.
     */
    public static TierMapReader attach(final Path file, final long readBoundNs) {
        return attach(file, readBoundNs, () -> false);
    }

    /**
     * Maps a tier map file read-only, once: no waiting (callers retry at their own pace).
     *
     * @param file        the file ({@code <dir>/<cell>/tiers}).
     * @param readBoundNs how long one read may retry while the writer holds its region, {@code > 0}.
     * @param writerStale whether the writer's heartbeat has stopped: the index's
     *                    {@link io.kvidx.client.index.IndexReader#isWriterStale} (the same daemon writes both files);
     *                    asked only while a read waits for a locked region, at most once per clock check.
     * @return the reader.
     * @throws IndexNotFoundException      when the file does not exist or is not ready (layout version 0).
     * @throws IndexFormatException        when it is not a tier map or its geometry is impossible.
     * @throws IndexVersionException       when its layout major version differs.
     * @throws IndexTruncatedException     when it is shorter than its header says.
     * @throws IndexAccessDeniedException  when this process may not read it.
     */
    public static TierMapReader attach(final Path file, final long readBoundNs, final BooleanSupplier writerStale) {
        if (readBoundNs <= 0) {
            throw new IllegalArgumentException("read bound must be > 0 ns: " + readBoundNs);
        }
        Objects.requireNonNull(writerStale, "writerStale");
        final MappedRegion region;
        try {
            final long size = Files.size(file);
            if (size < TierMapDescriptor.HEADER_LENGTH) {
                throw new IndexTruncatedException("tier map " + file + " is " + size + " bytes, shorter than its "
                    + TierMapDescriptor.HEADER_LENGTH + "-byte header");
            }
            region = MappedRegion.mapReadOnly(file, size);
        } catch (final NoSuchFileException ex) {
            throw new IndexNotFoundException("no tier map at " + file, ex);
        } catch (final AccessDeniedException ex) {
            throw IndexAccessDeniedException.of(file, ex);
        } catch (final IOException ex) {
            throw new IndexException("cannot map tier map " + file + ": " + ex.getMessage(), ex);
        }
        boolean keep = false;
        try {
            final TierMapReader reader = validate(region, file, readBoundNs, writerStale);
            keep = true;
            return reader;
        } finally {
            if (!keep) {
                region.close();
            }
        }
    }

    private static TierMapReader validate(final MappedRegion region, final Path file, final long readBoundNs,
        final BooleanSupplier writerStale) {
        final MemorySegment s = region.segment();
        final int version = (int) Layouts.INT.getAcquire(s, (long) TierMapDescriptor.LAYOUT_VERSION_OFFSET);
        if (version == 0) {
            throw new IndexNotFoundException("tier map " + file + " is not ready (layout version 0)");
        }
        final long magic = s.get(ValueLayout.JAVA_LONG, TierMapDescriptor.MAGIC_OFFSET);
        if (magic != TierMapDescriptor.MAGIC) {
            throw new IndexFormatException("not a kvidx tier map: " + file + " has magic 0x" + Long.toHexString(magic));
        }
        if (TierMapDescriptor.majorVersion(version) != TierMapDescriptor.VERSION_MAJOR) {
            throw new IndexVersionException("tier map " + file + " has layout version "
                + TierMapDescriptor.versionString(version) + "; this reader understands major "
                + TierMapDescriptor.VERSION_MAJOR + " only");
        }
        final int pods = s.get(ValueLayout.JAVA_INT, TierMapDescriptor.MAX_PODS_OFFSET);
        final int slots = s.get(ValueLayout.JAVA_INT, TierMapDescriptor.SLOTS_OFFSET);
        final String problem = TierMapDescriptor.validateGeometry(pods, slots);
        if (problem != null || s.get(ValueLayout.JAVA_INT, TierMapDescriptor.HEADER_LENGTH_OFFSET)
            != TierMapDescriptor.HEADER_LENGTH || s.get(ValueLayout.JAVA_INT,
            TierMapDescriptor.REGION_HEADER_LENGTH_OFFSET) != REGION_HEADER_LENGTH) {
            throw new IndexFormatException("tier map " + file + " has an impossible geometry: "
                + (problem != null ? problem : "header lengths"));
        }
        final long declared = s.get(ValueLayout.JAVA_LONG, TierMapDescriptor.FILE_LENGTH_OFFSET);
        final long expected = TierMapDescriptor.fileLength(pods, slots);
        if (declared != expected) {
            throw new IndexFormatException("tier map " + file + " declares " + declared + " bytes but its geometry "
                + "needs " + expected);
        }
        if (s.byteSize() < declared) {
            throw new IndexTruncatedException("tier map " + file + " is " + s.byteSize() + " bytes, shorter than the "
                + declared + " bytes its header declares");
        }
        return new TierMapReader(region, readBoundNs, writerStale);
    }

    /**
     * Where a pod holds a block, as the tier map's writer last recorded it.
     *
     * @param slot       pod slot.
     * @param generation the generation of the slot the caller's answer belongs to (as learnt from the index's pod
     *                   table); tiers recorded for another generation are never returned.
     * @param key        router key.
     * @return the tier bits (media in bits 0..3, REMOTE flags in bits 4..7, see {@link TierMapDescriptor}), or
     * {@link #ABSENT}, {@link #OTHER_GENERATION}, {@link #BUSY} or {@link #STALE}.
     */
    public int tierBits(final int slot, final int generation, final long key) {
        if (slot < 0 || slot >= maxPods) {
            return OTHER_GENERATION;
        }
        final MemorySegment s = segment;
        final long base = TierMapDescriptor.HEADER_LENGTH + slot * regionLength;
        final long entries = base + REGION_HEADER_LENGTH;
        final long k = TierMapDescriptor.stored(key);
        final int home = (int) ((k * TierMapDescriptor.GOLDEN) >>> (64 - slotBits));
        int spins = 0;
        long waitStartNs = 0;
        while (true) {
            final long v1 = Seqlock.beginRead(s, base + REGION_VERSION_OFFSET);
            if (!Seqlock.isWriting(v1)) {
                int result = ABSENT;
                if (s.get(ValueLayout.JAVA_INT, base + REGION_GENERATION_OFFSET) != generation) {
                    result = OTHER_GENERATION;
                } else {
                    int i = home;
                    for (int n = 0; n <= slotMask; n++) {
                        final long e = entries + (long) i * ENTRY_LENGTH;
                        final long ek = (long) PLAIN.get(s, e + ENTRY_KEY_OFFSET);
                        if (ek == k) {
                            // The key is published (release) after its value: read the value after the key.
                            VarHandle.acquireFence();
                            result = (int) ((long) PLAIN.get(s, e + ENTRY_VALUE_OFFSET) & TierMapDescriptor.TIER_MASK);
                            break;
                        }
                        if (ek == 0) {
                            break;
                        }
                        i = (i + 1) & slotMask;
                    }
                }
                if (ProtocolFaults.OMIT_TIER_VERSION_CHECK || Seqlock.validate(s, base + REGION_VERSION_OFFSET, v1)) {
                    return result;
                }
            }
            Thread.onSpinWait();
            if ((++spins & (ReadWait.SPINS_PER_CLOCK_CHECK - 1)) == 0) {
                waitStartNs = wait.poll(waitStartNs, spins);
                if (waitStartNs < 0) {
                    return waitStartNs == ReadWait.STALE ? STALE : BUSY;
                }
            }
        }
    }

    /**
     * @param slot       pod slot.
     * @param generation the slot's generation.
     * @return entries the slot's region holds for that generation (0 for another generation); a diagnostic
     * reading, not validated against concurrent changes.
     */
    public int entryCount(final int slot, final int generation) {
        if (slot < 0 || slot >= maxPods) {
            return 0;
        }
        final long base = TierMapDescriptor.HEADER_LENGTH + slot * regionLength;
        return segment.get(ValueLayout.JAVA_INT, base + REGION_GENERATION_OFFSET) == generation
            ? (int) Layouts.INT.getOpaque(segment, base + TierMapDescriptor.REGION_COUNT_OFFSET) : 0;
    }

    /**
     * @return true once the daemon replaced this file with a newer one (re-attach to follow it).
     */
    public boolean isSuperseded() {
        return (long) LONG.getAcquire(segment, (long) TierMapDescriptor.SUPERSEDED_OFFSET) != 0;
    }

    /**
     * @return reads that gave up at the read bound.
     */
    public long busyCount() {
        return wait.busyCount();
    }

    /**
     * @return pod slots the file has regions for.
     */
    public int maxPods() {
        return maxPods;
    }

    /**
     * @return slots per region.
     */
    public int slotsPerRegion() {
        return slots;
    }

    /**
     * @return the file's epoch.
     */
    public long epoch() {
        return epoch;
    }

    /**
     * @return the mapped file.
     */
    public Path path() {
        return region.path();
    }

    /**
     * Unmaps the file. A read racing with it fails inside the JDK (the shared arena is closed) rather than touching
     * unmapped memory.
     */
    @Override
    public void close() {
        region.close();
    }
}
