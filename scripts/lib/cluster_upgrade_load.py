#!/usr/bin/env python3
"""The client of scripts/test-cluster-upgrade.sh: life cycles through nginx while the
cluster's nodes are upgraded, and what became of them.

cluster_upgrade_load.py run HOST:PORT ROUTE OUT STOP
    Life cycles until the file STOP exists: submit (a new correlation id), claim one
    (max 1, lease 60 s), complete what was claimed, poll the submitted one. Reads the
    consumer and backend keys from the environment (ASYNCEXEC_CONSUMER_KEY,
    ASYNCEXEC_BACKEND_KEY). Appends one JSON line per request to OUT: {"op", "status",
    "retry_after", "problem"} (status 0: no answer), and for an acknowledged submit
    {"op": "ack", "cid", "token"}, for an acknowledged complete {"op": "done", "cid"}.
cluster_upgrade_load.py count OUT
    Prints the number of life cycles whose poll answered 200.
cluster_upgrade_load.py check HOST:PORT ROUTE OUT
    Prints the answers by operation and status, then polls every acknowledged submit
    again: each must answer 200, and each whose complete was acknowledged must be
    completed. Exit 0 when every answer was 2xx or a 503 problem+json with Retry-After
    and every poll holds, else 1 (the reasons printed).
"""
import http.client
import json
import os
import sys
import time
from collections import Counter


def request(hostport, method, path, key, body=None, headers=None):
    """(status, headers dict, body bytes); status 0 when there was no answer."""
    host, port = hostport.rsplit(":", 1)
    h = {"Authorization": "Bearer " + key}
    if body is not None:
        h["Content-Type"] = "application/json"
    h.update(headers or {})
    try:
        c = http.client.HTTPConnection(host, int(port), timeout=30)
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        hd = {k.lower(): v for k, v in r.getheaders()}
        c.close()
        return r.status, hd, data
    except (OSError, http.client.HTTPException):
        return 0, {}, b""


def record(out, op, st, hd):
    out.write(json.dumps({"op": op, "status": st, "retry_after": "retry-after" in hd,
                          "problem": hd.get("content-type", "").startswith(
                              "application/problem+json")}) + "\n")


def cycle(hp, route, ak, bk, n, out):
    """One life cycle; whether its poll answered 200."""
    cid = "cu-%d-%d" % (os.getpid(), n)
    st, hd, data = request(hp, "POST", "/v1/executions/" + route, ak, b'{"n":%d}' % n,
                           {"X-Correlation-Id": cid})
    record(out, "submit", st, hd)
    if st != 202:
        return False
    token = json.loads(data)["pollToken"]
    out.write(json.dumps({"op": "ack", "cid": cid, "token": token}) + "\n")
    st, hd, data = request(hp, "POST", "/v1/backend/%s/claim" % route, bk,
                           b'{"max":1,"leaseSeconds":60}')
    record(out, "claim", st, hd)
    for e in json.loads(data)["executions"] if st == 200 else []:
        st, hd, _ = request(hp, "POST", "/v1/callbacks/%d/complete" % e["id"], bk,
                            b'{"result":{"ok":true}}', {"X-Callback-Token": e["callbackToken"]})
        record(out, "complete", st, hd)
        if st == 200:
            out.write(json.dumps({"op": "done", "cid": e["correlationId"]}) + "\n")
    st, hd, _ = request(hp, "GET", "/v1/executions/%s/%s" % (route, cid), ak,
                        headers={"X-Poll-Token": token})
    record(out, "poll", st, hd)
    return st == 200


def run(hp, route, path, stop):
    ak, bk = os.environ["ASYNCEXEC_CONSUMER_KEY"], os.environ["ASYNCEXEC_BACKEND_KEY"]
    n = 0
    with open(path, "a", encoding="utf-8", buffering=1) as out:
        while not os.path.exists(stop):
            n += 1
            cycle(hp, route, ak, bk, n, out)
            time.sleep(0.02)
    return 0


def lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(x) for x in f if x.strip()]


def check(hp, route, path):
    ak = os.environ["ASYNCEXEC_CONSUMER_KEY"]
    recs = lines(path)
    answers = [r for r in recs if "status" in r]
    by = Counter((r["op"], r["status"]) for r in answers)
    print("answers: " + ", ".join("%s %d x%d" % (op, st, k) for (op, st), k in sorted(by.items())))
    bad = [r for r in answers if not (200 <= r["status"] < 300 or
                                      (r["status"] == 503 and r["retry_after"] and r["problem"]))]
    ok = True
    if bad:
        ok = False
        print("FAIL %d answers neither 2xx nor 503 problem+json with Retry-After: %s"
              % (len(bad), Counter((r["op"], r["status"]) for r in bad)))
    acks = {r["cid"]: r["token"] for r in recs if r["op"] == "ack"}
    done = {r["cid"] for r in recs if r["op"] == "done"}
    lost, open_ = [], []
    for cid, tok in acks.items():
        st, _, data = request(hp, "GET", "/v1/executions/%s/%s" % (route, cid), ak,
                              headers={"X-Poll-Token": tok})
        status = json.loads(data).get("status") if st == 200 else None
        if st != 200:
            lost.append((cid, st))
        elif cid in done and status != "completed":
            open_.append((cid, status))
    print("acknowledged: %d submits (each polled again: %d not found), %d completes "
          "(%d not completed)" % (len(acks), len(lost), len(done), len(open_)))
    if lost or open_:
        ok = False
        print("FAIL lost: %s; not completed: %s" % (lost[:5], open_[:5]))
    return 0 if ok and acks else 1


def main(argv):
    if len(argv) == 6 and argv[1] == "run":
        return run(argv[2], argv[3], argv[4], argv[5])
    if len(argv) == 3 and argv[1] == "count":
        print(sum(1 for r in lines(argv[2]) if r["op"] == "poll" and r["status"] == 200))
        return 0
    if len(argv) == 5 and argv[1] == "check":
        return check(argv[2], argv[3], argv[4])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
