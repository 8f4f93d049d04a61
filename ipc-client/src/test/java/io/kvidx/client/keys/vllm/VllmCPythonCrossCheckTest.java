package io.kvidx.client.keys.vllm;

import io.kvidx.client.PythonPeers;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Cross-checks the pickle / CBOR encoders and the four vLLM hash algorithms against CPython itself: a real
 * {@code /usr/bin/python3} process runs src/test/python/vllm_hash_oracle.py with {@code pickle}, {@code hashlib}
 * and, when the Debian packages are installed, {@code cbor2} and {@code xxhash}.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class VllmCPythonCrossCheckTest {
    static final Path PYTHON = Path.of("/usr/bin/python3");
    static final Path ORACLE = Path.of("src/test/python/vllm_hash_oracle.py");
    private static final HexFormat HEX = HexFormat.of();
    private static final BigInteger TWO = BigInteger.TWO;

    private static final List<Object> VALUES = new ArrayList<>();
    private static final List<Request> REQUESTS = new ArrayList<>();
    private static final Map<String, String> ANSWERS = new HashMap<>();
    private static boolean hasCbor2;
    private static boolean hasXxhash;

    record Request(VllmHashAlgorithm algo, String seed, int blockSize, int[] tokens, VllmExtraKeys extras,
        String json) {
    }

    @BeforeAll
    static void runCPython() throws Exception {
        PythonPeers.require(Files.isExecutable(PYTHON),
            "SKIPPED: " + PYTHON + " not found, so the CPython cross-check of pickle/CBOR/vLLM hashes did not run");
        assertTrue(Files.isRegularFile(ORACLE), "missing " + ORACLE.toAbsolutePath());
        final SplittableRandom random = new SplittableRandom(0x6b766964L);
        addFixedValues();
        for (int i = 0; i < 400; i++) {
            VALUES.add(randomValue(random, 0));
        }
        for (int i = 0; i < 160; i++) {
            REQUESTS.add(randomRequest(random, VllmHashAlgorithm.values()[i % 4]));
        }
        final StringBuilder doc = new StringBuilder("{\"values\":[");
        for (int i = 0; i < VALUES.size(); i++) {
            doc.append(i == 0 ? "" : ",");
            json(doc, VALUES.get(i));
        }
        doc.append("],\"requests\":[");
        for (int i = 0; i < REQUESTS.size(); i++) {
            doc.append(i == 0 ? "" : ",").append(REQUESTS.get(i).json);
        }
        doc.append("]}");

        final Process process = new ProcessBuilder(PYTHON.toString(), ORACLE.toString())
            .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        final Thread writer = Thread.ofVirtual().start(() -> {
            try (OutputStream os = process.getOutputStream()) {
                os.write(doc.toString().getBytes(StandardCharsets.UTF_8));
            } catch (final IOException ex) {
                throw new IllegalStateException(ex);
            }
        });
        final String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(60, TimeUnit.SECONDS), "python did not finish");
        writer.join();
        assertEquals(0, process.exitValue(), "python oracle failed");
        for (final String line : output.split("\n")) {
            final int last = line.lastIndexOf(' ');
            if (last > 0) {
                ANSWERS.put(line.substring(0, last), line.substring(last + 1));
            }
        }
        hasCbor2 = "1".equals(ANSWERS.get("LIB cbor2"));
        hasXxhash = "1".equals(ANSWERS.get("LIB xxhash"));
    }

    @Test
    void shouldPickleExactlyAsCPython() {
        final Pickler pickler = new Pickler();
        for (int i = 0; i < VALUES.size(); i++) {
            final String expected = ANSWERS.get("P " + i);
            assertNotNull(expected, "no CPython answer for value " + i);
            pickler.dump(VALUES.get(i));
            assertEquals(expected, HEX.formatHex(pickler.array(), 0, pickler.length()), "value " + i);
        }
    }

    @Test
    void shouldEncodeCborExactlyAsCbor2() {
        PythonPeers.require(hasCbor2, "SKIPPED: python3-cbor2 is not installed for /usr/bin/python3 "
            + "(apt-get install python3-cbor2), so canonical CBOR was not cross-checked");
        final CborWriter writer = new CborWriter();
        for (int i = 0; i < VALUES.size(); i++) {
            final String expected = ANSWERS.get("C " + i);
            final Object value = VALUES.get(i);
            if ("ERR".equals(expected)) {
                assertThrows(IllegalArgumentException.class, () -> writer.encode(value), "value " + i);
            } else {
                writer.encode(value);
                assertEquals(expected, HEX.formatHex(writer.array(), 0, writer.length()), "value " + i);
            }
        }
    }

    @Test
    void shouldHashSha256RequestsAsCPython() {
        checkRequests(VllmHashAlgorithm.SHA256);
    }

    @Test
    void shouldHashSha256CborRequestsAsCPython() {
        PythonPeers.require(hasCbor2, "SKIPPED: python3-cbor2 missing, sha256_cbor not cross-checked against CPython");
        checkRequests(VllmHashAlgorithm.SHA256_CBOR);
    }

    @Test
    void shouldHashXxhashRequestsAsCPython() {
        PythonPeers.require(hasXxhash, "SKIPPED: python3-xxhash missing, xxhash not cross-checked against CPython");
        checkRequests(VllmHashAlgorithm.XXHASH);
    }

    @Test
    void shouldHashXxhashCborRequestsAsCPython() {
        PythonPeers.require(hasXxhash && hasCbor2,
            "SKIPPED: python3-xxhash or python3-cbor2 missing, xxhash_cbor not cross-checked against CPython");
        checkRequests(VllmHashAlgorithm.XXHASH_CBOR);
    }

    private static void checkRequests(final VllmHashAlgorithm algo) {
        int checked = 0;
        for (int i = 0; i < REQUESTS.size(); i++) {
            final Request r = REQUESTS.get(i);
            if (r.algo != algo) {
                continue;
            }
            final VllmBlockHasher hasher = new VllmBlockHasher(algo, r.blockSize);
            final byte[] noneHash = hasher.noneHash(r.seed);
            assertEquals(ANSWERS.get("N " + i), HEX.formatHex(noneHash), "NONE_HASH of request " + i);
            final int n = r.tokens.length / r.blockSize;
            final byte[] digests = new byte[n * hasher.digestLength()];
            final long[] values = new long[n];
            assertEquals(n, hasher.hashRequest(noneHash, r.tokens, r.tokens.length, r.extras, digests, values));
            for (int j = 0; j < n; j++) {
                final String expected = ANSWERS.get("R " + i + " " + j);
                assertNotNull(expected, "no CPython digest for request " + i + " block " + j);
                final int d = hasher.digestLength();
                assertEquals(expected, HEX.formatHex(digests, j * d, (j + 1) * d),
                    algo + " request " + i + " " + r.json + " block " + j);
                assertEquals(new BigInteger(expected.substring(expected.length() - 16), 16).longValue(), values[j]);
                checked++;
            }
        }
        assertTrue(checked > 50, "too few blocks checked: " + checked);
    }

    // ---- inputs ----

    private static final BigInteger[] BOUNDARY_INTS = {
        BigInteger.ZERO, BigInteger.ONE, BigInteger.valueOf(255), BigInteger.valueOf(256),
        BigInteger.valueOf(65535), BigInteger.valueOf(65536), BigInteger.valueOf(Integer.MAX_VALUE),
        TWO.pow(31), BigInteger.valueOf(-1), BigInteger.valueOf(-128), BigInteger.valueOf(-129),
        BigInteger.valueOf(-256), BigInteger.valueOf(Integer.MIN_VALUE), TWO.pow(31).negate().subtract(BigInteger.ONE),
        TWO.pow(32), TWO.pow(32).negate(), TWO.pow(39).negate(), TWO.pow(63).subtract(BigInteger.ONE), TWO.pow(63),
        TWO.pow(63).negate(), TWO.pow(63).negate().subtract(BigInteger.ONE), TWO.pow(64).subtract(BigInteger.ONE),
        TWO.pow(64), TWO.pow(64).negate(), TWO.pow(64).negate().subtract(BigInteger.ONE), TWO.pow(100),
        TWO.pow(100).negate(), BigInteger.valueOf(23), BigInteger.valueOf(24), BigInteger.valueOf(-24),
        BigInteger.valueOf(-25), TWO.pow(2100), TWO.pow(2100).negate(),
    };

    private static void addFixedValues() {
        // Every int boundary, as Integer / Long / BigInteger where it fits.
        for (final BigInteger b : BOUNDARY_INTS) {
            VALUES.add(b);
            if (b.bitLength() < 64) {
                VALUES.add(b.longValue());
            }
            if (b.bitLength() < 32) {
                VALUES.add(b.intValue());
            }
        }
        VALUES.add(null);
        VALUES.add(new Object[0]);
        VALUES.add(new Object[] {1});
        VALUES.add(new Object[] {1, 2});
        VALUES.add(new Object[] {1, 2, 3});
        VALUES.add(new Object[] {1, 2, 3, 4});
        VALUES.add(new Object[] {new Object[0], new Object[0], null, null});
        // CPython singletons: repeated 1-char latin-1 str / 1-byte bytes / empty ones are memo references.
        VALUES.add(new Object[] {"a", "a", "\u00ff", "\u00ff", "\u0100", "\u0100", "", "", "ab", "ab"});
        VALUES.add(new Object[] {new byte[] {7}, new byte[] {7}, new byte[0], new byte[0], new byte[2], new byte[2]});
        // More than 256 memo entries, then a BINGET beyond index 255 (LONG_BINGET).
        final Object[] many = new Object[300];
        for (int i = 0; i < 299; i++) {
            many[i] = "s" + i;
        }
        many[0] = "x";
        many[299] = "x";
        VALUES.add(many);
        // String / bytes length boundaries (SHORT_BINUNICODE vs BINUNICODE, SHORT_BINBYTES vs BINBYTES).
        VALUES.add("y".repeat(255));
        VALUES.add("y".repeat(256));
        VALUES.add("\u00e9".repeat(128));
        VALUES.add(new byte[255]);
        VALUES.add(new byte[256]);
        // Lone surrogate: pickle uses surrogatepass, cbor2 refuses.
        VALUES.add(new Object[] {"a\ud800b", "\udc00"});
        VALUES.add("\ud83d\ude00 emoji and \u4e2d\u6587");
        // Frames: a pickle over 64 KiB is split in frames; str/bytes of 64 KiB or more go outside frames.
        VALUES.add(new Object[] {new byte[32], range(1000, 21833), null});
        VALUES.add(new Object[] {new byte[32], range(1000, 21834), null});
        VALUES.add(new Object[] {new byte[32], range(0, 70000), new Object[] {"Alice"}});
        VALUES.add(new Object[] {"z".repeat(70000), "w"});
        VALUES.add(new Object[] {new byte[65536], new byte[65535], "v"});
        VALUES.add(new long[] {Long.MIN_VALUE, Long.MAX_VALUE, -1L, 0L, 1L << 32});
    }

    private static int[] range(final int from, final int to) {
        final int[] r = new int[to - from];
        for (int i = 0; i < r.length; i++) {
            r[i] = from + i;
        }
        return r;
    }

    private static Object randomValue(final SplittableRandom random, final int depth) {
        final int kind = random.nextInt(depth >= 3 ? 5 : 7);
        return switch (kind) {
            case 0 -> null;
            case 1 -> randomInt(random);
            case 2, 3 -> randomString(random);
            case 4 -> {
                final byte[] b = new byte[random.nextInt(4) == 0 ? random.nextInt(300) : random.nextInt(3) * 16];
                random.nextBytes(b);
                yield b;
            }
            case 5 -> random.ints(random.nextInt(7), 0, 300_000).toArray();
            default -> {
                final Object[] t = new Object[random.nextInt(6)];
                for (int i = 0; i < t.length; i++) {
                    t[i] = randomValue(random, depth + 1);
                }
                yield t;
            }
        };
    }

    private static Object randomInt(final SplittableRandom random) {
        final BigInteger b = BOUNDARY_INTS[random.nextInt(BOUNDARY_INTS.length)];
        final BigInteger v = b.add(BigInteger.valueOf(random.nextInt(5) - 2));
        return switch (random.nextInt(3)) {
            case 0 -> v.bitLength() < 32 ? (Object)v.intValue() : v;
            case 1 -> v.bitLength() < 64 ? (Object)v.longValue() : v;
            default -> v;
        };
    }

    static String randomString(final SplittableRandom random) {
        final int kind = random.nextInt(6);
        final int length = kind == 0 ? random.nextInt(2) : random.nextInt(kind == 5 ? 300 : 12);
        final StringBuilder s = new StringBuilder();
        for (int i = 0; i < length; i++) {
            switch (random.nextInt(kind == 1 ? 4 : 2)) {
                case 0 -> s.append((char)random.nextInt(0x20, 0x7F));
                case 1 -> s.append((char)random.nextInt(0xA0, 0x100));
                case 2 -> s.append((char)random.nextInt(0x4E00, 0x9FFF));
                default -> s.appendCodePoint(random.nextInt(0x1F600, 0x1F650));
            }
        }
        return s.toString();
    }

    private static Request randomRequest(final SplittableRandom random, final VllmHashAlgorithm algo) {
        final int[] sizes = {1, 2, 3, 4, 5, 16, 16, 16, 17, 32, 64, 300};
        final int bs = sizes[random.nextInt(sizes.length)];
        final int blocks = bs >= 64 ? random.nextInt(1, 3) : random.nextInt(1, 6);
        final int[] tokens = random.ints(blocks * bs + random.nextInt(bs), 0, 152_000).toArray();
        for (int i = 0; i < tokens.length; i++) {
            if (random.nextInt(8) == 0) {
                final int[] edge = {0, 255, 256, 65535, 65536, Integer.MAX_VALUE};
                tokens[i] = edge[random.nextInt(edge.length)];
            }
        }
        final String seed = random.nextInt(3) == 0 ? randomString(random) : Integer.toString(random.nextInt(1 << 20));
        final String lora = random.nextInt(3) == 0 ? null : randomString(random);
        final String salt = random.nextInt(3) == 0 ? null : randomString(random);
        final List<MultiModalFeature> mm = new ArrayList<>();
        int at = random.nextInt(Math.max(1, tokens.length));
        while (random.nextInt(3) > 0 && at < tokens.length) {
            final int length = random.nextInt(1, 2 * bs + 2);
            mm.add(new MultiModalFeature(random.nextInt(4) == 0 ? "m" : "mm-" + Long.toHexString(random.nextLong()),
                at, length));
            at += length + random.nextInt(2 * bs);
        }
        final VllmExtraKeys.MultiModalKeyStyle style = random.nextBoolean()
            ? VllmExtraKeys.MultiModalKeyStyle.IDENTIFIER_AND_OFFSET : VllmExtraKeys.MultiModalKeyStyle.IDENTIFIER;
        final StringBuilder json = new StringBuilder("{\"algo\":\"").append(algo.vllmName()).append("\",\"seed\":");
        json(json, seed);
        json.append(",\"block_size\":").append(bs).append(",\"tokens\":[");
        for (int i = 0; i < tokens.length; i++) {
            json.append(i == 0 ? "" : ",").append(tokens[i]);
        }
        json.append("],\"lora\":");
        json(json, lora);
        json.append(",\"salt\":");
        json(json, salt);
        json.append(",\"mm_style\":\"")
            .append(style == VllmExtraKeys.MultiModalKeyStyle.IDENTIFIER ? "identifier" : "offset")
            .append("\",\"mm\":[");
        for (int i = 0; i < mm.size(); i++) {
            json.append(i == 0 ? "[" : ",[");
            json(json, mm.get(i).identifier());
            json.append(',').append(mm.get(i).offset()).append(',').append(mm.get(i).length()).append(']');
        }
        json.append("]}");
        return new Request(algo, seed, bs, tokens, new VllmExtraKeys(lora, salt, mm, style), json.toString());
    }

    static void json(final StringBuilder sb, final Object value) {
        switch (value) {
            case null -> sb.append("null");
            case String s -> {
                sb.append('"');
                for (int i = 0; i < s.length(); i++) {
                    final char c = s.charAt(i);
                    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
                        sb.append(c);
                    } else {
                        sb.append(String.format("\\u%04x", (int)c));
                    }
                }
                sb.append('"');
            }
            case byte[] b -> sb.append("{\"b\":\"").append(HEX.formatHex(b)).append("\"}");
            case Object[] t -> {
                sb.append('[');
                for (int i = 0; i < t.length; i++) {
                    sb.append(i == 0 ? "" : ",");
                    json(sb, t[i]);
                }
                sb.append(']');
            }
            case int[] t -> {
                sb.append('[');
                for (int i = 0; i < t.length; i++) {
                    sb.append(i == 0 ? "" : ",").append(t[i]);
                }
                sb.append(']');
            }
            case long[] t -> {
                sb.append('[');
                for (int i = 0; i < t.length; i++) {
                    sb.append(i == 0 ? "" : ",").append(t[i]);
                }
                sb.append(']');
            }
            default -> sb.append(value);
        }
    }
}
