package io.kvidx.daemon.ops;

import io.aeron.CncFileDescriptor;
import io.kvidx.ffm.MappedRegion;
import io.kvidx.ffm.SharedFiles;
import org.agrona.DirectBuffer;
import org.agrona.IoUtil;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.status.ConcurrentCountersManager;
import org.agrona.concurrent.status.CountersManager;
import org.agrona.concurrent.status.CountersReader;

import java.io.File;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.MappedByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * Where a cell's counters are: the file {@code <cell>/counters}. Without Aeron it holds the counters themselves, an
 * Agrona counters metadata buffer and values buffer (the layout Aeron's CnC file uses for its counters, so any
 * {@link CountersReader} reads them). With Aeron the counters live in the media driver's CnC file, where stock
 * {@code AeronStat} shows them, and this file names that Aeron directory. Either way {@code kvidx counters},
 * {@code kvidx status} and the metrics endpoint find them from {@code --dir} and {@code --cell}.
 *
 * <pre>
 *   0 | common header ({@link CellFile}), magic "KVIDXCT1"                     |
 *  40 | location i32: 0 = counters in this file, 1 = in the Aeron CnC file    |
 *  44 | Aeron directory length i32 (UTF-8 bytes, at most 960)                  |
 *  48 | max counters i32                  | reserved                           |
 *  64 | Aeron directory, UTF-8 (location 1)                                    |
 *1024 | counters metadata buffer: max counters x 512 bytes (location 0)        |
 *     | counters values buffer: max counters x 128 bytes (location 0)          |
 * </pre>
 *
 * <p><b>Note:</b> the daemon creates and writes it ({@link ConcurrentCountersManager}: any daemon thread may
 * allocate or increment); readers map it read-only.
 */
public final class CountersFile implements AutoCloseable {
    /** File name in the cell directory. */
    public static final String FILE_NAME = "counters";
    static final long MAGIC = 0x3154_4358_4449_564BL;
    static final int HEADER_LENGTH = 1024;
    static final int LOCATION_OFFSET = 40;
    static final int AERON_DIR_LENGTH_OFFSET = 44;
    static final int MAX_COUNTERS_OFFSET = 48;
    static final int AERON_DIR_OFFSET = 64;
    static final int AERON_DIR_MAX = HEADER_LENGTH - AERON_DIR_OFFSET;
    /** Counters held when no Aeron runs: the daemon's few dozen, with room. */
    public static final int MAX_COUNTERS_DEFAULT = 1024;

    private final MappedRegion region;
    private final CountersManager manager;

    private CountersFile(final MappedRegion region, final CountersManager manager) {
        this.region = region;
        this.manager = manager;
    }

    /**
     * Creates the cell's counters file holding the counters.
     *
     * @param files         the cell's file policy.
     * @param cellDirectory the cell directory.
     * @param maxCounters   most counters.
     * @return the file; its {@link #manager()} allocates counters.
     */
    public static CountersFile createLocal(final SharedFiles files, final Path cellDirectory, final int maxCounters) {
        final long meta = (long) maxCounters * CountersReader.METADATA_LENGTH;
        final long values = (long) maxCounters * CountersReader.COUNTER_LENGTH;
        final MappedRegion region = CellFile.create(files, cellDirectory, FILE_NAME, MAGIC, HEADER_LENGTH,
            meta + values);
        final MemorySegment s = region.segment();
        s.set(ValueLayout.JAVA_INT, LOCATION_OFFSET, 0);
        s.set(ValueLayout.JAVA_INT, MAX_COUNTERS_OFFSET, maxCounters);
        final long base = s.address();
        final CountersManager manager = new ConcurrentCountersManager(
            new UnsafeBuffer(base + HEADER_LENGTH, (int) meta), new UnsafeBuffer(base + HEADER_LENGTH + meta,
            (int) values));
        CellFile.publish(region);
        return new CountersFile(region, manager);
    }

