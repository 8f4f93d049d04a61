package io.kvidx.client.index;

import io.kvidx.ffm.Layouts;
import io.kvidx.ffm.MappedRegion;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * Attaching an {@link IndexReader}: waits for the cell's index file and its layout version, maps it read-only and
 * validates it (magic, major version, geometry, length, the writer's heartbeat) before a reader is built on it.
 * Every refusal is its own {@link IndexException}, with a message that names the file and what is wrong.
 *
 * <p><b>Note:</b> stateless; any thread may attach.
 */
final class IndexFileAttach {
    private IndexFileAttach() {
    }

    /** See {@link IndexReader#attach}. */
    static IndexReader attach(final IndexReaderContext context) {
        context.conclude();
        final Path file = context.indexFile();
        final long deadlineMs = System.currentTimeMillis() + context.attachTimeoutMs();
        String lastProblem = "no file";
        while (true) {
            final MappedRegion region = tryMap(file);
            if (region != null) {
                boolean keep = false;
                try {
                    final MemorySegment header = region.segment();
                    final int version = (int) Layouts.INT.getAcquire(header,
                        (long) IndexDescriptor.LAYOUT_VERSION_OFFSET);
                    if (version != 0) {
                        final IndexReader reader = validate(region, file, context, version);
                        keep = true;
                        return reader;
                    }
                    lastProblem = "layout version still 0 (writer not ready)";
                } finally {
                    if (!keep) {
                        region.close();
                    }
                }
            }
            if (System.currentTimeMillis() >= deadlineMs) {
                throw new IndexNotFoundException("no ready kvidx index at " + file + " after "
                    + context.attachTimeoutMs() + " ms (" + lastProblem + "); is the daemon running with dir="
                    + context.dir() + " cell=" + context.cell() + "?");
            }
            try {
                Thread.sleep(10);
            } catch (final InterruptedException ex) {
                Thread.currentThread().interrupt();
                throw new IndexNotFoundException("interrupted while waiting for " + file, ex);
            }
        }
    }

    private static MappedRegion tryMap(final Path file) {
        try {
            final long size = Files.size(file);
            if (size < IndexDescriptor.HEADER_LENGTH) {
                if (size > 0) {
                    throw new IndexTruncatedException("index file " + file + " is " + size
                        + " bytes, shorter than its " + IndexDescriptor.HEADER_LENGTH + "-byte header");
                }
                return null;
            }
            return MappedRegion.mapReadOnly(file, size);
        } catch (final NoSuchFileException ex) {
            return null;
        } catch (final AccessDeniedException ex) {
            throw IndexAccessDeniedException.of(file, ex);
        } catch (final IOException ex) {
            throw new IndexException("cannot map index file " + file + ": " + ex.getMessage(), ex);
        }
    }

    private static IndexReader validate(final MappedRegion region, final Path file, final IndexReaderContext context,
        final int version) {
        final MemorySegment s = region.segment();
        final long magic = s.get(ValueLayout.JAVA_LONG, IndexDescriptor.MAGIC_OFFSET);
        if (magic != IndexDescriptor.MAGIC) {
            throw new IndexFormatException("not a kvidx index: " + file + " has magic 0x" + Long.toHexString(magic)
                + ", expected 0x" + Long.toHexString(IndexDescriptor.MAGIC));
        }
        if (IndexDescriptor.majorVersion(version) != IndexDescriptor.VERSION_MAJOR) {
            throw new IndexVersionException("index " + file + " has layout version "
                + IndexDescriptor.versionString(version) + "; this reader understands "
                + IndexDescriptor.versionString(IndexDescriptor.LAYOUT_VERSION) + " (major "
                + IndexDescriptor.VERSION_MAJOR + " only)");
        }
        final int headerLength = s.get(ValueLayout.JAVA_INT, IndexDescriptor.HEADER_LENGTH_OFFSET);
        final int shards = s.get(ValueLayout.JAVA_INT, IndexDescriptor.SHARD_COUNT_OFFSET);
        final int slots = s.get(ValueLayout.JAVA_INT, IndexDescriptor.SLOTS_PER_SHARD_OFFSET);
        final int pods = s.get(ValueLayout.JAVA_INT, IndexDescriptor.MAX_PODS_OFFSET);
        final int chain = s.get(ValueLayout.JAVA_INT, IndexDescriptor.MAX_CHAIN_OFFSET);
        final String problem = IndexDescriptor.validateGeometry(shards, slots, pods, chain);
        if (problem != null || headerLength != IndexDescriptor.HEADER_LENGTH) {
            throw new IndexFormatException("index " + file + " has an impossible geometry: "
                + (problem != null ? problem : "header length " + headerLength));
        }
        final long declared = s.get(ValueLayout.JAVA_LONG, IndexDescriptor.FILE_LENGTH_OFFSET);
        final long expected = IndexDescriptor.fileLength(pods, shards, slots);
        if (declared != expected) {
            throw new IndexFormatException("index " + file + " declares " + declared + " bytes but its geometry needs "
                + expected);
        }
        if (s.byteSize() < declared) {
            throw new IndexTruncatedException("index " + file + " is " + s.byteSize() + " bytes, shorter than the "
                + declared + " bytes its header declares (truncated?)");
        }
        final IndexReader reader = new IndexReader(region, context);
        if (context.heartbeatTimeoutMs() > 0 && reader.isWriterStale()) {
            throw new StaleWriterException("index " + file + ": writer pid " + reader.writerPid()
                + " last beat " + reader.heartbeatAgeMs() + " ms ago (timeout " + context.heartbeatTimeoutMs()
                + " ms); the daemon is gone or hung");
        }
        return reader;
    }
}
