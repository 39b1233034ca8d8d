#!/usr/bin/env python3
"""notify_openapi: what asyncexec-notify sends is what src/openapi.json's `webhooks` says.

The document is read from the source tree (src/openapi.json, the bytes the build embeds:
GET /v1/openapi.json must serve exactly them); ASYNCEXEC_OPENAPI_DOC names another copy
(to see this test fail against a changed schema). From webhooks.executionFinished.post
it takes the request body's schema, with every $ref resolved in place (JSON Schema
2020-12, python3-jsonschema), the header parameters and the media type. The validators
must refuse what the schema forbids (a member too many in the body or in data, a type
that does not match data.status, a missing member, a malformed webhook-* header), so a
pass is not a schema that accepts anything. asyncexec-api(7)'s example request (the .EX
block after its 'webhook-example' mark) must match the document too, and its signature
must be right for the example secret the page names.

Then the real sender, on the real stack: one tenant, a route whose names use the
characters names may have, and three endpoints: one plain, one whose secret was rotated
(two signatures), one answering 202 instead of 204. Executions end every way they can
without the expiry: completed, failed, cancelled before a claim, cancelled by the
backend after a cancel request, failed by an operator, with correlation ids of every
allowed character up to 128 long. Every request every endpoint receives must validate:
the body against the schema, each documented header against its pattern, the media type;
the signatures verify (Python's hmac) with one value, or with two during the rotation,
one per secret; the 202 counts as delivered (one attempt each, as the 2XX response
says). What the schema's descriptions promise is checked too: `timestamp` is
`data.completedAt`, `statusUrl` is the poll path, and polling it with the poll token
answers the same status and completedAt. Not produced here: `expired` (and the expiry's
cancel and abandonment), which need asyncexec-expire, whose run changes every overdue
execution of the shared database (notify_race runs it, under the asyncexec_expire lock);
such a body differs from these only in type and status, which the schema lists.
"""
import base64
import copy
import hashlib
import hmac
import http.client
import json
import os
import re
import sys
import time

import jsonschema
from jsonschema import Draft202012Validator

import notify_env as ne

SRC_DOC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                        "..", "..", "src", "openapi.json"))
MAN_API = os.path.normpath(os.path.join(os.path.dirname(SRC_DOC), "..", "scripts", "man",
                                        "asyncexec-api.7"))
WEBHOOK = "executionFinished"


