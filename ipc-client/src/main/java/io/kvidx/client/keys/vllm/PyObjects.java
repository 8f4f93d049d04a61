package io.kvidx.client.keys.vllm;

import java.math.BigInteger;

/**
 * The small Python object model the vLLM hash encoders accept, mapped onto Java types:
 * <ul>
 *   <li>{@code null} is {@code None};</li>
 *   <li>{@link String} is {@code str};</li>
 *   <li>{@link Integer}, {@link Long}, {@link BigInteger} are {@code int};</li>
 *   <li>{@code byte[]} is {@code bytes};</li>
 *   <li>{@code Object[]} is a {@code tuple} of such values, {@code int[]} / {@code long[]} a tuple of ints.</li>
 * </ul>
 * Every value stands for a distinct Python object, except where CPython itself shares one object between equal
 * values: the empty {@code str}, one-character {@code str} below U+0100, the empty {@code bytes} and one-byte
 * {@code bytes} are singletons in CPython, so pickle refers back to them (BINGET) when they repeat.
 */
final class PyObjects {
    private PyObjects() {
    }

    static IllegalArgumentException unsupported(final Object value) {
        return new IllegalArgumentException("no Python equivalent for " + value.getClass().getName()
            + " (use null, String, Integer, Long, BigInteger, byte[], Object[], int[] or long[])");
    }

    static BigInteger big(final Object value) {
        if (value instanceof BigInteger b) {
            return b;
        }
        return BigInteger.valueOf(((Number)value).longValue());
    }
}
