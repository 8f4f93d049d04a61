#!/usr/bin/python3
"""An SGLang-format KV event publisher for kvidx's tests (Debian python3-zmq + python3-msgpack).

Publishes like SGLang's ZmqEventPublisher (python/sglang/srt/disaggregation/kv_events.py): a PUB socket sending
[topic, seq (8-byte big-endian), msgpack batch] with the batch [ts, [events...], attn_dp_rank]; a ROUTER replay
socket answering a DEALER's ["", start_seq] with every buffered batch seq >= start_seq as ["", seq, payload] (no
topic frame, unlike vLLM 0.26+), then the end marker ["", -1 as 8 bytes, ""].

Event shapes (--shape):
  array  SGLang before the tagged maps: ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size,
         lora_id, medium] plus, for a salted store, a trailing metadata map {"cache_salt": ..., "session_id": ...}
         (BlockStoredWithMetadata); ["BlockRemoved", block_hashes, medium]; ["AllBlocksCleared"]
  map    tagged maps (sglang#37482): {"type": "BlockStored", "block_hashes": ..., ..., "medium": "GPU",
         "cache_salt": ..., "session_id": ...}
Block hashes are signed 64-bit integers, as SGLang's hash_str_to_int64 makes them. Media: "GPU", "CPU_PINNED".

Driven line by line on stdin; answers one line per command on stdout:
  ping                              publish an empty batch
  store CAPTURE [SALT [SESSION]]    BlockStored of every block of the capture, one event per page chained by
                                    parent hash then coalesced as SGLang's recorder does (one event); SALT '-' = none
  store-bigram CAPTURE              the same with EAGLE's bigram token pairs [token, next_token]
  store-cpu CAPTURE                 the same on medium CPU_PINNED (HiCache host tier)
  remove CAPTURE FROM TO [MEDIUM]   BlockRemoved of block hashes [FROM, TO)
  clear                             AllBlocksCleared
  lose COMMAND...                   buffer COMMAND's batch for replay under the next seq but do not send it
  restart                           publisher restart: seq back to 0, replay buffer emptied
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

END_SEQ = struct.pack(">q", -1)


def signed(h):
    """The capture's unsigned 64-bit hash as SGLang's signed int64."""
    return h - (1 << 64) if h >= (1 << 63) else h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--topic", default="")
    ap.add_argument("--shape", choices=["array", "map"], default="map")
    ap.add_argument("--rank", default="0", help="attn_dp_rank as JSON (0, 2, null), or 'absent'")
    ap.add_argument("--epoch", default="", help="as a publisher with a snapshot endpoint: topic + NUL + "
                                                  "'sgl-kv-epoch=' + EPOCH")
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
    if args.epoch:
        topic += b"\x00sgl-kv-epoch=" + args.epoch.encode()

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
            if len(frames) != 3:
                continue
            identity, start = frames[0], int.from_bytes(frames[2], "big")
            with lock:
                batches = [b for b in state["buffer"] if b[0] >= start]
            for seq, payload in batches:
                router.send_multipart([identity, b"", seq.to_bytes(8, "big"), payload])
            router.send_multipart([identity, b"", END_SEQ, b""])

    replay_thread = threading.Thread(target=serve_replay, daemon=True)
    replay_thread.start()

    captures = {}

    def capture(name):
        if name not in captures:
            with open(os.path.join(args.captures, name)) as f:
                captures[name] = json.load(f)
        return captures[name]

    def stored(hashes, parent, tokens, block_size, medium, salt, session):
        if args.shape == "map":
            ev = {"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": parent, "token_ids": tokens,
                  "block_size": block_size, "lora_id": None, "medium": medium}
            if salt is not None:
                ev["cache_salt"] = salt
            if session is not None:
                ev["session_id"] = session
            return ev
        ev = ["BlockStored", hashes, parent, tokens, block_size, None, medium]
        meta = {}
        if salt is not None:
            meta["cache_salt"] = salt
        if session is not None:
            meta["session_id"] = session
        if meta:
            ev.append(meta)
        return ev

    def removed(hashes, medium):
        if args.shape == "map":
            return {"type": "BlockRemoved", "block_hashes": hashes, "medium": medium}
        return ["BlockRemoved", hashes, medium]

    def cleared():
        return {"type": "AllBlocksCleared"} if args.shape == "map" else ["AllBlocksCleared"]

    def store_events(c, medium, salt, session, bigram):
        bs = c["block_size"]
        tokens = c["token_ids"]
        hashes = [signed(h) for h in c["block_hashes"]]
        # SGLang records one BlockStored per page and coalesces a page whose parent is the previous one's last hash.
        ev = None
        parent = None
        for i, h in enumerate(hashes):
            page = tokens[i * bs:(i + 1) * bs]
            if bigram:
                following = tokens[(i * bs) + 1:((i + 1) * bs) + 1]
                following = following + [0] * (len(page) - len(following))
                page = [[t, n] for t, n in zip(page, following)]
            if ev is None:
                ev = {"hashes": [h], "parent": parent, "tokens": list(page)}
            else:
                ev["hashes"].append(h)
                ev["tokens"].extend(page)
            parent = h
        return [stored(ev["hashes"], ev["parent"], ev["tokens"], bs, medium, salt, session)]

    def batch_for(words):
        cmd = words[0]
        if cmd == "ping":
            events = []
        elif cmd in ("store", "store-bigram", "store-cpu"):
            salt = words[2] if len(words) > 2 and words[2] != "-" else None
            session = words[3] if len(words) > 3 else None
            events = store_events(capture(words[1]), "CPU_PINNED" if cmd == "store-cpu" else "GPU", salt, session,
                                  cmd == "store-bigram")
        elif cmd == "remove":
            c = capture(words[1])
            hashes = [signed(h) for h in c["block_hashes"][int(words[2]):int(words[3])]]
            events = [removed(hashes, words[4] if len(words) > 4 else "GPU")]
        elif cmd == "clear":
            events = [cleared()]
        else:
            raise ValueError("unknown command " + cmd)
        if args.rank == "absent":
            return msgpack.packb([time.time(), events], use_bin_type=True)
        return msgpack.packb([time.time(), events, json.loads(args.rank)], use_bin_type=True)

    def publish(payload, send=True):
        with lock:
            seq = state["seq"]
            state["seq"] += 1
            state["buffer"].append((seq, payload))
        if send:
            pub.send_multipart([topic, seq.to_bytes(8, "big"), payload])
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
            elif words[0] == "lose":
                print("ok", publish(batch_for(words[1:]), send=False), flush=True)
            else:
                print("ok", publish(batch_for(words)), flush=True)
        except Exception as ex:  # report to the test, keep serving
            print("error", repr(ex), flush=True)
    running.clear()
    replay_thread.join(1)
    pub.close()
    router.close()
    ctx.term()


if __name__ == "__main__":
    main()
