package io.kvidx.client.keys.vllm;

import java.math.BigInteger;
import java.util.Arrays;

/**
 * Writes the bytes CPython's {@code pickle.dumps(obj, protocol=5)} gives for the small object model of
 * {@link PyObjects} (None, int, str, bytes, tuple), byte for byte: the same opcodes for each int range
 * (BININT1 / BININT2 / BININT / LONG1 / LONG4), TUPLE1..3 versus MARK .. TUPLE, MEMOIZE after every str, bytes and
 * non-empty tuple, BINGET for CPython's shared singletons, and the FRAME opcodes of protocol 4+ (a frame is closed
 * at the start of a save once it holds 64 KiB or more; str / bytes payloads of 64 KiB or more go outside frames).
 *
 * <p><b>Note:</b> not thread safe: an instance reuses its buffers; keep one per thread.
 */
public final class Pickler {
    private static final int PROTO = 0x80;
    private static final int FRAME = 0x95;
    private static final int STOP = '.';
    private static final int NONE = 'N';
    private static final int BININT = 'J';
    private static final int BININT1 = 'K';
    private static final int BININT2 = 'M';
    private static final int LONG1 = 0x8a;
    private static final int LONG4 = 0x8b;
    private static final int SHORT_BINUNICODE = 0x8c;
    private static final int BINUNICODE = 'X';
    private static final int SHORT_BINBYTES = 'C';
    private static final int BINBYTES = 'B';
    private static final int EMPTY_TUPLE = ')';
    private static final int MARK = '(';
    private static final int TUPLE = 't';
    private static final int TUPLE1 = 0x85;
    private static final int MEMOIZE = 0x94;
    private static final int BINGET = 'h';
    private static final int LONG_BINGET = 'j';

    /** CPython's FRAME_SIZE_TARGET. */
    static final int FRAME_SIZE_TARGET = 64 * 1024;
    /** CPython's FRAME_SIZE_MIN: shorter frames get no FRAME header. */
    static final int FRAME_SIZE_MIN = 4;

    private final ByteSink body = new ByteSink(512);
    private final ByteSink out = new ByteSink(512);
    private int[] segments = new int[24];
    private int segmentCount;
    private int frameStart;
    private int memoCount;
    private final int[] strMemo = new int[257];
    private final int[] bytesMemo = new int[257];

    /**
     * Pickles obj; the result stays valid until the next call ({@link #array()}, {@link #length()}).
     *
     * @param obj value of the {@link PyObjects} model.
     * @return this.
     */
    public Pickler dump(final Object obj) {
        body.reset();
        segmentCount = 0;
        frameStart = -1;
        memoCount = 0;
        Arrays.fill(strMemo, -1);
        Arrays.fill(bytesMemo, -1);
        save(obj);
        op(STOP);
        commitFrame();
        assemble();
        return this;
    }

    /**
     * @param obj value of the {@link PyObjects} model.
     * @return a copy of {@code pickle.dumps(obj, protocol=5)}.
     */
    public static byte[] dumps(final Object obj) {
        final Pickler p = new Pickler().dump(obj);
        return Arrays.copyOf(p.array(), p.length());
    }

    /**
     * @return buffer holding the last pickle from index 0.
     */
    public byte[] array() {
        return out.array();
    }

    /**
     * @return length of the last pickle.
     */
    public int length() {
        return out.length();
    }

    private void save(final Object obj) {
        if (frameStart >= 0 && body.length() - frameStart >= FRAME_SIZE_TARGET) {
            commitFrame();
        }
        switch (obj) {
            case null -> op(NONE);
            case Integer i -> saveLong(i);
            case Long l -> saveLong(l);
            case BigInteger b -> saveBig(b);
            case String s -> saveStr(s);
            case byte[] b -> saveBytes(b);
            case Object[] t -> saveTuple(t, t.length);
            case int[] t -> saveTuple(t, t.length);
            case long[] t -> saveTuple(t, t.length);
            default -> throw PyObjects.unsupported(obj);
        }
    }

    private void saveTuple(final Object tuple, final int n) {
        if (n == 0) {
            op(EMPTY_TUPLE);
            return;
        }
        if (n > 3) {
            op(MARK);
        }
        for (int i = 0; i < n; i++) {
            switch (tuple) {
                case int[] t -> save(t[i]);
                case long[] t -> save(t[i]);
                default -> save(((Object[])tuple)[i]);
            }
        }
        op(n > 3 ? TUPLE : TUPLE1 + n - 1);
        memoize();
    }

    /** Ints are saved without boxing by the int[] tuple path through this overload. */
    private void save(final int value) {
        if (frameStart >= 0 && body.length() - frameStart >= FRAME_SIZE_TARGET) {
            commitFrame();
        }
        saveLong(value);
    }

