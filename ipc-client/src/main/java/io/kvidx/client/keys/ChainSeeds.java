package io.kvidx.client.keys;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;

/**
 * Chain seeds of router keys, version 1 (docs/keys.md), computed from UTF-8 bytes in a reusable message buffer:
 * {@code XXH3_64(ascii("kvidx.router.v1") || field(model) || field(lora) || field(salt))}. For a writer that learns
 * LoRA names and cache salts from events as bytes: once the model is set and the buffer has grown to the longest
 * names seen, {@link #seed} allocates nothing. {@link RouterKeyHasher#chainSeed(String, String, String)} is the
 * same definition for strings.
 *
 * <p><b>Note:</b> not thread safe; owned and written by one thread (the caller's scratch).
 */
public final class ChainSeeds {
    private static final byte[] TAG = RouterKeyHasher.SEED_TAG.getBytes(StandardCharsets.US_ASCII);

    private byte[] message = new byte[128];
    private String model;
    private byte[] modelBytes;
    private boolean modelSet;

    /**
     * Sets the model folded into the next seeds; encodes it only when it differs from the current one.
     *
     * @param model model name, or null (absent).
     * @return this.
     */
    public ChainSeeds model(final String model) {
        if (!modelSet || !Objects.equals(model, this.model)) {
            this.model = model;
            this.modelBytes = model == null ? null : model.getBytes(StandardCharsets.UTF_8);
            this.modelSet = true;
        }
        return this;
    }

    /**
     * The chain seed of the current model with this LoRA name and cache salt, each given as UTF-8 bytes or absent
     * (length -1; absent differs from empty).
     *
     * @param lora    LoRA name bytes (ignored when absent).
     * @param loraOff first byte.
     * @param loraLen length, or -1 when the request has no LoRA adapter.
     * @param salt    cache salt bytes (ignored when absent).
     * @param saltOff first byte.
     * @param saltLen length, or -1 when the request has no salt.
     * @return the chain seed.
     */
    public long seed(final byte[] lora, final int loraOff, final int loraLen, final byte[] salt, final int saltOff,
        final int saltLen) {
        if (!modelSet) {
            throw new IllegalStateException("model(...) was never called");
        }
        if (loraLen >= 0) {
            Objects.checkFromIndexSize(loraOff, loraLen, lora.length);
        }
        if (saltLen >= 0) {
            Objects.checkFromIndexSize(saltOff, saltLen, salt.length);
        }
        final int modelLen = modelBytes == null ? -1 : modelBytes.length;
        final int length = TAG.length + fieldLength(modelLen) + fieldLength(loraLen) + fieldLength(saltLen);
        if (message.length < length) {
            message = Arrays.copyOf(message, Math.max(length, message.length * 2));
        }
        final byte[] m = message;
        System.arraycopy(TAG, 0, m, 0, TAG.length);
        int p = putField(m, TAG.length, modelBytes, 0, modelLen);
        p = putField(m, p, lora, loraOff, loraLen);
        putField(m, p, salt, saltOff, saltLen);
        return Xxh3.hash64(m, 0, length, 0L);
    }

    private static int fieldLength(final int length) {
        return length < 0 ? 1 : 5 + length;
    }

    private static int putField(final byte[] m, final int pos, final byte[] b, final int off, final int len) {
        if (len < 0) {
            m[pos] = 0;
            return pos + 1;
        }
        m[pos] = 1;
        BlockExtras.putInt(m, pos + 1, len);
        System.arraycopy(b, off, m, pos + 5, len);
        return pos + 5 + len;
    }
}
