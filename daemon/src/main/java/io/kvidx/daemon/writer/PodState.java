package io.kvidx.daemon.writer;

import io.kvidx.client.keys.ChainSeeds;
import io.kvidx.client.keys.RouterKeyHasher;
import io.kvidx.daemon.state.PodBlockMap;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * A pod's state on its writer agent: its index slot, its {@link PodBlockMap} (engine hash to router key and media,
 * so that BlockRemoved, which carries only engine hashes, can be applied; a mapped file that survives a daemon
 * restart), cached chain seeds, and liveness.
 *
 * <p><b>Note:</b> owned by the pod's writer agent; never touched by another thread.
 */
final class PodState {
    /** Mapped value meaning "absent" (a router key of exactly 0 is not representable; probability 2^-64). */
    static final long MISSING = 0;

    /** The pod's handle ({@link PodDirectory}) this state was made for. */
    final int handle;
    /** Its pod number (the handle's low bits): the key of the pod's error log entries. */
    final int podNumber;
    final String podId;
    String model;
    int slot = -1;
    long lastHeardMs;
    /** Events applied at the last once-a-second rate tick ({@code PodStatsFile}). */
    long eventsAtRateTick;
    boolean suspect;
    /** Which KV cache group of a hybrid model the index follows for this pod. */
    final AttentionGroups groups = new AttentionGroups();
    /** Engine hash to router key and media; open while the pod is registered, else null. */
    PodBlockMap blocks;
    private long baseSeed;
    private boolean baseSeedSet;
    private final ChainSeeds seeds = new ChainSeeds();
    private byte[] lastLora = new byte[64];
    private int lastLoraLength = -2;
    private byte[] lastSalt = new byte[64];
    private int lastSaltLength = -2;
    private long lastSeed;
    private long loraIdSeedId = -1;
    private long loraIdSeed;

    PodState(final int handle, final String podId, final String model) {
        this.handle = handle;
        this.podNumber = PodDirectory.number(handle);
        this.podId = podId;
        this.model = model;
    }

    boolean registered() {
        return slot >= 0;
    }

    /** Drops every mapping (the pod's blocks left the index). */
    void forgetBlocks() {
        if (blocks != null) {
            blocks.clear();
        }
    }

    /** Closes the map (the pod went down: its slot's next owner gets a new one). */
    void closeBlocks() {
        if (blocks != null) {
            blocks.close();
            blocks = null;
        }
    }

    /**
     * Chain seed for an event that names its LoRA adapter only by vLLM's deprecated integer id: the adapter name
     * is taken as {@code "lora-id:<id>"} so that such blocks never share keys with the base model's.
     */
    long seedForLoraId(final long loraId) {
        if (loraId != loraIdSeedId) {
            loraIdSeed = RouterKeyHasher.chainSeed(model, "lora-id:" + loraId, null);
            loraIdSeedId = loraId;
        }
        return loraIdSeed;
    }

    /**
     * Chain seed for a deprecated-{@code lora_id} event whose first block carries a cache salt: allocates (engines
     * that send {@code extra_keys} name their adapters by {@code lora_name}; this path is for completeness).
     */
    long seedForLoraId(final long loraId, final byte[] salt, final int saltOff, final int saltLen) {
        return RouterKeyHasher.chainSeed(model, "lora-id:" + loraId,
            new String(salt, saltOff, saltLen, StandardCharsets.UTF_8));
    }

    /**
     * Chain seed of this pod's model with the given LoRA name and no salt.
     */
    long seed(final boolean hasLora, final byte[] lora, final int loraLen) {
        return seed(hasLora, lora, loraLen, null, 0, -1);
    }

    /**
     * Chain seed of this pod's model with the given LoRA name and cache salt (UTF-8 bytes; length -1 when absent).
     * The base model's seed and the last (LoRA, salt) pair's are cached; any other pair is computed in a reused
     * buffer ({@link ChainSeeds}). Allocates only when a name longer than any before is first seen.
     */
    long seed(final boolean hasLora, final byte[] lora, final int loraLen, final byte[] salt, final int saltOff,
        final int saltLen) {
        final int ll = hasLora ? loraLen : -1;
        if (ll < 0 && saltLen < 0) {
            if (!baseSeedSet) {
                baseSeed = RouterKeyHasher.chainSeed(model, null, null);
                baseSeedSet = true;
            }
            return baseSeed;
        }
        if (ll == lastLoraLength && saltLen == lastSaltLength
            && (ll < 0 || Arrays.equals(lora, 0, ll, lastLora, 0, ll))
            && (saltLen < 0 || Arrays.equals(salt, saltOff, saltOff + saltLen, lastSalt, 0, saltLen))) {
            return lastSeed;
        }
        lastSeed = seeds.model(model).seed(lora, 0, ll, salt, saltOff, saltLen);
        if (ll > lastLora.length) {
            lastLora = new byte[Math.max(ll, 2 * lastLora.length)];
        }
        if (ll > 0) {
            System.arraycopy(lora, 0, lastLora, 0, ll);
        }
        if (saltLen > lastSalt.length) {
            lastSalt = new byte[Math.max(saltLen, 2 * lastSalt.length)];
        }
        if (saltLen > 0) {
            System.arraycopy(salt, saltOff, lastSalt, 0, saltLen);
        }
        lastLoraLength = ll;
        lastSaltLength = saltLen;
        return lastSeed;
    }
}
