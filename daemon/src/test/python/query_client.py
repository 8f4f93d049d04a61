#!/usr/bin/python3
"""Queries kvidx's indexer HTTP API the way a Python router would: standard library only, one keep-alive
connection. Usage: query_client.py PORT MODEL TOKEN,TOKEN,... ; prints "<instance> <longest_matched>" for the
instance with the longest match (or "none"), after asking twice over the same connection."""
import http.client
import json
import sys


def main():
    port, model, tokens = int(sys.argv[1]), sys.argv[2], [int(t) for t in sys.argv[3].split(",")]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    body = json.dumps({"token_ids": tokens, "model_name": model})
    for _ in range(2):
        conn.request("POST", "/query", body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        answer = json.loads(response.read())
        if response.status != 200:
            print("error", response.status, answer.get("code"))
            return
    best = max(answer["instances"].items(), key=lambda kv: kv[1]["longest_matched"], default=None)
    print("none" if best is None else f"{best[0]} {best[1]['longest_matched']}")


if __name__ == "__main__":
    main()
