package io.kvidx.daemon.ops;

import io.kvidx.ffm.MappedRegion;
import io.kvidx.ffm.SharedFiles;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * The common header of the daemon's operational files in a cell directory ({@code counters}, {@code errors},
 * {@code pods}): who wrote the file and whether it is complete. Each file is created afresh by every daemon start
 * (the cell's lock guarantees a single daemon), mode 0640 with the cell's group, so that operators' tools read it
 * without the daemon's help.
 *
 * <pre>
 *   0 +-----------------------------------------------+
 *     | magic u64 (one per file kind)                 |
 *   8 | version i32: written last (release); 0 = not  |
 *     |   ready yet                                   |
 *  12 | header length i32                             |
 *  16 | writer pid i64                                |
 *  24 | writer start time, epoch ms i64               |
 *  32 | body length i64                               |
 *  40 | kind-specific fields ..                       |
 *     +-----------------------------------------------+
 * </pre>
 *
 * <p><b>Note:</b> the daemon writes; readers map read-only and check magic, version and length first.
 */
final class CellFile {
    static final int VERSION_OFFSET = 8;
    static final int HEADER_LENGTH_OFFSET = 12;
    static final int PID_OFFSET = 16;
    static final int START_OFFSET = 24;
    static final int BODY_LENGTH_OFFSET = 32;
    static final int VERSION = 1;

    private CellFile() {
    }

    /**
     * Creates (replacing a previous daemon's) and maps a cell file; the caller fills it and then calls
     * {@link #publish}.
     */
    static MappedRegion create(final SharedFiles files, final Path cellDirectory, final String name,
        final long magic, final int headerLength, final long bodyLength) {
        try (SharedFiles.Directory directory = files.openDirectory(cellDirectory)) {
            directory.deleteIfExists(name);
            final MappedRegion region = MappedRegion.create(directory, name, headerLength + bodyLength);
            final MemorySegment s = region.segment();
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, magic);
            s.set(ValueLayout.JAVA_INT, HEADER_LENGTH_OFFSET, headerLength);
            s.set(ValueLayout.JAVA_LONG, PID_OFFSET, ProcessHandle.current().pid());
            s.set(ValueLayout.JAVA_LONG, START_OFFSET, System.currentTimeMillis());
            s.set(ValueLayout.JAVA_LONG, BODY_LENGTH_OFFSET, bodyLength);
            return region;
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot create " + cellDirectory.resolve(name), ex);
        }
    }

    /** Marks a created file complete. */
    static void publish(final MappedRegion region) {
        ValueLayout.JAVA_INT.varHandle().setRelease(region.segment(), (long) VERSION_OFFSET, VERSION);
    }

    /**
     * Maps a cell file read-only after checking it.
     *
     * @throws CellFileException with a message an operator can act on.
     */
    static MappedRegion open(final Path file, final long magic, final String what) {
        final long size;
        try {
            size = Files.size(file);
        } catch (final NoSuchFileException ex) {
            throw new CellFileException("no " + what + " at " + file
                + ": has a daemon run with this --dir and --cell?");
        } catch (final IOException ex) {
            throw new CellFileException("cannot read " + file + ": " + ex.getMessage());
        }
        if (size < 64) {
            throw new CellFileException(file + " is not a kvidx " + what + " file (" + size + " bytes)");
        }
        final MappedRegion region;
        try {
            region = MappedRegion.mapReadOnly(file, size);
        } catch (final java.nio.file.AccessDeniedException ex) {
            throw new CellFileException("may not read " + file + " as user " + System.getProperty("user.name")
                + ": add the user to the daemon's group, see tuning/README.md");
        } catch (final IOException ex) {
            throw new CellFileException("cannot map " + file + ": " + ex.getMessage());
        }
        final MemorySegment s = region.segment();
        final String problem;
        if (s.get(ValueLayout.JAVA_LONG_UNALIGNED, 0) != magic) {
            problem = file + " is not a kvidx " + what + " file";
        } else if ((int) ValueLayout.JAVA_INT.varHandle().getAcquire(s, (long) VERSION_OFFSET) != VERSION) {
            problem = file + " is not ready (a daemon is starting) or of another version";
        } else if (s.get(ValueLayout.JAVA_INT, HEADER_LENGTH_OFFSET) + s.get(ValueLayout.JAVA_LONG, BODY_LENGTH_OFFSET)
            != size) {
            problem = file + " has a length that does not match its header";
        } else {
            problem = null;
        }
        if (problem != null) {
            region.close();
            throw new CellFileException(problem);
        }
        return region;
    }

    /**
     * @return the pid of the daemon that wrote the file.
     */
    static long pid(final MemorySegment s) {
        return s.get(ValueLayout.JAVA_LONG, PID_OFFSET);
    }

    /**
     * @return true when the daemon that wrote the file still runs.
     */
    static boolean writerAlive(final MemorySegment s) {
        return ProcessHandle.of(pid(s)).map(ProcessHandle::isAlive).orElse(false);
    }
}
