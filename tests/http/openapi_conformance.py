#!/usr/bin/python3
"""openapi_conformance.py - every HTTP exchange the tests recorded, checked against the
OpenAPI document (src/openapi.json).

Usage: openapi_conformance.py OPENAPI_JSON   (records from $ASYNCEXEC_TEST_RECORD)

tests/http/httpc.c appends one JSON line per exchange to $ASYNCEXEC_TEST_RECORD/*.jsonl
when that variable is set (scripts/test.sh sets it). CTest runs this test after every
other HTTP and fault test (fixture cleanup of openapi_record). Each exchange is matched
to its operation (path template and method; HEAD as GET) or, when there is none, to the
document's x-asyncexec-unmatched rules, and checked:

  status      documented for that operation
  headers     every required header of that response present, every documented one
              valid against its schema (Allow also names the path's methods)
  type        the Content-Type is one the response documents (none: no body)
  body        valid against the media type's schema (JSON Schema 2020-12, $refs into
              the document resolved), unless HEAD or 304

It also fetches GET and HEAD /v1/openapi.json itself and checks that the service serves
this very file, byte for byte. Every failure names the exchange and the rule. Closing
line "N passed, N failed" (N: exchanges); exit 1 on any failure, 77 (CTest: skipped)
when nothing was recorded.
"""
import glob
import http.client
import json
import os
import sys
import warnings

warnings.filterwarnings("ignore", category=DeprecationWarning)
import jsonschema  # noqa: E402  (Debian: python3-jsonschema)
from jsonschema import Draft202012Validator  # noqa: E402

MAX_REPORTED = 40


class Doc:
    """The OpenAPI document, its path templates and cached schema validators."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.raw = f.read()
        self.doc = json.loads(self.raw)
        self.resolver = jsonschema.RefResolver("", self.doc)
        self.templates = []
        for key in self.doc["paths"]:
            segs = key.strip("/").split("/")
            self.templates.append((segs, key))
        self.validators = {}
        for schema in self.doc["components"]["schemas"].values():
            Draft202012Validator.check_schema(schema)

    def deref(self, obj):
        """A Reference Object followed to what it names (within this document)."""
        while isinstance(obj, dict) and "$ref" in obj and len(obj) == 1:
            ref = obj["$ref"]
            if not ref.startswith("#/"):
                raise ValueError("external $ref %s" % ref)
            node = self.doc
            for part in ref[2:].split("/"):
                node = node[part.replace("~1", "/").replace("~0", "~")]
            obj = node
        return obj

    def validator(self, schema):
        key = json.dumps(schema, sort_keys=True)
        v = self.validators.get(key)
        if v is None:
            fc = getattr(Draft202012Validator, "FORMAT_CHECKER", None)
            v = Draft202012Validator(schema, resolver=self.resolver, format_checker=fc)
            self.validators[key] = v
        return v

    def match_path(self, raw_path):
        """The path key whose template the raw path matches, or None."""
        path = raw_path.split("?", 1)[0]
        segs = path.strip("/").split("/") if path.startswith("/") else None
        if segs is None or path.endswith("/") or "" in segs:
            return None
        best, best_lit = None, -1
        for tsegs, key in self.templates:
            if len(tsegs) != len(segs):
                continue
            lit = 0
            for t, s in zip(tsegs, segs):
                if t.startswith("{") and t.endswith("}"):
                    continue
                if t != s:
                    break
                lit += 1
            else:
                if lit > best_lit:
                    best, best_lit = key, lit
        return best


METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def rules_for(doc, ex):
    """(rule set: an operationId or unmatched.*, {status: response}, expected Allow)."""
    unmatched = doc.doc["x-asyncexec-unmatched"]
    method = ex["method"].upper()
    if method == "TRACE":
        return "unmatched.trace", unmatched["trace"], None
    key = doc.match_path(ex["path"])
    if key is None:
        return "unmatched.unknownPath", unmatched["unknownPath"], None
    item = doc.doc["paths"][key]
    m = "get" if method == "HEAD" else method.lower()
    if m in item and m in METHODS:
        op = item[m]
        return op["operationId"] + (" (HEAD)" if method == "HEAD" else ""), \
            op["responses"], None
    served = [x.upper() for x in METHODS if x in item]
    # HEAD is served wherever GET is; the application names them sorted
    allow = ", ".join(sorted(served + (["HEAD"] if "GET" in served else [])))
    return "unmatched.otherMethod (%s)" % key, unmatched["otherMethod"], allow


def header_value(schema, value):
    """The header value as its schema's type wants it (integers are digits on the wire)."""
    if schema.get("type") == "integer" and value.isdigit():
        return int(value)
    return value


def check_headers(doc, resp, ex, allow, errors):
    hdrs = ex["headers"]
    for name, h in (resp.get("headers") or {}).items():
        h = doc.deref(h)
        value = hdrs.get(name.lower())
        if value is None:
            if h.get("required"):
                errors.append("header %s is required and missing" % name)
            continue
        schema = doc.deref(h.get("schema", {}))
        for e in doc.validator(schema).iter_errors(header_value(schema, value)):
            errors.append("header %s: %r: %s" % (name, value, e.message))
    if allow is not None and hdrs.get("allow") not in (None, allow):
        errors.append("Allow is %r, the path serves %r" % (hdrs.get("allow"), allow))


def media_base(ct):
    return ct.split(";", 1)[0].strip().lower()


