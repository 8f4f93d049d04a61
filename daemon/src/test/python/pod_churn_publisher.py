#!/usr/bin/python3
"""A vLLM-format publisher of many short-lived pods over one PUB socket, for kvidx's pod identity tests
(Debian python3-zmq + python3-msgpack).

One PUB socket sends [topic, seq (8-byte big-endian), msgpack batch] as vLLM's ZmqEventPublisher does, batches
[ts, [events...], 0] with map-shaped events; every pod is named by its topic kv@<pod>@<model>; no replay socket.

Driven line by line on stdin (the protocol of PyPeer); answers one line per command on stdout:
  ping POD                      publish an empty batch for POD
  store POD                     BlockStored of every block of kv_event_base.json for POD
  churn COUNT RATE PREFIX BLOCKS
                                start publishing, in the background, one batch for each of COUNT pods
                                <PREFIX>0 .. <PREFIX><COUNT-1> (BlockStored of the capture's first BLOCKS blocks), paced
                                at RATE batches/s; each pod is named once and never again; answers at once
  churn-count                   "ok N": churn batches published so far
  churn-wait SECONDS            wait for the churn to finish: "ok done N", or "ok running N" after SECONDS
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--captures", required=True, help="folder with kv_event_base.json")
    ap.add_argument("--model", required=True)
    args = ap.parse_args()

    with open(os.path.join(args.captures, "kv_event_base.json")) as f:
        capture = json.load(f)

    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    pub.setsockopt(zmq.SNDHWM, 0)  # never drop: the daemon reads every batch
    pub.setsockopt(zmq.LINGER, 0)
    pub.bind("tcp://127.0.0.1:*")

    send_lock = threading.Lock()
    state = {"seq": 0, "churned": 0, "done": threading.Event()}
    state["done"].set()

    def stored(blocks):
        bs = capture["block_size"]
        return {"type": "BlockStored", "block_hashes": capture["block_hashes"][:blocks], "parent_block_hash": None,
                "token_ids": capture["token_ids"][:blocks * bs], "block_size": bs, "medium": "GPU"}

    def publish(pod, events):
        topic = ("kv@%s@%s" % (pod, args.model)).encode()
        payload = msgpack.packb([time.time(), events, 0], use_bin_type=True)
        with send_lock:
            seq = state["seq"]
            state["seq"] += 1
            pub.send_multipart([topic, struct.pack(">Q", seq), payload])

    def churn(count, rate, prefix, blocks):
        events = [stored(blocks)]
        start = time.monotonic()
        for i in range(count):
            ahead = start + i / rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
            publish(prefix + str(i), events)
            state["churned"] = i + 1
        state["done"].set()

    print("ready", pub.getsockopt(zmq.LAST_ENDPOINT).decode(), "-", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            cmd = words[0]
            if cmd == "quit":
                break
            if cmd == "ping":
                publish(words[1], [])
                print("ok", flush=True)
            elif cmd == "store":
                publish(words[1], [stored(len(capture["block_hashes"]))])
                print("ok", flush=True)
            elif cmd == "churn":
                state["churned"] = 0
                state["done"].clear()
                threading.Thread(target=churn, args=(int(words[1]), float(words[2]), words[3], int(words[4])),
                                 daemon=True).start()
                print("ok", flush=True)
            elif cmd == "churn-count":
                print("ok", state["churned"], flush=True)
            elif cmd == "churn-wait":
                done = state["done"].wait(float(words[1]))
                print("ok", "done" if done else "running", state["churned"], flush=True)
            else:
                print("error unknown command", cmd, flush=True)
        except Exception as ex:  # answer, never die: the test reads one line per command
            print("error", repr(ex), flush=True)
    pub.close()
    ctx.term()


if __name__ == "__main__":
    main()
