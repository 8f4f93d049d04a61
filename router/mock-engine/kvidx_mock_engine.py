#!/usr/bin/python3
"""kvidx mock LLM engine: a stand-in for one vLLM pod, for kvidx's router tests, demos and benchmarks.

What it simulates
  * vLLM's OpenAI-compatible HTTP server: POST /v1/completions, POST /v1/chat/completions (JSON or SSE streams),
    GET /v1/models, GET /health, GET /metrics (vLLM metric names), POST /reset_prefix_cache.
  * vLLM's automatic prefix cache: full blocks of --block-size tokens, chained block hashes computed exactly as
    vLLM does (default `sha256`: SHA-256 of pickle protocol 5 of (parent digest, block tokens, extra keys), NONE_HASH
    = H(--hash-seed); also sha256_cbor, xxhash, xxhash_cbor), --num-blocks of capacity, LRU eviction of blocks no
    running request holds (leaves first, like vLLM's free-block queue), and the cache salt (`cache_salt`).
  * vLLM's KV events: one KVEventBatch per request (BlockRemoved then BlockStored) on a ZeroMQ PUB socket, the
    3-frame [topic, seq, msgpack] messages and the ROUTER replay socket of vLLM's ZmqEventPublisher.
  * vLLM's disaggregated prefill handshake (NIXL connector's kv_transfer_params).
  * Timing: prefill sleeps uncached_tokens x --prefill-us-per-token, decode sleeps --decode-ms-per-token per token.

What it does not do
  * There is no model: the generated text is " tok0 tok1 ...", always max_tokens tokens (finish_reason "length").
  * Text is tokenized by a toy tokenizer: each piece matching the regex \\s*\\S+ (a word with the white space
    before it; trailing white space is dropped) is one token, id = xxh32(UTF-8 piece) mod 151936. Deterministic
    across processes and machines. Chat messages are rendered as "<|ROLE|>\\nCONTENT\\n" per message followed by
    "<|assistant|>\\n", then tokenized the same way (content may be a string or a list of {"type": "text"} parts).
  * Only prompt blocks are cached (not generated tokens); partial blocks and decode tokens take no capacity; no LoRA;
    one prompt per request; `n`, `stop`, `logprobs`, sampling parameters are ignored.

CLI
  python3 kvidx_mock_engine.py --port P --zmq-pub tcp://127.0.0.1:Q [--zmq-replay tcp://127.0.0.1:R]
      --model NAME [--block-size 16] [--num-blocks N] [--prefill-us-per-token T] [--decode-ms-per-token D]
      [--pod-id ID] [--topic kv@POD@MODEL] [--max-tokens-default 16] [--ready-file PATH] [--verbose] ...
  (python3 kvidx_mock_engine.py --help lists every option.) Port 0 and `tcp://127.0.0.1:*` pick free ports; the
  ready file (JSON: pid, port, http, zmq_pub, zmq_replay, pod_id) tells which. See README.md.
"""
import argparse
import hashlib
import http.server
import json
import os
import pickle
import re
import signal
import struct
import sys
import threading
import time
import traceback
import uuid
from collections import OrderedDict, deque

import msgpack
import xxhash
import zmq

VOCAB = 151936
END_SEQ = b"\xff" * 8
WORD = re.compile(r"\s*\S+")


# ----------------------------------------------------------------------------------------------- tokens and hashes

def tokenize(text):
    """The toy tokenizer: one token per word (with its leading white space), id = xxh32 of its UTF-8 mod VOCAB."""
    return [xxhash.xxh32_intdigest(p.encode("utf-8")) % VOCAB for p in WORD.findall(text)]


def render_chat(messages):
    """The toy chat template: "<|role|>\\ncontent\\n" per message, then the generation prompt "<|assistant|>\\n"."""
    out = []
    for m in messages:
        if not isinstance(m, dict):
            raise ValueError("each message must be an object")
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        out.append("<|%s|>\n%s\n" % (m.get("role", "user"), content or ""))
    return "".join(out) + "<|assistant|>\n"


