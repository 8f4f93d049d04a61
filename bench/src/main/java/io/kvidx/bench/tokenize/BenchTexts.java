package io.kvidx.bench.tokenize;

import io.kvidx.tokenize.HfTokenizer;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A deterministic pool of distinct prompt texts of exactly {@code tokens} tokens each under a given tokenizer, and
 * their token ids. The text is mixed: English prose (sentences of common words, paragraph breaks) with about 6 %
 * numbers, 3 % inline code, 4 % non-Latin or accented words (CJK, Cyrillic, Greek, Latin with diacritics) and 6 %
 * made-up words of random syllables, so the Rust library's per-word BPE cache misses on some words in every text, as
 * it does on real prompts.
 *
 * <p>Each text is built from pieces that start with a space or a line break, so that a text's tokenization up to a
 * piece boundary is the tokenization of that prefix. The text is cut at the last piece boundary within the target
 * and filled to the exact count with {@code " a"} (one token in byte-level BPE vocabularies); every text is checked
 * to encode to exactly the target.
 *
 * <p><b>Note:</b> immutable once built; thread safe.
 */
public final class BenchTexts {
    private static final String[] WORDS = ("the of and to in is that for it as was with be by on not he this are or"
        + " his from at which but have an they you were her she there been one all we their has would when if so"
        + " no will more what about up out them into can only some could time these two may then first any like my"
        + " now over such our man me even most made after also did many before must through back years where much"
        + " your way well down should because each just those people how too little state good very make world"
        + " still own see men work long get here between both life being under never day same another know while"
        + " last might us great old year off come since against go came right used take three request router"
        + " cache prefix model token block index memory latency throughput engine server client response prompt"
        + " decode prefill schedule queue worker replica cluster network storage policy measure result value"
        + " number system process thread buffer stream record answer question document section summary report"
        + " customer order invoice payment account balance transfer support ticket issue release version update"
        + " feature design review change table column query filter score weight choice option default"
        + " configuration history context conversation assistant user message reply instruction example"
        + " translate explain describe compare analyse improve rewrite generate").split(" ");
    private static final String[] FOREIGN = {"東京", "データ", "模型", "缓存", "路由", "привет", "память", "запрос",
        "Ελλάδα", "μνήμη", "café", "naïve", "München", "façade", "São", "Zürich", "señor", "crème", "Ångström",
        "jalapeño", "한국어", "서버", "बाज़ार", "مرحبا"};
    private static final String[] CODE = {"`getIds()`", "`router.plan(ctx)`", "`max_tokens=256`", "`--block-size`",
        "`int[] ids`", "`{\"role\": \"user\"}`", "`x += 1;`", "`/v1/completions`", "`kv_cache_usage`",
        "`SELECT * FROM t`", "`len(prompt)`", "`self.cache[key]`"};
    private static final String[] SYLLABLES = {"ka", "lo", "mi", "tra", "ven", "dor", "sel", "quo", "phe", "ix",
        "zum", "bri", "ost", "nal", "gy", "wen", "thu", "rak"};

    private final int tokens;
    private final String[] texts;
    private final int[][] ids;

    private BenchTexts(final int tokens, final String[] texts, final int[][] ids) {
        this.tokens = tokens;
        this.texts = texts;
        this.ids = ids;
    }

    /**
     * Builds the pool.
     *
     * @param tokenizer the tokenizer whose token count the texts meet.
     * @param count     distinct texts.
     * @param tokens    tokens per text.
     * @param seed      generator seed (each text has its own stream).
     * @return the pool.
     * @throws IllegalStateException when a text does not encode to exactly {@code tokens} tokens.
     */
    public static BenchTexts generate(final HfTokenizer tokenizer, final int count, final int tokens,
        final long seed) {
        if (count < 1 || tokens < 16) {
            throw new IllegalArgumentException("need at least 1 text of at least 16 tokens");
        }
        final String[] texts = new String[count];
        final int[][] ids = new int[count][];
        for (int i = 0; i < count; i++) {
            texts[i] = text(tokenizer, tokens, new SplittableRandom(seed + 0x9E37_79B9L * i));
            ids[i] = tokenizer.encode(texts[i]);
            if (ids[i].length != tokens) {
                throw new IllegalStateException("text " + i + " encodes to " + ids[i].length + " tokens, not "
                    + tokens);
            }
        }
        return new BenchTexts(tokens, texts, ids);
    }

