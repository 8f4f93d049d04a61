package io.kvidx.daemon.ingest.sglang;

import io.kvidx.daemon.ingest.vllm.VllmDecodeException;
import io.kvidx.daemon.ingest.vllm.RecordingListener;
import io.kvidx.daemon.event.BlockEvent;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

import java.io.IOException;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * SGLang's batches, built with msgpack-core (an encoder independent of the decoder), in both event generations:
 * every field lands in the shared event view; bad values of the SGLang-only fields are dropped, counted by the
 * applier as dropped events, and lose nothing else of the batch.
 */
class SglangEventDecoderTest {
    private static RecordingListener decode(final byte[] payload) {
        final RecordingListener r = new RecordingListener();
        new SglangEventDecoder().decode(new UnsafeBuffer(payload), 0, payload.length, r);
        return r;
    }

    /** Writes {@code [ts, [events...], rank]}; each event is written by the caller's lambdas. */
    private interface Body {
        void write(MessageBufferPacker p) throws IOException;
    }

    private static byte[] batch(final Object rank, final Body... events) throws IOException {
        final MessageBufferPacker p = MessagePack.newDefaultBufferPacker();
        p.packArrayHeader(3).packDouble(1.5).packArrayHeader(events.length);
        for (final Body e : events) {
            e.write(p);
        }
        if (rank == null) {
            p.packNil();
        } else {
            p.packInt((Integer) rank);
        }
        return p.toByteArray();
    }

    private static void longs(final MessageBufferPacker p, final long... v) throws IOException {
        p.packArrayHeader(v.length);
        for (final long x : v) {
            p.packLong(x);
        }
    }

    private static void ints(final MessageBufferPacker p, final int... v) throws IOException {
        p.packArrayHeader(v.length);
        for (final int x : v) {
            p.packInt(x);
        }
    }

    @Test
    void shouldDecodeArrayEventsWithTheTrailingMetadataMap() throws IOException {
        final RecordingListener r = decode(batch(3,
            p -> {
                p.packArrayHeader(7).packString("BlockStored");
                longs(p, -5L, 7L);
                p.packNil();
                ints(p, 1, 2, 3, 4);
                p.packInt(2).packNil().packString("GPU");
            },
            p -> {
                p.packArrayHeader(8).packString("BlockStored");
                longs(p, 9L);
                p.packLong(7L);
                ints(p, 5, 6);
                p.packInt(2).packNil().packString("CPU_PINNED");
                p.packMapHeader(2).packString("cache_salt").packString("tenant-a").packString("session_id")
                    .packString("s-1");
            },
            p -> {
                p.packArrayHeader(3).packString("BlockRemoved");
                longs(p, 9L);
                p.packString("CPU_TIER2");
            },
            p -> p.packArrayHeader(1).packString("AllBlocksCleared")));
        assertEquals(3, r.dpRank);
        assertEquals(4, r.events.size());
        final RecordingListener.Seen a = r.events.get(0);
        assertEquals(BlockEvent.TYPE_BLOCK_STORED, a.type());
        assertArrayEquals(new long[] {-5L, 7L}, a.hashes());
        assertArrayEquals(new int[] {1, 2, 3, 4}, a.tokens());
        assertEquals(2, a.blockSize());
        assertEquals(BlockEvent.MEDIUM_GPU, a.medium());
        assertNull(a.cacheSalt(), "an unsalted store");
        final RecordingListener.Seen b = r.events.get(1);
        assertEquals(BlockEvent.PROBLEM_NONE, b.problem());
        assertEquals(7L, b.parent());
        assertEquals(BlockEvent.MEDIUM_CPU, b.medium());
        assertEquals("tenant-a", b.cacheSalt());
        assertEquals(BlockEvent.MEDIUM_DISK, r.events.get(2).medium());
        assertNull(r.events.get(2).cacheSalt(), "the view is reset between events");
        assertEquals(BlockEvent.TYPE_ALL_BLOCKS_CLEARED, r.events.get(3).type());
    }

