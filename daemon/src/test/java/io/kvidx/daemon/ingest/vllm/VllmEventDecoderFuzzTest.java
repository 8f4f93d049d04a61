package io.kvidx.daemon.ingest.vllm;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import org.agrona.concurrent.UnsafeBuffer;

import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Garbage and mutated real captures: the decoder either decodes or throws {@link VllmDecodeException}; it never
 * throws anything else, never loops (each value consumes a byte) and never allocates beyond the payload's size.
 */
class VllmEventDecoderFuzzTest {
    private static final byte[][] SEEDS = seeds();

    private static byte[][] seeds() {
        final Capture base = Capture.load("kv_event_base.json");
        final Capture lora = Capture.load("kv_event_lora.json");
        return new byte[][] {
            new VllmPayloads(VllmPayloads.Shape.ARRAY, VllmPayloads.HashWidth.UINT64)
                .stored(base.blockHashes(), null, base.tokenIds(), 16, null, "GPU").batch(0),
            new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.BIN32)
                .stored(lora.blockHashes(), 12345L, lora.tokenIds(), 16, "Alice", "GPU")
                .removed(lora.blockHashes(), "CPU").cleared().batch(null),
            new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.INT64)
                .removed(new long[] {1, -2, 3}, null).unknown().mapBatch(),
            new VllmPayloads(VllmPayloads.Shape.ARRAY, VllmPayloads.HashWidth.UINT64)
                .storedWithExtraKeys(new long[] {-5, 6}, null, new int[] {1, 2, 3, 4}, 2, "L",
                    List.of(List.of("L", List.of("img", -1), "salt", new byte[32]), List.of("L")))
                .batch(0),
            new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.BIN32)
                .storedWithExtraKeys(new long[] {7, 8}, 9L, new int[] {1, 2, 3, 4}, 2, null,
                    Arrays.asList(null, List.of(List.of("i", 1), new byte[32])))
                .batch(1),
        };
    }

    private static void decodeSafely(final byte[] payload) {
        final VllmEventDecoder decoder = new VllmEventDecoder(1 << 12, 1 << 16);
        try {
            decoder.decode(new UnsafeBuffer(payload), 0, payload.length, new RecordingListener());
        } catch (final VllmDecodeException expected) {
            assertTrue(expected.getMessage() != null);
        }
    }

    @Property(tries = 3000)
    void shouldSurviveRandomBytes(@ForAll("garbage") final byte[] payload) {
        decodeSafely(payload);
    }

    @Property(tries = 3000)
    void shouldSurviveMutatedCaptures(@ForAll("mutations") final byte[] payload) {
        decodeSafely(payload);
    }

    @Provide
    Arbitrary<byte[]> garbage() {
        final Arbitrary<Byte> interesting = Arbitraries.of((byte) 0x90, (byte) 0x93, (byte) 0xdc, (byte) 0xdd,
            (byte) 0xde, (byte) 0xdf, (byte) 0xc4, (byte) 0xc6, (byte) 0xcf, (byte) 0xd3, (byte) 0xff, (byte) 0xc0,
            (byte) 0xc1, (byte) 0xa4);
        return Arbitraries.oneOf(Arbitraries.bytes(), interesting).array(byte[].class).ofMaxSize(300);
    }

    @Provide
    Arbitrary<byte[]> mutations() {
        final Arbitrary<Integer> seed = Arbitraries.integers().between(0, SEEDS.length - 1);
        final Arbitrary<List<Tuple.Tuple3<Integer, Integer, Byte>>> edits = Arbitraries.integers().between(0, 2)
            .flatMap(kind -> Arbitraries.integers().between(0, 1 << 16)
                .flatMap(pos -> Arbitraries.bytes().map(b -> Tuple.of(kind, pos, b))))
            .list().ofMinSize(1).ofMaxSize(8);
        return seed.flatMap(s -> edits.map(list -> {
            byte[] p = SEEDS[s].clone();
            for (final Tuple.Tuple3<Integer, Integer, Byte> edit : list) {
                final int pos = edit.get2() % Math.max(1, p.length);
                switch (edit.get1()) {
                    case 0 -> p[pos] = edit.get3();
                    case 1 -> p = Arrays.copyOf(p, pos);
                    default -> {
                        final byte[] q = new byte[p.length + 1];
                        System.arraycopy(p, 0, q, 0, pos);
                        q[pos] = edit.get3();
                        System.arraycopy(p, pos, q, pos + 1, p.length - pos);
                        p = q;
                    }
                }
                if (p.length == 0) {
                    break;
                }
            }
            return p;
        }));
    }
}
