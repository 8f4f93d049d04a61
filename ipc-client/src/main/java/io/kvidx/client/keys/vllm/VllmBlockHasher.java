package io.kvidx.client.keys.vllm;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Objects;

import io.kvidx.client.keys.Xxh3;

/**
 * Reproduces vLLM's prefix-cache block hashes bit for bit:
 * {@code hash(block) = H((parent_digest or NONE_HASH, tuple(block_tokens), extra_keys or None))} with
 * {@code NONE_HASH = H(hash_seed)} (the PYTHONHASHSEED string), where H serialises with pickle (protocol 5) or
 * canonical CBOR and digests with SHA-256 or XXH3-128. The value vLLM publishes in KV events is the last 8 bytes
 * of the digest read big-endian ({@link #eventValue(byte[], int, int)}).
 *
 * <p><b>Note:</b> not thread safe (reuses its serialisation buffers and digest); keep one instance per thread.
 */
public final class VllmBlockHasher {
    private final VllmHashAlgorithm algorithm;
    private final int blockSize;
    private final int digestLength;
    private final Pickler pickler;
    private final CborWriter cbor;
    private final MessageDigest sha256;
    private final long[] xxScratch = new long[2];
    private final int[] blockTokens;
    private final byte[] parent;
    private final byte[] chainCurrent;
    private final byte[] chainPrevious;
    private final Object[] triple = new Object[3];

    /**
     * @param algorithm the hash function.
     * @param blockSize tokens per block, at least 1.
     */
    public VllmBlockHasher(final VllmHashAlgorithm algorithm, final int blockSize) {
        if (blockSize < 1) {
            throw new IllegalArgumentException("block size must be at least 1: " + blockSize);
        }
        this.algorithm = Objects.requireNonNull(algorithm, "algorithm");
        this.blockSize = blockSize;
        this.digestLength = algorithm.digestLength();
        this.pickler = algorithm.cbor() ? null : new Pickler();
        this.cbor = algorithm.cbor() ? new CborWriter() : null;
        this.sha256 = algorithm.digestLength() == 32 ? sha256() : null;
        this.blockTokens = new int[blockSize];
        this.parent = new byte[digestLength];
        this.chainCurrent = new byte[digestLength];
        this.chainPrevious = new byte[digestLength];
    }

    /**
     * @return the hash function.
     */
    public VllmHashAlgorithm algorithm() {
        return algorithm;
    }

    /**
     * @return tokens per block.
     */
    public int blockSize() {
        return blockSize;
    }

    /**
     * @return digest length in bytes.
     */
    public int digestLength() {
        return digestLength;
    }

    /**
     * vLLM's NONE_HASH for a PYTHONHASHSEED value: the digest of the seed string itself.
     *
     * @param hashSeed the PYTHONHASHSEED string, e.g. "42".
     * @return a new array holding the digest.
     */
    public byte[] noneHash(final String hashSeed) {
        final byte[] out = new byte[digestLength];
        digest(Objects.requireNonNull(hashSeed, "hashSeed"), out, 0);
        return out;
    }

    /**
     * H(obj) for any value of the {@link PyObjects} model.
     *
     * @param obj       value.
     * @param out       receives {@link #digestLength()} bytes.
     * @param outOffset where to write.
     */
    public void digest(final Object obj, final byte[] out, final int outOffset) {
        Objects.checkFromIndexSize(outOffset, digestLength, out.length);
        final byte[] bytes;
        final int length;
        if (pickler != null) {
            pickler.dump(obj);
            bytes = pickler.array();
            length = pickler.length();
        } else {
            cbor.encode(obj);
            bytes = cbor.array();
            length = cbor.length();
        }
        if (sha256 != null) {
            sha256.update(bytes, 0, length);
            try {
                sha256.digest(out, outOffset, digestLength);
            } catch (final java.security.DigestException ex) {
                throw new IllegalStateException(ex);
            }
        } else {
            Xxh3.hash128Canonical(bytes, 0, length, 0L, out, outOffset, xxScratch);
        }
    }

    /**
     * The digest of one block.
     *
     * @param parentDigest digest of the previous block, or NONE_HASH for the first block ({@link #digestLength()}
     *                     bytes from parentOffset).
     * @param parentOffset where the parent digest starts.
     * @param tokens       token ids.
     * @param offset       first token of the block.
     * @param extraKeys    the block's extra keys tuple, or null for None.
     * @param out          receives the digest.
     * @param outOffset    where to write.
     */
    public void hashBlock(
        final byte[] parentDigest, final int parentOffset, final int[] tokens, final int offset,
        final Object[] extraKeys, final byte[] out, final int outOffset) {
        Objects.checkFromIndexSize(parentOffset, digestLength, parentDigest.length);
        Objects.checkFromIndexSize(offset, blockSize, tokens.length);
        System.arraycopy(parentDigest, parentOffset, parent, 0, digestLength);
        System.arraycopy(tokens, offset, blockTokens, 0, blockSize);
        triple[0] = parent;
        triple[1] = blockTokens;
        triple[2] = extraKeys;
        digest(triple, out, outOffset);
        triple[2] = null;
    }

    /**
     * Digests and event values of every full block of {@code tokens[0 .. length)}, a request's tokens from its
     * first token, chained from {@code noneHash}.
     *
     * @param noneHash  NONE_HASH ({@link #noneHash(String)}).
     * @param tokens    token ids.
     * @param length    number of valid token ids.
     * @param extras    the request's extra keys.
     * @param digests   receives {@code n * digestLength()} bytes, or null.
     * @param values    receives the n event values, or null.
     * @return n, the number of full blocks.
     */
    public int hashRequest(
        final byte[] noneHash, final int[] tokens, final int length, final VllmExtraKeys extras,
        final byte[] digests, final long[] values) {
        Objects.checkFromIndexSize(0, length, tokens.length);
        final int n = length / blockSize;
        if (digests != null) {
            Objects.checkFromIndexSize(0, n * digestLength, digests.length);
        }
        if (values != null) {
            Objects.checkFromIndexSize(0, n, values.length);
        }
        Objects.checkFromIndexSize(0, digestLength, noneHash.length);
        final byte[] current = chainCurrent;
        final byte[] previous = chainPrevious;
        System.arraycopy(noneHash, 0, previous, 0, digestLength);
        for (int b = 0; b < n; b++) {
            final int start = b * blockSize;
            hashBlock(previous, 0, tokens, start, extras.forBlock(start, start + blockSize), current, 0);
            if (digests != null) {
                System.arraycopy(current, 0, digests, b * digestLength, digestLength);
            }
            if (values != null) {
                values[b] = eventValue(current, 0, digestLength);
            }
            System.arraycopy(current, 0, previous, 0, digestLength);
        }
        return n;
    }

    /**
     * The 64-bit value vLLM publishes for a block: the last 8 bytes of its digest, big-endian (unsigned; print it
     * with {@link Long#toUnsignedString(long)}).
     *
     * @param digest       digest bytes.
     * @param offset       where the digest starts.
     * @param digestLength its length (at least 8).
     * @return the event value.
     */
    public static long eventValue(final byte[] digest, final int offset, final int digestLength) {
        Objects.checkFromIndexSize(offset, digestLength, digest.length);
        if (digestLength < 8) {
            throw new IllegalArgumentException("digest shorter than 8 bytes");
        }
        long v = 0;
        for (int i = offset + digestLength - 8; i < offset + digestLength; i++) {
            v = (v << 8) | (digest[i] & 0xFF);
        }
        return v;
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (final NoSuchAlgorithmException ex) {
            throw new IllegalStateException("the JDK has no SHA-256", ex);
        }
    }
}