def pointer(doc, ref):
    if not ref.startswith("#/"):
        raise ValueError("external $ref %s" % ref)
    node = doc
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def resolve(doc, node, seen=()):
    """node with every $ref replaced by what it names (a $ref with siblings: allOf)."""
    if isinstance(node, list):
        return [resolve(doc, x, seen) for x in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node and isinstance(node["$ref"], str):
        ref = node["$ref"]
        if ref in seen:
            raise ValueError("recursive $ref %s" % ref)
        target = resolve(doc, pointer(doc, ref), seen + (ref,))
        rest = {k: resolve(doc, v, seen) for k, v in node.items() if k != "$ref"}
        if not rest:
            return target
        rest["allOf"] = [target] + rest.get("allOf", [])
        return rest
    return {k: resolve(doc, v, seen) for k, v in node.items()}


def validator(schema):
    Draft202012Validator.check_schema(schema)
    fc = getattr(Draft202012Validator, "FORMAT_CHECKER", None) or \
        getattr(jsonschema, "draft202012_format_checker", None)
    return Draft202012Validator(schema, format_checker=fc)


def leaves(err):
    """err, or for a oneOf/anyOf the errors of its branch that came closest."""
    if not err.context:
        return [err]
    branches = {}
    for sub in err.context:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    return [x for sub in min(branches.values(), key=len) for x in leaves(sub)]


def errors(v, value):
    out = []
    for e in v.iter_errors(value):
        for x in leaves(e):
            msg = x.message if len(x.message) <= 160 else x.message[:160] + "..."
            out.append("%s: %s" % ("/".join(str(p) for p in x.absolute_path) or "(root)",
                                   msg))
    return out


def strict_json(raw):
    """The JSON value of raw bytes, refusing duplicate members and NaN/Infinity."""
    def pairs(kv):
        keys = [k for k, _ in kv]
        if len(set(keys)) != len(keys):
            raise ValueError("duplicate member in %s" % keys)
        return dict(kv)

    def bad_constant(name):
        raise ValueError("not JSON: %s" % name)
    return json.loads(raw.decode("utf-8"), object_pairs_hook=pairs,
                      parse_constant=bad_constant)


class Webhook:
    """The body validator, the header validators and the media types of the webhook."""

    def __init__(self, doc):
        op = doc["webhooks"][WEBHOOK]["post"]
        self.op = op
        content = op["requestBody"]["content"]
        self.media = sorted(content)
        self.body = validator(resolve(doc, content["application/json"]["schema"]))
        self.headers = {}
        for p in op.get("parameters", []):
            p = resolve(doc, p)
            if p["in"] == "header":
                self.headers[p["name"].lower()] = (p.get("required", False),
                                                   validator(p["schema"]))

    def check_request(self, q):
        """Every way request q departs from the document ([] when none)."""
        out = []
        ct = q["headers"].get("content-type", "")
        if ct.split(";")[0].strip().lower() not in self.media:
            out.append("Content-Type %r is none of %s" % (ct, self.media))
        for name, (required, v) in self.headers.items():
            if name not in q["headers"]:
                if required:
                    out.append("no %s header" % name)
                continue
            out += ["%s %r: %s" % (name, q["headers"][name], e)
                    for e in errors(v, q["headers"][name])]
        extra = [h for h in q["headers"] if h.startswith("webhook-") and
                 h not in self.headers]
        if extra:
            out.append("undocumented headers %s" % extra)
        try:
            body = strict_json(q["body"])
        except ValueError as e:
            return out + ["body: %s" % e]
        return out + ["body %s" % e for e in errors(self.body, body)]


def self_test(c, wh):
    """The validators refuse what the document forbids: a pass means something."""
    ex = {"type": "execution.completed", "timestamp": "2025-12-01T00:00:00.123Z",
          "data": {"environment": "prod", "service": "billing", "operation": "charge",
                   "correlationId": "order-42", "status": "completed",
                   "completedAt": "2025-12-01T00:00:00.123Z",
                   "statusUrl": "/v1/executions/prod/billing/charge/order-42"}}
    c.check("the schema accepts an example body", errors(wh.body, ex) == [],
            errors(wh.body, ex))
    bad = []

    def mutate(what, f):
        b = copy.deepcopy(ex)
        f(b)
        bad.append((what, b))
    mutate("a member too many", lambda b: b.update(result=1))
    mutate("a member too many in data", lambda b: b["data"].update(result=1))
    mutate("type execution.completed with status failed",
           lambda b: b["data"].update(status="failed"))
    mutate("status waiting_callback",
           lambda b: (b.update(type="execution.waiting_callback"),
                      b["data"].update(status="waiting_callback")))
    mutate("no statusUrl", lambda b: b["data"].pop("statusUrl"))
    mutate("no timestamp", lambda b: b.pop("timestamp"))
    mutate("a timestamp without milliseconds", lambda b: b.update(
        timestamp="2025-12-01T00:00:00Z"))
    mutate("an absolute statusUrl", lambda b: b["data"].update(
        statusUrl="https://api.example.net" + b["data"]["statusUrl"]))
    mutate("a correlation id with a slash", lambda b: b["data"].update(
        correlationId="a/b"))
    for what, b in bad:
        c.check("the schema refuses a body with %s" % what, errors(wh.body, b) != [])
    good = {"webhook-id": "msg_2KWPBgLlAfxdpx2AI54pPJ", "webhook-timestamp": "1764547200",
            "webhook-signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4="}
    c.check("the documented headers are webhook-id, webhook-timestamp, "
            "webhook-signature, all required",
            sorted(wh.headers) == sorted(good) and all(r for r, _ in wh.headers.values()),
            sorted(wh.headers))
    if sorted(wh.headers) != sorted(good):
        return
    c.check("the header patterns accept example values",
            all(errors(wh.headers[k][1], v) == [] for k, v in good.items()))
    two = good["webhook-signature"] + " v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
    c.check("webhook-signature accepts two values", errors(wh.headers["webhook-signature"][1],
                                                           two) == [])
    for name, value in (("webhook-id", "msg_short"), ("webhook-id", "2KWPBgLlAfxdpx2AI54pPJ"),
                        ("webhook-id", "msg_2KWPBgLlAfxdpx2AI54pP+"),
                        ("webhook-timestamp", "1764547200.5"),
                        ("webhook-timestamp", "-1"),
                        ("webhook-signature", "v2," + good["webhook-signature"][3:]),
                        ("webhook-signature", two + " " + good["webhook-signature"]),
                        ("webhook-signature", good["webhook-signature"][:-2] + "=")):
        c.check("%s refuses %r" % (name, value),
                errors(wh.headers[name][1], value) != [])


def man_example(c, wh):
    """asyncexec-api(7)'s example request matches the document, and its signature is
    right for the example secret it names."""
    try:
        text = open(MAN_API, encoding="utf-8").read()
    except OSError as e:
        c.check("asyncexec-api(7) readable", False, e)
        return
    src = text.split("\n")
    mark = [i for i, ln in enumerate(src) if ln.startswith('.\\" webhook-example')]
    ex = None
    if len(mark) == 1:
        try:
            start = src.index(".EX", mark[0]) + 1
            ex = src[start:src.index(".EE", start)]
        except ValueError:
            ex = None
    sec = re.search(r"\\fB(whsec_[A-Za-z0-9+/=]+)\\fR",
                    "\n".join(src[max(0, mark[0] - 4):mark[0]])) if mark else None
    if not c.check("asyncexec-api(7) has the webhook example and its secret",
                   ex is not None and "" in ex and sec is not None):
        return
    lines = [ln.replace("\\-", "-").replace("\\e", "\\") for ln in ex]
    blank = lines.index("")
    head, body = lines[1:blank], lines[blank + 1].encode()
    hdrs = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head)}
    q = {"headers": hdrs, "body": body}
    c.check("the example's request line is a POST", lines[0].startswith("POST /"), lines[0])
    c.check("the example matches webhooks.%s" % WEBHOOK, wh.check_request(q) == [],
            wh.check_request(q))
    c.check("the example's Content-Length is its body's", hdrs.get("content-length") ==
            str(len(body)), (hdrs.get("content-length"), len(body)))
    key = base64.b64decode(sec.group(1)[len("whsec_"):])
    want = "v1," + base64.b64encode(hmac.new(key, b"%s.%s.%s" % (
        hdrs.get("webhook-id", "").encode(), hdrs.get("webhook-timestamp", "").encode(),
        body), hashlib.sha256).digest()).decode()
    c.check("the example's signature is right for %s" % sec.group(1),
            hdrs.get("webhook-signature") == want, want)
    try:
        b = strict_json(body)
        c.check("the example's timestamp is its completedAt",
                b["timestamp"] == b["data"]["completedAt"])
    except (ValueError, KeyError, TypeError) as e:
        c.check("the example's body is JSON", False, e)


