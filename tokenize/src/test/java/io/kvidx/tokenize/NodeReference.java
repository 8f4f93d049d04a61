package io.kvidx.tokenize;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Hugging Face's JavaScript tokenizer and chat templates, run by node from src/test/node (see its README). Like the Python peers of
 * the other modules: skipped with a message where node is absent, a failure when CI is set.
 */
final class NodeReference {
    /** The npm project of the reference encoder, relative to the module (surefire's working directory). */
    static final Path DIR = Path.of("src/test/node").toAbsolutePath();
    /**
     * Written by npm (7 and later) at the end of an install: its presence, not node_modules', says the packages are all
     * there (an install cut short leaves a partial node_modules).
     */
    private static final Path INSTALLED = DIR.resolve("node_modules/.package-lock.json");
    /** Written here after an install of ours succeeded, for an npm that writes no {@link #INSTALLED}. */
    private static final Path INSTALLED_HERE = DIR.resolve("node_modules/.kvidx-npm-ci-done");
    /** Held while one test JVM installs: the module's test classes run in two JVMs at once (kvidx.test.forks). */
    private static final Path INSTALL_LOCK = Path.of("target/npm-ci.lock").toAbsolutePath();
    private static final long NPM_CI_TIMEOUT_S = 300;
    private static final long ENCODE_TIMEOUT_S = 120;

    private NodeReference() {
    }

    /** Skips (locally) or fails (under CI) without node; installs the locked packages when they are missing. */
    static void require() throws IOException, InterruptedException {
        final boolean node = run(List.of("node", "--version"), DIR, 30) == 0;
        final String why = "node (Debian package nodejs) is needed to run Hugging Face's JavaScript tokenizer";
        if (!node && System.getenv("CI") != null) {
            throw new AssertionError("CI is set and " + why);
        }
        assumeTrue(node, "skipped locally: " + why);
        if (installed()) {
            return;
        }
        Files.createDirectories(INSTALL_LOCK.getParent());
        // The other test JVM may be installing: wait for its lock (bounded by its npm timeout), then look again.
        try (FileChannel lockFile = FileChannel.open(INSTALL_LOCK, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
             FileLock ignored = lockFile.lock()) {
            if (installed()) {
                return;
            }
            final int rc = run(List.of("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"), DIR,
                NPM_CI_TIMEOUT_S);
            if (rc != 0) {
                throw new AssertionError("'npm ci --ignore-scripts' in " + DIR + " failed (exit " + rc
                    + "); install npm (Debian package npm) and run it there");
            }
            // npm ci starts by removing node_modules, so this marks only the install that just ended.
            Files.writeString(INSTALLED_HERE, "");
        }
    }

    /** Whether a whole install is in place (npm's own end-of-install file, or ours). */
    private static boolean installed() {
        return Files.isRegularFile(INSTALLED) || Files.isRegularFile(INSTALLED_HERE);
    }

    /**
     * Runs encode.mjs once (see its header: an array of prompts, or an object of prompts and chats).
     *
     * @param tokenizerDir directory holding tokenizer.json (and tokenizer_config.json for chats).
     * @param inputJson    a JSON array of strings, or {@code {"prompts": [...], "chats": [...]}}.
     * @return the encoder's stdout: a JSON array of token-id arrays, or {@code {"prompts", "chats"}}.
     */
    static String encode(final Path tokenizerDir, final Path inputJson) throws IOException, InterruptedException {
        final Path out = Files.createTempFile("js-tokens", ".json");
        final Path err = Files.createTempFile("js-tokens", ".err");
        try {
            final Process p = new ProcessBuilder("node", DIR.resolve("encode.mjs").toString(),
                tokenizerDir.toString(), inputJson.toString()).directory(DIR.toFile())
                .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            if (!p.waitFor(ENCODE_TIMEOUT_S, TimeUnit.SECONDS)) {
                p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                throw new AssertionError("node encode.mjs did not finish in " + ENCODE_TIMEOUT_S + " s");
            }
            if (p.exitValue() != 0) {
                throw new AssertionError("node encode.mjs failed (exit " + p.exitValue() + "): "
                    + Files.readString(err));
            }
            return Files.readString(out);
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    /** Runs a command, output discarded; -1 when it cannot start or does not finish in time. */
    private static int run(final List<String> cmd, final Path dir, final long timeoutS)
        throws InterruptedException {
        final Process p;
        try {
            p = new ProcessBuilder(new ArrayList<>(cmd)).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        } catch (final IOException ex) {
            return -1;
        }
        if (!p.waitFor(timeoutS, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            return -1;
        }
        return p.exitValue();
    }
}
