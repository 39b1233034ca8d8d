#!/usr/bin/env python3
"""unit_layers: the layer rules of README.md ("Layout"), checked on the source.

usage: check_layers.py SOURCE_DIR

CMake keeps a layer's headers off the include path of the layers below it, but a
system header (<fcgiapp.h>, <mysql.h>) is on every include path, and a header
may be reached by a relative path: this reads every #include of src/ and fails on

  1. a project header of a folder the including folder may not use (ALLOWED);
  2. a library header outside the folders (or files) that own it (OWNERS);
  3. a file of src/ or tests/ over MAX_LINES lines (generated and vendored files aside);
  4. a statement of src/repo that sets a terminal status without the outbox mark;
  5. an UPDATE or SELECT of src/repo of one execution by id and a further condition
     not pinned to the primary key (FORCE INDEX (PRIMARY)).
"""
import glob
import os
import re
import sys

# folder -> the folders whose headers it may include (itself always)
ALLOWED = {
    "lib": [],
    "db": ["lib"],
    "repo": ["db", "lib"],
    "check": ["repo", "lib"],
    "http": ["lib"],
    "handlers": ["http", "repo", "lib"],
    "serve": ["handlers", "http", "repo", "db", "lib"],
    "admin": ["check", "repo", "lib"],
    "expire": ["repo", "lib"],
    "notify": ["repo", "lib"],
    "main": ["serve", "handlers", "http", "admin", "expire", "notify", "check", "repo",
             "db", "lib"],
}
# library header (a prefix of the include) -> where it may be included
OWNERS = {
    "mysql.h": ["db/", "repo/"],
    "mysqld_error.h": ["db/", "repo/"],
    "errmsg.h": ["db/", "repo/"],
    "openssl/": ["lib/crypto.c"],
    "fcgiapp.h": ["http/"],
    "fcgi_stdio.h": [],
    "curl/": ["notify/"],
}
MAX_LINES = 800
SKIP_DIRS = {"node_modules", ".git"}

failures = 0


def fail(msg):
    global failures
    failures += 1
    print("FAIL " + msg)


def main(root):
    src = os.path.join(root, "src")
    owner = {}    # header name -> folder
    for d in sorted(os.listdir(src)):
        if os.path.isdir(os.path.join(src, d)):
            if d not in ALLOWED:
                fail("src/%s: a folder the layer rules do not name (tests/layers/"
                     "check_layers.py ALLOWED, README.md Layout)" % d)
            for f in os.listdir(os.path.join(src, d)):
                if f.endswith(".h"):
                    owner[f] = d
    n, before = 0, failures
    for d in sorted(ALLOWED):
        base = os.path.join(src, d)
        if not os.path.isdir(base):
            continue
        for f in sorted(os.listdir(base)):
            if not f.endswith((".c", ".h")):
                continue
            rel = d + "/" + f
            for i, line in enumerate(open(os.path.join(base, f), encoding="utf-8"), 1):
                m = re.match(r'\s*#\s*include\s*([<"])([^>"]+)[>"]', line)
                if not m:
                    continue
                n += 1
                name = m.group(2)
                if m.group(1) == '"':
                    h = os.path.basename(name)
                    if "/" in name:
                        fail("src/%s:%d: #include \"%s\": a path; include headers by "
                             "name" % (rel, i, name))
                    hd = owner.get(h)
                    if hd is None:
                        continue    # generated (migrations.c's, openapi.c's) or local
                    if hd != d and hd not in ALLOWED.get(d, []):
                        fail("src/%s:%d: includes %s of src/%s, a layer %s may not use "
                             "(README.md Layout)" % (rel, i, h, hd, d))
                    continue
                for lib, places in OWNERS.items():
                    if name == lib or (lib.endswith("/") and name.startswith(lib)):
                        if not any(rel.startswith(p) for p in places):
                            fail("src/%s:%d: includes <%s>, which only %s may"
                                 % (rel, i, name, ", ".join(places) or "no file"))
    if failures == before:
        print("ok   %d includes of src/ follow the layer rules" % n)
    long = 0
    for top in ("src", "tests"):
        for dp, dns, fns in os.walk(os.path.join(root, top)):
            dns[:] = [x for x in dns if x not in SKIP_DIRS]
            for f in fns:
                if not f.endswith((".c", ".h", ".py", ".sh", ".lua")):
                    continue
                p = os.path.join(dp, f)
                k = sum(1 for _ in open(p, encoding="utf-8", errors="replace"))
                if k > MAX_LINES:
                    long += 1
                    fail("%s: %d lines, over %d: split it" % (os.path.relpath(p, root), k,
                                                               MAX_LINES))
    if long == 0:
        print("ok   no file of src/ or tests/ over %d lines" % MAX_LINES)
    check_outbox(root)
    check_update_pin(root)
    if failures:
        print("%d failure(s)" % failures)
        return 1
    return 0


