#!/usr/bin/env python3
"""docs_check: the documents that repeat a fact of the code say what the code says.

usage: check_docs.py SOURCE_DIR ADMIN_BINARY

  1. every key of the configuration table (src/**/config.c) has a block in
     scripts/man/asyncexec.conf.5 with its default ("Default: X."), and the page has
     no block for a key the table lacks;
  2. the SYNOPSIS of scripts/man/asyncexec-admin.8 is, line for line, what
     `asyncexec-admin help` prints;
  3. README.md's endpoint table ("## Endpoints") lists exactly the operations (method
     and path) of src/openapi.json;
  4. every page in scripts/man/ is installed (scripts/debian/install.cmake), renders
     without a warning (groff -man -ww -z, when groff is installed) and the deployment
     guide still marks its blocks ('.\\" deploy-block' in asyncexec-ops.7).

Each failure names the document and the fact; exit 1 when there is one.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL " + msg)


def ok(msg):
    print("ok   " + msg)


# roff source -> plain text: font escapes dropped, the usual escapes undone
ESCAPES = {"-": "-", "e": "\\", "&": "", "(aq": "'", "(ga": "`", "(en": "-",
           "(em": "-", "(<=": "<=", "(>=": ">=", "(mu": "x", "(bu": "*", " ": " ", ":": ""}


def plain(s):
    s = re.sub(r"\\f[BIRP]|\\f\(..|\\f\[[A-Z]*\]", "", s)
    return re.sub(r"\\(\(..|[-e& :])", lambda m: ESCAPES.get(m.group(1), m.group(0)), s)


def sections(path):
    """{'NAME': [lines], ...} of a man page (.SH titles as written)."""
    out, cur = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f.read().split("\n"):
            if line.startswith(".SH "):
                cur = line[4:].strip().strip('"')
                out[cur] = []
            elif cur is not None:
                out[cur].append(line)
    return out


# ---- 1. configuration keys ---------------------------------------------------------------
def config_table(src):
    paths = sorted(glob.glob(os.path.join(src, "src", "**", "config.c"), recursive=True))
    if not paths:
        fail("no src/**/config.c")
        return None, {}
    text = open(paths[0], encoding="utf-8").read()
    # { "key", CT_TYPE, F(field), ... }
    keys = re.findall(r'\{\s*"([a-z][a-z0-9_]*)"\s*,\s*(CT_\w+)\s*,\s*F\((\w+)\)', text)
    if len(keys) < 10:
        fail("%s: the key table was not found (%d keys); teach tests/docs/check_docs.py "
             "its new shape" % (paths[0], len(keys)))
        return paths[0], {}
    m = re.search(r"\nconfig_defaults\([^)]*\)\s*\{(.*?)\n\}", text, re.S)
    body = m.group(1) if m else ""
    defaults = {}
    for field, value in re.findall(r"c->(\w+)\s*=\s*([^;]+);", body):
        defaults[field] = value.strip()
    for field, value in re.findall(r'snprintf\(c->(\w+),[^,]+,\s*"([^"]*)"\)', body):
        defaults[field] = value
    table = {}
    for key, ctype, field in keys:
        v = defaults.get(field)
        if v is None:
            v = "empty" if ctype == "CT_STR" else "0"
        elif ctype == "CT_LEVEL":
            v = v.replace("LOG_", "").lower()
        elif v == "":
            v = "empty"
        table[key] = v
    return paths[0], table


def conf_page_blocks(path):
    """{key: block text} from the .TP blocks of KEYS whose tag starts with the key."""
    blocks, cur = {}, None
    lines = sections(path).get("KEYS", [])
    i = 0
    while i < len(lines):
        line = lines[i]
        if line == ".TP" and i + 1 < len(lines):
            tag = plain(re.sub(r"^\.B[IR]? ", "", lines[i + 1]))
            cur = tag.split()[0] if tag.split() else None
            if cur:
                blocks[cur] = []
            i += 2
            continue
        if line.startswith(".SS") or line.startswith(".SH"):
            cur = None
        elif cur:
            blocks[cur].append(plain(line))
        i += 1
    return {k: " ".join(v) for k, v in blocks.items()}


def check_conf(src):
    cfile, table = config_table(src)
    if not table:
        return
    page = os.path.join(src, "scripts", "man", "asyncexec.conf.5")
    blocks = conf_page_blocks(page)
    n = 0
    for key, default in table.items():
        b = blocks.get(key)
        if b is None:
            fail("asyncexec.conf(5) has no block for the key %s (%s)" % (key, cfile))
            continue
        m = re.search(r"Default: (.*?)\.(\s|$)", b)
        if not m:
            fail("asyncexec.conf(5), key %s: no 'Default: ...' line" % key)
        elif m.group(1).strip() != default:
            fail("asyncexec.conf(5), key %s: Default: %s, but %s says %s"
                 % (key, m.group(1).strip(), os.path.basename(cfile), default))
        else:
            n += 1
        for word in ("Range:", "Read by:"):
            if word not in b:
                fail("asyncexec.conf(5), key %s: no '%s' line" % (key, word))
    for key in blocks:
        if key not in table:
            fail("asyncexec.conf(5) documents %s, which %s does not know" % (key, cfile))
    if n == len(table):
        ok("asyncexec.conf(5): all %d keys of %s, with their defaults" % (n, cfile))


# ---- 2. asyncexec-admin's synopsis --------------------------------------------------------
def help_lines(admin):
    r = subprocess.run([admin, "help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=30)
    if r.returncode != 0:
        fail("asyncexec-admin help exited %d: %s" % (r.returncode, r.stderr.strip()))
        return []
    out = []
    for line in r.stdout.split("\n"):
        if line.startswith("usage: "):
            out.append(line[len("usage: "):].strip())
        elif line.startswith("       asyncexec-admin"):
            out.append(line.strip())
        elif line.startswith("  "):
            out.append("asyncexec-admin " + line.strip())
    return [" ".join(x.split()) for x in out]


def check_admin(src, admin):
    want = help_lines(admin)
    page = os.path.join(src, "scripts", "man", "asyncexec-admin.8")
    syn = sections(page).get("SYNOPSIS", [])
    have = [" ".join(plain(x).split()) for x in syn if x and not x.startswith(".")]
    if not want:
        fail("asyncexec-admin help printed no synopsis")
        return
    if have == want:
        ok("asyncexec-admin(8) SYNOPSIS: the %d lines of 'asyncexec-admin help'" % len(want))
        return
    for line in want:
        if line not in have:
            fail("asyncexec-admin(8) SYNOPSIS lacks: %s" % line)
    for line in have:
        if line not in want:
            fail("asyncexec-admin(8) SYNOPSIS has, but 'asyncexec-admin help' does not: %s" % line)
    if sorted(have) == sorted(want):
        fail("asyncexec-admin(8) SYNOPSIS: the lines of 'asyncexec-admin help' in another order")


# ---- 3. the README's endpoint table ------------------------------------------------------
def check_endpoints(src):
    spec = json.load(open(os.path.join(src, "src", "openapi.json"), encoding="utf-8"))
    want = set()
    for path, item in spec.get("paths", {}).items():
        for method in ("get", "put", "post", "delete", "patch"):
            if method in item:
                want.add((method.upper(), path))
    readme = open(os.path.join(src, "README.md"), encoding="utf-8").read().split("\n")
    have, inside = set(), False
    for line in readme:
        if line.startswith("## "):
            inside = line.strip() == "## Endpoints"
        elif inside and line.startswith("|"):
            for m in re.finditer(r"`(GET|PUT|POST|DELETE|PATCH) (/[^` ]*)`", line):
                have.add((m.group(1), m.group(2)))
    for op in sorted(want - have):
        fail("README.md's endpoint table lacks %s %s (src/openapi.json)" % op)
    for op in sorted(have - want):
        fail("README.md's endpoint table has %s %s, which src/openapi.json does not" % op)
    if want == have:
        ok("README.md's endpoint table: the %d operations of src/openapi.json" % len(want))


# ---- 4. the pages themselves --------------------------------------------------------------
def check_pages(src):
    mandir = os.path.join(src, "scripts", "man")
    pages = sorted(os.listdir(mandir))
    install = open(os.path.join(src, "scripts", "debian", "install.cmake"), encoding="utf-8").read()
    for p in pages:
        if not re.search(r"(?<![\w.-])%s(?![\w.-])" % re.escape(p), install):
            fail("scripts/man/%s is not installed by scripts/debian/install.cmake" % p)
    groff = shutil.which("groff")
    if groff:
        bad = 0
        for p in pages:
            r = subprocess.run([groff, "-man", "-ww", "-z", os.path.join(mandir, p)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True, timeout=60)
            if r.returncode != 0 or r.stderr.strip():
                bad += 1
                fail("scripts/man/%s: groff -man -ww: %s" % (p, r.stderr.strip()[:500]))
        if not bad:
            ok("the %d man pages render without a warning" % len(pages))
    else:
        print("skip groff is not installed: the pages were not rendered")
    ops = open(os.path.join(mandir, "asyncexec-ops.7"), encoding="utf-8").read()
    n = len(re.findall(r'^\.\\" deploy-block\n(?:.*\n)*?\.EX\n', ops, re.M))
    if n == 0:
        fail("asyncexec-ops(7) marks no deployment block ('.\\\" deploy-block' before .EX)")
    else:
        ok("asyncexec-ops(7): %d deployment blocks marked for scripts/test-deploy.sh" % n)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, admin = sys.argv[1], sys.argv[2]
    check_conf(src)
    check_admin(src, admin)
    check_endpoints(src)
    check_pages(src)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
