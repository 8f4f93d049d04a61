package io.kvidx.daemon.cli;

import io.kvidx.client.keys.RouterKeyHasher;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs {@code kvidx hash} in-process through {@link KvidxCli#run(String...)}, capturing stdout and stderr.
 */
@Timeout(60)
class HashCommandTest {
    @TempDir
    Path dir;

    static CliRun run(final String... args) {
        return CliRun.of(args);
    }

    @Test
    void shouldPrintDocumentedRouterKeys() {
        final StringBuilder tokens = new StringBuilder();
        for (int i = 0; i < 40; i++) {
            tokens.append(i == 0 ? "" : ",").append(i);
        }
        final CliRun r = run("hash", "--algo", "router", "--block-size", "16", "--model", "Qwen/Qwen3-0.6B",
            "--tokens", tokens.toString());
        assertEquals(0, r.code(), r.err());
        // docs/keys.md check values; the 8 trailing tokens form no block.
        assertEquals(List.of("7826063163776810328", "11786072796337667649"), r.lines());
        assertEquals("", r.err());
    }

    @Test
    void shouldMatchTheLibraryForRouterKeysWithLoraAndSalt() {
        final int[] ids = {5, 6, 7, 8, 9, 10, 11};
        final RouterKeyHasher hasher = new RouterKeyHasher(3);
        final long[] keys = new long[2];
        hasher.keys(RouterKeyHasher.chainSeed(null, "ad", "salt"), ids, ids.length, keys);
        final CliRun r = run("hash", "--block-size=3", "--lora-name=ad", "--cache-salt=salt",
            "--tokens", "5 6,7\t8, 9 10 11");
        assertEquals(0, r.code(), r.err());
        assertEquals(List.of(Long.toUnsignedString(keys[0]), Long.toUnsignedString(keys[1])), r.lines());
    }

    @Test
    void shouldReproduceTheLoraCaptureFromATokensFile() throws Exception {
        final Path capture = io.kvidx.daemon.ingest.vllm.Capture.sharedDir().resolve("kv_event_lora.json");
        assertTrue(Files.isRegularFile(capture), "missing capture " + capture);
        final String json = Files.readString(capture);
        final Path tokens = dir.resolve("tokens.txt");
        // Whitespace and newlines as separators, as a file from another tool may have them.
        Files.writeString(tokens, array(json, "token_ids").replace(",", "\n "));
        final CliRun r = run("hash", "--algo", "sha256_cbor", "--block-size", "16", "--seed", "42",
            "--lora-name", "Alice", "--tokens-file", tokens.toString());
        assertEquals(0, r.code(), r.err());
        final List<String> expected = List.of(array(json, "block_hashes").split("\\s*,\\s*"));
        assertEquals(25, expected.size());
        assertEquals(expected, r.lines());
    }

    @Test
    void shouldPrintFullDigestsAndEventValuesForVllmAlgorithms() {
        final String[] algos = {"sha256", "sha256_cbor", "xxhash", "xxhash_cbor"};
        for (final String algo : algos) {
            final CliRun values = run("hash", "--algo", algo, "--block-size", "2", "--seed", "0",
                "--tokens", "1,2,3,4,5");
            final CliRun digests = run("hash", "--algo", algo, "--block-size", "2", "--seed", "0", "--digest",
                "--tokens", "1,2,3,4,5");
            assertEquals(0, values.code(), values.err());
            assertEquals(0, digests.code(), digests.err());
            assertEquals(2, values.lines().size());
            assertEquals(2, digests.lines().size());
            for (int i = 0; i < 2; i++) {
                final String hex = digests.lines().get(i);
                assertEquals(algo.startsWith("sha256") ? 64 : 32, hex.length(), algo);
                assertEquals(Long.toUnsignedString(Long.parseUnsignedLong(hex.substring(hex.length() - 16), 16)),
                    values.lines().get(i), algo);
            }
        }
    }

    @Test
    void shouldRejectBadInputWithExitCodeTwoAndOneLine() {
        expectUsageError("not a non-negative integer", "hash", "--tokens", "1,2,x");
        expectUsageError("not a non-negative integer", "hash", "--tokens", "1,-2,3");
        expectUsageError("out of range", "hash", "--tokens", "1,99999999999");
        expectUsageError("unknown --algo", "hash", "--algo", "md5", "--seed", "1", "--tokens", "1");
        expectUsageError("--block-size must be at least 1", "hash", "--block-size", "0", "--tokens", "1");
        expectUsageError("--block-size", "hash", "--block-size", "many", "--tokens", "1");
        expectUsageError("--seed", "hash", "--algo", "sha256", "--tokens", "1");
        expectUsageError("exactly one of", "hash");
        expectUsageError("cannot read --tokens-file", "hash", "--tokens-file", dir.resolve("absent").toString());
        expectUsageError("--digest", "hash", "--digest", "--tokens", "1");
        expectUsageError("ID:OFFSET:LENGTH", "hash", "--mm", "img:4", "--tokens", "1");
        expectUsageError("ID:OFFSET:LENGTH", "hash", "--mm", ":4:20", "--tokens", "1");
        expectUsageError("ID:OFFSET:LENGTH", "hash", "--mm", "img:x:20", "--tokens", "1");
        expectUsageError("LENGTH >= 1", "hash", "--mm", "img:4:0", "--tokens", "1");
    }

    @Test
    void shouldPrintDocumentedKeysWithMultimodalItemsAndSalt() {
        final StringBuilder tokens = new StringBuilder();
        for (int i = 0; i < 32; i++) {
            tokens.append(i == 0 ? "" : ",").append(i);
        }
        // docs/keys.md check values.
        final CliRun mm = run("hash", "--model", "Qwen/Qwen3-0.6B", "--mm", "img-A:4:20", "--tokens",
            tokens.toString());
        assertEquals(0, mm.code(), mm.err());
        assertEquals(List.of("1120839064125022060", "10211117881086589895"), mm.lines());
        final CliRun salt = run("hash", "--model", "Qwen/Qwen3-0.6B", "--cache-salt", "tenant-a", "--tokens",
            tokens.toString());
        assertEquals(List.of("8446255860077153739", "12208996491782064300"), salt.lines());
        // An identifier with colons; items in any order; an empty salt is none (as in vLLM).
        final io.kvidx.client.keys.RequestExtras extras = new io.kvidx.client.keys.RequestExtras()
            .addMultiModal("a:b", 1, 2).addMultiModal("c", 20, 3);
        final long[] keys = new long[2];
        new RouterKeyHasher(16).keys(RouterKeyHasher.chainSeed("m", null, null), parseAll(tokens), 32, extras, keys);
        final CliRun colons = run("hash", "--model", "m", "--cache-salt", "", "--mm", "c:20:3", "--mm", "a:b:1:2",
            "--tokens", tokens.toString());
        assertEquals(List.of(Long.toUnsignedString(keys[0]), Long.toUnsignedString(keys[1])), colons.lines());
    }

    @Test
    void shouldFoldMultimodalItemsIntoVllmHashes() {
        final int[] ids = new int[32];
        final List<io.kvidx.client.keys.vllm.MultiModalFeature> items =
            List.of(new io.kvidx.client.keys.vllm.MultiModalFeature("img", 10, 12));
        final io.kvidx.client.keys.vllm.VllmBlockHasher hasher = new io.kvidx.client.keys.vllm.VllmBlockHasher(
            io.kvidx.client.keys.vllm.VllmHashAlgorithm.SHA256_CBOR, 16);
        final long[] values = new long[2];
        hasher.hashRequest(hasher.noneHash("42"), ids, 32, new io.kvidx.client.keys.vllm.VllmExtraKeys("L", "s",
            items, io.kvidx.client.keys.vllm.VllmExtraKeys.MultiModalKeyStyle.IDENTIFIER_AND_OFFSET),
            new byte[64], values);
        final CliRun r = run("hash", "--algo", "sha256_cbor", "--seed", "42", "--lora-name", "L", "--cache-salt", "s",
            "--mm", "img:10:12", "--tokens", "0 ".repeat(32));
        assertEquals(0, r.code(), r.err());
        assertEquals(List.of(Long.toUnsignedString(values[0]), Long.toUnsignedString(values[1])), r.lines());
    }

    private static int[] parseAll(final CharSequence tokens) {
        return HashCommand.parseTokens(tokens.toString());
    }

    private static void expectUsageError(final String fragment, final String... args) {
        final CliRun r = run(args);
        assertEquals(2, r.code(), String.join(" ", args) + " -> " + r.err());
        assertEquals("", r.out());
        assertEquals(1, r.err().lines().count(), r.err());
        assertTrue(r.err().contains(fragment), r.err());
    }

    private static String array(final String json, final String key) {
        final Matcher m = Pattern.compile("\"" + key + "\"\\s*:\\s*\\[([^\\]]*)\\]").matcher(json);
        assertTrue(m.find(), "no " + key);
        return m.group(1).strip();
    }
}
