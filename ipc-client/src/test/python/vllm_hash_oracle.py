#!/usr/bin/python3
"""CPython oracle for kvidx's vLLM hash tests (VllmCPythonCrossCheckTest).

Reads one JSON document on stdin:
  {"values": [...], "requests": [...]}
  values: JSON values mapped to Python objects: list -> tuple, {"b": "<hex>"} -> bytes, everything else as is.
  requests: {"algo", "seed", "block_size", "tokens", "lora", "salt", "mm": [[identifier, offset, length]...],
             "mm_style": "offset" | "identifier"}
Writes lines:
  LIB <name> <0|1>            whether cbor2 / xxhash could be imported
  P <i> <hex>                 pickle.dumps(values[i], protocol=5)
  C <i> <hex|ERR>             cbor2.dumps(values[i], canonical=True)
  N <i> <hex>                 NONE_HASH of request i
  R <i> <j> <hex>             digest of block j of request i
  S <i> <reason>              request i skipped (library missing)
The block hashing follows vLLM's rules (parent digest or NONE_HASH, tuple of the block's tokens, extra keys:
LoRA name, multimodal keys, cache salt on the first block) using only CPython's own pickle and hashlib and the
Debian cbor2 / xxhash packages.
"""
import hashlib
import json
import pickle
import sys

try:
    import cbor2
except ImportError:
    cbor2 = None
try:
    import xxhash
    if not hasattr(xxhash, "xxh3_128_digest"):
        xxhash = None
except ImportError:
    xxhash = None


def to_py(v):
    if isinstance(v, list):
        return tuple(to_py(e) for e in v)
    if isinstance(v, dict):
        return bytes.fromhex(v["b"])
    return v


def serialise(algo, obj):
    if algo.endswith("cbor"):
        return cbor2.dumps(obj, canonical=True)
    return pickle.dumps(obj, protocol=5)


def digest(algo, obj):
    data = serialise(algo, obj)
    if algo.startswith("sha256"):
        return hashlib.sha256(data).digest()
    return xxhash.xxh3_128_digest(data)


def extra_keys(req, start, end):
    keys = []
    if req.get("lora") is not None:
        keys.append(req["lora"])
    for ident, offset, length in req.get("mm", []):
        if end <= offset:
            break
        if start >= offset + length:
            continue
        keys.append((ident, offset - start) if req.get("mm_style", "offset") == "offset" else ident)
        if end < offset + length:
            break
    if start == 0 and req.get("salt"):
        keys.append(req["salt"])
    return tuple(keys) if keys else None


def main():
    doc = json.load(sys.stdin)
    out = sys.stdout
    out.write("LIB cbor2 %d\n" % (cbor2 is not None))
    out.write("LIB xxhash %d\n" % (xxhash is not None))
    for i, v in enumerate(doc.get("values", [])):
        obj = to_py(v)
        out.write("P %d %s\n" % (i, pickle.dumps(obj, protocol=5).hex()))
        if cbor2 is not None:
            try:
                out.write("C %d %s\n" % (i, cbor2.dumps(obj, canonical=True).hex()))
            except Exception:  # noqa: BLE001 - e.g. a lone surrogate has no UTF-8 form
                out.write("C %d ERR\n" % i)
    for i, req in enumerate(doc.get("requests", [])):
        algo = req["algo"]
        if algo.endswith("cbor") and cbor2 is None:
            out.write("S %d cbor2 missing\n" % i)
            continue
        if algo.startswith("xxhash") and xxhash is None:
            out.write("S %d xxhash missing\n" % i)
            continue
        none_hash = digest(algo, req["seed"])
        out.write("N %d %s\n" % (i, none_hash.hex()))
        tokens, bs = req["tokens"], req["block_size"]
        parent = none_hash
        for j in range(len(tokens) // bs):
            start = j * bs
            block = tuple(tokens[start:start + bs])
            parent = digest(algo, (parent, block, extra_keys(req, start, start + bs)))
            out.write("R %d %d %s\n" % (i, j, parent.hex()))


if __name__ == "__main__":
    main()
