#!/usr/bin/python3
"""A Mooncake-style router client (the RFC's shapes, kvidx under the /mooncake base path), standard library only,
one keep-alive connection. Usage: mooncake_client.py PORT ENDPOINT MODEL TENANT TOKEN,TOKEN,...
Registers instance "engine-1" (rank 0) at ENDPOINT, queries until the answer names the tenant's instances (the test
publishes meanwhile), then prints one line per step:
  register STATUS BODY / query STATUS BODY / unknown-tenant STATUS BODY / unregister STATUS BODY / again STATUS"""
import http.client
import json
import sys
import time

BASE = "/mooncake"


def main():
    port, endpoint, model, tenant = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    tokens = [int(t) for t in sys.argv[5].split(",")]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)

    def post(path, body):
        conn.request("POST", BASE + path, json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())

    register = {"endpoint": endpoint, "type": "vLLM", "modelname": model, "lora_name": "", "tenant_id": tenant,
                "instance_id": "engine-1", "block_size": 16, "dp_rank": 0, "additionalsalt": ""}
    status, answer = post("/register", register)
    print("register", status, json.dumps(answer, sort_keys=True))
    query = {"model": model, "token_ids": tokens, "tenant_id": tenant, "block_size": 16}
    deadline = time.time() + 20
    while True:
        status, answer = post("/query", query)
        if status != 200 or answer.get(tenant) or time.time() > deadline:
            break
        time.sleep(0.2)
    print("query", status, json.dumps(answer, sort_keys=True))
    status, answer = post("/query", dict(query, tenant_id="nobody"))
    print("unknown-tenant", status, json.dumps(answer, sort_keys=True))
    unregister = {"instance_id": "engine-1", "tenant_id": tenant, "dp_rank": 0}
    status, answer = post("/unregister", unregister)
    print("unregister", status, json.dumps(answer, sort_keys=True))
    status, answer = post("/unregister", unregister)
    print("again", status, answer.get("error"))


if __name__ == "__main__":
    main()
