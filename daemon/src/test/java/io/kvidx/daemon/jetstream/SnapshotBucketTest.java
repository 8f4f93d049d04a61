package io.kvidx.daemon.jetstream;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Snapshot chunks: as large as {@link SnapshotBucket#CHUNK_BYTES_MAX}, within the server's max_payload. */
class SnapshotBucketTest {
    @Test
    void chunksFitTheServersMaxPayload() {
        assertEquals(512 << 10, SnapshotBucket.chunkBytes(1 << 20), "the default max_payload (1 MiB)");
        assertEquals(512 << 10, SnapshotBucket.chunkBytes(8L << 20), "never over 512 KiB");
        assertEquals((256 << 10) - (8 << 10), SnapshotBucket.chunkBytes(256 << 10), "header room under 256 KiB");
        assertEquals(128 << 10, SnapshotBucket.chunkBytes(64 << 10), "never under jnats' default");
        assertEquals("snapshot-00000000000000000042", SnapshotBucket.objectName(42));
    }
}
