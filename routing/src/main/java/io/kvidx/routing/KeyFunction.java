package io.kvidx.routing;

/**
 * Turns a prompt's token ids into its chain of block keys, the same keys the daemon indexes blocks by (the
 * router-key scheme). Only full blocks are keyed.
 *
 * <p><b>Note:</b> implementations must be thread safe and should not allocate.
 */
@FunctionalInterface
public interface KeyFunction {
    /**
     * @param tokens token ids.
     * @param length number of tokens.
     * @param keys   output, at least {@code length / blockSize} long.
     * @return number of keys written.
     */
    int keys(int[] tokens, int length, long[] keys);
}
