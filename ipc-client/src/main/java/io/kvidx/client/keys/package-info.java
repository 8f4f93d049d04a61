/**
 * Block keys from token ids. {@link io.kvidx.client.keys.RouterKeyHasher} computes kvidx's own chained 64-bit
 * keys (XXH3-64, see docs/keys.md) with no allocation; {@link io.kvidx.client.keys.Xxh3} is the XXH3 64/128-bit
 * implementation behind it. JDK only.
 */
package io.kvidx.client.keys;
