package io.kvidx.client.keys.vllm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.math.BigInteger;
import java.util.HexFormat;

import org.junit.jupiter.api.Test;

/** Byte-exact expectations recorded from CPython 3.11's pickle.dumps(..., protocol=5) and cbor2 5.4. */
class PicklerTest {
    private static final HexFormat HEX = HexFormat.of();
    private static final BigInteger TWO = BigInteger.TWO;

    @Test
    void shouldUseTheSameIntOpcodesAtEveryBoundaryAsCPython() {
        final Object ints = new Object[] {
            0, 255, 256, 65535, 65536, Integer.MAX_VALUE, 1L << 31, TWO.pow(63), -1, Integer.MIN_VALUE,
            (long)Integer.MIN_VALUE - 1, TWO.pow(64), TWO.pow(64).negate().subtract(BigInteger.ONE),
        };
        assertEquals("8005955100000000000000284b004bff4d00014dffff4a000001004affffff7f8a0500000080008a09000000000000"
            + "0080004affffffff4a000000808a05ffffff7fff8a090000000000000000018a09fffffffffffffffffe74942e",
            HEX.formatHex(Pickler.dumps(ints)));
        assertEquals("8d0018ff19010019ffff1a000100001a7fffffff1a800000001b8000000000000000203a7fffffff3a80000000c2"
            + "49010000000000000000c349010000000000000000", HEX.formatHex(CborWriter.dumps(ints)));
    }

    @Test
    void shouldUseTupleOneToThreeOpcodesAndMarkForLongerTuples() {
        final Object tuples = new Object[] {
            new Object[0], new Object[] {1}, new int[] {1, 2}, new long[] {1, 2, 3}, new Object[] {1, 2, 3, 4},
        };
        assertEquals("800595220000000000000028294b0185944b014b0286944b014b024b038794284b014b024b034b04749474942e",
            HEX.formatHex(Pickler.dumps(tuples)));
        assertEquals("85808101820102830102038401020304", HEX.formatHex(CborWriter.dumps(tuples)));
    }

    @Test
    void shouldPickleABlockHashInputAsVllmDoes() {
        final byte[] parent = new byte[32];
        java.util.Arrays.fill(parent, (byte)1);
        final Object block = new Object[] {parent, new int[] {1, 2, 3, 4}, new Object[] {"Alice", "s"}};
        assertEquals("8005953f000000000000004320010101010101010101010101010101010101010101010101010101010101010194"
            + "284b014b024b034b0474948c05416c696365948c017394869487942e", HEX.formatHex(Pickler.dumps(block)));
        assertEquals("835820010101010101010101010101010101010101010101010101010101010101010184010203048265416c6963"
            + "656173", HEX.formatHex(CborWriter.dumps(block)));
        assertEquals("80059506000000000000008c023432942e", HEX.formatHex(Pickler.dumps("42")));
    }

    @Test
    void shouldReferBackToCPythonSingletonsOnly() {
        // 'a' and '' are shared objects in CPython, "ab" twice is two objects.
        assertEquals("8005951b00000000000000288c01619468008c02c3a99468018c026162948c0261629474942e",
            HEX.formatHex(Pickler.dumps(new Object[] {"a", "a", "\u00e9", "\u00e9", "ab", "ab"})));
    }

    @Test
    void shouldRejectValuesWithoutAPythonEquivalent() {
        assertThrows(IllegalArgumentException.class, () -> Pickler.dumps(new Object[] {1.5}));
        assertThrows(IllegalArgumentException.class, () -> CborWriter.dumps(true));
        assertThrows(IllegalArgumentException.class, () -> CborWriter.dumps("\ud800"));
    }
}
