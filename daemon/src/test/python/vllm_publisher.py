#!/usr/bin/python3
"""A vLLM-format KV event publisher for kvidx's tests (Debian python3-zmq + python3-msgpack).

Publishes like vLLM's ZmqEventPublisher: a PUB socket sending [topic, seq (8-byte big-endian), msgpack batch]
with the batch [ts, [events...], dp_rank] (dp_rank from --dp-rank, default 0); events as tagged arrays (vLLM
before mid-2026) or as maps with a "type" key (current); a ROUTER replay socket answering a DEALER's
["", start_seq] with every buffered batch seq >= start_seq, in the pre-0.26 framing ["", seq, payload] or the 0.26+ framing ["", topic, seq, payload], and
an end marker with seq = 0xff * 8.

Driven line by line on stdin; answers one line per command on stdout:
  ping                              publish an empty batch
  store CAPTURE                     BlockStored of every block of the capture (lora_name from the capture)
  storex JSON                       one batch of BlockStored events with extra_keys (vLLM >= vllm#33304), see
                                    Request; JSON (the rest of the line) is {"topic": optional topic of the batch,
                                    "events": [request, ...]}; answers "ok SEQ HASH,HASH,..." with the engine
                                    hashes of the last event
  remove CAPTURE FROM TO            BlockRemoved of block hashes [FROM, TO)
  store-group CAPTURE GROUP KIND    BlockStored of the capture by KV cache group GROUP of kind KIND
                                    (kv_cache_spec_kind, "-" for none), as a hybrid model's engine sends it
  remove-group CAPTURE FROM TO GROUP
                                    BlockRemoved of block hashes [FROM, TO) by KV cache group GROUP
  clear                             AllBlocksCleared
  offload CAPTURE FROM TO MEDIUM MODE [LOCALITY]
                                    BlockStored of blocks [FROM, TO) on MEDIUM (e.g. CPU): MODE "tokenless" as vLLM
                                    before vllm#43468 (token_ids [], block_size 0, no parent), "full" self-describing
                                    (tokens, block size, parent); LOCALITY LOCAL, REMOTE, "-" (absent), "int" (a
                                    number: wrong type) or any other string (unknown)
  evict CAPTURE FROM TO MEDIUM [LOCALITY]
                                    BlockRemoved of blocks [FROM, TO) from MEDIUM
  store-medium CAPTURE MEDIUM       BlockStored of every block of the capture on MEDIUM ("int": a number, wrong type)
  lose COMMAND...                   buffer COMMAND's batch for replay under the next seq but do not send it
  restart                           publisher restart: seq back to 0, replay buffer emptied
  replay normal|hang|slow SECONDS   how the replay socket answers from now on: at once (normal), never (hang: it
                                    takes requests and drops them, a black-holed replay), or SECONDS before each
                                    reply and the end marker (slow)
  garbage                           publish a payload that is not msgpack
  stream SEED COUNT RATE PODS MODEL DOCS LOG
                                    start publishing, in the background, a deterministic random stream of COUNT
                                    batches (BlockStored / BlockRemoved / AllBlocksCleared, GPU and CPU media) at
                                    RATE batches/s over the pods PODS (comma-separated; topic kv@<pod>@MODEL);
                                    writes the documents it draws blocks from to DOCS and one line per published
                                    batch to LOG (see Stream); answers at once
  stream-wait SECONDS               wait for the stream to finish; "ok done N" (N batches published)
  stream-stop                       stop the stream; "ok stopped N"
  stream-count                      "ok N": batches the stream published so far
  quit

The replay buffer keeps the last --buffer batches (default 10000, vLLM's buffer_steps).
"""
import argparse
import hashlib
import json
import os
import pickle
import random
import struct
import sys
import threading
import time

import msgpack
import zmq

END_SEQ = b"\xff" * 8
MEDIUM_BITS = {"GPU": 1, "CPU": 2}


