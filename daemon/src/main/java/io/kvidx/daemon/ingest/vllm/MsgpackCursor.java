package io.kvidx.daemon.ingest.vllm;

import org.agrona.DirectBuffer;

import java.nio.ByteOrder;

/**
 * A bounded, allocation-free msgpack reader over a region of an Agrona {@link DirectBuffer}. Every read checks the
 * remaining length first, so a truncated payload or an absurd length header ends in a {@link VllmDecodeException},
 * never an out-of-bounds access, a huge allocation or an endless loop: each value read or skipped consumes at least
 * one byte.
 *
 * <p>Public for the decoders of other engines' formats (e.g. {@code ingest.sglang}); {@code TYPE_*} are the values of
 * {@link #peekType()}.
 *
 * <p><b>Note:</b> not thread safe; one cursor per decoding thread.
 */
public final class MsgpackCursor {
    /** msgpack type. */
    public static final int TYPE_NIL = 0;
    /** msgpack type. */
    public static final int TYPE_BOOL = 1;
    /** msgpack type. */
    public static final int TYPE_INT = 2;
    /** msgpack type. */
    public static final int TYPE_FLOAT = 3;
    /** msgpack type. */
    public static final int TYPE_STR = 4;
    /** msgpack type. */
    public static final int TYPE_BIN = 5;
    /** msgpack type. */
    public static final int TYPE_ARRAY = 6;
    /** msgpack type. */
    public static final int TYPE_MAP = 7;
    /** msgpack type. */
    public static final int TYPE_EXT = 8;
    /** msgpack type. */
    public static final int TYPE_NEVER_USED = 9;

    private static final ByteOrder BE = ByteOrder.BIG_ENDIAN;

    private DirectBuffer buffer;
    private int position;
    private int limit;

    public MsgpackCursor wrap(final DirectBuffer buffer, final int offset, final int length) {
        if (offset < 0 || length < 0 || (long) offset + length > buffer.capacity()) {
            throw new VllmDecodeException("region [" + offset + ", +" + length + ") outside buffer of capacity "
                + buffer.capacity());
        }
        this.buffer = buffer;
        this.position = offset;
        this.limit = offset + length;
        return this;
    }

    public int position() {
        return position;
    }

    public void position(final int position) {
        this.position = position;
    }

    public int remaining() {
        return limit - position;
    }

    public DirectBuffer buffer() {
        return buffer;
    }

    private void need(final long n) {
        if (n > limit - position) {
            throw new VllmDecodeException("truncated at byte " + position + ": need " + n + ", have "
                + (limit - position));
        }
    }

    private int u8() {
        need(1);
        return buffer.getByte(position++) & 0xFF;
    }

    private int u16() {
        need(2);
        final int v = buffer.getShort(position, BE) & 0xFFFF;
        position += 2;
        return v;
    }

    private long u32() {
        need(4);
        final long v = buffer.getInt(position, BE) & 0xFFFF_FFFFL;
        position += 4;
        return v;
    }

    private long s64() {
        need(8);
        final long v = buffer.getLong(position, BE);
        position += 8;
        return v;
    }

    /**
     * @return the type of the next value, without consuming it.
     */
    public int peekType() {
        need(1);
        final int b = buffer.getByte(position) & 0xFF;
        if (b <= 0x7f || b >= 0xe0) {
            return TYPE_INT;
        }
        if (b <= 0x8f) {
            return TYPE_MAP;
        }
        if (b <= 0x9f) {
            return TYPE_ARRAY;
        }
        if (b <= 0xbf) {
            return TYPE_STR;
        }
        return switch (b) {
            case 0xc0 -> TYPE_NIL;
            case 0xc1 -> TYPE_NEVER_USED;
            case 0xc2, 0xc3 -> TYPE_BOOL;
            case 0xc4, 0xc5, 0xc6 -> TYPE_BIN;
            case 0xc7, 0xc8, 0xc9, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8 -> TYPE_EXT;
            case 0xca, 0xcb -> TYPE_FLOAT;
            case 0xd9, 0xda, 0xdb -> TYPE_STR;
            case 0xdc, 0xdd -> TYPE_ARRAY;
            case 0xde, 0xdf -> TYPE_MAP;
            default -> TYPE_INT;
        };
    }