class BlockHasher:
    """vLLM's prefix-cache block hash (vllm/v1/core/kv_cache_utils.py hash_block_tokens), bit for bit."""

    def __init__(self, algo, seed):
        if algo.endswith("_cbor"):
            import cbor2
            ser = lambda x: cbor2.dumps(x, canonical=True)  # noqa: E731
        else:
            ser = lambda x: pickle.dumps(x, protocol=5)  # noqa: E731
        if algo.startswith("sha256"):
            self.h = lambda x: hashlib.sha256(ser(x)).digest()
        else:
            self.h = lambda x: xxhash.xxh3_128_digest(ser(x))
        self.none_hash = self.h(seed)

    def chain(self, tokens, block_size, salt=None):
        """[(event value: last 8 bytes of the digest as unsigned int, extra keys or None)] per full block."""
        out, parent = [], self.none_hash
        for b in range(len(tokens) // block_size):
            extra = (salt,) if (b == 0 and salt) else None
            parent = self.h((parent, tuple(tokens[b * block_size:(b + 1) * block_size]), extra))
            out.append((int.from_bytes(parent[-8:], "big"), extra))
        return out


# ------------------------------------------------------------------------------------------------- KV events

class EventPublisher:
    """vLLM's ZmqEventPublisher: PUB [topic, seq (8 bytes big-endian), msgpack batch], ROUTER replay socket."""

    def __init__(self, args):
        self.topic = args.topic.encode()
        self.shape = args.event_shape
        self.framing = args.replay_framing
        self.dp_rank = args.dp_rank
        self.ctx = zmq.Context()
        self.pub = self.ctx.socket(zmq.PUB)
        self.pub.setsockopt(zmq.SNDHWM, 100000)
        self.pub.setsockopt(zmq.LINGER, 0)
        if args.zmq_pub_connect:
            self.pub.connect(args.zmq_pub)
            self.pub_endpoint = args.zmq_pub
        else:
            self.pub.bind(args.zmq_pub)
            self.pub_endpoint = self.pub.getsockopt(zmq.LAST_ENDPOINT).decode()
        self.router = None
        self.replay_endpoint = None
        if args.zmq_replay:
            self.router = self.ctx.socket(zmq.ROUTER)
            self.router.setsockopt(zmq.LINGER, 0)
            self.router.bind(args.zmq_replay)
            self.replay_endpoint = self.router.getsockopt(zmq.LAST_ENDPOINT).decode()
        self.lock = threading.Lock()  # seq, buffer and the PUB socket (ZeroMQ sockets are not thread safe)
        self.seq = 0
        self.buffer = deque(maxlen=args.replay_buffer)
        self.running = True
        self.thread = None
        if self.router is not None:
            self.thread = threading.Thread(target=self._serve_replay, name="replay", daemon=True)
            self.thread.start()

    def event(self, kind, **fields):
        """An event in the current map shape or the legacy array shape (as daemon/src/test/python/vllm_publisher.py)."""
        if self.shape == "map":
            ev = {"type": kind}
            ev.update({k: v for k, v in fields.items() if v is not None})
            return ev
        order = {
            "BlockStored": ["block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium",
                            "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind",
                            "kv_cache_spec_sliding_window", "locality"],
            "BlockRemoved": ["block_hashes", "medium", "group_idx", "locality"],
            "AllBlocksCleared": [],
        }[kind]
        values = [fields.get(k) for k in order]
        while values and values[-1] is None and len(values) > (4 if kind == "BlockStored" else 1):
            values.pop()
        return [kind] + values

    def publish(self, events):
        """Sends one KVEventBatch [ts, events, dp_rank]; returns its seq (None once closed)."""
        payload = msgpack.packb([time.time(), events, self.dp_rank], use_bin_type=True)
        with self.lock:
            if not self.running:
                return None
            seq = self.seq
            self.seq += 1
            self.buffer.append((seq, payload))
            self.pub.send_multipart([self.topic, struct.pack(">Q", seq), payload])
            return seq

    def _serve_replay(self):
        poller = zmq.Poller()
        poller.register(self.router, zmq.POLLIN)
        while self.running:
            if not poller.poll(100):
                continue
            frames = self.router.recv_multipart()
            if len(frames) != 3 or len(frames[2]) != 8:
                continue
            identity, start = frames[0], struct.unpack(">Q", frames[2])[0]
            with self.lock:
                batches = [b for b in self.buffer if b[0] >= start]
            for seq, payload in batches:
                seq8 = struct.pack(">Q", seq)
                if self.framing == "new":
                    self.router.send_multipart([identity, b"", self.topic, seq8, payload])
                else:
                    self.router.send_multipart([identity, b"", seq8, payload])
            if self.framing == "new":
                self.router.send_multipart([identity, b"", b"", END_SEQ, b""])
            else:
                self.router.send_multipart([identity, b"", END_SEQ, b""])

    def close(self):
        with self.lock:
            self.running = False
        if self.thread is not None:
            self.thread.join(2)
        self.pub.close()
        if self.router is not None:
            self.router.close()
        self.ctx.term()


# ------------------------------------------------------------------------------------------------- prefix cache

class Block:
    __slots__ = ("block_id", "ref")

    def __init__(self, block_id):
        self.block_id = block_id
        self.ref = 1


class PrefixCache:
    """Cached full blocks keyed by their 64-bit hash; an LRU queue of the blocks no running request holds."""

    def __init__(self, args, publisher):
        self.bs = args.block_size
        self.capacity = args.num_blocks
        self.hasher = BlockHasher(args.hash_algo, args.hash_seed)
        self.pub = publisher
        self.lock = threading.Lock()
        self.blocks = {}                                  # hash -> Block
        self.free_lru = OrderedDict()                     # hash -> None, first = least recently used
        self.free_ids = list(range(args.num_blocks - 1, -1, -1))
        self.queries = 0
        self.hits = 0

    def begin(self, tokens, salt):
        """Looks the prompt up and stores its new full blocks, publishing the events.

        Returns (hit tokens, hashes held by the request, their block ids). At most (len - 1) // block_size blocks
        count as hits: vLLM always computes the prompt's last token."""
        chain = self.hasher.chain(tokens, self.bs, salt)
        max_hit = (len(tokens) - 1) // self.bs
        removed, runs, held = [], [], []
        with self.lock:
            hit = 0
            while hit < min(max_hit, len(chain)) and chain[hit][0] in self.blocks:
                hit += 1
            self.queries += len(tokens)
            self.hits += hit * self.bs
            run = None
            for i, (h, extra) in enumerate(chain):
                blk = self.blocks.get(h)
                if blk is not None:                       # a hit, or a block some other prompt already cached
                    blk.ref += 1
                    self.free_lru.pop(h, None)
                    held.append(h)
                    run = None
                    continue
                if self.free_ids:
                    block_id = self.free_ids.pop()
                elif self.free_lru:
                    victim, _ = self.free_lru.popitem(last=False)
                    block_id = self.blocks.pop(victim).block_id
                    removed.append(victim)
                else:
                    break                                 # every block is held by running requests: cache no more
                self.blocks[h] = Block(block_id)
                held.append(h)
                if run is None:
                    run = {"parent": chain[i - 1][0] if i > 0 else None, "hashes": [], "extra": [], "first": i}
                    runs.append(run)
                run["hashes"].append(h)
                run["extra"].append(list(extra) if extra is not None else None)
            block_ids = [self.blocks[h].block_id for h in held]
            events = []
            if removed:
                events.append(self.pub.event("BlockRemoved", block_hashes=removed, medium="GPU"))
            for r in runs:
                first, n = r["first"], len(r["hashes"])
                events.append(self.pub.event(
                    "BlockStored", block_hashes=r["hashes"], parent_block_hash=r["parent"],
                    token_ids=list(tokens[first * self.bs:(first + n) * self.bs]), block_size=self.bs,
                    medium="GPU", lora_name=None, extra_keys=r["extra"], group_idx=0))
            if events:  # published under the cache lock so that event order is cache order
                self.pub.publish(events)
        return hit * self.bs, held, block_ids

    def end(self, held):
        """Releases a request's blocks; the last block goes to the LRU queue first (evicted first)."""
        with self.lock:
            for h in reversed(held):
                blk = self.blocks.get(h)
                if blk is None:
                    continue
                blk.ref -= 1
                if blk.ref == 0:
                    self.free_lru[h] = None

    def reset(self):
        """vLLM's reset_prefix_cache: refused (False) while a request holds blocks."""
        with self.lock:
            if len(self.free_lru) != len(self.blocks):
                return False
            self.blocks.clear()
            self.free_lru.clear()
            self.free_ids = list(range(self.capacity - 1, -1, -1))
            self.pub.publish([self.pub.event("AllBlocksCleared")])
            return True

    def stats(self):
        with self.lock:
            used = len(self.blocks) - len(self.free_lru)
            return used / self.capacity if self.capacity else 0.0, self.queries, self.hits, len(self.blocks)


# ------------------------------------------------------------------------------------------------- HTTP

class ApiError(Exception):
    def __init__(self, status, message, kind="BadRequestError"):
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind


class Engine:
    """Request accounting shared by the handler threads."""

    def __init__(self, args, publisher):
        self.args = args
        self.cache = PrefixCache(args, publisher)
        self.slots = threading.BoundedSemaphore(args.max_num_seqs)
        self.lock = threading.Lock()
        self.running = 0
        self.waiting = 0
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.requests = 0


def label(v):
    return str(v).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kvidx-mock-engine/1"
    engine = None  # set by main()

    # -- plumbing

    def log_message(self, fmt, *a):  # the http.server access log is replaced by one line per request (--verbose)
        pass

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def common_headers(self):
        rid = self.headers.get("x-request-id")
        if rid:
            self.send_header("x-request-id", rid)
        self.send_header("x-kvidx-mock-pod", self.engine.args.pod_id)

    def send_json(self, status, obj, extra=()):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.common_headers()
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def send_text(self, status, text, ctype="text/plain; charset=utf-8"):
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.common_headers()
        self.end_headers()
        self.wfile.write(data)

    def send_error_json(self, e):
        self.send_json(e.status, {"error": {"message": e.message, "type": e.kind, "param": None, "code": e.status}})

    def guard(self, fn):
        t0 = time.time()
        self.note = ""
        self.started = False
        try:
            fn()
        except ApiError as e:
            self.note = "error=%r" % e.message
            self.send_error_json(e)
        except (BrokenPipeError, ConnectionResetError):  # the client went away: end quietly
            self.note = "client disconnected"
            self.close_connection = True
        except Exception as e:  # a bug or a broken request line: a 500 if nothing was sent yet, then close
            self.note = "internal error %r" % e
            traceback.print_exc()
            self.close_connection = True
            if not self.started:
                self.send_error_json(ApiError(500, "internal error: %r" % e, "InternalServerError"))
        if self.engine.args.verbose:
            sys.stderr.write("%s %s %s %s %.1fms %s\n" % (self.engine.args.pod_id, self.command, self.path,
                                                          getattr(self, "status", "-"), (time.time() - t0) * 1e3,
                                                          self.note))

    def send_response(self, code, message=None):
        self.status, self.started = code, True
        super().send_response(code, message)

    # -- routes

    def do_GET(self):
        self.guard(self.route_get)

    def do_POST(self):
        self.guard(self.route_post)

    def route_get(self):
        path = self.path.split("?")[0]
        if path == "/health":
            self.send_text(200, "")
        elif path == "/v1/models":
            a = self.engine.args
            self.send_json(200, {"object": "list", "data": [{
                "id": a.model, "object": "model", "created": int(time.time()), "owned_by": "vllm", "root": a.model,
                "parent": None, "max_model_len": a.max_model_len, "permission": []}]})
        elif path == "/metrics":
            self.send_text(200, self.metrics(), "text/plain; version=0.0.4; charset=utf-8")
        elif path in ("/v1/completions", "/v1/chat/completions", "/reset_prefix_cache"):
            self.send_json(405, {"detail": "Method Not Allowed"})
        else:
            self.send_json(404, {"detail": "Not Found"})

    def route_post(self):
        path = self.path.split("?")[0]
        try:
            body = self.read_body()
        except ValueError:
            self.close_connection = True
            raise ApiError(400, "bad Content-Length or chunked body")
        if path == "/reset_prefix_cache":
            if not self.engine.cache.reset():
                raise ApiError(400, "cannot reset the prefix cache while requests are running")
            self.send_text(200, "")
        elif path in ("/v1/completions", "/v1/chat/completions"):
            try:
                req = json.loads(body or b"null")
            except ValueError as e:
                raise ApiError(400, "malformed JSON body: %s" % e)
            if not isinstance(req, dict):
                raise ApiError(400, "the body must be a JSON object")
            self.generate(req, chat=path.endswith("chat/completions"))
        elif path in ("/health", "/v1/models", "/metrics"):
            self.send_json(405, {"detail": "Method Not Allowed"})
        else:
            self.send_json(404, {"detail": "Not Found"})

    def metrics(self):
        e, a = self.engine, self.engine.args
        usage, queries, hits, cached_blocks = e.cache.stats()
        with e.lock:
            running, waiting, prompt, gen, done = e.running, e.waiting, e.prompt_tokens, e.generation_tokens, e.requests
        lbl = '{engine="0",model_name="%s"}' % label(a.model)
        rows = [
            ("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", running),
            ("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", waiting),
            ("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", usage),
            ("vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried "
                                                           "tokens.", queries),
            ("vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.",
             hits),
            ("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", prompt),
            ("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.", gen),
            ("vllm:request_success_total", "counter", "Count of successfully processed requests.", done),
            ("kvidx_mock_cached_blocks", "gauge", "Full blocks in the mock's prefix cache (held or not).",
             cached_blocks),
        ]
        out = []
        for name, kind, help_text, value in rows:
            out += ["# HELP %s %s" % (name, help_text), "# TYPE %s %s" % (name, kind),
                    "%s%s %s" % (name, lbl, float(value))]
        out += ["# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig",
                "# TYPE vllm:cache_config_info gauge",
                'vllm:cache_config_info{block_size="%d",enable_prefix_caching="True",engine="0",num_gpu_blocks="%d",'
                'prefix_caching_hash_algo="%s"} 1.0' % (a.block_size, a.num_blocks, label(a.hash_algo))]
        return "\n".join(out) + "\n"

    # -- generation

    def prompt_of(self, req, chat):
        if chat:
            ids = req.get("prompt_token_ids")
            if ids is not None:
                prompt = ids
            else:
                msgs = req.get("messages")
                if not isinstance(msgs, list) or not msgs:
                    raise ApiError(400, "messages must be a non-empty list")
                try:
                    return tokenize(render_chat(msgs))
                except (ValueError, AttributeError, TypeError) as e:
                    raise ApiError(400, "bad messages: %s" % e)
        else:
            prompt = req.get("prompt")
            if isinstance(prompt, list) and prompt and isinstance(prompt[0], (str, list)):
                if len(prompt) != 1:
                    raise ApiError(400, "the mock engine serves one prompt per request")
                prompt = prompt[0]
        if isinstance(prompt, str):
            return tokenize(prompt)
        if isinstance(prompt, list) and all(isinstance(t, int) and not isinstance(t, bool) and 0 <= t < 2 ** 31
                                            for t in prompt):
            return prompt
        raise ApiError(400, "prompt must be a string, a list of token ids, or a list of one of those")

    def generate(self, req, chat):
        e, a = self.engine, self.engine.args
        model = req.get("model")
        if model is not None and model != a.model:
            raise ApiError(404, "The model `%s` does not exist." % model, "NotFoundError")
        tokens = self.prompt_of(req, chat)
        if not tokens:
            raise ApiError(400, "the prompt is empty")
        max_tokens = req.get("max_completion_tokens") if chat else None
        if max_tokens is None:
            max_tokens = req.get("max_tokens")
        if max_tokens is None:
            max_tokens = a.max_tokens_default
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise ApiError(400, "max_tokens must be a positive integer")
        kv = req.get("kv_transfer_params")
        kv = kv if isinstance(kv, dict) else {}
        prefill_role, decode_role = bool(kv.get("do_remote_decode")), bool(kv.get("do_remote_prefill"))
        if prefill_role:
            max_tokens = 1
        if len(tokens) + max_tokens > a.max_model_len:
            raise ApiError(400, "This model's maximum context length is %d tokens. However, you requested %d tokens "
                                "(%d in the messages, %d in the completion)." % (
                                    a.max_model_len, len(tokens) + max_tokens, len(tokens), max_tokens))
        salt = req.get("cache_salt")
        if salt is not None and not isinstance(salt, str):
            raise ApiError(400, "cache_salt must be a string")
        stream = bool(req.get("stream"))
        opts = req.get("stream_options") if isinstance(req.get("stream_options"), dict) else {}
        include_usage = bool(opts.get("include_usage"))
        rid = self.headers.get("x-request-id") or uuid.uuid4().hex
        cid = ("chatcmpl-" if chat else "cmpl-") + rid
        created = int(time.time())

        with e.lock:
            e.waiting += 1
        e.slots.acquire()
        with e.lock:
            e.waiting -= 1
            e.running += 1
        held = []
        try:
            hit, held, block_ids = e.cache.begin(tokens, salt)
            transferred = len(tokens) - hit if decode_role else 0
            computed = len(tokens) - hit - transferred
            cached = hit + transferred
            usage = {"prompt_tokens": len(tokens), "total_tokens": len(tokens) + max_tokens,
                     "completion_tokens": max_tokens, "prompt_tokens_details": {"cached_tokens": cached}}
            extra = [("x-kvidx-mock-cached-tokens", str(hit)), ("x-kvidx-mock-transferred-tokens", str(transferred))]
            self.note = "prompt=%d hit=%d transferred=%d gen=%d%s" % (
                len(tokens), hit, transferred, max_tokens, " prefill-role" if prefill_role else "")
            kv_out = None
            if prefill_role:
                kv_out = {"do_remote_prefill": True, "do_remote_decode": False, "remote_block_ids": block_ids,
                          "remote_engine_id": a.engine_id, "remote_request_id": rid, "remote_host": a.kv_host,
                          "remote_port": a.kv_port, "tp_size": 1}
            if stream:
                self.stream(chat, cid, created, max_tokens, computed, usage if include_usage else None, extra)
            else:
                self.sleep_prefill(computed)
                if max_tokens > 1:
                    time.sleep((max_tokens - 1) * a.decode_ms_per_token / 1e3)
                self.send_json(200, self.completion(chat, cid, created, max_tokens, usage, kv_out), extra)
            with e.lock:
                e.prompt_tokens += len(tokens)
                e.generation_tokens += max_tokens
                e.requests += 1
        finally:
            e.cache.end(held)
            with e.lock:
                e.running -= 1
            e.slots.release()

    def sleep_prefill(self, computed):
        if computed > 0 and self.engine.args.prefill_us_per_token > 0:
            time.sleep(computed * self.engine.args.prefill_us_per_token / 1e6)

    def completion(self, chat, cid, created, n, usage, kv_out):
        text = "".join(" tok%d" % i for i in range(n))
        if chat:
            choice = {"index": 0, "message": {"role": "assistant", "content": text, "reasoning_content": None,
                                              "tool_calls": []},
                      "logprobs": None, "finish_reason": "length", "stop_reason": None}
            obj = "chat.completion"
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": "length", "stop_reason": None,
                      "prompt_logprobs": None}
            obj = "text_completion"
        return {"id": cid, "object": obj, "created": created, "model": self.engine.args.model, "choices": [choice],
                "usage": usage, "prompt_logprobs": None, "kv_transfer_params": kv_out}

    def stream(self, chat, cid, created, n, computed, usage, extra):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.common_headers()
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        model = self.engine.args.model
        obj = "chat.completion.chunk" if chat else "text_completion"

        def chunk(choices, **more):
            d = {"id": cid, "object": obj, "created": created, "model": model, "choices": choices}
            d.update(more)
            self.write_chunk(b"data: " + json.dumps(d).encode() + b"\n\n")

        self.sleep_prefill(computed)
        if chat:
            chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                    "finish_reason": None}])
        for i in range(n):
            if i > 0 and self.engine.args.decode_ms_per_token > 0:
                time.sleep(self.engine.args.decode_ms_per_token / 1e3)
            finish = "length" if i == n - 1 else None
            if chat:
                chunk([{"index": 0, "delta": {"content": " tok%d" % i}, "logprobs": None, "finish_reason": finish}])
            else:
                chunk([{"index": 0, "text": " tok%d" % i, "logprobs": None, "finish_reason": finish,
                        "stop_reason": None}])
        if usage is not None:
            chunk([], usage=usage)
        self.write_chunk(b"data: [DONE]\n\n")
        self.write_chunk(b"")

    def write_chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 1024  # listen backlog: a router opens many connections at once

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError, TimeoutError)):
            super().handle_error(request, client_address)