    private void save(final long value) {
        if (frameStart >= 0 && body.length() - frameStart >= FRAME_SIZE_TARGET) {
            commitFrame();
        }
        saveLong(value);
    }

    private void saveLong(final long v) {
        if (v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE) {
            openFrame();
            if (v >= 0 && v <= 0xFF) {
                body.put(BININT1);
                body.put((int)v);
            } else if (v >= 0 && v <= 0xFFFF) {
                body.put(BININT2);
                body.putLe(v, 2);
            } else {
                body.put(BININT);
                body.putLe(v, 4);
            }
            return;
        }
        saveBig(BigInteger.valueOf(v));
    }

    private void saveBig(final BigInteger b) {
        if (b.bitLength() < 64) {
            final long v = b.longValue();
            if (v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE) {
                saveLong(v);
                return;
            }
        }
        // Python's encode_long: minimal little-endian two's complement, the reverse of toByteArray().
        final byte[] be = b.toByteArray();
        openFrame();
        if (be.length <= 0xFF) {
            body.put(LONG1);
            body.put(be.length);
        } else {
            body.put(LONG4);
            body.putLe(be.length, 4);
        }
        body.ensure(be.length);
        for (int i = be.length - 1; i >= 0; i--) {
            body.put(be[i]);
        }
    }

    private void saveStr(final String s) {
        final int singleton = s.isEmpty() ? 256 : s.length() == 1 && s.charAt(0) < 256 ? s.charAt(0) : -1;
        if (singleton >= 0 && strMemo[singleton] >= 0) {
            get(strMemo[singleton]);
            return;
        }
        final int n = ByteSink.utf8Length(s, true);
        final boolean large = n >= FRAME_SIZE_TARGET;
        if (large) {
            commitFrame();
            final int start = body.length();
            body.put(BINUNICODE);
            body.putLe(n, 4);
            body.putUtf8(s, true);
            segment(start, body.length(), false);
        } else {
            openFrame();
            if (n <= 0xFF) {
                body.put(SHORT_BINUNICODE);
                body.put(n);
            } else {
                body.put(BINUNICODE);
                body.putLe(n, 4);
            }
            body.putUtf8(s, true);
        }
        if (singleton >= 0) {
            strMemo[singleton] = memoCount;
        }
        memoize();
    }

    private void saveBytes(final byte[] b) {
        final int singleton = b.length == 0 ? 256 : b.length == 1 ? b[0] & 0xFF : -1;
        if (singleton >= 0 && bytesMemo[singleton] >= 0) {
            get(bytesMemo[singleton]);
            return;
        }
        if (b.length >= FRAME_SIZE_TARGET) {
            commitFrame();
            final int start = body.length();
            body.put(BINBYTES);
            body.putLe(b.length, 4);
            body.put(b, 0, b.length);
            segment(start, body.length(), false);
        } else {
            openFrame();
            if (b.length <= 0xFF) {
                body.put(SHORT_BINBYTES);
                body.put(b.length);
            } else {
                body.put(BINBYTES);
                body.putLe(b.length, 4);
            }
            body.put(b, 0, b.length);
        }
        if (singleton >= 0) {
            bytesMemo[singleton] = memoCount;
        }
        memoize();
    }

    private void memoize() {
        op(MEMOIZE);
        memoCount++;
    }

    private void get(final int index) {
        openFrame();
        if (index <= 0xFF) {
            body.put(BINGET);
            body.put(index);
        } else {
            body.put(LONG_BINGET);
            body.putLe(index, 4);
        }
    }

    private void op(final int opcode) {
        openFrame();
        body.put(opcode);
    }

    private void openFrame() {
        if (frameStart < 0) {
            frameStart = body.length();
        }
    }

    private void commitFrame() {
        if (frameStart >= 0) {
            segment(frameStart, body.length(), true);
            frameStart = -1;
        }
    }

    private void segment(final int start, final int end, final boolean framed) {
        if (start == end) {
            return;
        }
        if (3 * segmentCount + 3 > segments.length) {
            segments = Arrays.copyOf(segments, segments.length * 2);
        }
        segments[3 * segmentCount] = start;
        segments[3 * segmentCount + 1] = end;
        segments[3 * segmentCount + 2] = framed ? 1 : 0;
        segmentCount++;
    }

    private void assemble() {
        out.reset();
        out.put(PROTO);
        out.put(5);
        final byte[] src = body.array();
        for (int i = 0; i < segmentCount; i++) {
            final int start = segments[3 * i];
            final int end = segments[3 * i + 1];
            if (segments[3 * i + 2] == 1 && end - start >= FRAME_SIZE_MIN) {
                out.put(FRAME);
                out.putLe(end - start, 8);
            }
            out.put(src, start, end - start);
        }
    }
}
