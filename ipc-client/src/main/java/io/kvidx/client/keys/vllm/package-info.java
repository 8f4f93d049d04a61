/**
 * Bit-exact reproductions of vLLM's prefix-cache block hashes (sha256, sha256_cbor, xxhash, xxhash_cbor):
 * {@link io.kvidx.client.keys.vllm.VllmBlockHasher}, with the CPython-exact {@link io.kvidx.client.keys.vllm.Pickler}
 * (protocol 5) and canonical {@link io.kvidx.client.keys.vllm.CborWriter} behind it. JDK only.
 */
package io.kvidx.client.keys.vllm;
