/**
 * Block keys from token ids. {@link io.kvidx.client.keys.RouterKeyHasher} computes kvidx's own chained 64-bit
 * keys (XXH3-64, see docs/keys.md) with no allocation; {@link io.kvidx.client.keys.RequestExtras} (a request's
 * multimodal items and prompt-embeds digests) and {@link io.kvidx.client.keys.BlockExtras} (one block's) carry what
 * besides tokens goes into a block's key, {@link io.kvidx.client.keys.ChainSeeds} computes chain seeds from bytes
 * without allocation; {@link io.kvidx.client.keys.Xxh3} is the XXH3 64/128-bit implementation behind them. JDK only.
 */
package io.kvidx.client.keys;
