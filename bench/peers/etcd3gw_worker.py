"""The etcd3gw peer: what a Python script would do to update a shared JSON document in etcd
with etcd3gw (PyPI), the Python client of etcd's v3 JSON gateway.

etcd3gw_worker.py HOST:PORT KEY [txn|replace]

Each increment is an exact compare-and-swap loop:
  txn      (default) the same requests as one ccsync update: `client.get(KEY, metadata=True)`
           for the value and its mod_revision, json.loads, counter += 1, json.dumps, then
           `client.transaction(...)` comparing mod_revision (CREATE == 0 when the key is
           missing), putting the new value, and ranging the key in the failure branch, whose
           answer feeds the next try without another get.
  replace  etcd3gw's own helper: `client.get`, change, `client.replace(KEY, old, new)` (a txn
           comparing the value); when it fails, get again and retry.
One requests.Session, so one kept-alive connection, per process. Prints "ready"; for each line
N on stdin makes N increments and prints "done RETRIES"; exits when its input ends.
"""
import base64
import json
import sys

import etcd3gw


def encode(data):
    return base64.b64encode(data).decode("ascii")


def first_kv(answer):
    """(value bytes, mod_revision) of a range answer's first key, or (None, 0) when missing."""
    kvs = answer.get("kvs")
    if not kvs:
        return None, 0
    return base64.b64decode(kvs[0].get("value", "")), int(kvs[0]["mod_revision"])


def changed(value):
    document = json.loads(value) if value is not None else {}
    document["counter"] = document.get("counter", 0) + 1
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()


def increment_txn(client, key):
    found = client.get(key, metadata=True)
    value, revision = (found[0][0], int(found[0][1]["mod_revision"])) if found else (None, 0)
    retries = 0
    while True:
        if value is None:
            compare = {"key": encode(key), "target": "CREATE", "result": "EQUAL", "create_revision": "0"}
        else:
            compare = {"key": encode(key), "target": "MOD", "result": "EQUAL", "mod_revision": str(revision)}
        answer = client.transaction({
            "compare": [compare],
            "success": [{"request_put": {"key": encode(key), "value": encode(changed(value))}}],
            "failure": [{"request_range": {"key": encode(key)}}],
        })
        if answer.get("succeeded"):
            return retries
        retries += 1
        value, revision = first_kv(answer["responses"][0]["response_range"])


def increment_replace(client, key):
    retries = 0
    while True:
        found = client.get(key)
        if not found:
            raise SystemExit("etcd3gw_worker: the key is missing (replace needs an existing value)")
        old = found[0]
        if client.replace(key, old, changed(old)):
            return retries
        retries += 1


def main():
    if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and sys.argv[3] not in ("txn", "replace")):
        sys.exit("usage: etcd3gw_worker.py HOST:PORT KEY [txn|replace]")
    host, port = sys.argv[1].rsplit(":", 1)
    key = sys.argv[2].encode()
    increment = increment_replace if len(sys.argv) == 4 and sys.argv[3] == "replace" else increment_txn
    client = etcd3gw.client(host=host, port=int(port), api_path="/v3/")
    client.get(key)  # connect (and warm up) before "ready"
    print("ready", flush=True)
    retries = 0
    for line in sys.stdin:
        for _ in range(int(line)):
            retries += increment(client, key)
        print("done %d" % retries, flush=True)


main()