def check_body(doc, resp, ex, errors):
    content = resp.get("content")
    body = ex["body"].encode("latin-1")
    ctype = ex["headers"].get("content-type")
    head = ex["method"].upper() == "HEAD"
    if not content:
        if body:
            errors.append("the response documents no body, got %d bytes" % len(body))
        return
    if ctype is None:
        errors.append("no Content-Type (documented: %s)" % ", ".join(content))
        return
    media = {media_base(k): v for k, v in content.items()}
    m = media.get(media_base(ctype))
    if m is None:
        errors.append("Content-Type %r is not documented (documented: %s)"
                      % (ctype, ", ".join(content)))
        return
    if head:
        if body:
            errors.append("a HEAD response with a body")
        return
    schema = m.get("schema", {})
    base = media_base(ctype)
    if base == "application/json" or base.endswith("+json"):
        try:
            value = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            errors.append("body is not JSON: %s: %.200r" % (e, body))
            return
    else:
        try:
            value = body.decode("utf-8")
        except UnicodeDecodeError as e:
            errors.append("body is not UTF-8 text: %s" % e)
            return
    errs = sorted(doc.validator(schema).iter_errors(value), key=lambda e: list(e.path))
    for e in errs[:5]:
        where = "/".join(str(p) for p in e.absolute_path) or "(root)"
        errors.append("body at %s: %s" % (where, e.message[:300]))


def check_exchange(doc, ex):
    """The list of broken rules of one exchange (empty: it conforms), and the rule set."""
    name, responses, allow = rules_for(doc, ex)
    status = str(ex["status"])
    resp = responses.get(status)
    if resp is None:
        return name, ["status %s is not documented (documented: %s)"
                      % (status, ", ".join(sorted(responses)))]
    resp = doc.deref(resp)
    errors = []
    check_headers(doc, resp, ex, allow, errors)
    check_body(doc, resp, ex, errors)
    return name, errors


def join_pairs(pairs):
    """Object hook: repeated header names joined as HTTP joins them."""
    out = {}
    for k, v in pairs:
        out[k] = out[k] + ", " + v if k in out and isinstance(v, str) else v
    return out


def load_records(directory):
    exchanges, problems = [], []
    for path in sorted(glob.glob(os.path.join(directory, "*.jsonl"))):
        with open(path, "rb") as f:
            data = f.read()
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        elif lines:
            problems.append("%s: last line unterminated (still being written?)" % path)
            lines.pop()
        for n, line in enumerate(lines, 1):
            try:
                exchanges.append(json.loads(line, object_pairs_hook=join_pairs))
            except ValueError as e:
                problems.append("%s:%d: not a record: %s" % (path, n, e))
    return exchanges, problems


def fetch_self(doc):
    """GET and HEAD /v1/openapi.json through nginx, as exchanges; the GET body must be
    the document itself."""
    hostport = os.environ.get("ASYNCEXEC_TEST_HTTP")
    if not hostport:
        return [], ["ASYNCEXEC_TEST_HTTP is not set: cannot fetch /v1/openapi.json"]
    out, problems = [], []
    for method in ("GET", "HEAD"):
        host, port = hostport.rsplit(":", 1)
        c = http.client.HTTPConnection(host, int(port), timeout=10)
        c.request(method, "/v1/openapi.json")
        r = c.getresponse()
        body = r.read()
        c.close()
        out.append({"program": "openapi_conformance", "pid": os.getpid(), "seq": len(out),
                    "target": hostport, "method": method, "path": "/v1/openapi.json",
                    "status": r.status,
                    "headers": {k.lower(): v for k, v in r.getheaders()},
                    "body": body.decode("latin-1")})
        if method == "GET" and body != doc.raw:
            problems.append("GET /v1/openapi.json: %d bytes, not the %d bytes of the "
                            "document (a stale build?)" % (len(body), len(doc.raw)))
    return out, problems


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: %s OPENAPI_JSON\n" % sys.argv[0])
        return 2
    doc = Doc(sys.argv[1])
    directory = os.environ.get("ASYNCEXEC_TEST_RECORD")
    if not directory or not os.path.isdir(directory):
        print("openapi_conformance: ASYNCEXEC_TEST_RECORD is not a directory: nothing "
              "recorded to check (run through scripts/test.sh)")
        return 77
    exchanges, problems = load_records(directory)
    if not exchanges:
        print("openapi_conformance: no exchange recorded in %s (no other HTTP test ran): "
              "nothing to check" % directory)
        return 77
    own, own_problems = fetch_self(doc)
    exchanges += own
    problems += own_problems
    passed = failed = 0
    seen = {}
    for ex in exchanges:
        name, errors = check_exchange(doc, ex)
        key = (name, ex["status"])
        seen[key] = seen.get(key, 0) + 1
        if not errors:
            passed += 1
            continue
        failed += 1
        if failed <= MAX_REPORTED:
            print("FAIL %s #%s (pid %s): %s %.160s -> %s [rules: %s]"
                  % (ex["program"], ex["seq"], ex["pid"], ex["method"], ex["path"],
                     ex["status"], name))
            for e in errors:
                print("     %s" % e)
    if failed > MAX_REPORTED:
        print("... and %d more failing exchanges" % (failed - MAX_REPORTED))
    for p in problems:
        print("FAIL %s" % p)
    print("openapi_conformance: %d exchanges from %d programs; by rule and status:"
          % (len(exchanges), len({(e["program"], e["pid"]) for e in exchanges})))
    for (name, status), n in sorted(seen.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        print("  %6d  %s -> %s" % (n, name, status))
    failed += len(problems)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
