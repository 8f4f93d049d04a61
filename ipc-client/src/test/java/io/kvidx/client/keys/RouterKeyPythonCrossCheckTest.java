package io.kvidx.client.keys;

import io.kvidx.client.PythonPeers;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the Python example of docs/keys.md (the router key section's {@code python} block, as written) with a real
 * {@code /usr/bin/python3} and Debian's {@code python3-xxhash}, and compares its seeds and keys with
 * {@link RouterKeyHasher} on random requests, with and without multimodal items and prompt-embeds digests: the
 * documentation and the code define the same keys, extras included.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RouterKeyPythonCrossCheckTest {
    static final Path PYTHON = Path.of("/usr/bin/python3");
    static final Path DOC = Path.of("../docs/keys.md");
    private static final String[] ALPHABET = {"a", "Z", "0", "/", "-", " ", "\"", "\\", "\u00e9", "\u6a21",
        "\ud83d\ude00", "\n"};
    /** Reads the requests as JSON from stdin and prints, per request, the seed then the keys. */
    private static final String DRIVER = """

        import json, sys
        for r in json.load(sys.stdin):
            seed = chain_seed(r["model"], r["lora"], r["salt"])
            mm = [tuple(item) for item in r["mm"]]
            digests = [bytes.fromhex(d) for d in r["digests"]]
            print(" ".join(str(v) for v in [seed] + router_keys(seed, r["tokens"], r["block_size"], mm, digests)))
        """;

    @TempDir
    Path dir;

    record Item(String id, int offset, int length) {
    }

    record Request(String model, String lora, String salt, int blockSize, int[] tokens, List<Item> mm,
        byte[] digests) {
        Request(final String model, final String lora, final String salt, final int blockSize, final int[] tokens) {
            this(model, lora, salt, blockSize, tokens, List.of(), new byte[0]);
        }
    }

    @Test
    void shouldComputeTheSameKeysAsThePythonExampleOfTheDocs() throws Exception {
        PythonPeers.require(Files.isExecutable(PYTHON), "SKIPPED: " + PYTHON + " not found, docs/keys.md's Python "
            + "example was not cross-checked");
        final String example = pythonExample(Files.readString(DOC, StandardCharsets.UTF_8));
        final Path script = dir.resolve("router_keys.py");
        Files.writeString(script, "try:\n    import xxhash\nexcept ImportError:\n    print(\"NO_XXHASH\")\n"
            + "    raise SystemExit(0)\n" + example + DRIVER, StandardCharsets.UTF_8);

        final List<Request> requests = requests();
        final StringBuilder doc = new StringBuilder("[");
        for (int i = 0; i < requests.size(); i++) {
            final Request r = requests.get(i);
            doc.append(i == 0 ? "" : ",").append("{\"model\":");
            json(doc, r.model);
            doc.append(",\"lora\":");
            json(doc, r.lora);
            doc.append(",\"salt\":");
            json(doc, r.salt);
            doc.append(",\"block_size\":").append(r.blockSize).append(",\"tokens\":[");
            for (int t = 0; t < r.tokens.length; t++) {
                doc.append(t == 0 ? "" : ",").append(r.tokens[t]);
            }
            doc.append("],\"mm\":[");
            for (int m = 0; m < r.mm.size(); m++) {
                doc.append(m == 0 ? "[" : ",[");
                json(doc, r.mm.get(m).id());
                doc.append(',').append(r.mm.get(m).offset()).append(',').append(r.mm.get(m).length()).append(']');
            }
            doc.append("],\"digests\":[");
            final HexFormat hex = HexFormat.of();
            for (int d = 0; d < r.digests.length / 32; d++) {
                doc.append(d == 0 ? "\"" : ",\"").append(hex.formatHex(r.digests, 32 * d, 32 * d + 32)).append('"');
            }
            doc.append("]}");
        }
        doc.append(']');

        final List<String> lines = run(script, doc.toString());
        assumeFalse(lines.equals(List.of("NO_XXHASH")), "SKIPPED: python3-xxhash is not installed for " + PYTHON
            + " (apt-get install python3-xxhash), docs/keys.md's Python example was not cross-checked");
        assertEquals(requests.size(), lines.size(), "one line per request");
        for (int i = 0; i < requests.size(); i++) {
            assertEquals(javaLine(requests.get(i)), lines.get(i), "request " + i);
        }
    }

    static String pythonExample(final String markdown) {
        final int section = markdown.indexOf("## Router keys");
        assertTrue(section >= 0, "docs/keys.md has no router key section");
        final Matcher m = Pattern.compile("```python\\n(.*?)```", Pattern.DOTALL).matcher(markdown);
        assertTrue(m.find(section), "docs/keys.md has no python example in its router key section");
        assertTrue(m.group(1).contains("kvidx.router.v1"), "the example is not version 1");
        return m.group(1);
    }

    private static List<Request> requests() {
        final SplittableRandom random = new SplittableRandom(0x726b6579L);
        final List<Request> requests = new ArrayList<>();
        final int[] checkTokens = new int[144];
        for (int i = 0; i < checkTokens.length; i++) {
            checkTokens[i] = i;
        }
        requests.add(new Request("Qwen/Qwen3-0.6B", null, null, 16, checkTokens));
        requests.add(new Request(null, null, null, 16, new int[15]));
        requests.add(new Request("", "", "", 1, new int[] {0, Integer.MAX_VALUE, 1}));
        requests.add(new Request("Qwen/Qwen3-0.6B", null, null, 16, java.util.Arrays.copyOf(checkTokens, 32),
            List.of(new Item("img-A", 4, 20)), new byte[0]));
        for (int i = 0; i < 120; i++) {
            final int blockSize = i % 3 == 0 ? 16 : 1 + random.nextInt(40);
            final int[] tokens = new int[random.nextInt(blockSize * 20 + 1)];
            for (int t = 0; t < tokens.length; t++) {
                tokens[t] = random.nextBoolean() ? random.nextInt(152_000) : random.nextInt(Integer.MAX_VALUE);
            }
            requests.add(new Request(randomString(random), randomString(random), randomString(random), blockSize,
                tokens));
        }
        for (int i = 0; i < 120; i++) {
            final int blockSize = i % 3 == 0 ? 16 : 1 + random.nextInt(40);
            final int[] tokens = new int[random.nextInt(blockSize * 12 + 1)];
            for (int t = 0; t < tokens.length; t++) {
                tokens[t] = random.nextInt(152_000);
            }
            final List<Item> mm = new ArrayList<>();
            for (int m = random.nextInt(5); m > 0; m--) {
                final String id = randomString(random);
                mm.add(new Item(id == null ? "" : id, random.nextInt(tokens.length + 20),
                    1 + random.nextInt(3 * blockSize)));
            }
            final byte[] digests = new byte[32 * random.nextInt(tokens.length / blockSize + 2)];
            random.nextBytes(digests);
            requests.add(new Request(randomString(random), randomString(random), randomString(random), blockSize,
                tokens, mm, digests));
        }
        return requests;
    }

    private static String randomString(final SplittableRandom random) {
        final int n = random.nextInt(-2, 12);
        if (n < 0) {
            return null;
        }
        final StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            sb.append(ALPHABET[random.nextInt(ALPHABET.length)]);
        }
        return sb.toString();
    }

    private static String javaLine(final Request r) {
        final RouterKeyHasher hasher = new RouterKeyHasher(r.blockSize);
        final long seed = RouterKeyHasher.chainSeed(r.model, r.lora, r.salt);
        final long[] keys = new long[r.tokens.length / r.blockSize];
        final RequestExtras extras = new RequestExtras();
        r.mm.forEach(m -> extras.addMultiModal(m.id(), m.offset(), m.length()));
        extras.promptEmbedsDigests(r.digests, 0, r.digests.length / 32);
        final int n = hasher.keys(seed, r.tokens, r.tokens.length, extras, keys);
        final StringBuilder sb = new StringBuilder(Long.toUnsignedString(seed));
        for (int i = 0; i < n; i++) {
            sb.append(' ').append(Long.toUnsignedString(keys[i]));
        }
        return sb.toString();
    }

    private static void json(final StringBuilder sb, final String s) {
        if (s == null) {
            sb.append("null");
            return;
        }
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            final char c = s.charAt(i);
            if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        sb.append('"');
    }

    private static List<String> run(final Path script, final String input) throws Exception {
        final Process process = new ProcessBuilder(PYTHON.toString(), script.toString())
            .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        final Thread writer = Thread.ofVirtual().start(() -> {
            try (OutputStream os = process.getOutputStream()) {
                os.write(input.getBytes(StandardCharsets.UTF_8));
            } catch (final IOException ex) {
                throw new IllegalStateException(ex);
            }
        });
        final String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(60, TimeUnit.SECONDS), "python did not finish");
        writer.join();
        assertEquals(0, process.exitValue(), "python failed running docs/keys.md's example");
        return output.lines().toList();
    }
}
