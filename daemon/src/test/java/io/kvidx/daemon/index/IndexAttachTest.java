package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexFormatException;
import io.kvidx.client.index.IndexNotFoundException;
import io.kvidx.client.index.IndexReader;
import io.kvidx.client.index.IndexTruncatedException;
import io.kvidx.client.index.IndexVersionException;
import io.kvidx.client.index.StaleWriterException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(30)
class IndexAttachTest {
    @TempDir
    Path dir;

    @Test
    void shouldTimeOutWhenNoIndexAppears() {
        final long start = System.nanoTime();
        final IndexNotFoundException ex = assertThrows(IndexNotFoundException.class,
            () -> IndexReader.attach(TestIndexes.reader(dir).attachTimeoutMs(200)));
        assertTrue(System.nanoTime() - start >= 150_000_000L);
        assertTrue(ex.getMessage().contains("no ready kvidx index"), ex.getMessage());
    }

    @Test
    void shouldWaitForTheWriterToPublish() throws Exception {
        final Thread late = new Thread(() -> {
            try {
                Thread.sleep(200);
                IndexWriter.create(TestIndexes.small(dir).deleteOnClose(false)).close();
            } catch (final InterruptedException ignore) {
                Thread.currentThread().interrupt();
            }
        });
        late.start();
        try (IndexReader reader = IndexReader.attach(TestIndexes.reader(dir).attachTimeoutMs(5_000))) {
            assertEquals(IndexDescriptor.LAYOUT_VERSION, reader.layoutVersion());
            assertEquals(4, reader.shardCount());
            assertEquals(64, reader.slotsPerShard());
            assertEquals(ProcessHandle.current().pid(), reader.writerPid());
        }
        late.join();
    }

    @Test
    void shouldRejectAnotherMajorVersion() throws Exception {
        final Path file = createAndClose();
        final int other = IndexDescriptor.composeVersion(IndexDescriptor.VERSION_MAJOR + 1, 0, 0);
        putInt(file, IndexDescriptor.LAYOUT_VERSION_OFFSET, other);
        final IndexVersionException ex = assertThrows(IndexVersionException.class,
            () -> IndexReader.attach(TestIndexes.reader(dir).heartbeatTimeoutMs(0)));
        assertTrue(ex.getMessage().contains(IndexDescriptor.versionString(other)), ex.getMessage());
        // Layout 1 (no direct 64-pod cells) is not readable either.
        putInt(file, IndexDescriptor.LAYOUT_VERSION_OFFSET, IndexDescriptor.composeVersion(1, 0, 0));
        assertThrows(IndexVersionException.class,
            () -> IndexReader.attach(TestIndexes.reader(dir).heartbeatTimeoutMs(0)));
    }

    @Test
    void shouldAcceptANewerMinorVersion() throws Exception {
        final Path file = createAndClose();
        putInt(file, IndexDescriptor.LAYOUT_VERSION_OFFSET,
            IndexDescriptor.composeVersion(IndexDescriptor.VERSION_MAJOR, 7, 0));
        try (IndexReader reader = IndexReader.attach(TestIndexes.reader(dir).heartbeatTimeoutMs(0))) {
            assertEquals(IndexDescriptor.VERSION_MAJOR + ".7.0",
                IndexDescriptor.versionString(reader.layoutVersion()));
        }
    }

    @Test
    void shouldRejectATruncatedFile() throws Exception {
        final Path file = createAndClose();
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(raf.length() - 4096);
        }
        final IndexTruncatedException ex = assertThrows(IndexTruncatedException.class,
            () -> IndexReader.attach(TestIndexes.reader(dir).heartbeatTimeoutMs(0)));
        assertTrue(ex.getMessage().contains("truncated"), ex.getMessage());
    }

    @Test
    void shouldRejectAFileShorterThanItsHeader() throws Exception {
        final Path file = createAndClose();
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(100);
        }
        assertThrows(IndexTruncatedException.class,
            () -> IndexReader.attach(TestIndexes.reader(dir).heartbeatTimeoutMs(0)));
    }

    @Test
    void shouldRejectForeignFiles() throws Exception {
        final Path file = createAndClose();
        putLong(file, IndexDescriptor.MAGIC_OFFSET, 0x1234L);
        assertThrows(IndexFormatException.class,
            () -> IndexReader.attach(TestIndexes.reader(dir).heartbeatTimeoutMs(0)));
    }

    @Test
    void shouldRejectAnInconsistentGeometry() throws Exception {
        final Path file = createAndClose();
        putInt(file, IndexDescriptor.SLOTS_PER_SHARD_OFFSET, 1 << 20);
        assertThrows(IndexFormatException.class,
            () -> IndexReader.attach(TestIndexes.reader(dir).heartbeatTimeoutMs(0)));
    }

    @Test
    void shouldRejectAStaleWriter() throws Exception {
        final Path file = createAndClose();
        putLong(file, IndexDescriptor.HEARTBEAT_OFFSET, System.currentTimeMillis() - 60_000);
        final StaleWriterException ex = assertThrows(StaleWriterException.class,
            () -> IndexReader.attach(TestIndexes.reader(dir).heartbeatTimeoutMs(5_000)));
        assertTrue(ex.getMessage().contains("last beat"), ex.getMessage());
        try (IndexReader reader = IndexReader.attach(TestIndexes.reader(dir).heartbeatTimeoutMs(0))) {
            assertTrue(reader.heartbeatAgeMs() >= 60_000);
        }
    }

    @Test
    void shouldSeeANewEpochWhenTheWriterRecreatesTheIndex() {
        final IndexWriter first = IndexWriter.create(TestIndexes.small(dir).deleteOnClose(false));
        try (IndexReader reader = IndexReader.attach(TestIndexes.reader(dir))) {
            final int slot = first.registerPod("p", "m");
            first.store(slot, new long[] {1, 2, 3}, 0, 3);
            // One writer per cell: the next writer may take the cell once the first has let go.
            first.close();
            try (IndexWriter second = IndexWriter.create(TestIndexes.small(dir))) {
                assertNotEquals(first.epoch(), second.epoch());
                assertTrue(reader.isReplaced());
                try (IndexReader fresh = IndexReader.attach(TestIndexes.reader(dir))) {
                    assertEquals(second.epoch(), fresh.epoch());
                    assertEquals(0, fresh.entryCount());
                }
                assertEquals(3, reader.entryCount(), "the old mapping stays valid until the reader lets go");
            }
        } finally {
            first.close();
        }
    }

    private Path createAndClose() {
        final IndexWriter writer = IndexWriter.create(TestIndexes.small(dir).deleteOnClose(false));
        final Path file = writer.context().indexFile();
        writer.close();
        return file;
    }

    private static void putInt(final Path file, final long offset, final int value) throws Exception {
        final ByteBuffer buffer = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(0, value);
        write(file, offset, buffer);
    }

    private static void putLong(final Path file, final long offset, final long value) throws Exception {
        final ByteBuffer buffer = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, value);
        write(file, offset, buffer);
    }

    private static void write(final Path file, final long offset, final ByteBuffer buffer) throws Exception {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
            channel.write(buffer, offset);
        }
    }
}
