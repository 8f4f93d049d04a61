package io.kvidx.client.keys.vllm;

import java.util.ArrayList;
import java.util.List;

/**
 * The per-request inputs of vLLM's block-hash {@code extra_keys}, and the rule that turns them into one block's
 * tuple, in vLLM's order: the LoRA name (every block, when the request has a LoRA adapter), the multimodal keys of
 * the items the block overlaps, the cache salt (first block only, when non-empty). Prompt-embedding digests are
 * not supported.
 *
 * <p><b>Note:</b> immutable and thread safe.
 */
public final class VllmExtraKeys {
    /** No LoRA, no salt, no multimodal input: every block's extra keys are None. */
    public static final VllmExtraKeys NONE =
        new VllmExtraKeys(null, null, List.of(), MultiModalKeyStyle.IDENTIFIER_AND_OFFSET);

    /** How vLLM keys a multimodal item in a block. */
    public enum MultiModalKeyStyle {
        /** Current vLLM: the tuple {@code (identifier, item offset - block start)}. */
        IDENTIFIER_AND_OFFSET,
        /** Older vLLM: the identifier alone. */
        IDENTIFIER
    }

    private final String loraName;
    private final String cacheSalt;
    private final List<MultiModalFeature> features;
    private final MultiModalKeyStyle style;

    /**
     * @param loraName  the LoRA adapter's name, or null when the request has no adapter.
     * @param cacheSalt the cache salt, or null.
     * @param features  multimodal items sorted by offset (may be empty).
     * @param style     how items are keyed.
     */
    public VllmExtraKeys(
        final String loraName, final String cacheSalt, final List<MultiModalFeature> features,
        final MultiModalKeyStyle style) {
        this.loraName = loraName;
        this.cacheSalt = cacheSalt;
        this.features = List.copyOf(features);
        this.style = style;
    }

    /**
     * @param loraName  the LoRA adapter's name, or null.
     * @param cacheSalt the cache salt, or null.
     * @return extra keys without multimodal input.
     */
    public static VllmExtraKeys of(final String loraName, final String cacheSalt) {
        return new VllmExtraKeys(loraName, cacheSalt, List.of(), MultiModalKeyStyle.IDENTIFIER_AND_OFFSET);
    }

    /**
     * True when a block's extra keys can be other than None.
     *
     * @return whether any extra key applies.
     */
    public boolean any() {
        return loraName != null || (cacheSalt != null && !cacheSalt.isEmpty()) || !features.isEmpty();
    }

    /**
     * The extra-keys tuple of the block {@code [start, end)}: null (None) when empty.
     *
     * @param start first token of the block.
     * @param end   one past its last token.
     * @return the tuple, or null.
     */
    public Object[] forBlock(final int start, final int end) {
        if (!any()) {
            return null;
        }
        final List<Object> keys = new ArrayList<>(4);
        if (loraName != null) {
            keys.add(loraName);
        }
        for (final MultiModalFeature f : features) {
            if (end <= f.offset()) {
                break;
            }
            if (start >= f.offset() + f.length()) {
                continue;
            }
            keys.add(style == MultiModalKeyStyle.IDENTIFIER
                ? f.identifier() : new Object[] {f.identifier(), f.offset() - start});
            if (end < f.offset() + f.length()) {
                break;
            }
        }
        if (start == 0 && cacheSalt != null && !cacheSalt.isEmpty()) {
            keys.add(cacheSalt);
        }
        return keys.isEmpty() ? null : keys.toArray();
    }
}