    /**
     * @return true when the next value is a uint64 (0xcf), whose {@link #readLong()} bits are unsigned.
     */
    boolean peekUint64() {
        need(1);
        return (buffer.getByte(position) & 0xFF) == 0xcf;
    }

    public boolean tryReadNil() {
        need(1);
        if ((buffer.getByte(position) & 0xFF) == 0xc0) {
            position++;
            return true;
        }
        return false;
    }

    /**
     * @return element count of an array; checked against the bytes left (each element takes at least one).
     */
    public int readArrayHeader() {
        final int b = u8();
        final long n;
        if ((b & 0xf0) == 0x90) {
            n = b & 0x0f;
        } else if (b == 0xdc) {
            n = u16();
        } else if (b == 0xdd) {
            n = u32();
        } else {
            position--;
            throw new VllmDecodeException("expected an array at byte " + position + ", found 0x"
                + Integer.toHexString(b));
        }
        if (n > remaining()) {
            throw new VllmDecodeException("array of " + n + " elements at byte " + position + " exceeds the "
                + remaining() + " bytes left");
        }
        return (int) n;
    }

    /**
     * @return entry count of a map; checked against the bytes left (each entry takes at least two).
     */
    public int readMapHeader() {
        final int b = u8();
        final long n;
        if ((b & 0xf0) == 0x80) {
            n = b & 0x0f;
        } else if (b == 0xde) {
            n = u16();
        } else if (b == 0xdf) {
            n = u32();
        } else {
            position--;
            throw new VllmDecodeException("expected a map at byte " + position + ", found 0x"
                + Integer.toHexString(b));
        }
        if (2 * n > remaining()) {
            throw new VllmDecodeException("map of " + n + " entries at byte " + position + " exceeds the "
                + remaining() + " bytes left");
        }
        return (int) n;
    }

    /**
     * Reads a str or bin header and checks the payload is present; the payload starts at {@link #position()}.
     *
     * @return payload length.
     */
    public int readRawHeader() {
        final int b = u8();
        final long n;
        if ((b & 0xe0) == 0xa0) {
            n = b & 0x1f;
        } else if (b == 0xd9 || b == 0xc4) {
            n = u8();
        } else if (b == 0xda || b == 0xc5) {
            n = u16();
        } else if (b == 0xdb || b == 0xc6) {
            n = u32();
        } else {
            position--;
            throw new VllmDecodeException("expected str or bin at byte " + position + ", found 0x"
                + Integer.toHexString(b));
        }
        need(n);
        return (int) n;
    }

    /**
     * Reads an integer of any msgpack width. A uint64 above {@code Long.MAX_VALUE} is returned as its two's
     * complement bit pattern (callers that want unsigned values read it as such).
     *
     * @return the value's 64 bits.
     */
    public long readLong() {
        final int b = u8();
        if (b <= 0x7f) {
            return b;
        }
        if (b >= 0xe0) {
            return (byte) b;
        }
        return switch (b) {
            case 0xcc -> u8();
            case 0xcd -> u16();
            case 0xce -> u32();
            case 0xcf, 0xd3 -> s64();
            case 0xd0 -> (byte) u8();
            case 0xd1 -> (short) u16();
            case 0xd2 -> (int) u32();
            default -> {
                position--;
                throw new VllmDecodeException("expected an integer at byte " + position + ", found 0x"
                    + Integer.toHexString(b));
            }
        };
    }

