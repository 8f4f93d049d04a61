/**
 * Block keys from token ids. {@link io.kvidx.client.keys.RouterKeyHasher} computes kvidx's own chained 64-bit
 * keys (router keys version 2: XXH3-64 with index placement bits, see docs/keys.md) with no allocation;
 * {@link io.kvidx.client.keys.Xxh3} is the XXH3 64/128-bit implementation behind it. JDK only.
 */
package io.kvidx.client.keys;