TERMINAL = re.compile(r"status = '(completed|failed|expired|cancelled)'")


def repo_statements(root):
    """(file, entry name, body, SQL text) of each statement table entry of src/repo/*.c,
    a statement macro with the mark as its argument expanded."""
    for f in sorted(glob.glob(os.path.join(root, "src", "repo", "*.c"))):
        text = open(f, encoding="utf-8").read()
        # statement macros with the mark as their argument: #define NAME(m) ...
        macros = {d.group(1): d.group(2).replace("\\\n", " ") for d in re.finditer(
            r"#define (\w+)\(m\)((?:.*\\\n)*.*)", text)}
        # one statement table entry: [NAME] = { "..." ... } or { MACRO(mark), ... }
        for m in re.finditer(r"\[(\w+)\]\s*=\s*\{(.*?)\},", text, re.S):
            body = m.group(2)
            call = re.match(r"\s*(\w+)\((.*)\)\s*,", body, re.S)
            if call and call.group(1) in macros:
                text_m = macros[call.group(1)]
                for _ in range(3):   # a macro built on another: FIN_SEALED(m)
                    inner = re.match(r"\s*(\w+)\(m\)", text_m)
                    if not (inner and inner.group(1) in macros):
                        break
                    text_m = macros[inner.group(1)] + text_m[inner.end():]
                body = text_m + " " + call.group(2)
            sql = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', body))
            yield os.path.relpath(f, root), m.group(1), body, sql


def counted(n, before, what, check, ok):
    """The end of a check over repo_statements: it found n statements of its shape (at
    least 8, else the statements changed shape under it), failures was before at its
    start."""
    if n < 8:
        fail("src/repo: found %d %s, expected at least 8: teach %s the statements' new "
             "shape" % (n, what, check))
    elif failures == before:
        print("ok   %d %s" % (n, ok))


def check_outbox(root):
    """Every statement of src/repo that sets a terminal status sets the outbox mark."""
    n, before = 0, failures
    for f, name, body, sql in repo_statements(root):
        if not (sql.lstrip().startswith("UPDATE") or "IDS_JOIN" in body):
            continue
        sets = sql.split(" WHERE ")[0]
        if TERMINAL.search(sets):
            n += 1
            if "SET_NOTIFY(" not in body and "NOTIFY_NONE" not in body:
                fail("%s: %s sets a terminal status without SET_NOTIFY or NOTIFY_NONE "
                     "(the webhook outbox mark, sql/010)" % (f, name))
    counted(n, before, "terminal transitions", "check_outbox",
            "terminal transitions of src/repo set the outbox mark")


def check_update_pin(root):
    """Every UPDATE or SELECT of src/repo that names one execution by id and tests more
    than the id is pinned to the primary key (the comment above FIN_COMPLETE in
    src/repo/repo_stmts.c says why)."""
    n, before = 0, failures
    shape = re.compile(r"^(UPDATE s2r_async_execution (?P<upin>FORCE INDEX \(PRIMARY\) )?SET "
                       r"|SELECT .*? FROM s2r_async_execution (?:e )?"
                       r"(?P<spin>FORCE INDEX \(PRIMARY\) )?WHERE )", re.S)
    for f, name, body, sql in repo_statements(root):
        m = shape.match(sql.lstrip())
        if m is None:
            continue
        # a SELECT's own WHERE (where the match ends), not a subquery's before it
        where = (sql.lstrip()[m.end():] if m.group(0).startswith("SELECT") else
                 sql.split(" WHERE ", 1)[1] if " WHERE " in sql else "")
        if not re.match(r"(e\.)?id = \? AND ", where):
            continue
        if sql.lstrip().startswith("UPDATE") and not re.search(r"\bstatus\b", where):
            continue
        n += 1
        if m.group("upin") is None and m.group("spin") is None:
            fail("%s: %s reads or updates one execution by id and more without FORCE "
                 "INDEX (PRIMARY)" % (f, name))
    counted(n, before, "statements by id and more", "check_update_pin",
            "statements of one execution by id and more are pinned to the primary key")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
