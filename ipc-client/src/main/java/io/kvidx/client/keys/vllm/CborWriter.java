package io.kvidx.client.keys.vllm;

import java.math.BigInteger;
import java.util.Arrays;

/**
 * Writes the bytes {@code cbor2.dumps(obj, canonical=True)} gives for the object model of {@link PyObjects}:
 * tuples as definite-length arrays, ints in the shortest head (major types 0 and 1) or as bignum tags 2 / 3 beyond
 * 64 bits, str as UTF-8 text, bytes as byte strings, None as {@code 0xf6}. (Canonical mode only changes maps,
 * sets and floats, which this model does not have.)
 *
 * <p><b>Note:</b> not thread safe: an instance reuses its buffer; keep one per thread.
 */
public final class CborWriter {
    private static final BigInteger TWO_64 = BigInteger.ONE.shiftLeft(64);

    private final ByteSink out = new ByteSink(256);

    /**
     * Encodes obj; the result stays valid until the next call.
     *
     * @param obj value of the {@link PyObjects} model.
     * @return this.
     */
    public CborWriter encode(final Object obj) {
        out.reset();
        write(obj);
        return this;
    }

    /**
     * @param obj value of the {@link PyObjects} model.
     * @return a copy of {@code cbor2.dumps(obj, canonical=True)}.
     */
    public static byte[] dumps(final Object obj) {
        final CborWriter w = new CborWriter().encode(obj);
        return Arrays.copyOf(w.array(), w.length());
    }

    /**
     * @return buffer holding the last encoding from index 0.
     */
    public byte[] array() {
        return out.array();
    }

    /**
     * @return length of the last encoding.
     */
    public int length() {
        return out.length();
    }

    private void write(final Object obj) {
        switch (obj) {
            case null -> out.put(0xF6);
            case Integer i -> writeLong(i);
            case Long l -> writeLong(l);
            case BigInteger b -> writeBig(b);
            case String s -> {
                head(3, ByteSink.utf8Length(s, false));
                out.putUtf8(s, false);
            }
            case byte[] b -> {
                head(2, b.length);
                out.put(b, 0, b.length);
            }
            case Object[] t -> {
                head(4, t.length);
                for (final Object e : t) {
                    write(e);
                }
            }
            case int[] t -> {
                head(4, t.length);
                for (final int e : t) {
                    writeLong(e);
                }
            }
            case long[] t -> {
                head(4, t.length);
                for (final long e : t) {
                    writeLong(e);
                }
            }
            default -> throw PyObjects.unsupported(obj);
        }
    }

    private void writeLong(final long v) {
        if (v >= 0) {
            head(0, v);
        } else {
            head(1, -1 - v);
        }
    }

    private void writeBig(final BigInteger b) {
        final boolean negative = b.signum() < 0;
        final BigInteger magnitude = negative ? b.negate().subtract(BigInteger.ONE) : b;
        if (magnitude.compareTo(TWO_64) < 0) {
            head(negative ? 1 : 0, magnitude.longValue());
            return;
        }
        byte[] be = magnitude.toByteArray();
        if (be[0] == 0) {
            be = Arrays.copyOfRange(be, 1, be.length);
        }
        out.put(0xC0 | (negative ? 3 : 2));
        head(2, be.length);
        out.put(be, 0, be.length);
    }

    /** Head of major type {@code major} with argument {@code value} (unsigned 64-bit) in its shortest form. */
    private void head(final int major, final long value) {
        final int m = major << 5;
        if (Long.compareUnsigned(value, 24) < 0) {
            out.put(m | (int)value);
        } else if (Long.compareUnsigned(value, 0xFFL) <= 0) {
            out.put(m | 24);
            out.putBe(value, 1);
        } else if (Long.compareUnsigned(value, 0xFFFFL) <= 0) {
            out.put(m | 25);
            out.putBe(value, 2);
        } else if (Long.compareUnsigned(value, 0xFFFFFFFFL) <= 0) {
            out.put(m | 26);
            out.putBe(value, 4);
        } else {
            out.put(m | 27);
            out.putBe(value, 8);
        }
    }
}
