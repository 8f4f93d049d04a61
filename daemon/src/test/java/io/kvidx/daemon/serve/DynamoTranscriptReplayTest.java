package io.kvidx.daemon.serve;

import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.zmq.PyPeer;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import static io.kvidx.daemon.serve.DynamoTranscript.json;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Replays Dynamo's recorded answers to a 45-request scenario (src/test/resources/dynamo: Dynamo's standalone indexer
 * at commit df888f68, its provenance in the README there) against a real daemon ({@code --http} on loopback, block
 * size 16) fed by real vLLM-format Python publishers as Dynamo was: the base capture at DP ranks 0 (P1) and 1 (P2), the
 * LoRA capture (P3). Each request goes on its own connection of a raw HTTP client, the publishers' endpoints put in
 * place of P1..P4, and kvidx's answer is compared with Dynamo's field by field: the status; for a JSON answer every
 * field Dynamo sent, with its value (kvidx may add fields: {@code instances}, {@code block_size} and so on); for
 * Dynamo's plain-text refusals (its framework's extractor) kvidx's JSON error with the expected {@code code}; an
 * {@code error} message Dynamo wrote must begin kvidx's; an {@code Allow} header Dynamo sent must be kvidx's. Where
 * kvidx answers differently on purpose the step is in {@link #KVIDX_DIFFERS} with kvidx's answer, and the difference
 * is a row of docs/service-api-peers.md's table.
 */
@Timeout(240)
class DynamoTranscriptReplayTest {
    /** A step's expected kvidx answer where it is not Dynamo's: status, error code, fields replaced or ignored. */
    private record Differs(int status, String code, Map<String, Object> fields) {
        Differs(final int status, final String code) {
            this(status, code, Map.of());
        }
    }

    /** A field kvidx does not answer as Dynamo (or at all): not compared. */
    private static final Object IGNORED = new Object();

    /** kvidx's codes for the refusals it shares with Dynamo (same status). */
    private static final Map<Integer, String> CODES = Map.ofEntries(Map.entry(3, "already_registered"),
        Map.entry(4, "conflict"), Map.entry(5, "invalid_field"), Map.entry(6, "missing_field"),
        Map.entry(7, "wrong_block_size"), Map.entry(13, "unknown_model"), Map.entry(17, "unknown_model"),
        Map.entry(18, "unsupported_media_type"), Map.entry(19, "bad_json"), Map.entry(21, "invalid_field"),
        Map.entry(22, "invalid_field"), Map.entry(23, "missing_field"), Map.entry(25, "body_too_large"),
        Map.entry(29, "missing_field"), Map.entry(35, "method_not_allowed"), Map.entry(36, "not_found"),
        Map.entry(37, "unknown_instance"), Map.entry(44, "unknown_model"));

    /** Where kvidx answers differently on purpose (docs/service-api-peers.md, "kvidx against the transcript"). */
    private static final Map<Integer, Differs> KVIDX_DIFFERS = new LinkedHashMap<>();

    static {
        // Health: kvidx says why it is healthy (or not) in a JSON body, Dynamo answers an empty 200.
        final Differs health = new Differs(200, null, Map.of("", Map.of("status", "ok", "block_size", 16L)));
        KVIDX_DIFFERS.put(1, health);
        KVIDX_DIFFERS.put(45, health);
        // The bogus endpoint: the same status and code, kvidx's own message.
        KVIDX_DIFFERS.put(5, new Differs(400, "invalid_field", Map.of("/error",
            "invalid ZMQ endpoint `bogus`: not tcp://host:port or ipc://path (field 'endpoint')")));
        // frequencies: kvidx counts the pods holding each matched block; Dynamo's (without TTL tracking) are empty.
        KVIDX_DIFFERS.put(11, new Differs(200, null, Map.of("/frequencies", repeat(2L, 25))));
        KVIDX_DIFFERS.put(12, new Differs(200, null, Map.of("/frequencies", repeat(2L, 12))));
        KVIDX_DIFFERS.put(14, new Differs(200, null, Map.of("/frequencies", repeat(1L, 25))));
        KVIDX_DIFFERS.put(24, new Differs(200, null, Map.of("/frequencies", repeat(2L, 25))));
        KVIDX_DIFFERS.put(42, new Differs(200, null, Map.of("/frequencies", repeat(1L, 25))));
        // cache_salt: kvidx keys a salted prompt apart, as vLLM does (Dynamo df888f68 ignored the field).
        KVIDX_DIFFERS.put(16, new Differs(200, null, Map.of("", Map.of("scores", Map.of(), "tree_sizes", Map.of(),
            "frequencies", List.of()))));
        // Dynamo's per-block hashes on a default cell (--key-scheme kvidx): refused, naming --key-scheme.
        KVIDX_DIFFERS.put(26, new Differs(400, "wrong_key_scheme"));
        KVIDX_DIFFERS.put(27, new Differs(400, "wrong_key_scheme"));
        KVIDX_DIFFERS.put(28, new Differs(400, "wrong_key_scheme"));
        // /dump: kvidx's binary snapshot for --peer replicas.
        KVIDX_DIFFERS.put(30, new Differs(200, null, Map.of("", IGNORED)));
        // The peer list: refused, a kvidx replica starts from --peer URL.
        KVIDX_DIFFERS.put(31, new Differs(501, "not_implemented"));
        KVIDX_DIFFERS.put(32, new Differs(501, "not_implemented"));
        KVIDX_DIFFERS.put(33, new Differs(501, "not_implemented"));
        // /metrics: kvidx always serves its Prometheus registry (Dynamo only with a build feature).
        KVIDX_DIFFERS.put(34, new Differs(200, null, Map.of("", IGNORED)));
        // /unregister by instance alone: instance ids are unique in a kvidx cell, model_name is not needed.
        KVIDX_DIFFERS.put(38, new Differs(404, "unknown_instance", Map.of("/error", "instance 98 not found")));
    }

    /** On a cell keyed by {@code --key-scheme xxh3-chain}: what kvidx answers to Dynamo's hash queries. */
    private static final Map<Integer, Differs> XXH3_DIFFERS = new LinkedHashMap<>();

    static {
        final Map<String, Object> matched = Map.of("scores", Map.of("1", Map.of("0", 400L, "1", 400L)),
            "tree_sizes", Map.of("1", Map.of("0", 25L, "1", 25L)), "frequencies", repeat(2L, 25));
        XXH3_DIFFERS.put(26, new Differs(200, null, Map.of("/frequencies", repeat(2L, 25))));
        XXH3_DIFFERS.put(27, new Differs(200, null, Map.of("/frequencies", repeat(2L, 25))));
        // The same hashes written unsigned: kvidx takes u64 as routers in other languages hold them (Dynamo: i64).
        XXH3_DIFFERS.put(28, new Differs(200, null, Map.of("", matched)));
    }

    @TempDir
    Path dir;

    @BeforeAll
    static void requirePython() throws Exception {
        PyPeer.requirePython();
    }

    @Test
    void shouldAnswerDynamosScenarioAsDynamoDidOrAsDocumented() throws Exception {
        final DynamoTranscript transcript = DynamoTranscript.load();
        assertEquals(45, transcript.steps().size());
        final Capture base = Capture.load("kv_event_base.json");
        final Capture lora = Capture.load("kv_event_lora.json");
        try (KvidxDaemon daemon = KvidxDaemon.start(HttpApiClient.daemonContext(dir));
            PyPeer p1 = new PyPeer(PyPeer.VLLM, "--topic", "");
            PyPeer p2 = new PyPeer(PyPeer.VLLM, "--topic", "");
            PyPeer p3 = new PyPeer(PyPeer.VLLM, "--topic", "")) {
            final Map<String, String> endpoints = new LinkedHashMap<>();
            endpoints.put(transcript.endpoint("P1"), p1.endpoint);
            endpoints.put(transcript.endpoint("P2"), p2.endpoint);
            endpoints.put(transcript.endpoint("P3"), p3.endpoint);
            endpoints.put(transcript.endpoint("P4"), "tcp://127.0.0.1:" + freePort());
            final RawHttp http = new RawHttp(daemon.httpPort());
            final List<String> failures = new ArrayList<>();
            for (final DynamoTranscript.Step step : transcript.steps()) {
                if (step.number() == 10) {
                    // Dynamo was fed between the registrations and the first read; so is kvidx.
                    feed(http, base, lora, p1, p2, p3, true);
                }
                final byte[] body = step.body(base.tokenIds(), endpoints);
                final RawHttp.Reply reply = http.send(step.method(), step.path(), step.headers(), body);
                compare(step, reply, endpoints, KVIDX_DIFFERS, failures);
            }
            assertTrue(failures.isEmpty(), failures.size() + " answers differ from Dynamo's and from the documented "
                + "differences:\n" + String.join("\n", failures));
        }
    }

    /**
     * Dynamo's hash queries (steps 26 to 29) on a cell keyed by {@code --key-scheme xxh3-chain}, where kvidx indexes the
     * hashes Dynamo's routers send: the registrations of instance 1's two ranks (steps 2 and 9), the base capture
     * published, then the four requests.
     */
    @Test
    void shouldAnswerDynamosHashQueriesOnAnXxh3ChainCell() throws Exception {
        final DynamoTranscript transcript = DynamoTranscript.load();
        final Capture base = Capture.load("kv_event_base.json");
        try (KvidxDaemon daemon = KvidxDaemon.start(HttpApiClient.daemonContext(dir).keyScheme("xxh3-chain"));
            PyPeer p1 = new PyPeer(PyPeer.VLLM, "--topic", "");
            PyPeer p2 = new PyPeer(PyPeer.VLLM, "--topic", "")) {
            final Map<String, String> endpoints = Map.of(transcript.endpoint("P1"), p1.endpoint,
                transcript.endpoint("P2"), p2.endpoint);
            final RawHttp http = new RawHttp(daemon.httpPort());
            final List<String> failures = new ArrayList<>();
            for (final int n : new int[] {2, 9, 26, 27, 28, 29}) {
                final DynamoTranscript.Step step = transcript.steps().get(n - 1);
                if (n == 26) {
                    feed(http, base, null, p1, p2, null, false);
                }
                final RawHttp.Reply reply = http.send(step.method(), step.path(), step.headers(),
                    step.body(base.tokenIds(), endpoints));
                compare(step, reply, endpoints, XXH3_DIFFERS, failures);
            }
            assertTrue(failures.isEmpty(), String.join("\n", failures));
        }
    }

    /**
     * Publishes the captures until both ranks of instance 1 (and, with {@code withLora}, the LoRA instance 3) answer
     * with all 25 blocks.
     */
    private static void feed(final RawHttp http, final Capture base, final Capture lora, final PyPeer p1,
        final PyPeer p2, final PyPeer p3, final boolean withLora) throws Exception {
        final byte[] query = ("{\"token_ids\":" + HttpApiClient.tokens(base.tokenIds(), base.tokenIds().length)
            + ",\"model_name\":\"" + base.model() + "\"}").getBytes(StandardCharsets.UTF_8);
        final byte[] loraQuery = withLora ? ("{\"token_ids\":" + HttpApiClient.tokens(lora.tokenIds(),
            lora.tokenIds().length) + ",\"model_name\":\"" + lora.model() + "\",\"lora_name\":\"" + lora.loraName()
            + "\"}").getBytes(StandardCharsets.UTF_8) : null;
        final Map<String, String> json = Map.of("Content-Type", "application/json");
        IndexHttpApiTest.await("the publishers' blocks in the index", () -> {
            p1.command("store kv_event_base.json");
            p2.command("store kv_event_base.json");
            if (withLora) {
                p3.command("store kv_event_lora.json");
            }
            final String both = http.send("POST", "/query", json, query).text();
            return both.contains("\"scores\":{\"1\":{\"0\":400,\"1\":400}},\"tree_sizes\":{\"1\":{\"0\":25,\"1\":25}}")
                && (!withLora || http.send("POST", "/query", json, loraQuery).text()
                .contains("\"scores\":{\"3\":{\"0\":400}},\"tree_sizes\":{\"3\":{\"0\":25}}"));
        });
    }

    private static void compare(final DynamoTranscript.Step step, final RawHttp.Reply reply,
        final Map<String, String> endpoints, final Map<Integer, Differs> documented, final List<String> failures)
        throws Exception {
        final String where = "step " + step.number() + " (" + step.name() + "): ";
        final Differs differs = documented.get(step.number());
        final int status = differs != null ? differs.status() : step.status();
        if (reply.status() != status) {
            failures.add(where + "status " + reply.status() + ", expected " + status + (differs != null
                ? " (kvidx's documented answer; Dynamo " + step.status() + ")" : " (Dynamo's)") + ": " + reply.text());
            return;
        }
        final String allow = step.responseHeader("allow");
        if (allow != null && !allow.equals(reply.headers().get("allow"))) {
            failures.add(where + "Allow: " + reply.headers().get("allow") + ", expected Dynamo's " + allow);
        }
        final String code = differs != null && differs.code() != null ? differs.code() : CODES.get(step.number());
        if (status >= 400) {
            // Every kvidx refusal is JSON {"error", "code"}, whatever Dynamo's framework wrote.
            final Object answer = json(reply.text());
            if (!(answer instanceof Map<?, ?> m) || !(m.get("error") instanceof String)
                || !Objects.equals(code, m.get("code"))) {
                failures.add(where + "expected a JSON error with code " + code + ": " + reply.text());
                return;
            }
        }
        if (differs != null && differs.fields().get("") == IGNORED) {
            return;
        }
        // A refusal where Dynamo answered (or the reverse) has nothing of Dynamo's body to compare.
        final boolean otherStatus = differs != null && differs.status() != step.status();
        final Object expected = differs != null && differs.fields().containsKey("") ? differs.fields().get("")
            : otherStatus ? null : step.response(endpoints);
        if (expected == null) {
            return; // Dynamo's plain-text or empty refusal: status and code compared above
        }
        final Object actual = json(reply.text());
        contains(where, "", expected, actual, differs == null ? Map.of() : differs.fields(), failures);
    }

    /** Every field of {@code expected} is in {@code actual} with its value (an error message begins kvidx's). */
    private static void contains(final String where, final String path, final Object expected, final Object actual,
        final Map<String, Object> replaced, final List<String> failures) {
        final Object want = replaced.containsKey(path) && !path.isEmpty() ? replaced.get(path) : expected;
        if (want == IGNORED) {
            return;
        }
        if (want instanceof Map<?, ?> e) {
            if (!(actual instanceof Map<?, ?> a)) {
                failures.add(where + path + ": expected an object, got " + actual);
                return;
            }
            for (final var entry : e.entrySet()) {
                final String p = path + "/" + entry.getKey();
                if (!a.containsKey(entry.getKey())) {
                    failures.add(where + p + " missing; expected " + entry.getValue());
                } else {
                    contains(where, p, entry.getValue(), a.get(entry.getKey()), replaced, failures);
                }
            }
        } else if (want instanceof List<?> e) {
            if (!(actual instanceof List<?> a) || a.size() != e.size()) {
                failures.add(where + path + ": expected " + e + ", got " + actual);
                return;
            }
            for (int i = 0; i < e.size(); i++) {
                contains(where, path + "/" + i, e.get(i), a.get(i), replaced, failures);
            }
        } else if ("/error".equals(path) && want instanceof String w && actual instanceof String a) {
            if (!a.startsWith(w)) {
                failures.add(where + "error \"" + a + "\" does not begin with \"" + w + "\"");
            }
        } else if (!Objects.equals(want, actual)) {
            failures.add(where + path + ": expected " + want + ", got " + actual);
        }
    }

    private static List<Long> repeat(final long value, final int count) {
        return java.util.Collections.nCopies(count, value);
    }

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** The sha256 of a body, hex. */
    static String sha256(final byte[] body) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(body));
    }

    /** Reads a resource as text. */
    static List<String> lines(final String resource) throws Exception {
        try (InputStream in = DynamoTranscriptReplayTest.class.getResourceAsStream(resource)) {
            assertTrue(in != null, "missing test resource " + resource);
            return new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8)).lines().toList();
        }
    }
}
