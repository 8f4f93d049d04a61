package io.kvidx.daemon.fuzz;

import io.kvidx.daemon.ingest.vllm.Capture;
import io.kvidx.daemon.ingest.vllm.VllmPayloads;
import io.kvidx.sbe.events.AllBlocksClearedEncoder;
import io.kvidx.sbe.events.BlockRemovedEncoder;
import io.kvidx.sbe.events.BlockStoredEncoder;
import io.kvidx.sbe.events.BooleanType;
import io.kvidx.sbe.events.Medium;
import io.kvidx.sbe.events.MessageHeaderEncoder;
import io.kvidx.sbe.events.PodRegisterEncoder;
import org.agrona.concurrent.UnsafeBuffer;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes the seed corpora of the Jazzer fuzz tests ({@code *JazzerTest}) under {@code src/test/resources}, in Jazzer's
 * layout {@code <package>/<TestClass>Inputs/<method>/}: the real vLLM captures encoded in every shape the decoders
 * read, as SBE messages of every template, and the documented API bodies and config files. Run it after changing a
 * wire format (docs/testing.md); crash inputs Jazzer adds beside the seeds are kept.
 */
public final class FuzzSeeds {
    private FuzzSeeds() {
    }

    /**
     * @param args the test resources directory (default {@code daemon/src/test/resources}).
     * @throws IOException when a seed cannot be written.
     */
    public static void main(final String[] args) throws IOException {
        final Path root = Path.of(args.length > 0 ? args[0] : "daemon/src/test/resources");
        final Capture base = Capture.load("kv_event_base.json");
        final Capture lora = Capture.load("kv_event_lora.json");

        final Map<String, byte[]> vllm = new LinkedHashMap<>();
        vllm.put("base_array_uint64", new VllmPayloads(VllmPayloads.Shape.ARRAY, VllmPayloads.HashWidth.UINT64)
            .stored(base.blockHashes(), null, base.tokenIds(), 16, null, "GPU").batch(0));
        vllm.put("lora_map_bin32", new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.BIN32)
            .stored(lora.blockHashes(), 12345L, lora.tokenIds(), 16, "Alice", "GPU")
            .removed(lora.blockHashes(), "CPU").cleared().batch(null));
        vllm.put("removed_unknown_mapbatch", new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.INT64)
            .removed(new long[] {1, -2, 3}, null).unknown().mapBatch());
        vllm.put("extra_keys_array", new VllmPayloads(VllmPayloads.Shape.ARRAY, VllmPayloads.HashWidth.UINT64)
            .storedWithExtraKeys(new long[] {-5, 6}, null, new int[] {1, 2, 3, 4}, 2, "L",
                List.of(List.of("L", List.of("img", -1), "salt", new byte[32]), List.of("L")))
            .batch(0));
        vllm.put("extra_keys_map", new VllmPayloads(VllmPayloads.Shape.MAP, VllmPayloads.HashWidth.BIN32)
            .storedWithExtraKeys(new long[] {7, 8}, 9L, new int[] {1, 2, 3, 4}, 2, null,
                Arrays.asList(null, List.of(List.of("i", 1), new byte[32])))
            .batch(1));
        write(root, "io/kvidx/daemon/ingest/vllm/VllmEventDecoderJazzerTestInputs/shouldDecodeOrRejectAnyPayload",
            vllm);

        final Map<String, byte[]> sglang = new LinkedHashMap<>(vllm);
        sglang.put("sglang_array_metadata", sglangBatch(false));
        sglang.put("sglang_map_events", sglangBatch(true));
        write(root, "io/kvidx/daemon/ingest/sglang/SglangEventDecoderJazzerTestInputs/shouldDecodeOrRejectAnyPayload",
            sglang);

        final Map<String, byte[]> sbe = new LinkedHashMap<>();
        sbe.put("block_stored_lora", blockStored(lora, "Alice"));
        sbe.put("block_stored_base", blockStored(base, ""));
        sbe.put("block_removed", blockRemoved(base));
        sbe.put("all_blocks_cleared", allBlocksCleared());
        sbe.put("pod_register", podRegister());
        write(root, "io/kvidx/daemon/ingest/aeron/SbeEventFrameJazzerTestInputs/"
            + "shouldAcceptOnlyMessagesTheDecoderReadsInBounds", sbe);

        final Map<String, byte[]> replay = new LinkedHashMap<>();
        replay.put("any_3", new byte[] {0, 0, 0, 0, 3});
        replay.put("seq_payload_4", new byte[] {1, 0, 0, 0, 4});
        replay.put("topic_seq_payload_4", new byte[] {2, 0, 0, 0, 4});
        write(root, "io/kvidx/daemon/ingest/zmq/ReplayFramingJazzerTestInputs/shouldNameASequenceFrameInsideTheReply",
            replay);

        final Map<String, byte[]> bodies = new LinkedHashMap<>();
        bodies.put("register", utf8("{\"instance_id\":7,\"endpoint\":\"tcp://10.0.0.7:5557\",\"replay_endpoint\":"
            + "\"tcp://10.0.0.7:5558\",\"model_name\":\"Qwen/Qwen3-8B\",\"block_size\":16}"));
        bodies.put("query_tokens", utf8("{\"token_ids\":" + Arrays.toString(base.tokenIds()).replace(" ", "")
            + ",\"model_name\":\"Qwen/Qwen3-8B\",\"lora_name\":\"Alice\",\"cache_salt\":\"s\"}"));
        bodies.put("query_by_hash", utf8("{\"block_hashes\":[\"0x1f\",\"18446744073709551615\",3],"
            + "\"model\":\"m\",\"tenant_id\":\"t\",\"routing_group\":\"g\",\"dp_rank\":0}"));
        bodies.put("unregister", utf8("{\"instance_id\":7, \"type\": \"x\", \"additional_salt\": null}"));
        bodies.put("query_router_keys", utf8("{\"router_keys\":[-4616312762829003788,\"0x1f\"],\"seq_hashes\":[1],"
            + "\"block_hash\":[2],\"hashes\":[3],\"model_name\":\"m\"}"));
        bodies.put("mooncake_register", utf8("{\"endpoint\":\"tcp://10.0.0.7:5557\",\"type\":\"vLLM\",\"modelname\":"
            + "\"Qwen/Qwen3-8B\",\"lora_name\":\"\",\"tenant_id\":\"t\",\"instance_id\":\"engine-1\",\"block_size\":16,"
            + "\"dp_rank\":0,\"additionalsalt\":\"\"}"));
        write(root, "io/kvidx/daemon/serve/RequestBodyJazzerTestInputs/"
            + "shouldReadOrRefuseAnyBodyAlikeWithAndWithoutTheFastPath", bodies);

        write(root, "io/kvidx/daemon/serve/HttpDoorJazzerTestInputs/"
            + "shouldAnswerAnyBytesWithWellFormedDocumentedResponses", doors(bodies));

        final Map<String, byte[]> configs = new LinkedHashMap<>();
        configs.put("defaults", utf8(Files.readString(Path.of("docs/configuration.md"))
            .replaceFirst("(?s)^.*?```yaml\n", "").replaceFirst("(?s)\n```.*$", "\n")));
        configs.put("endpoints", utf8("""
            cell: a
            blockSize: 16
            writerCpus: [0, 1]
            zmqTopicPods: ["pod-*"]
            zmq:
              - endpoint: tcp://127.0.0.1:5557
                pod: pod-a
                model: Qwen/Qwen3-8B
                replay: tcp://127.0.0.1:5558
              - endpoint: tcp://127.0.0.1:5559
            aeron:
              channels: ["aeron:ipc"]
              termLength: 65536
              pods: ["pod-?"]
            idleStrategy: sleep-5ms
            """));
        write(root, "io/kvidx/daemon/config/DaemonConfigFileJazzerTestInputs/shouldFillTheContextOrRefuseWithAMessage",
            configs);

        final Map<String, byte[]> json = new LinkedHashMap<>();
        json.put("capture_base", Files.readAllBytes(Capture.sharedDir().resolve("kv_event_base.json")));
        json.put("capture_lora", Files.readAllBytes(Capture.sharedDir().resolve("kv_event_lora.json")));
        json.put("scalars", utf8("[1, -0, 1.5e-3, 1E400, \"\\u00e9\\ud83d\\ude00\\n\", true, false, null, {}, []]"));
        json.putAll(bodies);
        write(root, "io/kvidx/daemon/fuzz/MiniJsonJazzerTestInputs/shouldParseOrRefuseAndRoundTrip", json);

        final Map<String, byte[]> chats = new LinkedHashMap<>();
        chats.put("vllm_normalized", utf8("{\"messages\": ["
            + "{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"a\"}, {\"type\": \"text\","
            + " \"text\": \"\"}, \"b\"], \"extra\": 1},"
            + "{\"role\": \"assistant\", \"content\": null, \"reasoning_content\": \"r\", \"tool_calls\": ["
            + "{\"id\": \"1\", \"type\": \"function\", \"function\": {\"name\": \"f\","
            + " \"arguments\": \"{\\\"x\\\": 1}\"}},"
            + "{\"id\": \"2\", \"type\": \"function\", \"function\": {\"name\": \"g\", \"arguments\": \"not json\"}}]},"
            + "{\"role\": \"tool\", \"tool_call_id\": \"1\", \"content\": \"ok\"}],"
            + " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {}}}],"
            + " \"add_generation_prompt\": true, \"chat_template_kwargs\": {\"enable_thinking\": false}}"));
        chats.put("system_user", utf8("{\"model\":\"Qwen/Qwen3-8B\",\"messages\":[{\"role\":\"system\",\"content\":"
            + "\"Be brief.\"},{\"role\":\"user\",\"content\":\"Hello\"}],\"continue_final_message\":false}"));
        write(root, "io/kvidx/daemon/fuzz/ChatRequestJazzerTestInputs/shouldReadOrRefuseAnyBody", chats);
    }

    /** HttpDoorJazzerTest's tokens (the query token and the admin token of /dump and /metrics). */
    private static final String DOOR_AUTH = "Authorization: Bearer kvidx-fuzz-token-5e2b9d41\r\n";
    private static final String DOOR_ADMIN = "Authorization: Bearer kvidx-fuzz-admin-7a3c0f18\r\n";
    private static final String JSON = "Content-Type: application/json\r\n";

    /**
     * Raw HTTP/1.1 for HttpDoorJazzerTest: every endpoint with and without the token, Mooncake's paths, the refusals
     * (415, 405, 404, 413, 501), a chunked body, Expect: 100-continue as curl sends it, HTTP/1.0, and pipelined runs.
     */
    private static Map<String, byte[]> doors(final Map<String, byte[]> bodies) {
        final String query = "{\"token_ids\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,"
            + "28,29,30,31,32],\"model_name\":\"m\"}";
        final String register = "{\"instance_id\":7,\"endpoint\":\"tcp://127.0.0.1:5557\",\"model_name\":\"m\"}";
        final String mooncake = "{\"instance_id\":\"engine-1\",\"endpoint\":\"tcp://127.0.0.1:5557\","
            + "\"modelname\":\"m\",\"type\":\"vLLM\",\"tenant_id\":\"t\"}";
        final String byHash = new String(bodies.get("query_router_keys"), StandardCharsets.UTF_8);
        final Map<String, byte[]> d = new LinkedHashMap<>();
        d.put("health_open", utf8(get("/health", "")));
        d.put("health_head", utf8("HEAD /health HTTP/1.1\r\nHost: k\r\n\r\n"));
        d.put("workers_no_token", utf8(get("/workers", "")));
        d.put("workers_token", utf8(get("/workers?model_name=m&routing_group=default", DOOR_AUTH)));
        d.put("workers_wrong_token", utf8(get("/workers", DOOR_AUTH.replace("5e2b", "5e2c"))));
        d.put("query_token", utf8(post("/query", DOOR_AUTH + JSON, query)));
        d.put("query_no_token", utf8(post("/query", JSON, query)));
        d.put("query_capture", utf8(post("/query", DOOR_AUTH + JSON,
            new String(bodies.get("query_tokens"), StandardCharsets.UTF_8))));
        d.put("query_no_content_type", utf8(post("/query", DOOR_AUTH, query)));
        d.put("query_get", utf8(get("/query", DOOR_AUTH)));
        d.put("query_by_hash_router_keys", utf8(post("/query_by_hash", DOOR_AUTH + JSON, byHash)));
        d.put("query_by_hash_block_hashes", utf8(post("/query_by_hash", DOOR_AUTH + JSON,
            new String(bodies.get("query_by_hash"), StandardCharsets.UTF_8))));
        d.put("register", utf8(post("/register", DOOR_AUTH + JSON, register)));
        d.put("unregister", utf8(post("/unregister", DOOR_AUTH + JSON, "{\"instance_id\":7}")));
        d.put("mooncake_register", utf8(post("/mooncake/register", DOOR_AUTH + JSON, mooncake)));
        d.put("mooncake_query", utf8(post("/mooncake/query", DOOR_AUTH + JSON,
            query.replace("}", ",\"tenant_id\":\"default\"}"))));
        d.put("mooncake_query_by_hash", utf8(post("/mooncake/query_by_hash", DOOR_AUTH + JSON,
            "{\"seq_hashes\":[1,2],\"model\":\"m\"}")));
        d.put("mooncake_unregister", utf8(post("/mooncake/unregister", DOOR_AUTH + JSON,
            "{\"instance_id\":\"engine-1\",\"tenant_id\":\"t\"}")));
        d.put("dump_admin", utf8(get("/dump", DOOR_ADMIN)));
        d.put("dump_query_token", utf8(get("/dump?format=kvidx", DOOR_AUTH)));
        d.put("dump_dynamo", utf8(get("/dump?format=dynamo", DOOR_ADMIN)));
        d.put("metrics_admin", utf8(get("/metrics", DOOR_ADMIN)));
        d.put("peers", utf8(get("/peers", DOOR_AUTH)));
        d.put("register_peer", utf8(post("/register_peer", DOOR_AUTH + JSON, "{}")));
        d.put("not_found", utf8(get("/nope", DOOR_AUTH)));
        d.put("chunked_query", utf8("POST /query HTTP/1.1\r\nHost: k\r\n" + DOOR_AUTH + JSON
            + "Transfer-Encoding: chunked\r\n\r\n10\r\n" + query.substring(0, 16) + "\r\n"
            + Integer.toHexString(query.length() - 16) + "\r\n" + query.substring(16) + "\r\n0\r\n\r\n"));
        d.put("expect_continue", utf8("POST /query HTTP/1.1\r\nHost: k\r\n" + DOOR_AUTH + JSON
            + "Expect: 100-continue\r\nContent-Length: " + query.length() + "\r\n\r\n" + query));
        d.put("too_large", utf8("POST /query HTTP/1.1\r\nHost: k\r\n" + DOOR_AUTH + JSON
            + "Content-Length: 100000\r\n\r\n{}"));
        d.put("http10_close", utf8("GET /workers HTTP/1.0\r\n" + DOOR_AUTH + "\r\n"));
        d.put("connection_close", utf8(get("/health", "Connection: close\r\n") + get("/health", "")));
        d.put("malformed", utf8("GET /health HTTP/9\r\n\r\nGET /health HTTP/1.1\r\n\r\n"));
        d.put("pipelined_membership", utf8(post("/register", DOOR_AUTH + JSON, register)
            + post("/query", DOOR_AUTH + JSON, query) + get("/workers", DOOR_AUTH)
            + post("/register", DOOR_AUTH + JSON, register)
            + post("/unregister", DOOR_AUTH + JSON, "{\"instance_id\":7}") + get("/health", "")));
        d.put("pipelined_mixed_tokens", utf8(get("/workers", "") + post("/query", DOOR_AUTH + JSON, query)
            + get("/dump", DOOR_AUTH) + get("/dump", DOOR_ADMIN) + get("/metrics", "")
            + post("/mooncake/query", DOOR_AUTH + JSON, query)));
        d.put("pipelined_mooncake", utf8(post("/mooncake/register", DOOR_AUTH + JSON, mooncake)
            + post("/mooncake/register", DOOR_AUTH + JSON, mooncake)
            + post("/register", DOOR_AUTH + JSON, mooncake.replace("engine-1", "engine-2"))
            + post("/register", DOOR_AUTH + JSON, mooncake.replace("engine-1", "engine-3"))
            + post("/mooncake/unregister", DOOR_AUTH + JSON, "{\"instance_id\":\"engine-1\"}")));
        return d;
    }

    private static String get(final String path, final String headers) {
        return "GET " + path + " HTTP/1.1\r\nHost: k\r\n" + headers + "\r\n";
    }

    private static String post(final String path, final String headers, final String body) {
        return "POST " + path + " HTTP/1.1\r\nHost: k\r\n" + headers + "Content-Length: "
            + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body;
    }

    private static byte[] utf8(final String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static void write(final Path root, final String dir, final Map<String, byte[]> seeds) throws IOException {
        final Path d = root.resolve(dir);
        Files.createDirectories(d);
        for (final Map.Entry<String, byte[]> e : seeds.entrySet()) {
            Files.write(d.resolve("seed_" + e.getKey()), e.getValue());
        }
    }

    private static byte[] sglangBatch(final boolean mapEvents) throws IOException {
        final MessageBufferPacker p = MessagePack.newDefaultBufferPacker();
        p.packArrayHeader(3).packDouble(1.5).packArrayHeader(2);
        if (mapEvents) {
            p.packMapHeader(8).packString("type").packString("BlockStored")
                .packString("block_hashes").packArrayHeader(2).packLong(-5L).packLong(7L)
                .packString("parent_block_hash").packNil()
                .packString("token_ids").packArrayHeader(4).packInt(1).packInt(2).packInt(3).packInt(4)
                .packString("block_size").packInt(2).packString("lora_id").packNil()
                .packString("medium").packString("GPU")
                .packString("cache_salt").packString("tenant-a");
            p.packMapHeader(3).packString("type").packString("BlockRemoved")
                .packString("block_hashes").packArrayHeader(1).packLong(7L).packString("medium").packString("CPU");
        } else {
            p.packArrayHeader(7).packString("BlockStored").packArrayHeader(2).packLong(-5L).packLong(7L).packNil()
                .packArrayHeader(4).packInt(1).packInt(2).packInt(3).packInt(4).packInt(2).packNil().packString("GPU");
            p.packArrayHeader(8).packString("BlockStored").packArrayHeader(1).packLong(9L).packLong(7L)
                .packArrayHeader(2).packInt(5).packInt(6).packInt(2).packNil().packString("CPU_PINNED")
                .packMapHeader(2).packString("cache_salt").packString("tenant-a").packString("session_id")
                .packString("s-1");
        }
        p.packInt(3);
        return p.toByteArray();
    }

    /**
     * @param c        a capture.
     * @param loraName its LoRA adapter name ("" for none).
     * @return the capture as one SBE BlockStored message (header included) of pod "pod".
     */
    public static byte[] blockStored(final Capture c, final String loraName) {
        final UnsafeBuffer b = new UnsafeBuffer(new byte[8192]);
        final BlockStoredEncoder e = new BlockStoredEncoder().wrapAndApplyHeader(b, 0, new MessageHeaderEncoder())
            .sequence(3).dpRank(0).blockSize(16).medium(Medium.GPU).hasParent(BooleanType.F).parentHash(0);
        final BlockStoredEncoder.BlocksEncoder blocks = e.blocksCount(c.blockHashes().length);
        for (final long h : c.blockHashes()) {
            blocks.next().hash(h);
        }
        final BlockStoredEncoder.TokensEncoder tokens = e.tokensCount(c.tokenIds().length);
        for (final int t : c.tokenIds()) {
            tokens.next().token(t);
        }
        final byte[] lora = utf8(loraName);
        e.putPodId(utf8("pod"), 0, 3).putModel(utf8(c.model()), 0, c.model().length()).putLoraName(lora, 0,
            lora.length);
        return Arrays.copyOf(b.byteArray(), MessageHeaderEncoder.ENCODED_LENGTH + e.encodedLength());
    }

    private static byte[] blockRemoved(final Capture c) {
        final UnsafeBuffer b = new UnsafeBuffer(new byte[8192]);
        final BlockRemovedEncoder e = new BlockRemovedEncoder().wrapAndApplyHeader(b, 0, new MessageHeaderEncoder())
            .sequence(4).medium(Medium.GPU);
        final BlockRemovedEncoder.BlocksEncoder blocks = e.blocksCount(c.blockHashes().length);
        for (final long h : c.blockHashes()) {
            blocks.next().hash(h);
        }
        e.putPodId(utf8("pod"), 0, 3).model("m");
        return Arrays.copyOf(b.byteArray(), MessageHeaderEncoder.ENCODED_LENGTH + e.encodedLength());
    }

    private static byte[] allBlocksCleared() {
        final UnsafeBuffer b = new UnsafeBuffer(new byte[256]);
        final AllBlocksClearedEncoder e = new AllBlocksClearedEncoder()
            .wrapAndApplyHeader(b, 0, new MessageHeaderEncoder()).sequence(5).podId("pod").model("m");
        return Arrays.copyOf(b.byteArray(), MessageHeaderEncoder.ENCODED_LENGTH + e.encodedLength());
    }

    private static byte[] podRegister() {
        final UnsafeBuffer b = new UnsafeBuffer(new byte[256]);
        final PodRegisterEncoder e = new PodRegisterEncoder()
            .wrapAndApplyHeader(b, 0, new MessageHeaderEncoder()).sequence(0).podId("pod-a").model("Qwen/Qwen3-8B");
        return Arrays.copyOf(b.byteArray(), MessageHeaderEncoder.ENCODED_LENGTH + e.encodedLength());
    }
}
