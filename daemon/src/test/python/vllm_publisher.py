#!/usr/bin/python3
"""A vLLM-format KV event publisher for kvidx's tests (Debian python3-zmq + python3-msgpack).

Publishes like vLLM's ZmqEventPublisher: a PUB socket sending [topic, seq (8-byte big-endian), msgpack batch]
with the batch [ts, [events...], dp_rank]; events as tagged arrays (vLLM before mid-2026) or as maps with a
"type" key (current); a ROUTER replay socket answering a DEALER's ["", start_seq] with every buffered batch
seq >= start_seq, in the pre-0.26 framing ["", seq, payload] or the 0.26+ framing ["", topic, seq, payload], and
an end marker with seq = 0xff * 8.

Driven line by line on stdin; answers one line per command on stdout:
  ping                              publish an empty batch
  store CAPTURE                     BlockStored of every block of the capture (lora_name from the capture)
  remove CAPTURE FROM TO            BlockRemoved of block hashes [FROM, TO)
  clear                             AllBlocksCleared
  lose COMMAND...                   buffer COMMAND's batch for replay under the next seq but do not send it
  restart                           publisher restart: seq back to 0, replay buffer emptied
  garbage                           publish a payload that is not msgpack
  quit
"""
import argparse
import json
import os
import struct
import sys
import threading
import time

import msgpack
import zmq

END_SEQ = b"\xff" * 8


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--topic", required=True)
    ap.add_argument("--shape", choices=["array", "map"], default="map")
    ap.add_argument("--framing", choices=["old", "new"], default="new")
    ap.add_argument("--hashes", choices=["uint", "bin"], default="uint")
    ap.add_argument("--captures", required=True, help="folder with kv_event_*.json")
    args = ap.parse_args()

    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    pub.setsockopt(zmq.SNDHWM, 100000)
    pub.setsockopt(zmq.LINGER, 0)
    pub.bind("tcp://127.0.0.1:*")
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    router.bind("tcp://127.0.0.1:*")
    topic = args.topic.encode()

    lock = threading.Lock()
    state = {"seq": 0, "buffer": []}
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
            for seq, payload in batches:
                seq8 = struct.pack(">Q", seq)
                if args.framing == "new":
                    router.send_multipart([identity, b"", topic, seq8, payload])
                else:
                    router.send_multipart([identity, b"", seq8, payload])
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
        order = {
            "BlockStored": ["block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium",
                            "lora_name"],
            "BlockRemoved": ["block_hashes", "medium"],
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
        elif cmd == "clear":
            events = [event("AllBlocksCleared")]
        else:
            raise ValueError("unknown command " + cmd)
        return msgpack.packb([time.time(), events, 0], use_bin_type=True)

    def publish(payload, send=True):
        with lock:
            seq = state["seq"]
            state["seq"] += 1
            state["buffer"].append((seq, payload))
            del state["buffer"][:-10000]
        if send:
            pub.send_multipart([topic, struct.pack(">Q", seq), payload])
        return seq

    print("ready", pub.getsockopt(zmq.LAST_ENDPOINT).decode(), router.getsockopt(zmq.LAST_ENDPOINT).decode(),
          flush=True)
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
