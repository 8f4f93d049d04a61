package io.kvidx.daemon.ingest.vllm;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.agrona.concurrent.UnsafeBuffer;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

import java.io.IOException;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The cursor's bulk paths against an independent encoder (msgpack-core): the bulk integer read
 * ({@link MsgpackCursor#readUnsignedInts}) reads every value of every form as the one-by-one read does (msgpack-core
 * picks the shortest form; int32/int64 for small values are written by hand, as other writers choose them), and
 * {@link MsgpackCursor#skipValue()} (which the transport threads use to find a batch's rank) ends exactly after any
 * nested value of every type. A truncated region still ends in a typed exception, never an out-of-bounds read.
 */
class MsgpackCursorBulkTest {
    /** A value and the msgpack form to write it in. */
    record Value(long v, int form) {
    }

    @Provide
    Arbitrary<List<Value>> values() {
        final Arbitrary<Long> v = Arbitraries.oneOf(Arbitraries.longs().between(0, 127),
            Arbitraries.longs().between(128, 255), Arbitraries.longs().between(256, 65_535),
            Arbitraries.longs().between(65_536, 0xFFFF_FFFFL), Arbitraries.longs().between(-32, -1),
            Arbitraries.longs().between(Integer.MIN_VALUE, -33), Arbitraries.longs());
        return net.jqwik.api.Combinators.combine(v, Arbitraries.integers().between(0, 3)).as(Value::new).list()
            .ofMaxSize(64);
    }

    @Property(tries = 300)
    void shouldReadEveryFormAsTheOneByOneReadDoes(@ForAll("values") final List<Value> values) throws IOException {
        final byte[] bytes = encode(values);
        final MsgpackCursor bulk = new MsgpackCursor().wrap(new UnsafeBuffer(bytes), 0, bytes.length);
        final int n = bulk.readArrayHeader();
        final int[] got = new int[n];
        for (int i = bulk.readUnsignedInts(got, 0, n); i < n; i++) {
            got[i] = (int) bulk.readLong();
            // After a value of another form, the bulk read resumes.
            i = bulk.readUnsignedInts(got, i + 1, n) - 1;
        }
        assertEquals(0, bulk.remaining());
        for (int i = 0; i < n; i++) {
            assertEquals((int) values.get(i).v(), got[i], "value " + i + " of " + values);
        }
    }

    @Property(tries = 100)
    void shouldNeverReadPastATruncatedRegion(@ForAll("values") final List<Value> values) throws IOException {
        final byte[] bytes = encode(values);
        for (int cut = 1; cut < bytes.length; cut++) {
            final MsgpackCursor c = new MsgpackCursor().wrap(new UnsafeBuffer(bytes), 0, cut);
            assertThrows(VllmDecodeException.class, () -> {
                final int n = c.readArrayHeader();
                final int[] got = new int[n];
                for (int i = c.readUnsignedInts(got, 0, n); i < n; i++) {
                    got[i] = (int) c.readLong();
                }
            }, "cut at " + cut);
        }
    }

    @Property(tries = 300)
    void shouldSkipExactlyOneValueOfAnyShape(@ForAll final long seed) throws IOException {
        final SplittableRandom random = new SplittableRandom(seed);
        final byte[] bytes;
        final int valueLength;
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            packRandom(p, random, 0);
            p.flush();
            valueLength = (int) p.getTotalWrittenBytes();
            p.packString("after");
            bytes = p.toByteArray();
        }
        final MsgpackCursor c = new MsgpackCursor().wrap(new UnsafeBuffer(bytes), 0, bytes.length);
        c.skipValue();
        assertEquals(valueLength, c.position(), "seed " + seed);
        for (int cut = 0; cut < valueLength; cut++) {
            final MsgpackCursor t = new MsgpackCursor().wrap(new UnsafeBuffer(bytes), 0, cut);
            assertThrows(VllmDecodeException.class, t::skipValue, "seed " + seed + " cut at " + cut);
        }
    }

    private static void packRandom(final MessageBufferPacker p, final SplittableRandom r, final int depth)
        throws IOException {
        final int kind = r.nextInt(depth >= 3 ? 9 : 11);
        switch (kind) {
            case 0 -> p.packNil();
            case 1 -> p.packBoolean(r.nextBoolean());
            case 2 -> p.packLong(r.nextLong() >> r.nextInt(64));
            case 3 -> p.packLong(r.nextInt(-40, 70_000));
            case 4 -> p.packFloat(r.nextFloat());
            case 5 -> p.packDouble(r.nextDouble());
            case 6 -> p.packString("x".repeat(r.nextInt(0, 300)));
            case 7 -> {
                final byte[] b = new byte[r.nextInt(0, 300)];
                p.packBinaryHeader(b.length).writePayload(b);
            }
            case 8 -> {
                final int[] sizes = {1, 2, 4, 8, 16, 3, 200};
                final int n = sizes[r.nextInt(sizes.length)];
                p.packExtensionTypeHeader((byte) 1, n).writePayload(new byte[n]);
            }
            case 9 -> {
                final int n = r.nextInt(0, 20);
                p.packArrayHeader(n);
                for (int i = 0; i < n; i++) {
                    packRandom(p, r, depth + 1);
                }
            }
            default -> {
                final int n = r.nextInt(0, 18);
                p.packMapHeader(n);
                for (int i = 0; i < 2 * n; i++) {
                    packRandom(p, r, depth + 1);
                }
            }
        }
    }

    private static byte[] encode(final List<Value> values) throws IOException {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(values.size());
            for (final Value x : values) {
                final long v = x.v();
                if (x.form() == 1 && v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE) {
                    p.writePayload(new byte[] {(byte) 0xd2, (byte) (v >>> 24), (byte) (v >>> 16), (byte) (v >>> 8),
                        (byte) v});
                } else if (x.form() == 2) {
                    final byte[] b = new byte[9];
                    b[0] = (byte) 0xd3;
                    for (int k = 0; k < 8; k++) {
                        b[1 + k] = (byte) (v >>> (56 - 8 * k));
                    }
                    p.writePayload(b);
                } else {
                    p.packLong(v);
                }
            }
            return p.toByteArray();
        }
    }
}
