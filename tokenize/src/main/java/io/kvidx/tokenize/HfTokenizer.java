package io.kvidx.tokenize;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.djl.huggingface.tokenizers.jni.TokenizersLibrary;
import io.kvidx.routing.TokenIds;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;

/**
 * A model's Hugging Face tokenizer ({@code tokenizer.json}), run by the Rust {@code tokenizers} library through DJL's
 * JNI binding ({@code ai.djl.huggingface:tokenizers}, which bundles the library for linux-x86_64 and linux-aarch64).
 * Encodes like {@code tokenizer(text, add_special_tokens=...)} in Python: special tokens written in the text (e.g.
 * {@code <|im_start|>}) become their ids, and no truncation or padding is applied.
 *
 * <p>On first use DJL extracts the native library into its cache directory
 * ({@code $ENGINE_CACHE_DIR/tokenizers}, else {@code $DJL_CACHE_DIR/tokenizers}, else
 * {@code ~/.djl.ai/tokenizers}, each a system property or environment variable) and loads it from there; nothing is
 * downloaded. DJL also reports its use to AWS when it runs on EC2 unless {@code OPT_OUT_TRACKING} is set: loading a
 * tokenizer sets that system property to {@code true} when neither it nor the environment variable is set.
 *
 * <p><b>Note:</b> encoding is thread safe (the Rust tokenizer is immutable once loaded); {@link #close()} must not
 * run while another thread encodes.
 */
public final class HfTokenizer implements AutoCloseable {
    /** The file looked for when a directory is given. */
    public static final String TOKENIZER_FILE = "tokenizer.json";

    private static final String OPT_OUT_TRACKING = "OPT_OUT_TRACKING";

    private final Path file;
    private final boolean addSpecialTokens;
    private final HuggingFaceTokenizer tokenizer;
    private final long handle;

    private HfTokenizer(final Path file, final boolean addSpecialTokens, final HuggingFaceTokenizer tokenizer) {
        this.file = file;
        this.addSpecialTokens = addSpecialTokens;
        this.tokenizer = tokenizer;
        this.handle = tokenizer.getHandle();
    }

    /**
     * Loads a tokenizer.
     *
     * @param pathOrDir        a {@code tokenizer.json}, or a directory holding one (a model's directory).
     * @param addSpecialTokens whether to add the tokenizer's post-processor tokens (e.g. a BOS token), as vLLM does
     *                         for completion prompts ({@code add_special_tokens=True}); chat prompts rendered from
     *                         a template already hold them.
     * @return the tokenizer.
     * @throws IllegalArgumentException when there is no readable tokenizer file or it is not a valid tokenizer.
     */
    public static HfTokenizer load(final Path pathOrDir, final boolean addSpecialTokens) {
        Objects.requireNonNull(pathOrDir, "pathOrDir");
        final Path file = Files.isDirectory(pathOrDir) ? pathOrDir.resolve(TOKENIZER_FILE) : pathOrDir;
        if (!Files.isRegularFile(file) || !Files.isReadable(file)) {
            throw new IllegalArgumentException("no readable tokenizer file at " + file.toAbsolutePath()
                + (Files.isDirectory(pathOrDir) ? " (a directory must hold " + TOKENIZER_FILE + ")" : ""));
        }
        if (System.getProperty(OPT_OUT_TRACKING) == null && System.getenv(OPT_OUT_TRACKING) == null) {
            System.setProperty(OPT_OUT_TRACKING, "true");
        }
        try {
            final HuggingFaceTokenizer t = HuggingFaceTokenizer.newInstance(file, Map.of(
                "addSpecialTokens", String.valueOf(addSpecialTokens),
                "truncation", "false",
                "padding", "false"));
            return new HfTokenizer(file.toAbsolutePath(), addSpecialTokens, t);
        } catch (final IOException | RuntimeException ex) {
            throw new IllegalArgumentException("cannot load the tokenizer " + file.toAbsolutePath() + ": "
                + ex.getMessage(), ex);
        }
    }

    /**
     * Tokenizes text into {@code out} (replacing its tokens).
     *
     * @param text the text.
     * @param out  receives the token ids.
     * @return the number of tokens.
     */
    public int encode(final String text, final TokenIds out) {
        return encode(text, addSpecialTokens, out);
    }

    /**
     * Tokenizes text into {@code out} (replacing its tokens), choosing whether to add special tokens (a chat prompt
     * rendered from a template is tokenized without them, as vLLM does: the template wrote them).
     *
     * @param text             the text.
     * @param addSpecialTokens whether to add the tokenizer's post-processor tokens.
     * @param out              receives the token ids.
     * @return the number of tokens.
     */
    public int encode(final String text, final boolean addSpecialTokens, final TokenIds out) {
        final long[] ids = encodeIds(text, addSpecialTokens);
        final int[] buf = out.ensureCapacity(ids.length);
        for (int i = 0; i < ids.length; i++) {
            buf[i] = (int) ids[i];
        }
        out.length(ids.length);
        return ids.length;
    }

    /**
     * @param text the text.
     * @return its token ids.
     */
    public int[] encode(final String text) {
        return encode(text, addSpecialTokens);
    }

    /**
     * @param text             the text.
     * @param addSpecialTokens whether to add the tokenizer's post-processor tokens.
     * @return its token ids.
     */
    public int[] encode(final String text, final boolean addSpecialTokens) {
        final long[] ids = encodeIds(text, addSpecialTokens);
        final int[] out = new int[ids.length];
        for (int i = 0; i < ids.length; i++) {
            out[i] = (int) ids[i];
        }
        return out;
    }

    /** One native call to encode, one to read the ids; DJL's Encoding object (tokens, spans, masks) is skipped. */
    private long[] encodeIds(final String text, final boolean addSpecialTokens) {
        final TokenizersLibrary lib = TokenizersLibrary.LIB;
        final long encoding = lib.encode(handle, Objects.requireNonNull(text, "text"), addSpecialTokens);
        try {
            return lib.getTokenIds(encoding);
        } finally {
            lib.deleteEncoding(encoding);
        }
    }

    /**
     * @return the tokenizer file, absolute.
     */
    public Path file() {
        return file;
    }

    /**
     * @return whether post-processor special tokens are added.
     */
    public boolean addSpecialTokens() {
        return addSpecialTokens;
    }

    /**
     * Frees the native tokenizer.
     */
    @Override
    public void close() {
        tokenizer.close();
    }
}