def main():
    ne.need_env()
    c = ne.Checks()
    path = os.environ.get("ASYNCEXEC_OPENAPI_DOC") or SRC_DOC
    raw = open(path, "rb").read()
    doc = json.loads(raw)
    print("document: %s" % path)
    host, port = ne.HTTP.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("GET", "/v1/openapi.json")
    resp = conn.getresponse()
    st, served = resp.status, resp.read()
    conn.close()
    c.check("GET /v1/openapi.json serves src/openapi.json's bytes (%d)" % len(served),
            st == 200 and served == open(SRC_DOC, "rb").read(), st)
    if not c.check("the document has webhooks.%s.post" % WEBHOOK,
                   "post" in doc.get("webhooks", {}).get(WEBHOOK, {})):
        return c.done()
    wh = Webhook(doc)
    self_test(c, wh)
    man_example(c, wh)

    tmp = ne.tmpdir()
    sfx = "%d%d" % (time.time(), os.getpid())
    r = ne.Route("it-o.a_%s/svc.x-%s/op_v2.run-%s" % (sfx, sfx, sfx), "t-no-%s" % sfx)
    rx = ne.Receiver()
    e_one, s_one = ne.webhook_add(r.tenant, rx.url("/ok/one"))
    e_two, s_old = ne.webhook_add(r.tenant, rx.url("/ok/two"))
    rot = json.loads(ne.admin("webhook", "rotate-secret", str(e_two), "--grace-hours", "1",
                              "--json").stdout)
    s_new = rot["secret"]
    e_acc, s_acc = ne.webhook_add(r.tenant, rx.url("/status/202"))
    snd = ne.Sender(tmp, "notify", webhook_allow_http=1,
                    webhook_allow_networks="127.0.0.1/32")
    snd.start()
    want, tokens = {}, {}
    long_cid = ("Az09._:-" * 16)[:128 - len(sfx) - 1] + "-" + sfx
    try:
        cids = {"completed": ["done-" + sfx, "a.B_c:D-" + sfx, long_cid],
                "failed": ["fail-" + sfx],
                "cancelled": ["cx-" + sfx, "cxd-" + sfx],
                "operator": ["op-" + sfx]}
        for kind, lst in cids.items():
            for cid in lst:
                tokens[cid] = r.submit(cid)["pollToken"]
                want[cid] = "failed" if kind == "operator" else kind
        st, _ = r.cancel("cx-" + sfx, tokens["cx-" + sfx])   # unclaimed: cancelled now
        c.check("cancel before a claim: 200", st == 200, st)
        items = {it["correlationId"]: it for it in r.claim(100)}
        c.check("claimed the %d others" % (len(want) - 1), len(items) == len(want) - 1,
                sorted(items))
        for cid, it in items.items():
            if want[cid] == "completed":
                st, _ = r.callback(it, "complete", {"result": {"cid": cid, "n": [1, 2]}})
            elif cid.startswith("fail-"):
                st, _ = r.callback(it, "fail", {"error": {"message": "no", "code": "E1"}})
            elif cid.startswith("cxd-"):
                r.cancel(cid, tokens[cid])                   # claimed: a cancel request
                st, _ = r.callback(it, "cancelled", {})
            else:
                continue
            c.check("%s of %s: 200" % (want[cid], cid), st == 200, st)
        p = ne.admin("execution", "fail", "--tenant", r.tenant, r.route, "op-" + sfx,
                     "--message", "operator", check=False)
        c.check("operator fail: exit 0", p.returncode == 0, p.stderr.strip())
        got = {}
        for name in ("/ok/one", "/ok/two", "/status/202"):
            got[name] = rx.wait(lambda q, n=name: q["path"] == n, len(want), 30)
            c.check("%s received %d requests" % (name, len(want)),
                    len(got[name]) == len(want), len(got[name]))
        time.sleep(1.0)                                      # a repeat would come now
        allq = rx.matching(lambda q: True)
        c.check("no repeats (%d requests in all)" % (3 * len(want)),
                len(allq) == 3 * len(want), len(allq))
        bad = [(q["path"], e) for q in allq for e in wh.check_request(q)]
        c.check("every request matches webhooks.%s (%d): body, headers, media type"
                % (WEBHOOK, len(allq)), allq != [] and not bad, bad[:6])
        check_meaning(c, r, got, want, tokens, (s_one, s_old, s_new, s_acc))
        rows = ne.deliveries(e_acc)
        c.check("202 is delivered, at the first attempt (2XX)",
                len(rows) == len(want) and all(d.get("state") == "delivered" and
                                               str(d.get("attempts")) == "1" for d in rows),
                [(d.get("state"), d.get("attempts")) for d in rows])
        c.check("webhook-id is the delivery's id (webhook deliveries)",
                sorted(d.get("webhook_id") for d in rows) ==
                sorted(q["headers"].get("webhook-id") for q in got["/status/202"]))
        del e_one
    finally:
        rc = snd.stop()
        rx.close()
    c.check("the sender stopped with 0", rc == 0, rc)
    return c.done()


