package io.kvidx.tokenize;

import io.kvidx.client.json.MiniJson;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Which places in a text a tokenizer provably cannot tokenize across, read from its {@code tokenizer.json}: the ends
 * of special added tokens such that {@code tokens(A + S + B) = tokens(A + S) ++ tokens(B)} for every text
 * {@code A}, {@code B} and boundary token {@code S}. {@link PrefixCache} caches token ids of prefixes that end there.
 *
 * <p>Why it holds (Hugging Face {@code tokenizers}, {@code AddedVocabulary::extract_and_normalize}, read at commit
 * 02cc5359): added tokens with {@code normalized: false} are found in the raw text first, with one leftmost-longest
 * Aho-Corasick automaton over all added tokens, and the text is split there; only then is each remaining piece
 * normalized, pre-tokenized and run through the model, each piece on its own. A token {@code S} is a boundary when
 * <ul>
 *   <li>it is {@code special}, {@code normalized: false}, and has no {@code lstrip}/{@code rstrip} (which would take
 *       whitespace from the neighbouring text) — the {@code "\n"} after {@code <|im_end|>} belongs to the next piece;
 *   <li>no added token has {@code single_word} (its match depends on the characters next to it);
 *   <li>no other added token contains {@code S}, and none overlaps it (a proper suffix of one being a proper prefix
 *       of the other), so every occurrence of {@code S} in any text is matched as {@code S} and the matches before
 *       it do not depend on the text after it;
 *   <li>nothing later depends on a piece's position in the whole text: no {@code Metaspace} pre-tokenizer with
 *       {@code prepend_scheme: first}, and a post-processor that adds no tokens ({@code ByteLevel} or none) —
 *       template post-processors (BOS/EOS) disable the cache for that tokenizer.
 * </ul>
 * For Qwen3's tokenizer.json (normalizer NFC, byte-level BPE, ByteLevel post-processor) the boundaries are its 14
 * special tokens ({@code <|endoftext|>}, {@code <|im_start|>}, {@code <|im_end|>}, the vision and object tokens).
 *
 * <p><b>Note:</b> immutable; thread safe.
 *
 * @param tokens         the boundary tokens' contents (empty when disabled).
 * @param disabledReason why no prefix may be cached, or null.
 */
public record PrefixBoundaries(List<String> tokens, String disabledReason) {
    /**
     * @param tokens         boundary tokens.
     * @param disabledReason why disabled, or null.
     */
    public PrefixBoundaries {
        tokens = List.copyOf(tokens);
    }

    /**
     * @return whether prefixes may be cached.
     */
    public boolean enabled() {
        return disabledReason == null && !tokens.isEmpty();
    }

    /**
     * Reads a tokenizer.json.
     *
     * @param tokenizerJson the file.
     * @return its boundaries, or why there are none.
     * @throws IllegalArgumentException when the file cannot be read as JSON.
     */
    public static PrefixBoundaries read(final Path tokenizerJson) {
        final Object root;
        try {
            root = MiniJson.parse(Files.readString(tokenizerJson));
        } catch (final IOException ex) {
            throw new IllegalArgumentException("cannot read " + tokenizerJson + ": " + ex.getMessage(), ex);
        }
        if (!(root instanceof Map<?, ?> m)) {
            throw new IllegalArgumentException(tokenizerJson + " is not a JSON object");
        }
        return of(m);
    }

    /**
     * @param root a parsed tokenizer.json.
     * @return its boundaries, or why there are none.
     */
    public static PrefixBoundaries of(final Map<?, ?> root) {
        final String pre = positionDependentPreTokenizer(root.get("pre_tokenizer"));
        if (pre != null) {
            return disabled(pre);
        }
        final String post = addingPostProcessor(root.get("post_processor"));
        if (post != null) {
            return disabled("the post-processor " + post + " adds tokens to the whole text");
        }
        final List<Map<?, ?>> added = objects(root.get("added_tokens"));
        final List<String> all = new ArrayList<>();
        for (final Map<?, ?> t : added) {
            if (bool(t, "single_word", false)) {
                return disabled("added token " + str(t, "content") + " is single_word");
            }
            all.add(str(t, "content"));
        }
        final List<String> boundaries = new ArrayList<>();
        for (final Map<?, ?> t : added) {
            final String s = str(t, "content");
            if (!s.isEmpty() && bool(t, "special", false) && !bool(t, "normalized", true)
                && !bool(t, "lstrip", false) && !bool(t, "rstrip", false) && isolated(s, all)) {
                boundaries.add(s);
            }
        }
        return boundaries.isEmpty() ? disabled("no special added token qualifies as a boundary")
            : new PrefixBoundaries(boundaries, null);
    }

    private static PrefixBoundaries disabled(final String reason) {
        return new PrefixBoundaries(List.of(), reason);
    }

    /** No other token contains {@code s}, and no proper suffix of one is a proper prefix of the other. */
    static boolean isolated(final String s, final List<String> all) {
        for (final String o : all) {
            if (o.equals(s) || o.isEmpty()) {
                continue;
            }
            if (o.contains(s) || overlaps(s, o) || overlaps(o, s)) {
                return false;
            }
        }
        return true;
    }

    /** Whether a proper suffix of {@code a} is a proper prefix of {@code b}. */
    private static boolean overlaps(final String a, final String b) {
        for (int k = 1; k < a.length() && k < b.length(); k++) {
            if (a.regionMatches(a.length() - k, b, 0, k)) {
                return true;
            }
        }
        return false;
    }

    private static String positionDependentPreTokenizer(final Object node) {
        if (!(node instanceof Map<?, ?> p)) {
            return null;
        }
        final String type = str(p, "type");
        if (type.equals("Sequence")) {
            for (final Map<?, ?> c : objects(p.get("pretokenizers"))) {
                final String r = positionDependentPreTokenizer(c);
                if (r != null) {
                    return r;
                }
            }
            return null;
        }
        if (type.equals("Metaspace") && str(p, "prepend_scheme").equals("first")) {
            return "the Metaspace pre-tokenizer prepends only to the text's first piece (prepend_scheme: first)";
        }
        return null;
    }

    private static String addingPostProcessor(final Object node) {
        if (!(node instanceof Map<?, ?> p)) {
            return null;
        }
        final String type = str(p, "type");
        if (type.equals("ByteLevel")) {
            return null;
        }
        if (type.equals("Sequence")) {
            for (final Map<?, ?> c : objects(p.get("processors"))) {
                final String r = addingPostProcessor(c);
                if (r != null) {
                    return r;
                }
            }
            return null;
        }
        return type.isEmpty() ? "(untyped)" : type;
    }

    /** The objects of a JSON array (other elements skipped); empty when it is not an array. */
    private static List<Map<?, ?>> objects(final Object array) {
        final List<Map<?, ?>> out = new ArrayList<>();
        if (array instanceof List<?> l) {
            for (final Object o : l) {
                if (o instanceof Map<?, ?> m) {
                    out.add(m);
                }
            }
        }
        return out;
    }

    private static String str(final Map<?, ?> m, final String key) {
        return m.get(key) instanceof String v ? v : "";
    }

    private static boolean bool(final Map<?, ?> m, final String key, final boolean otherwise) {
        return m.get(key) instanceof Boolean v ? v : otherwise;
    }
}
