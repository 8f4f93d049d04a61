package io.kvidx.daemon.serve;

import io.kvidx.daemon.config.DaemonContext;
import io.kvidx.daemon.counters.CounterType;
import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.zmq.PyPeer;
import io.kvidx.daemon.lifecycle.KvidxDaemon;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static io.kvidx.daemon.serve.IndexHttpApiTest.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A cell keyed by the xxh3-chain scheme ({@code --key-scheme xxh3-chain}): a real vLLM-format publisher's blocks
 * (one chain without an adapter, one with a LoRA adapter) are answered for routers that hash prompts themselves
 * with the reference XXH3 (Python's xxhash): Mooncake's chained {@code seq_hashes} and Dynamo's per-block
 * {@code block_hashes} give the same match as {@code /query} with the token ids.
 */
@Timeout(120)
class Xxh3ChainSchemeTest {
    @TempDir
    Path dir;

    @BeforeAll
    static void requirePython() throws Exception {
        PyPeer.requirePython();
    }

    @Test
    void shouldAnswerRoutersThatHashPromptsThemselves() throws Exception {
        final Capture base = Capture.load("kv_event_base.json");
        final Capture lora = Capture.load("kv_event_lora.json");
        final DaemonContext ctx = HttpApiClient.daemonContext(dir).keyScheme("xxh3-chain");
        try (KvidxDaemon daemon = KvidxDaemon.start(ctx);
            PyPeer peer = new PyPeer(PyPeer.VLLM, "--topic", "")) {
            final HttpApiClient http = new HttpApiClient(daemon.httpPort());
            assertEquals(201, http.post("/register", "{\"instance_id\":3,\"endpoint\":\"" + peer.endpoint
                + "\",\"replay_endpoint\":\"" + peer.replayEndpoint + "\",\"model_name\":\"" + base.model() + "\"}")
                .status());
            peer.command("store kv_event_base.json");
            peer.command("store kv_event_lora.json");
            final String query = "{\"token_ids\":" + HttpApiClient.tokens(base.tokenIds(), base.tokenIds().length)
                + ",\"model_name\":\"" + base.model() + "\"}";
            await("the chain is indexed", () -> {
                peer.command("ping");
                return http.post("/query", query).body().contains("\"scores\":{\"3\":{\"0\":400}}");
            });
            assertEquals("seq 400 block 400", hashClient(daemon.httpPort(), base, null));
            final int loraTokens = lora.tokenIds().length / 16 * 16;
            assertEquals("seq " + loraTokens + " block " + loraTokens,
                hashClient(daemon.httpPort(), lora, lora.loraName()));
            // The adapter is in the keys: the same tokens with and without it are two chains in the index.
            assertEquals(base.tokenIds().length / 16 + loraTokens / 16, daemon.index().entryCount());

            // A salted chain (the salt on its first block, as vLLM's extra_keys carry it) and a multimodal one,
            // which this scheme cannot key: refused and counted, nothing indexed.
            final long refusedBefore = daemon.counters().value(CounterType.BAD_EXTRA_KEYS);
            peer.command("storex {\"events\":[" + request(1, "s1", "") + "," + request(101, null,
                ",\"mm\":[[\"img\",3,4]]") + "]}");
            final String salted = "{\"token_ids\":" + HttpApiClient.tokens(range(1), 32) + ",\"model_name\":\""
                + base.model() + "\",\"cache_salt\":\"s1\"}";
            await("the salted chain", () -> http.post("/query", salted).body().contains("\"3\":{\"0\":32}"));
            assertTrue(http.post("/query", salted.replace(",\"cache_salt\":\"s1\"", "")).body()
                .contains("\"scores\":{}"), "without its salt the chain matches nothing");
            assertEquals(refusedBefore + 1, daemon.counters().value(CounterType.BAD_EXTRA_KEYS));
            final String image = "{\"token_ids\":" + HttpApiClient.tokens(range(101), 32) + ",\"model_name\":\""
                + base.model() + "\"}";
            assertTrue(http.post("/query", image).body().contains("\"scores\":{}"));
        }
    }

    private static int[] range(final int first) {
        final int[] t = new int[32];
        for (int i = 0; i < t.length; i++) {
            t[i] = first + i;
        }
        return t;
    }

    private static String request(final int first, final String salt, final String extra) {
        return "{\"tokens\":" + HttpApiClient.tokens(range(first), 32) + ",\"block_size\":16,\"lora_name\":null,"
            + "\"salt\":" + (salt == null ? "null" : "\"" + salt + "\"") + ",\"embeds\":null" + extra + "}";
    }

    private static String hashClient(final int port, final Capture c, final String loraName) throws Exception {
        final String csv = HttpApiClient.csv(c.tokenIds());
        final ProcessBuilder pb = loraName == null
            ? new ProcessBuilder(PyPeer.PYTHON.toString(), "src/test/python/hash_client.py", Integer.toString(port),
                c.model(), "16", csv)
            : new ProcessBuilder(PyPeer.PYTHON.toString(), "src/test/python/hash_client.py", Integer.toString(port),
                c.model(), "16", csv, loraName);
        final Process p = pb.redirectErrorStream(true).start();
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        return out;
    }
}