def check_meaning(c, r, got, want, tokens, secrets):
    """What the schema's descriptions say beyond the shape."""
    s_one, s_old, s_new, s_acc = secrets
    one, two = got["/ok/one"], got["/ok/two"]
    c.check("one signature without a rotation",
            all(len(q["headers"].get("webhook-signature", "").split(" ")) == 1
                for q in one + got["/status/202"]))
    c.check("two signatures during the rotation's grace",
            two != [] and all(len(q["headers"].get("webhook-signature", "").split(" ")) == 2
                              for q in two))
    c.check("the signatures verify (Python's hmac)",
            all(ne.verify(s_one, q["headers"], q["body"]) == "" for q in one) and
            all(ne.verify(s_acc, q["headers"], q["body"]) == "" for q in got["/status/202"]))
    c.check("during the rotation each secret verifies one value",
            all(ne.verify(s_old, q["headers"], q["body"]) == "" and
                ne.verify(s_new, q["headers"], q["body"]) == "" for q in two))
    c.check("User-Agent: asyncexec-notify/...",
            all(q["headers"].get("user-agent", "").startswith("asyncexec-notify/")
                for q in one))
    seen = {}
    for q in one:
        try:
            b = strict_json(q["body"])
            seen[b["data"]["correlationId"]] = b
        except (ValueError, KeyError, TypeError):
            pass
    c.check("one event per execution, with its terminal status",
            {k: v["data"]["status"] for k, v in seen.items()} == want,
            {k: v.get("data", {}).get("status") for k, v in seen.items()})
    c.check("the same body to every endpoint of one execution",
            sorted(q["body"] for q in one) == sorted(q["body"] for q in two) ==
            sorted(q["body"] for q in got["/status/202"]))
    env, svc, op = r.route.split("/")
    path_ok, poll_ok, ts_ok = [], [], []
    for cid, b in seen.items():
        d = b["data"]
        ts_ok.append(b["timestamp"] == d["completedAt"])
        path_ok.append((d["environment"], d["service"], d["operation"]) == (env, svc, op) and
                       d["statusUrl"] == "/v1/executions/%s/%s" % (r.route, cid))
        st, pd, _ = ne.api("GET", d["statusUrl"], headers={
            "Authorization": "Bearer " + r.ckey, "X-Poll-Token": tokens[cid]})
        poll_ok.append((cid, st, pd and pd.get("status"), pd and pd.get("completedAt"),
                        d["status"], d["completedAt"]))
    c.check("timestamp is data.completedAt", ts_ok != [] and all(ts_ok))
    c.check("environment, service, operation name the route; statusUrl is the poll path",
            path_ok != [] and all(path_ok))
    c.check("polling statusUrl with the poll token: 200, the same status and completedAt",
            poll_ok != [] and all(x[1] == 200 and x[2] == x[4] and x[3] == x[5]
                                  for x in poll_ok),
            [x for x in poll_ok if not (x[1] == 200 and x[2] == x[4] and x[3] == x[5])][:3])


if __name__ == "__main__":
    sys.exit(main())