    /**
     * Reads a run of unsigned integers in the forms msgpack writers choose for small non-negative values (positive
     * fixint, uint8, uint16, uint32: every token id) into {@code dst[from..to)}, as {@code (int)} of the value like
     * {@code (int) readLong()}. One 8-byte load and one bounds check per value instead of one per byte read: the
     * decoder's token-id loop, which {@link #readLong()} made a quarter of the writer's time. Stops, consuming nothing
     * more, at a value of another form or within 8 bytes of the region's end; the caller reads the rest one by one.
     *
     * @param dst  receives the values.
     * @param from first index to fill.
     * @param to   index after the last to fill.
     * @return the index after the last value read ({@code from} when none).
     */
    public int readUnsignedInts(final int[] dst, final int from, final int to) {
        final DirectBuffer b = buffer;
        final int end = limit - Long.BYTES;
        int p = position;
        int i = from;
        while (i < to && p <= end) {
            final long w = b.getLong(p, BE);
            final int type = (int) (w >>> 56);
            if (type <= 0x7f) {
                dst[i++] = type;
                p += 1;
            } else if (type == 0xcd) {
                dst[i++] = (int) (w >>> 40) & 0xFFFF;
                p += 3;
            } else if (type == 0xce) {
                dst[i++] = (int) (w >>> 24);
                p += 5;
            } else if (type == 0xcc) {
                dst[i++] = (int) (w >>> 48) & 0xFF;
                p += 2;
            } else {
                break;
            }
        }
        position = p;
        return i;
    }

    /**
     * @return a float32/float64 or integer value as a double.
     */
    public double readDouble() {
        need(1);
        final int b = buffer.getByte(position) & 0xFF;
        if (b == 0xcb) {
            position++;
            return Double.longBitsToDouble(s64());
        }
        if (b == 0xca) {
            position++;
            return Float.intBitsToFloat((int) u32());
        }
        return readLong();
    }

    /**
     * Compares the str or bin payload of {@code length} bytes at the current position with an ASCII literal.
     */
    public boolean payloadEquals(final int length, final byte[] literal) {
        if (length != literal.length) {
            return false;
        }
        for (int i = 0; i < length; i++) {
            if (buffer.getByte(position + i) != literal[i]) {
                return false;
            }
        }
        return true;
    }

    public void skipBytes(final int n) {
        need(n);
        position += n;
    }

    /**
     * Skips {@code n} values, each with everything nested in it (see {@link #skipValue()}).
     *
     * @param n values to skip.
     */
    public void skipValues(final int n) {
        for (int i = 0; i < n; i++) {
            skipValue();
        }
    }

    /**
     * Skips one value and everything nested in it, iteratively (no recursion, so no stack overflow on deep
     * nesting). Bounded: every value consumes at least one byte.
     */
    public void skipValue() {
        long pending = 1;
        while (pending > 0) {
            pending--;
            final int b = u8();
            if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
                continue;
            }
            if ((b & 0xf0) == 0x80) {
                pending += 2L * (b & 0x0f);
            } else if ((b & 0xf0) == 0x90) {
                pending += b & 0x0f;
            } else if ((b & 0xe0) == 0xa0) {
                skipBytes(b & 0x1f);
            } else {
                switch (b) {
                    case 0xc4, 0xd9 -> skipBytes(u8());
                    case 0xc5, 0xda -> skipBytes(u16());
                    case 0xc6, 0xdb -> skipLong(u32());
                    case 0xc7 -> skipLong(1L + u8());
                    case 0xc8 -> skipLong(1L + u16());
                    case 0xc9 -> skipLong(1L + u32());
                    case 0xca -> skipBytes(4);
                    case 0xcb -> skipBytes(8);
                    case 0xcc, 0xd0 -> skipBytes(1);
                    case 0xcd, 0xd1 -> skipBytes(2);
                    case 0xce, 0xd2 -> skipBytes(4);
                    case 0xcf, 0xd3 -> skipBytes(8);
                    case 0xd4 -> skipBytes(2);
                    case 0xd5 -> skipBytes(3);
                    case 0xd6 -> skipBytes(5);
                    case 0xd7 -> skipBytes(9);
                    case 0xd8 -> skipBytes(17);
                    case 0xdc -> pending += u16();
                    case 0xdd -> pending += u32();
                    case 0xde -> pending += 2L * u16();
                    case 0xdf -> pending += 2L * u32();
                    default -> {
                        position--;
                        throw new VllmDecodeException("invalid msgpack byte 0x" + Integer.toHexString(b)
                            + " at " + position);
                    }
                }
            }
            if (pending > remaining()) {
                throw new VllmDecodeException(pending + " values pending at byte " + position + " exceed the "
                    + remaining() + " bytes left");
            }
        }
    }

    private void skipLong(final long n) {
        need(n);
        position += (int) n;
    }
}
