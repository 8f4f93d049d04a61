package io.kvidx.daemon.index;

import io.kvidx.client.index.IndexDescriptor;
import io.kvidx.client.index.IndexReader;
import io.kvidx.routing.IndexReaderPodIndex;
import io.kvidx.routing.PodRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Layout 3.2's suspect flag (pod entry offset 252): set and cleared by the writer under the entry's seqlock, each
 * change moving the pod table version, seen by a reader through its own mapping of the file; a new pod in the slot
 * starts without it; a 3.1 file is upgraded in place (its flags word may hold the end of a model name).
 */
@Timeout(30)
class PodSuspectFlagTest {
    @TempDir
    Path dir;

    @Test
    void shouldPublishTheSuspectFlagToReadersAndClearIt() {
        try (IndexWriter writer = IndexWriter.create(TestIndexes.small(dir).maxPods(64));
            IndexReader reader = IndexReader.attach(TestIndexes.reader(dir))) {
            final int a = writer.registerPod("a", "m");
            final int b = writer.registerPod("b", "m");
            final long v = reader.podTableVersion();
            assertFalse(reader.pod(a).suspect());

            assertTrue(writer.markSuspect(a, true));
            assertTrue(reader.pod(a).suspect());
            assertFalse(reader.pod(b).suspect());
            assertEquals(v + 1, reader.podTableVersion(), "a flag change is a pod table change");
            assertEquals("a", reader.pod(a).podId());
            assertEquals("m", reader.pod(a).model());
            assertFalse(writer.markSuspect(a, true), "already set");
            assertEquals(v + 1, reader.podTableVersion(), "no change, no bump");

            // Resynced: cleared.
            assertTrue(writer.markSuspect(a, false));
            assertFalse(reader.pod(a).suspect());
            assertFalse(writer.isSuspect(a));
            assertEquals(v + 2, reader.podTableVersion());

            // A pod that goes down loses it; the slot's next pod starts without it.
            writer.markSuspect(b, true);
            writer.podDown(b);
            assertFalse(writer.markSuspect(b, false), "not alive: unchanged");
            while (writer.isSweeping()) {
                writer.sweepStep();
            }
            TestIndexes.fillFreeSlots(writer);
            assertFalse(reader.pod(b).suspect(), "the slot's next pod: " + reader.pod(b).podId());
            assertEquals(2, reader.pod(b).generation());
        }
    }

    @Test
    void shouldShowTheFlagInARoutersRegistry() {
        try (IndexWriter writer = IndexWriter.create(TestIndexes.small(dir).maxPods(64));
            IndexReaderPodIndex index = new IndexReaderPodIndex(IndexReader.attach(TestIndexes.reader(dir)), 100)) {
            final int a = writer.registerPod("a", "m");
            final PodRegistry registry = new PodRegistry();
            assertEquals(1, registry.registerFromIndex(index));
            assertTrue(registry.syncWithIndex(index));
            assertFalse(registry.isSuspect(a));
            writer.markSuspect(a, true);
            assertTrue(index.describe(a).suspect());
            assertNotEquals(registry.podTableVersion(), index.podTableVersion(), "the flag moved the version");
            assertTrue(registry.syncWithIndex(index));
            assertTrue(registry.isSuspect(a));
            assertEquals(1L << a, registry.suspectWord(0));
            assertTrue(registry.isRegistered(a), "still routable: suspect is advice");
            writer.markSuspect(a, false);
            assertTrue(registry.syncWithIndex(index));
            assertFalse(registry.isSuspect(a));
        }
    }

    @Test
    void shouldRejectModelNamesLongerThan116Bytes() {
        try (IndexWriter writer = IndexWriter.create(TestIndexes.small(dir).maxPods(64))) {
            writer.registerPod("ok", "m".repeat(116));
            assertThrows(IllegalArgumentException.class, () -> writer.registerPod("long", "m".repeat(117)));
        }
    }

    @Test
    void shouldUpgradeALayout31FileInPlace() throws Exception {
        // 115 ASCII bytes then "é" (2 bytes) and 3 more: 120 bytes, the 3.1 limit; the flags word holds model bytes.
        final String model = "m".repeat(115) + "é" + "xyz";
        final int slot;
        final IndexWriterContext first = TestIndexes.small(dir).maxPods(64).deleteOnClose(false);
        try (IndexWriter writer = IndexWriter.create(first)) {
            slot = writer.registerPod("a", "m");
        }
        final Path file = first.indexFile();
        final byte[] bytes = model.getBytes(StandardCharsets.UTF_8);
        assertEquals(120, bytes.length);
        final long base = IndexDescriptor.podEntryOffset(slot);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(bytes), base + IndexDescriptor.POD_MODEL_OFFSET);
            ch.write(le(bytes.length), base + IndexDescriptor.POD_MODEL_LENGTH_OFFSET);
            ch.write(le(IndexDescriptor.composeVersion(3, 1, 0)), IndexDescriptor.LAYOUT_VERSION_OFFSET);
        }
        try (IndexReader reader = IndexReader.attach(TestIndexes.reader(dir).heartbeatTimeoutMs(0))) {
            assertEquals(model, reader.pod(slot).model(), "a 3.1 file: the model's 120 bytes, no flags");
            assertFalse(reader.pod(slot).suspect(), "'xyz' in the flags word is not read as a flag");
        }
        try (IndexWriter writer = IndexWriter.open(TestIndexes.small(dir).maxPods(64));
            IndexReader reader = IndexReader.attach(TestIndexes.reader(dir))) {
            assertTrue(writer.attached());
            assertEquals(IndexDescriptor.LAYOUT_VERSION, reader.layoutVersion());
            assertEquals("m".repeat(115), reader.pod(slot).model(), "cut at a character boundary");
            assertFalse(reader.pod(slot).suspect());
            assertTrue(writer.markSuspect(slot, true));
            assertTrue(reader.pod(slot).suspect());
        }
    }

    private static ByteBuffer le(final int value) {
        return ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(0, value);
    }
}
