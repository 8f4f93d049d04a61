package io.kvidx.bench.tokenize;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * The tokenizer bench tokenize uses unless given one: Qwen3's {@code tokenizer.json} (the tokenize module's test data,
 * packed into the bench jar by bench/pom.xml under {@value #RESOURCE}, its README and license beside it). Read in
 * place when the class path is a directory, else copied once per process to a temporary file (removed at exit),
 * since the native library loads tokenizers from files.
 *
 * <p><b>Note:</b> thread safe.
 */
public final class BundledTokenizer {
    /** Class path resource of the tokenizer file. */
    public static final String RESOURCE = "/tokenizers/qwen3/tokenizer.json";
    /** The model whose tokenizer it is (the model of the real vLLM capture the tokenize tests check). */
    public static final String MODEL = "Qwen/Qwen3-0.6B";

    private static Path extracted;

    private BundledTokenizer() {
    }

    /**
     * @return the path of the bundled tokenizer file.
     * @throws IllegalStateException when the resource is missing (a jar built without it).
     */
    public static synchronized Path path() {
        final URL url = BundledTokenizer.class.getResource(RESOURCE);
        if (url == null) {
            throw new IllegalStateException("the bench jar holds no " + RESOURCE + "; give --tokenizer DIR");
        }
        if ("file".equals(url.getProtocol())) {
            try {
                return Path.of(url.toURI());
            } catch (final URISyntaxException ex) {
                throw new IllegalStateException(ex);
            }
        }
        if (extracted == null) {
            try (InputStream in = url.openStream()) {
                final Path file = Files.createTempFile("kvidx-bench-qwen3-", "-tokenizer.json");
                file.toFile().deleteOnExit();
                Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
                extracted = file;
            } catch (final IOException ex) {
                throw new UncheckedIOException("cannot copy " + RESOURCE + " out of the jar", ex);
            }
        }
        return extracted;
    }

    /**
     * @param given a tokenizer file or directory, or null / empty for the bundled one.
     * @return the path to load.
     */
    public static Path resolve(final String given) {
        return given == null || given.isEmpty() ? path() : Path.of(given);
    }
}
