#!/usr/bin/python3
"""A router that hashes prompts itself (Debian python3-xxhash, the reference XXH3) and asks kvidx's
/query_by_hash, as a Mooncake router (chained "seq_hashes") and as a Dynamo router (per-block "block_hashes").
Usage: hash_client.py PORT MODEL BLOCK_SIZE TOKEN,TOKEN,... [LORA]
Prints "seq <longest_matched> block <longest_matched>" for the instance with the longest match (0 when none)."""
import http.client
import json
import struct
import sys

import xxhash

SEED = 1337


def main():
    port, model, bs = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    tokens = [int(t) for t in sys.argv[4].split(",")]
    lora = sys.argv[5] if len(sys.argv) > 5 else None
    seed = SEED
    if lora:
        seed = (seed + xxhash.xxh3_64_intdigest(lora.encode(), seed=0)) % 2 ** 64
    local = [xxhash.xxh3_64_intdigest(struct.pack("<%dI" % bs, *tokens[i * bs:(i + 1) * bs]), seed=seed)
             for i in range(len(tokens) // bs)]
    chained = []
    for h in local:
        chained.append(h if not chained else xxhash.xxh3_64_intdigest(struct.pack("<QQ", chained[-1], h), seed=SEED))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    out = []
    for field, hashes in (("seq_hashes", chained), ("block_hashes", local)):
        conn.request("POST", "/query_by_hash", json.dumps({field: hashes, "model_name": model}),
                     {"Content-Type": "application/json"})
        response = conn.getresponse()
        answer = json.loads(response.read())
        if response.status != 200:
            print("error", response.status, answer)
            return
        out.append(max([v["longest_matched"] for v in answer["instances"].values()], default=0))
    print("seq %d block %d" % tuple(out))


if __name__ == "__main__":
    main()
