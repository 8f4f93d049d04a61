#!/usr/bin/python3
"""Tests of kvidx_mock_engine.py: run `python3 -m unittest` in this folder (loopback only, ~10 s).

Needs python3-zmq, python3-msgpack and python3-xxhash (Debian). When the python3 running the tests lacks them but
/usr/bin/python3 has them, the whole suite is rerun under /usr/bin/python3 as one test.
"""
import hashlib
import http.client
import json
import os
import pickle
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINE = os.path.join(HERE, "kvidx_mock_engine.py")
CAPTURE = os.path.join(HERE, "..", "..", "ipc-client", "src", "test", "resources", "vllm", "kv_event_base.json")
SYSTEM_PYTHON = "/usr/bin/python3"
MODEL = "mock-model"
END_SEQ = b"\xff" * 8

try:
    import msgpack
    import zmq
    import xxhash  # noqa: F401  (the engine needs it)
    sys.path.insert(0, HERE)
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    import kvidx_mock_engine as engine_module
    HAVE_DEPS = True
except ImportError:
    HAVE_DEPS = False


@unittest.skipIf(HAVE_DEPS or not os.path.exists(SYSTEM_PYTHON), "dependencies present: the tests run directly")
class RunUnderSystemPython(unittest.TestCase):
    def test_suite_under_system_python(self):
        r = subprocess.run([SYSTEM_PYTHON, "-m", "unittest", "-q", "test_mock_engine"], cwd=HERE,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(0, r.returncode, r.stdout + r.stderr)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def vllm_sha256_chain(tokens, bs=16, seed="42"):
    """vLLM's default block hashes, written out independently of the engine."""
    parent, out = hashlib.sha256(pickle.dumps(seed, protocol=5)).digest(), []
    for b in range(len(tokens) // bs):
        parent = hashlib.sha256(pickle.dumps((parent, tuple(tokens[b * bs:(b + 1) * bs]), None), protocol=5)).digest()
        out.append(int.from_bytes(parent[-8:], "big"))
    return out


class Engine:
    """One engine subprocess."""

    def __init__(self, tmp, name, args):
        self.ready = os.path.join(tmp, name + ".ready")
        self.log = open(os.path.join(tmp, name + ".log"), "w+")
        self.proc = subprocess.Popen([sys.executable, ENGINE, "--model", MODEL, "--ready-file", self.ready,
                                      "--verbose"] + args, stdout=self.log, stderr=self.log)
        deadline = time.time() + 10
        while not os.path.exists(self.ready):
            if self.proc.poll() is not None or time.time() > deadline:
                raise AssertionError("engine did not start: " + self.output())
            time.sleep(0.02)
        with open(self.ready) as f:
            self.info = json.load(f)
        self.port = self.info["port"]

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(5)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.log.close()

    def request(self, method, path, body=None, headers=None, conn=None):
        """(status, lower-cased headers, body bytes); body a dict (JSON) or bytes."""
        own = conn is None
        conn = conn or http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        conn.request(method, path, body=data, headers=h)
        r = conn.getresponse()
        out = (r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
        if own:
            conn.close()
        return out

    def post(self, path, body, **kw):
        status, headers, data = self.request("POST", path, body, **kw)
        return status, headers, json.loads(data) if headers.get("content-type", "").startswith("application/json") \
            else data

    def metrics(self):
        status, _, data = self.request("GET", "/metrics")
        assert status == 200
        out = {}
        for line in data.decode().splitlines():
            if line and not line.startswith("#"):
                m = re.fullmatch(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)', line)
                assert m, "bad sample line %r" % line
                out[m.group(1)] = (m.group(2) or "", float(m.group(3)))
        return out, data


class Sub:
    """A SUB socket on an engine's KV events."""

    def __init__(self, ctx, endpoint):
        self.s = ctx.socket(zmq.SUB)
        self.s.setsockopt(zmq.LINGER, 0)
        self.s.setsockopt(zmq.SUBSCRIBE, b"")
        self.s.connect(endpoint)
        time.sleep(0.3)  # ZeroMQ's slow joiner

    def recv(self, timeout=5.0):
        if not self.s.poll(int(timeout * 1000)):
            raise AssertionError("no KV event batch within %.1f s" % timeout)
        topic, seq, payload = self.s.recv_multipart()
        return topic, struct.unpack(">Q", seq)[0], msgpack.unpackb(payload, raw=False)

    def none_pending(self, timeout=0.2):
        return not self.s.poll(int(timeout * 1000))

    def close(self):
        self.s.close()


def replay(ctx, endpoint, start):
    d = ctx.socket(zmq.DEALER)
    d.setsockopt(zmq.LINGER, 0)
    d.connect(endpoint)
    d.send_multipart([b"", struct.pack(">Q", start)])
    out = []
    try:
        while True:
            if not d.poll(5000):
                raise AssertionError("replay did not finish")
            frames = d.recv_multipart()
            out.append(frames)
            if END_SEQ in frames:
                return out
    finally:
        d.close()


def sse_events(raw):
    """The data: payloads of an event stream."""
    return [line[6:] for line in raw.decode().split("\n\n") if line.startswith("data: ")]


@unittest.skipUnless(HAVE_DEPS, "needs python3-zmq, python3-msgpack, python3-xxhash")
class MockEngineTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kvidx-mock-")
        cls.ctx = zmq.Context()
        # A: explicit free ports, map events, current replay framing, vLLM's default hash.
        cls.a = Engine(cls.tmp, "a", [
            "--port", str(free_port()), "--zmq-pub", "tcp://127.0.0.1:%d" % free_port(),
            "--zmq-replay", "tcp://127.0.0.1:%d" % free_port(), "--pod-id", "podA", "--topic", "kv@podA@" + MODEL,
            "--num-blocks", "1000", "--prefill-us-per-token", "50", "--decode-ms-per-token", "10"])
        # B: ports picked by the engine, 4 blocks, legacy array events, pre-0.26 replay framing, sha256_cbor.
        cls.b = Engine(cls.tmp, "b", [
            "--port", "0", "--zmq-pub", "tcp://127.0.0.1:*", "--zmq-replay", "tcp://127.0.0.1:*", "--pod-id", "podB",
            "--num-blocks", "4", "--event-shape", "array", "--replay-framing", "old", "--hash-algo", "sha256_cbor"])
        cls.rng = random.Random(7)

    @classmethod
    def tearDownClass(cls):
        try:
            for e in (cls.a, cls.b):
                rc = e.stop()  # SIGTERM
                with open(e.log.name) as f:
                    text = f.read()
                assert rc == 0, "engine exit code %s: %s" % (rc, text)
                assert not os.path.exists(e.ready), "ready file left behind"
                assert "Traceback" not in text, text
                assert "stopped" in text, text
        finally:
            cls.ctx.term()
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def tokens(self, n):
        return [self.rng.randrange(1, 150000) for _ in range(n)]

    def reset_b(self, sub=None):
        status, _, _ = self.b.request("POST", "/reset_prefix_cache")
        self.assertEqual(200, status)
        if sub is not None:
            _, _, batch = sub.recv()
            self.assertEqual([["AllBlocksCleared"]], batch[1])

    # ------------------------------------------------------------------ prefix cache and events

    def test_shared_prefix_reports_cached_blocks_and_publishes_chained_events(self):
        sub = Sub(self.ctx, self.a.info["zmq_pub"])
        try:
            before, _ = self.a.metrics()
            shared = self.tokens(48)
            p1, p2 = shared + self.tokens(20), shared + self.tokens(30)
            s1, h1, r1 = self.a.post("/v1/completions", {"model": MODEL, "prompt": p1, "max_tokens": 2})
            s2, h2, r2 = self.a.post("/v1/completions", {"model": MODEL, "prompt": p2, "max_tokens": 2})
            self.assertEqual((200, 200), (s1, s2))
            self.assertEqual(0, r1["usage"]["prompt_tokens_details"]["cached_tokens"])
            self.assertEqual(48, r2["usage"]["prompt_tokens_details"]["cached_tokens"])
            self.assertEqual({"prompt_tokens": 78, "completion_tokens": 2, "total_tokens": 80,
                              "prompt_tokens_details": {"cached_tokens": 48}}, r2["usage"])
            self.assertEqual(("podA", "0", "48"), (h2["x-kvidx-mock-pod"], h1["x-kvidx-mock-cached-tokens"],
                                                   h2["x-kvidx-mock-cached-tokens"]))
            self.assertEqual(" tok0 tok1", r2["choices"][0]["text"])
            self.assertEqual("text_completion", r2["object"])

            c1, c2 = vllm_sha256_chain(p1), vllm_sha256_chain(p2)
            self.assertEqual(c1[:3], c2[:3])
            t1, seq1, b1 = sub.recv()
            t2, seq2, b2 = sub.recv()
            self.assertEqual((b"kv@podA@" + MODEL.encode(), seq1 + 1), (t1, seq2))
            self.assertIsInstance(b1[0], float)
            self.assertEqual(0, b1[2])
            self.assertEqual([{"type": "BlockStored", "block_hashes": c1, "token_ids": p1[:64], "block_size": 16,
                               "medium": "GPU", "extra_keys": [None] * 4, "group_idx": 0}], b1[1])
            self.assertEqual([{"type": "BlockStored", "block_hashes": c2[3:], "parent_block_hash": c1[2],
                               "token_ids": p2[48:64], "block_size": 16, "medium": "GPU", "extra_keys": [None],
                               "group_idx": 0}], b2[1])
            after, _ = self.a.metrics()
            self.assertEqual(48, after["vllm:prefix_cache_hits_total"][1] - before["vllm:prefix_cache_hits_total"][1])
            self.assertEqual(146, after["vllm:prefix_cache_queries_total"][1]
                             - before["vllm:prefix_cache_queries_total"][1])
            # A fully cached prompt: vLLM always computes the last token, so the last full block is no hit.
            _, h3, r3 = self.a.post("/v1/completions", {"prompt": p1[:64], "max_tokens": 1})
            self.assertEqual(48, r3["usage"]["prompt_tokens_details"]["cached_tokens"])
            self.assertTrue(sub.none_pending(), "a request that stores nothing publishes nothing")
        finally:
            sub.close()

    def test_cache_salt_changes_hashes_and_is_sent_as_extra_keys(self):
        sub = Sub(self.ctx, self.a.info["zmq_pub"])
        try:
            p = self.tokens(40)
            self.a.post("/v1/completions", {"prompt": p, "max_tokens": 1, "cache_salt": "tenant-a"})
            _, h, r = self.a.post("/v1/completions", {"prompt": p, "max_tokens": 1})
            self.assertEqual("0", h["x-kvidx-mock-cached-tokens"], "another salt shares nothing")
            _, h, r = self.a.post("/v1/completions", {"prompt": p, "max_tokens": 1, "cache_salt": "tenant-a"})
            self.assertEqual("32", h["x-kvidx-mock-cached-tokens"])
            _, _, salted = sub.recv()
            _, _, plain = sub.recv()
            self.assertEqual([["tenant-a"], None], salted[1][0]["extra_keys"])
            self.assertEqual(vllm_sha256_chain(p), plain[1][0]["block_hashes"])
            self.assertNotEqual(plain[1][0]["block_hashes"][0], salted[1][0]["block_hashes"][0])
        finally:
            sub.close()

    def test_eviction_publishes_block_removed_leaves_first(self):
        sub = Sub(self.ctx, self.b.info["zmq_pub"])
        try:
            self.reset_b(sub)
            p1, p2 = self.tokens(49), self.tokens(49)
            self.b.post("/v1/completions", {"prompt": p1, "max_tokens": 1})
            _, _, b1 = sub.recv()
            self.assertEqual(1, len(b1[1]))
            ev = b1[1][0]
            # Legacy array: [tag, block_hashes, parent, token_ids, block_size, lora_id, medium, lora_name,
            # extra_keys, group_idx]
            self.assertEqual(["BlockStored", None, p1[:48], 16, None, "GPU", None, [None] * 3, 0],
                             [ev[0]] + ev[2:])
            h1 = ev[1]
            self.assertEqual(3, len(h1))
            self.b.post("/v1/completions", {"prompt": p2, "max_tokens": 1})
            _, _, b2 = sub.recv()
            self.assertEqual(["BlockRemoved", [h1[2], h1[1]], "GPU"], b2[1][0])
            self.assertEqual("BlockStored", b2[1][1][0])
            self.assertEqual(p2[:48], b2[1][1][3])
            h2 = b2[1][1][1]
            _, h, _ = self.b.post("/v1/completions", {"prompt": p1, "max_tokens": 1})
            self.assertEqual("16", h["x-kvidx-mock-cached-tokens"])
            _, _, b3 = sub.recv()
            self.assertEqual(["BlockRemoved", [h2[2], h2[1]], "GPU"], b3[1][0])
            self.assertEqual(["BlockStored", h1[1:], h1[0], p1[16:48]], b3[1][1][:4])
            m, _ = self.b.metrics()
            self.assertEqual(4.0, m["kvidx_mock_cached_blocks"][1])
            self.assertEqual(0.0, m["vllm:kv_cache_usage_perc"][1])
        finally:
            sub.close()

    def test_sha256_cbor_hashes_match_a_real_vllm_capture(self):
        if not os.path.exists(CAPTURE):
            self.skipTest("no capture at " + CAPTURE)
        with open(CAPTURE) as f:
            cap = json.load(f)
        sub = Sub(self.ctx, self.b.info["zmq_pub"])
        try:
            self.reset_b(sub)
            self.b.post("/v1/completions", {"prompt": cap["token_ids"][:65], "max_tokens": 1})
            _, _, batch = sub.recv()
            self.assertEqual(cap["block_hashes"][:4], batch[1][0][1])
        finally:
            sub.close()

    # ------------------------------------------------------------------ replay

    def test_replay_returns_buffered_batches_new_framing(self):
        self.a.post("/v1/completions", {"prompt": self.tokens(20), "max_tokens": 1})
        frames = replay(self.ctx, self.a.info["zmq_replay"], 0)
        self.assertEqual([b"", b"", END_SEQ, b""], frames[-1])
        seqs = []
        for f in frames[:-1]:
            self.assertEqual(4, len(f))
            self.assertEqual((b"", b"kv@podA@" + MODEL.encode()), (f[0], f[1]))
            seqs.append(struct.unpack(">Q", f[2])[0])
            batch = msgpack.unpackb(f[3], raw=False)
            self.assertEqual(3, len(batch))
        self.assertEqual(list(range(len(seqs))), seqs)
        self.assertGreater(len(seqs), 0)
        last = replay(self.ctx, self.a.info["zmq_replay"], seqs[-1])
        self.assertEqual(2, len(last))
        self.assertEqual(seqs[-1], struct.unpack(">Q", last[0][2])[0])
        self.assertEqual(1, len(replay(self.ctx, self.a.info["zmq_replay"], seqs[-1] + 1)))

    def test_replay_old_framing(self):
        self.reset_b()
        frames = replay(self.ctx, self.b.info["zmq_replay"], 0)
        self.assertEqual([b"", END_SEQ, b""], frames[-1])
        self.assertTrue(all(len(f) == 3 for f in frames))
        self.assertIn(["AllBlocksCleared"], msgpack.unpackb(frames[-2][2], raw=False)[1])

    # ------------------------------------------------------------------ HTTP API

    def test_streaming_completions_and_chat(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.a.port, timeout=10)
        try:
            status, h, raw = self.a.request("POST", "/v1/completions", {
                "prompt": self.tokens(30), "max_tokens": 5, "stream": True, "stream_options": {"include_usage": True}},
                conn=conn)
            self.assertEqual(200, status)
            self.assertEqual("chunked", h["transfer-encoding"])
            self.assertTrue(h["content-type"].startswith("text/event-stream"))
            data = sse_events(raw)
            self.assertEqual("[DONE]", data[-1])
            chunks = [json.loads(d) for d in data[:-1]]
            self.assertEqual([" tok%d" % i for i in range(5)], [c["choices"][0]["text"] for c in chunks[:5]])
            self.assertEqual([None] * 4 + ["length"], [c["choices"][0]["finish_reason"] for c in chunks[:5]])
            self.assertEqual([], chunks[5]["choices"])
            self.assertEqual({"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35,
                              "prompt_tokens_details": {"cached_tokens": 0}}, chunks[5]["usage"])
            self.assertEqual(6, len(chunks))
            # the same keep-alive connection, a chat stream without usage
            status, _, raw = self.a.request("POST", "/v1/chat/completions", {
                "messages": [{"role": "user", "content": "hello there"}], "max_tokens": 3, "stream": True}, conn=conn)
            self.assertEqual(200, status)
            data = sse_events(raw)
            chunks = [json.loads(d) for d in data[:-1]]
            self.assertEqual({"role": "assistant", "content": ""}, chunks[0]["choices"][0]["delta"])
            self.assertEqual(["chat.completion.chunk"] * 4, [c["object"] for c in chunks])
            self.assertEqual(" tok2", chunks[3]["choices"][0]["delta"]["content"])
            self.assertEqual("length", chunks[3]["choices"][0]["finish_reason"])
            self.assertNotIn("usage", chunks[-1])
        finally:
            conn.close()

    def test_text_prompts_and_chat_share_the_toy_tokenizer(self):
        text = " ".join("w%d" % self.rng.randrange(10 ** 6) for _ in range(40))
        _, _, r1 = self.a.post("/v1/completions", {"prompt": text, "max_tokens": 1})
        self.assertEqual(40, r1["usage"]["prompt_tokens"])
        _, h, r2 = self.a.post("/v1/completions", {"prompt": [text], "max_tokens": 1})
        self.assertEqual("32", h["x-kvidx-mock-cached-tokens"])
        ids = engine_module.tokenize(text)
        _, h, r3 = self.a.post("/v1/chat/completions", {"prompt_token_ids": ids + [5], "max_tokens": 1})
        self.assertEqual("32", h["x-kvidx-mock-cached-tokens"])
        self.assertEqual("chat.completion", r3["object"])
        self.assertEqual({"role": "assistant", "content": " tok0", "reasoning_content": None, "tool_calls": []},
                         r3["choices"][0]["message"])
        msgs = [{"role": "system", "content": text}, {"role": "user", "content": [{"type": "text", "text": "hi"}]}]
        _, _, r4 = self.a.post("/v1/chat/completions", {"messages": msgs, "max_completion_tokens": 2})
        n = len(engine_module.tokenize(engine_module.render_chat(msgs)))
        self.assertEqual(n, r4["usage"]["prompt_tokens"])
        self.assertEqual(2, r4["usage"]["completion_tokens"])
        _, h, _ = self.a.post("/v1/chat/completions", {"messages": msgs, "max_tokens": 1})
        self.assertEqual(str((n - 1) // 16 * 16), h["x-kvidx-mock-cached-tokens"])

    def test_prefill_decode_round_trip(self):
        prompt = self.tokens(70)
        client = {"model": MODEL, "prompt": prompt, "max_tokens": 4, "stream": True,
                  "stream_options": {"include_usage": True}}
        # PrefillDecodeAdapter.vllm().prefillBody
        prefill = dict(client, max_tokens=1, stream=False)
        del prefill["stream_options"]
        prefill["kv_transfer_params"] = {"do_remote_decode": True, "do_remote_prefill": False,
                                         "remote_engine_id": None, "remote_block_ids": None, "remote_host": None,
                                         "remote_port": None}
        status, h, r = self.a.post("/v1/completions", prefill)
        self.assertEqual(200, status)
        self.assertEqual(1, r["usage"]["completion_tokens"])
        self.assertEqual(" tok0", r["choices"][0]["text"])
        kv = r["kv_transfer_params"]
        self.assertEqual((True, False, "podA", "127.0.0.1", 5600),
                         (kv["do_remote_prefill"], kv["do_remote_decode"], kv["remote_engine_id"], kv["remote_host"],
                          kv["remote_port"]))
        self.assertEqual(4, len(kv["remote_block_ids"]))
        self.assertTrue(all(isinstance(b, int) for b in kv["remote_block_ids"]))
        # PrefillDecodeAdapter.vllm().decodeBody: the client's body plus the prefill pod's kv_transfer_params
        decode = dict(client, kv_transfer_params=kv)
        self.reset_b()
        status, h, raw = self.b.request("POST", "/v1/completions", decode)
        self.assertEqual(200, status)
        self.assertEqual(("0", "70", "podB"), (h["x-kvidx-mock-cached-tokens"],
                                               h["x-kvidx-mock-transferred-tokens"], h["x-kvidx-mock-pod"]))
        chunks = [json.loads(d) for d in sse_events(raw)[:-1]]
        self.assertEqual([" tok0", " tok1", " tok2", " tok3"], [c["choices"][0]["text"] for c in chunks[:4]])
        self.assertEqual({"prompt_tokens": 70, "completion_tokens": 4, "total_tokens": 74,
                          "prompt_tokens_details": {"cached_tokens": 70}}, chunks[-1]["usage"])
        # decoding on the prefill pod itself: the local prefix cache serves what it holds
        _, h, r = self.a.post("/v1/completions", dict(decode, stream=False))
        self.assertEqual(("64", "6"), (h["x-kvidx-mock-cached-tokens"], h["x-kvidx-mock-transferred-tokens"]))
        self.assertIsNone(r["kv_transfer_params"])

    def test_errors_headers_models_health(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.a.port, timeout=10)
        try:
            status, h, body = self.a.request("POST", "/v1/completions", b"{not json", conn=conn)
            self.assertEqual(400, status)
            err = json.loads(body)["error"]
            self.assertEqual((400, "BadRequestError"), (err["code"], err["type"]))
            self.assertIn("malformed JSON", err["message"])
            self.assertEqual(400, self.a.request("POST", "/v1/completions", b"[1]", conn=conn)[0])
            self.assertEqual(400, self.a.request("POST", "/v1/completions", {"prompt": [1.5]}, conn=conn)[0])
            self.assertEqual(400, self.a.request("POST", "/v1/completions", {"prompt": ""}, conn=conn)[0])
            self.assertEqual(400, self.a.request("POST", "/v1/completions", {"prompt": "a", "max_tokens": 0},
                                                 conn=conn)[0])
            self.assertEqual(400, self.a.request("POST", "/v1/completions", {"prompt": ["a", "b"]}, conn=conn)[0])
            self.assertEqual(400, self.a.request("POST", "/v1/chat/completions", {"messages": []}, conn=conn)[0])
            status, _, body = self.a.request("POST", "/v1/completions", {"model": "other", "prompt": "a"}, conn=conn)
            self.assertEqual((404, "NotFoundError"), (status, json.loads(body)["error"]["type"]))
            self.assertEqual(404, self.a.request("GET", "/nope", conn=conn)[0])
            self.assertEqual(404, self.a.request("POST", "/v1/nope", {}, conn=conn)[0])
            self.assertEqual(405, self.a.request("GET", "/v1/completions", conn=conn)[0])
            status, h, body = self.a.request("POST", "/v1/completions", {"prompt": "a b c", "max_tokens": 1},
                                             headers={"X-Request-Id": "req-42"}, conn=conn)
            self.assertEqual((200, "req-42", "podA"), (status, h["x-request-id"], h["x-kvidx-mock-pod"]))
            self.assertEqual("cmpl-req-42", json.loads(body)["id"])
            self.assertEqual(200, self.a.request("GET", "/health", conn=conn)[0])
            status, _, body = self.a.request("GET", "/v1/models", conn=conn)
            self.assertEqual((200, MODEL), (status, json.loads(body)["data"][0]["id"]))
        finally:
            conn.close()
        # a request body sent with chunked transfer encoding
        conn = http.client.HTTPConnection("127.0.0.1", self.a.port, timeout=10)
        try:
            conn.request("POST", "/v1/completions", body=iter([b'{"prompt": [1, 2', b', 3], "max_tokens": 1}']),
                         headers={"Content-Type": "application/json"}, encode_chunked=True)
            r = conn.getresponse()
            self.assertEqual(3, json.loads(r.read())["usage"]["prompt_tokens"])
        finally:
            conn.close()

    def test_metrics_format(self):
        m, raw = self.a.metrics()
        for name in ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                     "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total"):
            self.assertIn('model_name="%s"' % MODEL, m[name][0])
        self.assertTrue(0.0 <= m["vllm:kv_cache_usage_perc"][1] <= 1.0)
        self.assertIn('block_size="16"', m["vllm:cache_config_info"][0])
        promtool = "/usr/bin/promtool"
        if os.path.exists(promtool):
            r = subprocess.run([promtool, "check", "metrics"], input=raw, capture_output=True, timeout=30)
            problems = [line for line in (r.stdout + r.stderr).decode().splitlines() if line.strip()]
            # vLLM's own metric names contain ':', which promtool's linter flags (exit code 3): only that is allowed.
            self.assertIn(r.returncode, (0, 3), problems)
            self.assertEqual([], [p for p in problems if "should not contain ':'" not in p])

    def test_concurrent_requests_and_client_disconnect(self):
        results = []

        def one():
            results.append(self.a.request("POST", "/v1/completions", {"prompt": self.tokens(40), "max_tokens": 40,
                                                                      "stream": True})[0])

        threads = [threading.Thread(target=one) for _ in range(3)]
        for t in threads:
            t.start()
        time.sleep(0.15)
        m, _ = self.a.metrics()
        self.assertEqual(3.0, m["vllm:num_requests_running"][1])
        self.assertGreater(m["vllm:kv_cache_usage_perc"][1], 0.0)
        for t in threads:
            t.join(10)
        self.assertEqual([200] * 3, results)
        # a client that goes away mid-stream
        s = socket.create_connection(("127.0.0.1", self.a.port), timeout=5)
        body = json.dumps({"prompt": self.tokens(10), "max_tokens": 500, "stream": True}).encode()
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.assertIn(b"tok0", s.recv(65536) + s.recv(65536))
        s.close()
        deadline = time.time() + 3
        while self.a.metrics()[0]["vllm:num_requests_running"][1] != 0.0:
            self.assertLess(time.time(), deadline, "the abandoned stream is still running")
            time.sleep(0.05)
        self.assertIn("client disconnected", self.a.output())
        self.assertEqual(200, self.a.request("GET", "/health")[0])


if __name__ == "__main__":
    unittest.main()