    private static String text(final HfTokenizer tokenizer, final int tokens, final SplittableRandom random) {
        final List<String> pieces = new ArrayList<>();
        final StringBuilder sb = new StringBuilder();
        // About 4.5 characters per token in English: make enough pieces for a quarter more than the target.
        while (sb.length() < tokens * 6) {
            final String piece = piece(random, pieces.isEmpty());
            pieces.add(piece);
            sb.append(piece);
        }
        if (tokenizer.encode(sb.toString()).length < tokens) {
            throw new IllegalStateException("generated text too short for " + tokens + " tokens");
        }
        // The longest prefix of whole pieces within the target (token counts grow with the pieces).
        int lo = 0;
        int hi = pieces.size();
        while (lo < hi) {
            final int mid = (lo + hi + 1) >>> 1;
            if (tokenizer.encode(join(pieces, mid)).length <= tokens) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        final StringBuilder text = new StringBuilder(join(pieces, lo));
        int have = tokenizer.encode(text.toString()).length;
        while (have < tokens) {
            text.append(" a");
            have++;
        }
        return text.toString();
    }

    /**
     * Mixed text of at least {@code chars} characters, of the same pieces as the pool's texts (no tokenizer check).
     *
     * @param random generator.
     * @param chars  characters wanted at least.
     * @return the text.
     */
    static String prose(final SplittableRandom random, final int chars) {
        final StringBuilder sb = new StringBuilder(chars + 64);
        while (sb.length() < chars) {
            sb.append(piece(random, sb.isEmpty()));
        }
        return sb.toString();
    }

    private static String join(final List<String> pieces, final int n) {
        final StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            sb.append(pieces.get(i));
        }
        return sb.toString();
    }

    private static String piece(final SplittableRandom random, final boolean first) {
        final int kind = random.nextInt(100);
        final String word;
        if (kind < 6) {
            word = switch (random.nextInt(4)) {
                case 0 -> Integer.toString(random.nextInt(10_000));
                case 1 -> String.format("%d.%02d", random.nextInt(1000), random.nextInt(100));
                case 2 -> Integer.toString(1990 + random.nextInt(40));
                default -> String.format("%,d", random.nextInt(10_000_000));
            };
        } else if (kind < 9) {
            word = CODE[random.nextInt(CODE.length)];
        } else if (kind < 13) {
            word = FOREIGN[random.nextInt(FOREIGN.length)];
        } else if (kind < 19) {
            final StringBuilder w = new StringBuilder();
            for (int s = 2 + random.nextInt(3); s > 0; s--) {
                w.append(SYLLABLES[random.nextInt(SYLLABLES.length)]);
            }
            word = w.toString();
        } else {
            final String w = WORDS[random.nextInt(WORDS.length)];
            word = random.nextInt(8) == 0 ? Character.toUpperCase(w.charAt(0)) + w.substring(1) : w;
        }
        final int end = random.nextInt(100);
        final String punctuation = end < 8 ? "." : end < 12 ? "," : end < 13 ? "?" : end < 14 ? ":" : "";
        final String separator = first ? "" : random.nextInt(40) == 0 ? "\n\n" : " ";
        return separator + word + punctuation;
    }

    /**
     * @return texts in the pool.
     */
    public int count() {
        return texts.length;
    }

    /**
     * @return tokens per text.
     */
    public int tokens() {
        return tokens;
    }

    /**
     * @param i text index.
     * @return the text.
     */
    public String text(final int i) {
        return texts[i];
    }

    /**
     * @param i text index.
     * @return its token ids (the pool's own array: do not modify).
     */
    public int[] ids(final int i) {
        return ids[i];
    }

    /**
     * @return mean characters (UTF-16 units) per text.
     */
    public double meanChars() {
        long sum = 0;
        for (final String t : texts) {
            sum += t.length();
        }
        return (double) sum / texts.length;
    }
}
