package io.kvidx.client.keys.vllm;

import java.util.Locale;

/**
 * vLLM's prefix-cache hash functions ({@code --prefix-caching-hash-algo}).
 */
public enum VllmHashAlgorithm {
    /** SHA-256 of {@code pickle.dumps(obj, protocol=5)}: vLLM's default. */
    SHA256("sha256", 32, false),
    /** SHA-256 of {@code cbor2.dumps(obj, canonical=True)}. */
    SHA256_CBOR("sha256_cbor", 32, true),
    /** XXH3-128 (canonical, big-endian) of the pickle. */
    XXHASH("xxhash", 16, false),
    /** XXH3-128 (canonical, big-endian) of the canonical CBOR. */
    XXHASH_CBOR("xxhash_cbor", 16, true);

    private final String vllmName;
    private final int digestLength;
    private final boolean cbor;

    VllmHashAlgorithm(final String vllmName, final int digestLength, final boolean cbor) {
        this.vllmName = vllmName;
        this.digestLength = digestLength;
        this.cbor = cbor;
    }

    /**
     * @return the name vLLM uses.
     */
    public String vllmName() {
        return vllmName;
    }

    /**
     * @return digest length in bytes (32 or 16).
     */
    public int digestLength() {
        return digestLength;
    }

    /**
     * @return true when objects are serialised with CBOR, false for pickle.
     */
    public boolean cbor() {
        return cbor;
    }

    /**
     * @param name vLLM's name (case-insensitive).
     * @return the algorithm.
     * @throws IllegalArgumentException for an unknown name.
     */
    public static VllmHashAlgorithm fromName(final String name) {
        for (final VllmHashAlgorithm a : values()) {
            if (a.vllmName.equals(name.toLowerCase(Locale.ROOT))) {
                return a;
            }
        }
        throw new IllegalArgumentException("unknown vLLM hash algorithm: " + name
            + " (sha256, sha256_cbor, xxhash, xxhash_cbor)");
    }
}
