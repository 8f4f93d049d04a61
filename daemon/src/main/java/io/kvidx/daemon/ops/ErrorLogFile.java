package io.kvidx.daemon.ops;

import io.kvidx.daemon.counters.IngestErrors;
import io.kvidx.ffm.MappedRegion;
import io.kvidx.ffm.SharedFiles;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.errors.ErrorLogReader;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The cell's distinct error log, {@code <cell>/errors}: an Agrona {@code DistinctErrorLog} buffer (the format of
 * Aeron's own error log) after the common header, so that {@code kvidx errors} reads what the running (or last)
 * daemon recorded: one entry per distinct problem, with its count and first and last times.
 *
 * <pre>
 *   0 | common header ({@link CellFile}), magic "KVIDXER1" |
 * 128 | distinct error log buffer (default 1 MiB)           |
 * </pre>
 *
 * <p><b>Note:</b> the daemon's threads record into it (the log is safe for concurrent writers); readers map it
 * read-only.
 */
public final class ErrorLogFile implements AutoCloseable {
    /** File name in the cell directory. */
    public static final String FILE_NAME = "errors";
    /** Default size of the log buffer. */
    public static final int LOG_LENGTH_DEFAULT = 1 << 20;
    static final long MAGIC = 0x3152_4558_4449_564BL;
    static final int HEADER_LENGTH = 128;

    private final MappedRegion region;
    private final AtomicBuffer buffer;

    private ErrorLogFile(final MappedRegion region) {
        this.region = region;
        final MemorySegment s = region.segment();
        this.buffer = new UnsafeBuffer(s.address() + HEADER_LENGTH, (int) (s.byteSize() - HEADER_LENGTH));
    }

    /**
     * Creates the cell's error log (replacing a previous daemon's).
     *
     * @param files         the cell's file policy.
     * @param cellDirectory the cell directory.
     * @param length        log buffer length.
     * @return the file.
     */
    public static ErrorLogFile create(final SharedFiles files, final Path cellDirectory, final int length) {
        final MappedRegion region = CellFile.create(files, cellDirectory, FILE_NAME, MAGIC, HEADER_LENGTH, length);
        CellFile.publish(region);
        return new ErrorLogFile(region);
    }

    /**
     * @return the log buffer, for an Agrona {@code DistinctErrorLog}.
     */
    public AtomicBuffer buffer() {
        return buffer;
    }

    @Override
    public void close() {
        region.close();
    }

    /**
     * One distinct problem.
     *
     * @param count       occurrences.
     * @param firstMs     first occurrence, epoch ms.
     * @param lastMs      last occurrence, epoch ms.
     * @param description what happened (the first occurrence's message).
     */
    public record Entry(int count, long firstMs, long lastMs, String description) {
    }

    /**
     * Reads a cell's error log.
     *
     * @param cellDirectory the cell directory.
     * @return the entries, oldest first, and the writer's pid and liveness.
     * @throws CellFileException when the log cannot be read; the message says why and what to do.
     */
    public static Contents read(final Path cellDirectory) {
        try (MappedRegion region = CellFile.open(cellDirectory.resolve(FILE_NAME), MAGIC, "error log")) {
            final MemorySegment s = region.segment();
            final UnsafeBuffer log = new UnsafeBuffer(s.address() + HEADER_LENGTH,
                (int) (s.byteSize() - HEADER_LENGTH));
            final List<Entry> entries = new ArrayList<>();
            ErrorLogReader.read(log, (count, first, last, text) -> entries.add(new Entry(count, first, last,
                describe(text))));
            return new Contents(List.copyOf(entries), CellFile.pid(s), CellFile.writerAlive(s));
        }
    }

    /**
     * A cell's error log.
     *
     * @param entries distinct problems, in the order first seen.
     * @param pid     the daemon that wrote them.
     * @param alive   whether it still runs.
     */
    public record Contents(List<Entry> entries, long pid, boolean alive) {
    }

    /** The problem's message without the exception class name the log stores in front of it. */
    private static String describe(final String encoded) {
        final String text = encoded.strip();
        final String prefix = IngestErrors.IngestProblem.class.getName() + ": ";
        return text.startsWith(prefix) ? text.substring(prefix.length()) : text;
    }
}
