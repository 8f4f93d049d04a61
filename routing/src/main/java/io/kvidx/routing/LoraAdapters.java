package io.kvidx.routing;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The {@link PodRegistry}'s LoRA adapter tracking: adapter names interned to ids below
 * {@link PodRegistry#MAX_LORAS} (never freed), each pod slot's loaded adapters as a bitmap of that many bits
 * (bit i = adapter id i), and the most adapters each pod can hold.
 *
 * <p><b>Note:</b> thread safe; any thread may record loads and unloads. Interning a new name takes a lock on the
 * name map (cold); {@link #loraId}, {@link #hasLora} and {@link #loraCount} are allocation-free.
 * {@link #unloadAll} runs under the registry's lock when it (re-)learns a slot.
 */
final class LoraAdapters {
    /** Bitmap words per slot. */
    private static final int WORDS = PodRegistry.MAX_LORAS / 64;

    private final AtomicIntegerArray maxLoras = new AtomicIntegerArray(PodRegistry.MAX_PODS);
    private final AtomicLongArray loraWords = new AtomicLongArray(PodRegistry.MAX_PODS * WORDS);
    private final ConcurrentHashMap<String, Integer> loraIds = new ConcurrentHashMap<>();

    /**
     * Forgets every adapter the slot had loaded.
     */
    void unloadAll(final int slot) {
        for (int w = 0; w < WORDS; w++) {
            loraWords.set(slot * WORDS + w, 0);
        }
    }

    void maxLoras(final int slot, final int max) {
        maxLoras.set(slot, max);
    }

    int maxLoras(final int slot) {
        return maxLoras.getOpaque(slot);
    }

    void loraLoaded(final int slot, final String lora) {
        final int id = internLora(lora);
        loraWords.getAndUpdate(slot * WORDS + (id >>> 6), w -> w | (1L << id));
    }

    void loraUnloaded(final int slot, final String lora) {
        final Integer id = loraIds.get(lora);
        if (id != null) {
            final int i = id;
            loraWords.getAndUpdate(slot * WORDS + (i >>> 6), w -> w & ~(1L << i));
        }
    }

    private int internLora(final String lora) {
        final Integer existing = loraIds.get(lora);
        if (existing != null) {
            return existing;
        }
        synchronized (loraIds) {
            final int next = loraIds.size();
            if (next >= PodRegistry.MAX_LORAS) {
                throw new IllegalStateException("more than " + PodRegistry.MAX_LORAS + " LoRA adapters");
            }
            return loraIds.computeIfAbsent(lora, k -> next);
        }
    }

    int loraId(final String lora) {
        final Integer id = loraIds.get(lora);
        return id == null ? -1 : id;
    }

    boolean hasLora(final int slot, final int loraId) {
        return loraId >= 0 && (loraWords.getOpaque(slot * WORDS + (loraId >>> 6)) & (1L << loraId)) != 0;
    }

    int loraCount(final int slot) {
        int n = 0;
        for (int w = 0; w < WORDS; w++) {
            n += Long.bitCount(loraWords.get(slot * WORDS + w));
        }
        return n;
    }
}
