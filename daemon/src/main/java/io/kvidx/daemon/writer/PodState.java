package io.kvidx.daemon.writer;

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
    private byte[] loraBytes = new byte[0];
    private int loraLength = -1;
    private long loraSeed;
    private long loraIdSeedId = -1;
    private long loraIdSeed;

    PodState(final int podNumber, final String podId, final String model) {
        this.podNumber = podNumber;
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
     * Chain seed of this pod's model with the given LoRA name; cached, so it allocates only when the LoRA name
     * changes.
     */
    long seed(final boolean hasLora, final byte[] lora, final int loraLen) {
        if (!hasLora) {
            if (!baseSeedSet) {
                baseSeed = RouterKeyHasher.chainSeed(model, null, null);
                baseSeedSet = true;
            }
            return baseSeed;
        }
        if (loraLen == loraLength && Arrays.equals(lora, 0, loraLen, loraBytes, 0, loraLen)) {
            return loraSeed;
        }
        final String name = new String(lora, 0, loraLen, StandardCharsets.UTF_8);
        loraSeed = RouterKeyHasher.chainSeed(model, name, null);
        loraBytes = Arrays.copyOf(lora, loraLen);
        loraLength = loraLen;
        return loraSeed;
    }
}