class Stream:
    """A deterministic random KV event stream over several pods, as vLLM engines with prefix caching produce it.

    Every pod holds a prefix-closed set of blocks (a block is stored only after its parent, and leaves only when no
    block after it is held), drawn from documents that share prefixes with each other (one of them the capture's
    tokens), on two media (a block leaves when no medium holds it). Some pods hold a "pinned" document from the
    first batches on that no later event touches (a reader can check it exactly). Engine hashes chain like vLLM's:
    H(parent hash, block tokens), the last 8 bytes of a SHA-256.

    DOCS, one line per document: "doc <index> <pinned pod or -> <token,token,...>" after a first line
    "model <model> block_size <n>". LOG, one line per published batch:
    "<seq> <unix time before send> <pod> <events>" with events joined by "|" (or "-" for none), each one of
    "S,<medium>,<doc>,<from>,<to>" (blocks [from, to) of the document), "R,<medium>,<doc>:<block>,..." and "C".
    """

    def __init__(self, seed, count, rate, pods, model, capture_tokens, block_size, docs_path, log_path):
        self.rng = random.Random(seed)
        self.count = count
        self.rate = rate
        self.pods = pods
        self.model = model
        self.bs = block_size
        self.log_path = log_path
        self.stop = threading.Event()
        self.published = 0
        rng = self.rng
        bs = block_size
        roots = [list(capture_tokens[:(len(capture_tokens) // bs) * bs])]
        for _ in range(3):
            roots.append([rng.randrange(1, 150000) for _ in range(32 * bs)])
        self.docs = []
        for _ in range(20):
            root = roots[rng.randrange(len(roots))]
            pre = rng.randrange(0, min(24, len(root) // bs) + 1)
            suffix = rng.randrange(1 if pre == 0 else 0, 12)
            self.docs.append(root[:pre * bs] + [rng.randrange(1, 150000) for _ in range(suffix * bs)])
        self.regular = len(self.docs)
        self.pinned = {}
        for i, pod in enumerate(pods):
            if i % 2 == 0:
                self.pinned[pod] = len(self.docs)
                self.docs.append([rng.randrange(1, 150000) for _ in range(rng.randrange(8, 17) * bs)])
        self.hashes = []
        self.parent = {}
        for tokens in self.docs:
            h = 0
            chain = []
            for b in range(len(tokens) // bs):
                block = tokens[b * bs:(b + 1) * bs]
                nxt = int.from_bytes(hashlib.sha256(h.to_bytes(8, "big") + struct.pack(">%dI" % bs, *block))
                                     .digest()[-8:], "big")
                self.parent[nxt] = h if b > 0 else None
                chain.append(nxt)
                h = nxt
            self.hashes.append(chain)
        self.media = {p: {} for p in pods}
        self.children = {p: {} for p in pods}
        pinned_pod = {d: p for p, d in self.pinned.items()}
        with open(docs_path, "w") as f:
            f.write("model %s block_size %d\n" % (model, bs))
            for d, tokens in enumerate(self.docs):
                f.write("doc %d %s %s\n" % (d, pinned_pod.get(d, "-"), ",".join(map(str, tokens))))

    def depth(self, pod, d):
        held = self.media[pod]
        n = 0
        for h in self.hashes[d]:
            if h not in held:
                break
            n += 1
        return n

    def store(self, pod, d, a, b, medium):
        held = self.media[pod]
        children = self.children[pod]
        chain = self.hashes[d]
        for i in range(a, b):
            h = chain[i]
            if h not in held:
                p = self.parent[h]
                if p is not None:
                    children[p] = children.get(p, 0) + 1
            held[h] = held.get(h, 0) | MEDIUM_BITS[medium]
        ev = map_event("BlockStored", block_hashes=chain[a:b], parent_block_hash=chain[a - 1] if a > 0 else None,
                   token_ids=self.docs[d][a * self.bs:b * self.bs], block_size=self.bs, medium=medium)
        return ev, "S,%s,%d,%d,%d" % (medium, d, a, b)

    def random_store(self, pod):
        rng = self.rng
        d = rng.randrange(self.regular)
        n = len(self.hashes[d])
        h = self.depth(pod, d)
        medium = "GPU" if rng.random() < 0.8 else "CPU"
        if h > 0 and (h == n or rng.random() < 0.1):
            a = rng.randrange(0, h)
            b = rng.randrange(a + 1, h + 1)
        else:
            a = h
            b = min(n, h + rng.randrange(1, 9))
        return self.store(pod, d, a, b, medium)

    def random_remove(self, pod):
        rng = self.rng
        held = self.media[pod]
        children = self.children[pod]
        docs = [d for d in range(self.regular) if self.depth(pod, d) > 0]
        medium = "GPU" if rng.random() < 0.8 else "CPU"
        bit = MEDIUM_BITS[medium]
        hashes = []
        refs = []
        if docs:
            d = rng.choice(docs)
            chain = self.hashes[d]
            i = self.depth(pod, d) - 1
            k = rng.randrange(1, 7)
            while i >= 0 and len(hashes) < k:
                h = chain[i]
                cur = held[h]
                if cur & bit == 0:
                    break
                left = cur & ~bit
                if left == 0 and children.get(h, 0) > 0:
                    break
                if left == 0:
                    del held[h]
                    p = self.parent[h]
                    if p is not None:
                        children[p] -= 1
                else:
                    held[h] = left
                hashes.append(h)
                refs.append("%d:%d" % (d, i))
                i -= 1
        if rng.random() < 0.05:
            d = rng.randrange(self.regular)
            i = rng.randrange(len(self.hashes[d]))
            if self.hashes[d][i] not in held:
                hashes.append(self.hashes[d][i])
                refs.append("%d:%d" % (d, i))
        if not hashes:
            return None, None
        return map_event("BlockRemoved", block_hashes=hashes, medium=medium), "R,%s,%s" % (medium, ",".join(refs))

    def clear(self, pod):
        self.media[pod] = {}
        self.children[pod] = {}
        return map_event("AllBlocksCleared"), "C"

    def batches(self):
        """Yields (pod, events, log text) for every batch of the stream."""
        rng = self.rng
        for pod, d in self.pinned.items():
            ev, text = self.store(pod, d, 0, len(self.hashes[d]), "GPU")
            yield pod, [ev], text
        while True:
            pod = rng.choice(self.pods)
            events = []
            texts = []
            if rng.random() >= 0.03:
                for _ in range(rng.randrange(1, 4)):
                    r = rng.random()
                    if r < 0.55:
                        ev, text = self.random_store(pod)
                    elif r < 0.98 or pod in self.pinned:
                        ev, text = self.random_remove(pod)
                    else:
                        ev, text = self.clear(pod)
                    if ev is not None:
                        events.append(ev)
                        texts.append(text)
            yield pod, events, "|".join(texts) if texts else "-"

    def run(self, publish):
        start = time.time()
        with open(self.log_path, "w") as log:
            for n, (pod, events, text) in enumerate(self.batches()):
                if n >= self.count or self.stop.is_set():
                    break
                delay = start + n / self.rate - time.time()
                if delay > 0:
                    time.sleep(delay)
                payload = msgpack.packb([time.time(), events, 0], use_bin_type=True)
                t = time.time()
                seq = publish(payload, ("kv@%s@%s" % (pod, self.model)).encode())
                log.write("%d %.6f %s %s\n" % (seq, t, pod, text))
                self.published = n + 1
            log.flush()


class Request:
    """One vLLM request's blocks as vLLM hashes them and as its BlockStored events carry them.

    JSON fields: tokens, block_size, lora_name (or null), salt (or null), mm: [[identifier, offset, length], ...]
    (vLLM's mm_features, sorted by offset here), embeds: null or a string S whose block i has the prompt embeddings
    utf8("S:i") (the digest is their SHA-256, as vLLM's hashlib.sha256(tensor bytes)), first / last: the blocks
    [first, last) this event stores (default: all; first > 0 names block first-1 as the parent), bad_extra_keys:
    a JSON value sent as extra_keys instead of the right one.

    Engine hashes follow vLLM's default algorithm (sha256 of the pickled (parent digest, tokens, extra keys),
    NONE_HASH = sha256 of the pickled seed "42"), so different salts, adapters or images give different hashes.
    """

    NONE_HASH = hashlib.sha256(pickle.dumps("42", protocol=5)).digest()

    def __init__(self, spec):
        self.spec = spec
        self.tokens = spec["tokens"]
        self.bs = spec["block_size"]
        self.lora = spec.get("lora_name")
        self.salt = spec.get("salt")
        self.mm = sorted((tuple(m) for m in spec.get("mm", [])), key=lambda m: m[1])
        self.embeds = spec.get("embeds")

    def mm_keys(self, start, end, idx):
        """vLLM's _gen_mm_extra_hash_keys: (identifier, offset - start) of the items the block overlaps."""
        keys = []
        while idx < len(self.mm):
            ident, offset, length = self.mm[idx]
            if end > offset:
                if start >= offset + length:
                    idx += 1
                    continue
                keys.append((ident, offset - start))
                if end >= offset + length:
                    idx += 1
                else:
                    break
            else:
                break
        return keys, idx

    def blocks(self):
        """[(engine hash, extra keys tuple or None)] of every full block (vLLM's request_block_hasher)."""
        out = []
        parent = self.NONE_HASH
        idx = 0
        for b in range(len(self.tokens) // self.bs):
            start, end = b * self.bs, (b + 1) * self.bs
            mm, idx = self.mm_keys(start, end, idx)
            keys = ([self.lora] if self.lora is not None else []) + mm
            if start == 0 and self.salt:
                keys.append(self.salt)
            if self.embeds is not None:
                keys.append(hashlib.sha256(("%s:%d" % (self.embeds, b)).encode()).digest())
            extra = tuple(keys) if keys else None
            parent = hashlib.sha256(pickle.dumps((parent, tuple(self.tokens[start:end]), extra), protocol=5)).digest()
            out.append((int.from_bytes(parent[-8:], "big"), extra))
        return out

    def event(self, make_event, block_hash):
        blocks = self.blocks()
        first = self.spec.get("first", 0)
        last = self.spec.get("last", len(blocks))
        extra_keys = [list(e) if e is not None else None for _, e in blocks[first:last]]
        if "bad_extra_keys" in self.spec:
            extra_keys = self.spec["bad_extra_keys"]
        hashes = [h for h, _ in blocks[first:last]]
        ev = make_event("BlockStored", block_hashes=[block_hash(h) for h in hashes],
                        parent_block_hash=block_hash(blocks[first - 1][0]) if first > 0 else None,
                        token_ids=self.tokens[first * self.bs:last * self.bs], block_size=self.bs, medium="GPU",
                        lora_name=self.lora, extra_keys=extra_keys, group_idx=0)
        return ev, hashes


def map_event(kind, **fields):
    """A vLLM event in the current (map) shape."""
    ev = {"type": kind}
    ev.update({k: v for k, v in fields.items() if v is not None})
    return ev


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--topic", required=True)
    ap.add_argument("--shape", choices=["array", "map"], default="map")
    ap.add_argument("--framing", choices=["old", "new"], default="new")
    ap.add_argument("--hashes", choices=["uint", "bin"], default="uint")
    ap.add_argument("--captures", required=True, help="folder with kv_event_*.json")
    ap.add_argument("--buffer", type=int, default=10000, help="batches kept for replay (vLLM's buffer_steps)")
    ap.add_argument("--dp-rank", default="0",
                    help="the batches' data_parallel_rank as JSON (0, 2, null, -1, \"x\", 1.5), or 'absent' for a "
                         "two-element batch")
    ap.add_argument("--connect", default=None,
                    help="connect the PUB socket to this endpoint (a daemon's --zmq-bind) instead of binding it, as "
                         "vLLM does when its endpoint names a host")
    args = ap.parse_args()

    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    pub.setsockopt(zmq.SNDHWM, 100000)
    pub.setsockopt(zmq.LINGER, 0)
    if args.connect:
        pub.connect(args.connect)
    else:
        pub.bind("tcp://127.0.0.1:*")
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    router.bind("tcp://127.0.0.1:*")
    topic = args.topic.encode()

    lock = threading.Lock()
    state = {"seq": 0, "buffer": [], "replay": ("normal", 0.0)}
    running = threading.Event()
    running.set()

    def serve_replay():
        poller = zmq.Poller()
        poller.register(router, zmq.POLLIN)
        while running.is_set():
            if not poller.poll(50):
                continue
            frames = router.recv_multipart()
            if len(frames) != 3 or len(frames[2]) != 8:
                continue
            identity, start = frames[0], struct.unpack(">Q", frames[2])[0]
            with lock:
                batches = [b for b in state["buffer"] if b[0] >= start]
                mode, delay = state["replay"]
            if mode == "hang":
                continue
            for seq, batch_topic, payload in batches:
                if mode == "slow":
                    time.sleep(delay)
                seq8 = struct.pack(">Q", seq)
                if args.framing == "new":
                    router.send_multipart([identity, b"", batch_topic, seq8, payload])
                else:
                    router.send_multipart([identity, b"", seq8, payload])
            if mode == "slow":
                time.sleep(delay)
            if args.framing == "new":
                router.send_multipart([identity, b"", b"", END_SEQ, b""])
            else:
                router.send_multipart([identity, b"", END_SEQ, b""])

    replay_thread = threading.Thread(target=serve_replay, daemon=True)
    replay_thread.start()

    captures = {}

    def capture(name):
        if name not in captures:
            with open(os.path.join(args.captures, name)) as f:
                captures[name] = json.load(f)
        return captures[name]

    def block_hash(h):
        if args.hashes == "bin":
            return bytes(range(24)) + struct.pack(">Q", h)
        return h

    def event(kind, **fields):
        if args.shape == "map":
            ev = {"type": kind}
            ev.update({k: v for k, v in fields.items() if v is not None})
            return ev
        # vLLM's declaration order (kv_events.py); trailing fields at their default are omitted.
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

    def batch_for(words):
        cmd = words[0]
        if cmd == "ping":
            events = []
        elif cmd == "store":
            c = capture(words[1])
            events = [event("BlockStored", block_hashes=[block_hash(h) for h in c["block_hashes"]],
                            parent_block_hash=None, token_ids=c["token_ids"], block_size=c["block_size"],
                            medium=c.get("medium"), lora_name=c.get("lora_name"))]
        elif cmd == "remove":
            c = capture(words[1])
            hashes = c["block_hashes"][int(words[2]):int(words[3])]
            events = [event("BlockRemoved", block_hashes=[block_hash(h) for h in hashes], medium="GPU")]
        elif cmd == "store-group":
            c = capture(words[1])
            events = [event("BlockStored", block_hashes=[block_hash(h) for h in c["block_hashes"]],
                            parent_block_hash=None, token_ids=c["token_ids"], block_size=c["block_size"],
                            medium=c.get("medium"), lora_name=c.get("lora_name"), group_idx=int(words[2]),
                            kv_cache_spec_kind=None if words[3] == "-" else words[3])]
        elif cmd == "remove-group":
            c = capture(words[1])
            hashes = c["block_hashes"][int(words[2]):int(words[3])]
            events = [event("BlockRemoved", block_hashes=[block_hash(h) for h in hashes], medium="GPU",
                            group_idx=int(words[4]))]
        elif cmd == "clear":
            events = [event("AllBlocksCleared")]
        elif cmd in ("offload", "evict"):
            c = capture(words[1])
            a, b, medium = int(words[2]), int(words[3]), words[4]
            loc_word = words[6] if cmd == "offload" and len(words) > 6 else words[5] if cmd == "evict" and len(
                words) > 5 else "-"
            locality = None if loc_word == "-" else 7 if loc_word == "int" else loc_word
            hashes = [block_hash(h) for h in c["block_hashes"][a:b]]
            if cmd == "evict":
                events = [event("BlockRemoved", block_hashes=hashes, medium=medium, locality=locality)]
            elif words[5] == "tokenless":
                events = [event("BlockStored", block_hashes=hashes, parent_block_hash=None, token_ids=[],
                                block_size=0, medium=medium, lora_name=c.get("lora_name"), locality=locality)]
            else:
                bs = c["block_size"]
                parent = block_hash(c["block_hashes"][a - 1]) if a > 0 else None
                events = [event("BlockStored", block_hashes=hashes, parent_block_hash=parent,
                                token_ids=c["token_ids"][a * bs:b * bs], block_size=bs, medium=medium,
                                lora_name=c.get("lora_name"), locality=locality)]
        elif cmd == "store-medium":
            c = capture(words[1])
            medium = 5 if words[2] == "int" else words[2]
            events = [event("BlockStored", block_hashes=[block_hash(h) for h in c["block_hashes"]],
                            parent_block_hash=None, token_ids=c["token_ids"], block_size=c["block_size"],
                            medium=medium, lora_name=c.get("lora_name"))]
        else:
            raise ValueError("unknown command " + cmd)
        if args.dp_rank == "absent":
            return msgpack.packb([time.time(), events], use_bin_type=True)
        return msgpack.packb([time.time(), events, json.loads(args.dp_rank)], use_bin_type=True)

    send_lock = threading.Lock()

    def publish(payload, send=True, batch_topic=topic):
        # One lock around seq, buffer and send: the stream thread and commands may both publish, and sequence
        # numbers must go out in order.
        with send_lock:
            with lock:
                seq = state["seq"]
                state["seq"] += 1
                state["buffer"].append((seq, batch_topic, payload))
                if len(state["buffer"]) > args.buffer:
                    del state["buffer"][:-args.buffer]
            if send:
                pub.send_multipart([batch_topic, struct.pack(">Q", seq), payload])
        return seq

    streams = {}

    def start_stream(words):
        seed, count, rate, pods, model, docs_path, log_path = words
        stream = Stream(int(seed), int(count), float(rate), pods.split(","), model, capture("kv_event_base.json")
                        ["token_ids"], 16, docs_path, log_path)
        thread = threading.Thread(target=stream.run, args=(lambda p, t: publish(p, batch_topic=t),), daemon=True)
        streams["current"] = (stream, thread)
        thread.start()

    print("ready", args.connect or pub.getsockopt(zmq.LAST_ENDPOINT).decode(),
          router.getsockopt(zmq.LAST_ENDPOINT).decode(), flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            if words[0] == "quit":
                print("bye", flush=True)
                break
            if words[0] == "restart":
                with lock:
                    state["seq"] = 0
                    state["buffer"] = []
                print("ok restart", flush=True)
            elif words[0] == "replay":
                if words[1] not in ("normal", "hang", "slow"):
                    raise ValueError("replay mode must be normal, hang or slow")
                with lock:
                    state["replay"] = (words[1], float(words[2]) if len(words) > 2 else 0.0)
                print("ok replay", words[1], flush=True)
            elif words[0] == "stream":
                start_stream(words[1:])
                print("ok started", flush=True)
            elif words[0] in ("stream-wait", "stream-stop"):
                stream, thread = streams["current"]
                if words[0] == "stream-stop":
                    stream.stop.set()
                thread.join(float(words[1]) if len(words) > 1 else 30)
                if thread.is_alive():
                    print("error stream still running", flush=True)
                else:
                    print("ok %s %d" % ("done" if words[0] == "stream-wait" else "stopped", stream.published),
                          flush=True)
            elif words[0] == "stream-count":
                print("ok %d" % streams["current"][0].published, flush=True)
            elif words[0] == "storex":
                spec = json.loads(line.split(None, 1)[1])
                events, hashes = [], []
                for r in spec["events"]:
                    ev, hashes = Request(r).event(event, block_hash)
                    events.append(ev)
                payload = msgpack.packb([time.time(), events, 0], use_bin_type=True)
                topic_bytes = spec["topic"].encode() if spec.get("topic") else topic
                seq = publish(payload, batch_topic=topic_bytes)
                print("ok", seq, ",".join(str(h) for h in hashes), flush=True)
            elif words[0] == "garbage":
                seq = publish(b"\xc1\x00\x13")
                print("ok", seq, flush=True)
            elif words[0] == "lose":
                seq = publish(batch_for(words[1:]), send=False)
                print("ok", seq, flush=True)
            else:
                seq = publish(batch_for(words))
                print("ok", seq, flush=True)
        except Exception as ex:  # report to the test, keep serving
            print("error", repr(ex), flush=True)
    running.clear()
    replay_thread.join(1)
    pub.close()
    router.close()
    ctx.term()


if __name__ == "__main__":
    main()
