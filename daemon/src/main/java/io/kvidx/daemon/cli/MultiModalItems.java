package io.kvidx.daemon.cli;

import io.kvidx.client.keys.RequestExtras;
import io.kvidx.client.keys.vllm.MultiModalFeature;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The {@code --mm ID:OFFSET:LENGTH} option of {@code kvidx hash} and {@code kvidx query}: a multimodal item of the
 * prompt, its identifier (which may itself contain colons: the last two fields are the numbers) and its placeholder
 * tokens {@code [OFFSET, OFFSET + LENGTH)}.
 */
public final class MultiModalItems {
    private MultiModalItems() {
    }

    /**
     * @param specs the option's values, or null.
     * @return the items sorted by offset (equal offsets keep their order).
     * @throws IllegalArgumentException on a malformed value.
     */
    public static List<MultiModalFeature> parse(final List<String> specs) {
        final List<MultiModalFeature> items = new ArrayList<>();
        if (specs == null) {
            return items;
        }
        for (final String spec : specs) {
            final int b = spec.lastIndexOf(':');
            final int a = b <= 0 ? -1 : spec.lastIndexOf(':', b - 1);
            if (a <= 0) {
                throw new IllegalArgumentException("--mm wants ID:OFFSET:LENGTH (a non-empty identifier, then two"
                    + " numbers): '" + spec + "'");
            }
            final int offset;
            final int length;
            try {
                offset = Integer.parseInt(spec.substring(a + 1, b));
                length = Integer.parseInt(spec.substring(b + 1));
            } catch (final NumberFormatException ex) {
                throw new IllegalArgumentException("--mm wants ID:OFFSET:LENGTH with integer OFFSET and LENGTH: '"
                    + spec + "'", ex);
            }
            if (offset < 0 || length < 1 || (long) offset + length > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("--mm " + spec + ": OFFSET must be >= 0 and LENGTH >= 1");
            }
            items.add(new MultiModalFeature(spec.substring(0, a), offset, length));
        }
        items.sort(Comparator.comparingInt(MultiModalFeature::offset));
        return items;
    }

    /**
     * @param items multimodal items.
     * @return router-key extras holding them.
     */
    public static RequestExtras extras(final List<MultiModalFeature> items) {
        final RequestExtras extras = new RequestExtras();
        items.forEach(f -> extras.addMultiModal(f.identifier(), f.offset(), f.length()));
        return extras;
    }

    /**
     * vLLM folds a cache salt into block hashes only when it is non-empty; routers therefore pass none for "".
     *
     * @param salt a salt, or null.
     * @return null for null or empty, else the salt.
     */
    public static String salt(final String salt) {
        return salt == null || salt.isEmpty() ? null : salt;
    }
}