    @Test
    void shouldNameTheMediaAsTheVllmDecoderDoes() throws IOException {
        final String[] names = {"GPU", "CPU", "CPU_PINNED", "CPU_TIER1", "DISK", "CPU_TIER2", "STORAGE", "FS", "OBJ",
            "EXTERNAL"};
        final int[] media = {BlockEvent.MEDIUM_GPU, BlockEvent.MEDIUM_CPU, BlockEvent.MEDIUM_CPU, BlockEvent.MEDIUM_CPU,
            BlockEvent.MEDIUM_DISK, BlockEvent.MEDIUM_DISK, BlockEvent.MEDIUM_DISK, BlockEvent.MEDIUM_DISK,
            BlockEvent.MEDIUM_DISK, BlockEvent.MEDIUM_OTHER};
        for (int i = 0; i < names.length; i++) {
            final String name = names[i];
            final RecordingListener r = decode(batch(null, p -> {
                p.packArrayHeader(3).packString("BlockRemoved");
                longs(p, 9L);
                p.packString(name);
            }));
            assertEquals(BlockEvent.PROBLEM_NONE, r.events.get(0).problem(), name);
            assertEquals(media[i], r.events.get(0).medium(), name);
        }
    }

    @Test
    void shouldDecodeTaggedMapEventsWithCacheSaltSessionAndBigramTokens() throws IOException {
        final RecordingListener r = decode(batch(null,
            p -> {
                p.packMapHeader(9).packString("session_id").packString("s-9").packString("token_ids");
                p.packArrayHeader(2);
                ints(p, 11, 12);
                ints(p, 12, 13);
                p.packString("cache_salt").packString("tenant-b").packString("type").packString("BlockStored")
                    .packString("block_hashes");
                longs(p, Long.MIN_VALUE);
                p.packString("parent_block_hash").packNil().packString("block_size").packInt(2)
                    .packString("medium").packString("EXTERNAL").packString("lora_name").packString("alice");
            },
            p -> {
                p.packMapHeader(3).packString("type").packString("BlockStored").packString("metadata");
                p.packMapHeader(1).packString("cache_salt").packString("tenant-c");
                p.packString("block_hashes");
                longs(p, 1L);
            }));
        assertEquals(-1, r.dpRank, "nil rank");
        final RecordingListener.Seen a = r.events.get(0);
        assertEquals(BlockEvent.PROBLEM_NONE, a.problem());
        assertArrayEquals(new int[] {11, 12}, a.tokens(), "first token of each bigram pair");
        assertEquals("tenant-b", a.cacheSalt());
        assertEquals("alice", a.loraName());
        assertEquals(BlockEvent.MEDIUM_OTHER, a.medium());
        assertArrayEquals(new long[] {Long.MIN_VALUE}, a.hashes());
        assertEquals("tenant-c", r.events.get(1).cacheSalt(), "salt in a nested metadata map");
    }

    @Test
    void shouldDropOnlyTheEventWithABadSaltOrMetadata() throws IOException {
        final RecordingListener r = decode(batch(0,
            p -> {
                p.packMapHeader(2).packString("type").packString("BlockStored").packString("cache_salt").packInt(7);
            },
            p -> {
                p.packArrayHeader(8).packString("BlockStored");
                longs(p, 1L);
                p.packNil();
                ints(p, 1, 2);
                p.packInt(2).packNil().packString("GPU").packInt(42);
            },
            p -> {
                p.packMapHeader(2).packString("type").packString("BlockStored").packString("token_ids");
                p.packArrayHeader(1).packArrayHeader(0);
            },
            p -> {
                p.packMapHeader(2).packString("type").packString("BlockRemoved").packString("block_hashes");
                longs(p, 3L);
            }));
        assertEquals(4, r.events.size());
        assertEquals(BlockEvent.PROBLEM_FIELD_TYPE, r.events.get(0).problem(), "salt not a string");
        assertEquals(BlockEvent.PROBLEM_FIELD_TYPE, r.events.get(1).problem(), "metadata neither map nor string");
        assertEquals(BlockEvent.PROBLEM_FIELD_TYPE, r.events.get(2).problem(), "empty bigram pair");
        assertEquals(BlockEvent.PROBLEM_NONE, r.events.get(3).problem(), "the rest of the batch is kept");
        assertArrayEquals(new long[] {3L}, r.events.get(3).hashes());
    }

    @Test
    void shouldRejectMalformedFraming() {
        assertThrows(VllmDecodeException.class, () -> decode(new byte[] {(byte) 0x93, (byte) 0xcb}));
        assertThrows(VllmDecodeException.class, () -> decode(new byte[] {(byte) 0xa1, 'x'}));
    }
}