# ------------------------------------------------------------------------------------------------- main

def parse_args(argv=None):
    p = argparse.ArgumentParser(description="kvidx mock LLM engine (vLLM-like, no model): for tests and demos.")
    p.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, required=True, help="HTTP port (0: a free one, see --ready-file)")
    p.add_argument("--zmq-pub", required=True, help="KV event PUB endpoint, bound (tcp://127.0.0.1:* picks a port)")
    p.add_argument("--zmq-pub-connect", action="store_true",
                   help="connect the PUB socket instead of binding it (a kvidx daemon started with --zmq-bind)")
    p.add_argument("--zmq-replay", default=None, help="replay ROUTER endpoint, bound (default: no replay)")
    p.add_argument("--model", required=True, help="served model name")
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--num-blocks", type=int, default=4096, help="prefix cache capacity in blocks")
    p.add_argument("--prefill-us-per-token", type=float, default=0.0, help="simulated prefill per uncached token")
    p.add_argument("--decode-ms-per-token", type=float, default=0.0, help="simulated decode per generated token")
    p.add_argument("--pod-id", default=None, help="pod name (default mock-<http port>)")
    p.add_argument("--topic", default="", help="first frame of each KV event message (vLLM's default is empty; "
                                               "llm-d uses kv@<pod>@<model>)")
    p.add_argument("--max-tokens-default", type=int, default=16)
    p.add_argument("--max-model-len", type=int, default=131072)
    p.add_argument("--max-num-seqs", type=int, default=256, help="requests running at once; more wait")
    p.add_argument("--hash-algo", default="sha256", choices=["sha256", "sha256_cbor", "xxhash", "xxhash_cbor"],
                   help="vLLM's --prefix-caching-hash-algo")
    p.add_argument("--hash-seed", default="42", help="vLLM's PYTHONHASHSEED (NONE_HASH = H(seed))")
    p.add_argument("--event-shape", default="map", choices=["map", "array"],
                   help="map: current vLLM events; array: legacy tagged arrays")
    p.add_argument("--replay-framing", default="new", choices=["new", "old"],
                   help="new: vLLM >= 0.26 replies [\"\", topic, seq, payload]; old: [\"\", seq, payload]")
    p.add_argument("--replay-buffer", type=int, default=10000, help="batches kept for replay (buffer_steps)")
    p.add_argument("--dp-rank", type=int, default=0, help="data_parallel_rank of every batch")
    p.add_argument("--engine-id", default=None, help="remote_engine_id given to decode pods (default: the pod id)")
    p.add_argument("--kv-host", default="127.0.0.1", help="remote_host given to decode pods")
    p.add_argument("--kv-port", type=int, default=5600, help="remote_port given to decode pods (NIXL side channel)")
    p.add_argument("--ready-file", default=None, help="written (JSON) once every socket is bound; removed on exit")
    p.add_argument("--verbose", action="store_true", help="one line per request on stderr")
    a = p.parse_args(argv)
    if a.block_size < 1 or a.num_blocks < 1 or a.max_num_seqs < 1:
        p.error("--block-size, --num-blocks and --max-num-seqs must be >= 1")
    return a


def main(argv=None):
    args = parse_args(argv)
    publisher = EventPublisher(args)
    server = Server((args.host, args.port), Handler)
    args.port = server.server_address[1]
    args.pod_id = args.pod_id or "mock-%d" % args.port
    args.engine_id = args.engine_id or args.pod_id
    Handler.engine = Engine(args, publisher)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="http", daemon=True)
    thread.start()

    info = {"pid": os.getpid(), "pod_id": args.pod_id, "port": args.port,
            "http": "http://%s:%d" % (args.host, args.port), "zmq_pub": publisher.pub_endpoint,
            "zmq_replay": publisher.replay_endpoint}
    if args.ready_file:
        tmp = args.ready_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump(info, f)
        os.replace(tmp, args.ready_file)
    if args.verbose:
        sys.stderr.write("ready %s\n" % json.dumps(info))
    while not stop.wait(0.5):
        pass
    server.shutdown()
    server.server_close()
    publisher.close()
    if args.ready_file:
        try:
            os.remove(args.ready_file)
        except OSError:
            pass
    if args.verbose:
        sys.stderr.write("%s stopped\n" % args.pod_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