    /**
     * Creates the cell's counters file naming the Aeron directory whose CnC file holds the counters.
     *
     * @param files         the cell's file policy.
     * @param cellDirectory the cell directory.
     * @param aeronDir      the Aeron directory.
     * @return the file.
     */
    public static CountersFile createAeronPointer(final SharedFiles files, final Path cellDirectory,
        final String aeronDir) {
        final byte[] dir = Path.of(aeronDir).toAbsolutePath().toString().getBytes(StandardCharsets.UTF_8);
        if (dir.length > AERON_DIR_MAX) {
            throw new IllegalArgumentException("Aeron directory longer than " + AERON_DIR_MAX + " bytes: " + aeronDir);
        }
        final MappedRegion region = CellFile.create(files, cellDirectory, FILE_NAME, MAGIC, HEADER_LENGTH, 0);
        final MemorySegment s = region.segment();
        s.set(ValueLayout.JAVA_INT, LOCATION_OFFSET, 1);
        s.set(ValueLayout.JAVA_INT, AERON_DIR_LENGTH_OFFSET, dir.length);
        MemorySegment.copy(dir, 0, s, ValueLayout.JAVA_BYTE, AERON_DIR_OFFSET, dir.length);
        CellFile.publish(region);
        return new CountersFile(region, null);
    }

    /**
     * @return the counters manager (counters in this file), or null when the counters live in Aeron's CnC file.
     */
    public CountersManager manager() {
        return manager;
    }

    @Override
    public void close() {
        region.close();
    }

    /**
     * Opens a cell's counters read-only, wherever they live.
     *
     * @param cellDirectory the cell directory.
     * @return a reader; close it when done.
     * @throws CellFileException when the counters cannot be read; the message says why and what to do.
     */
    public static Reader open(final Path cellDirectory) {
        final Path file = cellDirectory.resolve(FILE_NAME);
        final MappedRegion region = CellFile.open(file, MAGIC, "counters");
        final MemorySegment s = region.segment();
        final long pid = CellFile.pid(s);
        final boolean alive = CellFile.writerAlive(s);
        if (s.get(ValueLayout.JAVA_INT, LOCATION_OFFSET) == 0) {
            final long meta = (long) s.get(ValueLayout.JAVA_INT, MAX_COUNTERS_OFFSET) * CountersReader.METADATA_LENGTH;
            final long values = s.get(ValueLayout.JAVA_LONG, CellFile.BODY_LENGTH_OFFSET) - meta;
            final long base = s.address();
            final CountersReader reader = new CountersReader(new UnsafeBuffer(base + HEADER_LENGTH, (int) meta),
                new UnsafeBuffer(base + HEADER_LENGTH + meta, (int) values));
            return new Reader(reader, pid, alive, null, region::close);
        }
        final int length = s.get(ValueLayout.JAVA_INT, AERON_DIR_LENGTH_OFFSET);
        final String aeronDir = new String(s.asSlice(AERON_DIR_OFFSET, length).toArray(ValueLayout.JAVA_BYTE),
            StandardCharsets.UTF_8);
        region.close();
        final File cnc = new File(aeronDir, CncFileDescriptor.CNC_FILE);
        if (!cnc.isFile()) {
            throw new CellFileException("the daemon (pid " + pid + ") keeps its counters in the Aeron CnC file "
                + cnc + ", which does not exist" + (alive ? "" : ": the daemon is not running"));
        }
        final MappedByteBuffer buffer = IoUtil.mapExistingFile(cnc, "cnc");
        final DirectBuffer meta = CncFileDescriptor.createMetaDataBuffer(buffer);
        if (meta.getInt(CncFileDescriptor.cncVersionOffset(0)) == 0) {
            IoUtil.unmap(buffer);
            throw new CellFileException("Aeron CnC file " + cnc + " is not initialised yet");
        }
        final CountersReader reader = new CountersReader(CncFileDescriptor.createCountersMetaDataBuffer(buffer, meta),
            CncFileDescriptor.createCountersValuesBuffer(buffer, meta));
        return new Reader(reader, pid, alive, aeronDir, () -> IoUtil.unmap(buffer));
    }

    /**
     * A cell's counters, read-only.
     *
     * @param counters where they are.
     * @param pid      the daemon that wrote them.
     * @param alive    whether that daemon still runs.
     * @param aeronDir the Aeron directory when the counters live in its CnC file, else null.
     * @param closer   releases the mapping.
     */
    public record Reader(CountersReader counters, long pid, boolean alive, String aeronDir, Runnable closer)
        implements AutoCloseable {
        /**
         * @param typeId a counter type id.
         * @return the value of the first allocated counter of that type, or -1 when none.
         */
        public long value(final int typeId) {
            final long[] found = {-1};
            counters.forEach((id, type, key, label) -> {
                if (type == typeId && found[0] < 0) {
                    found[0] = counters.getCounterValue(id);
                }
            });
            return found[0];
        }

        @Override
        public void close() {
            closer.run();
        }
    }
}
