package io.kvidx.router;

import io.kvidx.client.json.MiniJson;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Disaggregated serving through the router: a router YAML with a prefill and a decode profile and
 * {@code workflow: {type: prefill-decode}}, a prefill pod and a decode pod. The prefill pod is asked for one token
 * with {@code kv_transfer_params.do_remote_decode}; its answer's {@code kv_transfer_params} go to the decode pod with
 * the client's request; the client gets the decode pod's (streamed) answer.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RouterPrefillDecodeTest {
    private static final String PROFILES = """
        profiles:
          prefill:
            filter: [{type: role, role: prefill}]
            score: [{type: least-load, metric: requests}]
            pick: max-score
          decode:
            filter: [{type: role, role: decode}]
            score: [{type: least-load, metric: requests}]
            pick: max-score
        workflow: {type: prefill-decode, prefill: prefill, decode: decode}
        """;

    /** The router document, as a file would hold it: listen, index, pods with roles, the profiles and workflow. */
    private static RouterConfig config(final Path work, final String prefillUrl, final String decodeUrl) {
        final RouterConfig c = RouterConfig.fromYaml("listen: 127.0.0.1:0\n"
            + "index: {dir: " + work.resolve("no-index") + ", cell: none}\n"
            + "pods:\n"
            + "  - {id: pod-p, url: '" + prefillUrl + "', model: m, role: prefill}\n"
            + "  - {id: pod-d, url: '" + decodeUrl + "', model: m, role: decode}\n"
            + "response-headers: true\n"
            + "health: {interval-ms: 0}\n"
            + PROFILES, work);
        assertNotNull(c.routingYaml, "the profiles and workflow are kept as the routing document");
        return c;
    }

    /**
     * Two mock engines: the prefill pod generates one token (its metrics), the decode pod receives the whole prompt
     * as transferred from the prefill pod (so its request carried {@code do_remote_prefill}, which only the prefill
     * pod's answer holds) and streams the answer the client reads. Fails if ProxyCall stops running the prefill stage
     * ({@code plan.kind() == PREFILL_DECODE}) or stops passing the prefill answer to {@code adapter.decodeBody}.
     */
    @Test
    void shouldRunPrefillThenStreamTheDecodePodsAnswer() throws Exception {
        MockEngine.require();
        final Path work = Routers.workDir("router-pd");
        try (MockEngine prefill = MockEngine.start(work, "pod-p", "m", "--engine-id", "engine-p");
            MockEngine decode = MockEngine.start(work, "pod-d", "m");
            RouterServer router = RouterServer.start(config(work, prefill.url(), decode.url()))) {
            final RawHttp.Response r = RawHttp.exchange(router.port(), RawHttp.request("POST", "/v1/completions",
                "{\"model\": \"m\", \"prompt\": " + Routers.ids(64, 1000) + ", \"max_tokens\": 12, \"stream\": true,"
                    + " \"stream_options\": {\"include_usage\": true}}", "x-request-id: pd-1"));
            assertEquals(200, r.status(), r::toString);
            assertTrue(r.chunked(), "streamed");
            assertEquals("pod-d", r.header("x-kvidx-mock-pod"), "the decode pod answered");
            assertEquals("pod-d", r.header("x-kvidx-pod"));
            assertEquals("pod-p", r.header("x-kvidx-prefill-pod"));
            assertEquals("64", r.header("x-kvidx-mock-transferred-tokens"), "the KV came from the prefill pod");
            assertEquals("0", r.header("x-kvidx-mock-cached-tokens"));
            final String[] events = r.text().split("\n\n");
            assertEquals(12 + 2, events.length, r.text());
            for (int i = 0; i < 12; i++) {
                assertTrue(events[i].contains("\"text\": \" tok" + i + "\""), events[i]);
            }
            assertTrue(events[12].contains("\"cached_tokens\": 64"), events[12]);
            assertEquals("data: [DONE]", events[13]);

            assertEquals(1, prefill.metric("vllm:request_success_total"));
            assertEquals(1, prefill.metric("vllm:generation_tokens_total"), "the prefill pod made one token");
            assertEquals(64, prefill.metric("vllm:prompt_tokens_total"));
            assertEquals(12, decode.metric("vllm:generation_tokens_total"));
            assertTrue(prefill.log().contains("prompt=64 hit=0 transferred=0 gen=1 prefill-role"), prefill::tail);
            assertTrue(decode.log().contains("prompt=64 hit=0 transferred=64 gen=12"), decode::tail);
        } finally {
            Routers.deleteTree(work);
        }
    }

    /**
     * The bodies exactly, with pods written in the test: the prefill pod gets the client's request with one token,
     * no stream and {@code kv_transfer_params.do_remote_decode: true}; the decode pod gets the client's request
     * (streaming, its max_tokens, its stream_options) plus the prefill answer's {@code kv_transfer_params} as they
     * were; the client gets the decode pod's bytes. Both pods see the client's x-request-id. Fails if
     * PrefillDecodeAdapter.vllm() changes either body, or ProxyCall stops forwarding the client's headers to a stage.
     */
    @Test
    @SuppressWarnings("unchecked")
    void shouldSendThePrefillAnswersTransferParamsToTheDecodePod() throws Exception {
        final String transfer = "{\"do_remote_prefill\": true, \"do_remote_decode\": false, \"remote_block_ids\": "
            + "[7, 8, 9], \"remote_engine_id\": \"engine-x\", \"remote_request_id\": \"r-1\", \"remote_host\": "
            + "\"10.1.2.3\", \"remote_port\": 5600, \"tp_size\": 1}";
        final List<String> events = List.of("data: {\"id\": \"d\", \"choices\": [{\"text\": \" a\"}]}\n\n",
            "data: {\"id\": \"d\", \"choices\": [{\"text\": \" b\"}]}\n\n", "data: [DONE]\n\n");
        final Path work = Routers.workDir("router-pd-bodies");
        try (FakePod prefill = new FakePod(q -> FakePod.response(200, "application/json",
                "{\"id\": \"p\", \"choices\": [{\"text\": \" x\"}], \"kv_transfer_params\": " + transfer + "}"));
            FakePod decode = new FakePod(q -> FakePod.stream(events, "X-Decode: yes"));
            RouterServer router = RouterServer.start(config(work, prefill.url(), decode.url()))) {
            final String client = "{\"model\": \"m\", \"prompt\": [1, 2, 3, 4], \"max_tokens\": 12, \"stream\": true,"
                + " \"stream_options\": {\"include_usage\": true}, \"temperature\": 0.5}";
            final RawHttp.Response r = RawHttp.exchange(router.port(), RawHttp.request("POST", "/v1/completions",
                client, "x-request-id: pd-2"));
            assertEquals(200, r.status(), r::toString);
            assertEquals(String.join("", events), r.text(), "the decode pod's stream, as it sent it");
            assertEquals("yes", r.header("x-decode"));

            final FakePod.Request p = prefill.requests.poll(5, TimeUnit.SECONDS);
            assertNotNull(p);
            assertEquals("/v1/completions", p.uri());
            assertEquals("pd-2", p.header("x-request-id"));
            final Map<String, Object> pb = (Map<String, Object>) MiniJson.parse(p.text());
            assertEquals(1L, ((Number) pb.get("max_tokens")).longValue());
            assertEquals(Boolean.FALSE, pb.get("stream"));
            assertFalse(pb.containsKey("stream_options"));
            assertEquals(Boolean.TRUE, ((Map<String, Object>) pb.get("kv_transfer_params")).get("do_remote_decode"));
            assertEquals(List.of(1L, 2L, 3L, 4L), numbers(pb.get("prompt")));
            assertEquals("m", pb.get("model"));

            final FakePod.Request d = decode.requests.poll(5, TimeUnit.SECONDS);
            assertNotNull(d);
            assertEquals("pd-2", d.header("x-request-id"));
            final Map<String, Object> db = (Map<String, Object>) MiniJson.parse(d.text());
            assertEquals(MiniJson.parse(transfer), db.get("kv_transfer_params"), "passed on as the prefill pod sent"
                + " them");
            final Map<String, Object> rest = new LinkedHashMap<>(db);
            rest.remove("kv_transfer_params");
            assertEquals(MiniJson.parse(client), rest, "otherwise the client's request");
            assertNull(prefill.requests.poll(), "one prefill call");
            assertNull(decode.requests.poll(), "one decode call");
        } finally {
            Routers.deleteTree(work);
        }
    }

    /**
     * A prefill pod that fails (HTTP 500, and no other prefill pod) gets the client an OpenAI error, and the decode
     * pod is never called. Fails if ProxyCall.onHead passes a failed prefill answer on to the decode stage.
     */
    @Test
    void shouldNotCallTheDecodePodWhenPrefillFails() throws Exception {
        final Path work = Routers.workDir("router-pd-fail");
        try (FakePod prefill = new FakePod(q -> FakePod.response(500, "application/json", "{\"error\": \"boom\"}"));
            FakePod decode = new FakePod(q -> FakePod.stream(List.of("data: [DONE]\n\n")));
            RouterServer router = RouterServer.start(config(work, prefill.url(), decode.url()))) {
            final RawHttp.Response r = RawHttp.exchange(router.port(), RawHttp.request("POST", "/v1/completions",
                "{\"prompt\": [1, 2, 3], \"stream\": true}"));
            assertTrue(r.status() == 502 || r.status() == 503, r::toString);
            final Map<String, Object> error = asMap(r.json().get("error"));
            assertTrue(((String) error.get("message")).contains("prefill"), r::toString);
            assertEquals(1, prefill.requests.size());
            assertEquals(0, decode.requests.size());
        } finally {
            Routers.deleteTree(work);
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> asMap(final Object o) {
        return (Map<String, Object>) o;
    }

    private static List<Long> numbers(final Object list) {
        final List<Long> out = new ArrayList<>();
        for (final Object o : (List<?>) list) {
            out.add(((Number) o).longValue());
        }
        return out;
    }
}
