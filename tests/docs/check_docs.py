#!/usr/bin/env python3
"""docs_check: the documents that repeat a fact of the code say what the code says.

usage: check_docs.py SOURCE_DIR ADMIN_BINARY

  1. every key of the configuration list (CONFIG_KEYS in src/**/config.c) has a block
     in scripts/man/asyncexec.conf.5 with its default ("Default: X."), its numeric
     range ("Range: MIN-MAX") and the programs that read it ("Read by:"), and the page
     has no block for a key the list lacks; scripts/examples/asyncexec.conf (the
     packaged example and conffile) has a line for every key ("#key = default" when
     commented out) and none for another;
  2. the SYNOPSIS of scripts/man/asyncexec-admin.8 is, line for line, what
     `asyncexec-admin help` prints;
  3. README.md's endpoint table ("## Endpoints") lists exactly the operations (method
     and path) of src/openapi.json;
  4. every page in scripts/man/ is installed (scripts/debian/install.cmake), renders
     without a warning (groff -man -ww -z, when groff is installed) and the deployment
     guide still marks its blocks ('.\\" deploy-block' in asyncexec-ops.7); no text line
     outside .EX/.EE and .nf/.fi ends a shell command with a backslash continuation or
     a "# comment" (filled, it runs together and fails when copied); every file named
     under /usr/share/doc/asyncexec/examples/ is installed there;
  5. SCHEMA_VERSION (src/repo/repo.h) is the newest migration of sql/, asyncexec-api(7)'s
     /readyz/detail example shows it as schemaVersion and buildSchemaVersion, and
     asyncexec-ops(7) says "This build needs schema version N." with that N; its
     "Today:" list names every migration's "-- compatible-from: N" line of sql/, and
     the oldest build it says stays ready on the newest schema follows from them;
  6. the man pages' figures of a header's constant state it: the claim's clock tolerance
     and reads of ids, the size of the payload a poll gets with its row;
  7. the versions the man pages name (.TH, package file names, asyncexec_build_info,
     User-Agent) and src/openapi.json's info.version (and the version its description
     names) are project(VERSION) of CMakeLists.txt;
  8. the units agree with the code and the guide: the sender's TimeoutStopSec is above
     the largest webhook_timeout plus a database statement's wait; its IPAddressDeny=
     suggestion allows loopback (notify_listen) and the resolver; a documented TCP
     ListenStream= override has FreeBind=yes; adding an app host copies the key file
     (webhook_key_file's default) with the configuration;
  9. each program's options (src/main/main_*.c) are its page's SYNOPSIS options (and
     OPTIONS entries), and --check-config is described as src/check/check.c runs it;
 10. asyncexec-ops(7)'s cron block is scripts/cron/asyncexec-expire.in's lines;
 11. the shipped files' pointers ('README, "Title"', 'asyncexec-x(N), "Title"') name
     sections that exist;
 12. db_pin_file's "Written by:" (asyncexec.conf(5)) names the programs that write it,
     whose units may write /var/lib/asyncexec;
 13. every location of the nginx site's public server that passes to the application
     has limit_req, as asyncexec-api(7) says;
 14. asyncexec-ops(7)'s cluster guide grants the app hosts (not 'localhost') what
     src/repo/repo_check.c probes, a migrate user the DDL privileges too, and migrates
     over TCP;
 15. asyncexec-api(7)'s sample output of scripts/examples/consumer.php has the fields
     consumer.php prints on each such line (poll 200: status, etag, priority, notBefore).

Each failure names the document and the fact; exit 1 when there is one.
"""
import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys

import check_shipped

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
READERS = {"R_FCGI": ["asyncexec-fcgi"], "R_EXPIRE": ["asyncexec-expire"],
           "R_ADMIN": ["asyncexec-admin"], "R_NOTIFY": ["asyncexec-notify"],
           "R_ALL": ["asyncexec-fcgi", "asyncexec-expire", "asyncexec-admin",
                     "asyncexec-notify"]}


def config_table(src):
    """{key: {default, type, min, max, readers}} from config.c's CONFIG_KEYS list."""
    paths = sorted(glob.glob(os.path.join(src, "src", "**", "config.c"), recursive=True))
    if not paths:
        fail("no src/**/config.c")
        return None, {}
    text = open(paths[0], encoding="utf-8").read()
    text = re.sub(r"\\\n\s*", " ", text)    # the X-macro's continued lines
    # X(ID, "key", CT_TYPE, field, "default" | NULL, min, max, readers)
    rows = re.findall(r'\bX\(\s*\w+\s*,\s*"([a-z][a-z0-9_]*)"\s*,\s*(CT_\w+)\s*,\s*\w+\s*,'
                      r'\s*("[^"]*"|NULL)\s*,\s*([^,]+),\s*([^,]+),\s*([^)]+)\)', text)
    if len(rows) < 10:
        fail("%s: the key list CONFIG_KEYS was not found (%d keys); teach "
             "tests/docs/check_docs.py its new shape" % (paths[0], len(rows)))
        return paths[0], {}
    consts = dict(re.findall(r"#define\s+(\w+)\s+(\d+)",
                             open(os.path.join(src, "src", "lib", "api.h")).read()))
    table = {}
    for key, ctype, dflt, lo, hi, readers in rows:
        d = "empty" if dflt == "NULL" or dflt == '""' else dflt.strip('"')
        nums = []
        for v in (lo, hi):
            v = consts.get(v.strip(), v.strip())
            v = re.sub(r"^1UL << (\d+)$", lambda m: str(1 << int(m.group(1))), v)
            nums.append(v)
        progs = []
        for r in readers.split("|"):
            progs += READERS.get(r.strip(), ["?" + r.strip()])
        table[key] = {"default": d, "type": ctype, "min": nums[0], "max": nums[1],
                      "readers": progs}
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
    for key, row in table.items():
        b = blocks.get(key)
        if b is None:
            fail("asyncexec.conf(5) has no block for the key %s (%s)" % (key, cfile))
            continue
        good = True
        m = re.search(r"Default: (.*?)\.(\s|$)", b)
        if not m:
            fail("asyncexec.conf(5), key %s: no 'Default: ...' line" % key)
            good = False
        elif m.group(1).strip() != row["default"]:
            fail("asyncexec.conf(5), key %s: Default: %s, but %s says %s"
                 % (key, m.group(1).strip(), os.path.basename(cfile), row["default"]))
            good = False
        m = re.search(r"Range: (.*?)\.(\s|$)", b)
        if not m:
            fail("asyncexec.conf(5), key %s: no 'Range:' line" % key)
            good = False
        elif row["type"] in ("CT_UINT", "CT_SIZE", "CT_OCTAL"):
            lo, hi = row["min"], row["max"]
            if row["type"] == "CT_OCTAL":
                lo, hi = "%04o" % int(lo, 8), "%04o" % int(hi, 8)
            want = "%s-%s" % (lo, hi)
            if want not in m.group(1).replace("\u2013", "-"):
                fail("asyncexec.conf(5), key %s: Range: %s, but %s says %s"
                     % (key, m.group(1), os.path.basename(cfile), want))
                good = False
        m = re.search(r"Read by: (.*?)\.(\s|$)", b)
        got = re.findall(r"(asyncexec-\w+)\(8\)", m.group(1)) if m else []
        if sorted(got) != sorted(row["readers"]):
            fail("asyncexec.conf(5), key %s: Read by: %s, but %s says %s"
                 % (key, ", ".join(got) or "(none)", os.path.basename(cfile),
                    ", ".join(row["readers"])))
            good = False
        n += good
    for key in blocks:
        if key not in table:
            fail("asyncexec.conf(5) documents %s, which %s does not know" % (key, cfile))
    if n == len(table):
        ok("asyncexec.conf(5): all %d keys of %s, with their defaults, ranges and "
           "readers" % (n, cfile))


def check_example(src):
    """scripts/examples/asyncexec.conf (the packaged conffile) has a line for every key of
    the list, set or commented out ("#key = value"), and none for a key the list lacks."""
    cfile, table = config_table(src)
    if not table:
        return
    path = os.path.join(src, "scripts", "examples", "asyncexec.conf")
    have = []
    for line in open(path, encoding="utf-8"):
        m = re.match(r"#?([a-z][a-z0-9_]*)\s*=", line)
        if m:
            have.append(m.group(1))
    good = True
    for key in table:
        if key not in have:
            fail("scripts/examples/asyncexec.conf has no line for the key %s (%s)"
                 % (key, cfile))
            good = False
    for key in sorted(set(have)):
        if key not in table:
            fail("scripts/examples/asyncexec.conf sets %s, which %s does not know"
                 % (key, cfile))
            good = False
        elif have.count(key) > 1:
            fail("scripts/examples/asyncexec.conf has %d lines for the key %s"
                 % (have.count(key), key))
            good = False
    if good:
        ok("scripts/examples/asyncexec.conf: a line for each of the %d keys of %s"
           % (len(table), cfile))


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
    check_unfilled(mandir, pages)
    check_examples_installed(src, install)
    ops = open(os.path.join(mandir, "asyncexec-ops.7"), encoding="utf-8").read()
    n = len(re.findall(r'^\.\\" deploy-block\n(?:.*\n)*?\.EX\n', ops, re.M))
    if n == 0:
        fail("asyncexec-ops(7) marks no deployment block ('.\\\" deploy-block' before .EX)")
    else:
        ok("asyncexec-ops(7): %d deployment blocks marked for scripts/test-deploy.sh" % n)


def check_unfilled(mandir, pages):
    """A command with a continuation (a trailing \\e, or one followed by more text) or a
    "# comment" on a text line outside .EX/.EE and .nf/.fi: filled, it runs together."""
    bad = 0
    for p in pages:
        block = False
        for i, line in enumerate(open(os.path.join(mandir, p), encoding="utf-8"), 1):
            line = line.rstrip("\n")
            if re.match(r"\.(EX|nf)\b", line):
                block = True
            elif re.match(r"\.(EE|fi)\b", line):
                block = False
            elif not block and not line.startswith((".", "'")) and (
                    re.search(r"\\e(\s|$)", line) or re.search(r"(^|\s)#\s", line)):
                bad += 1
                fail("scripts/man/%s:%d: a command with a continuation or a # comment "
                     "outside .EX/.EE (.nf/.fi): %s" % (p, i, plain(line)[:100]))
    if not bad:
        ok("the man pages' commands with a continuation or a comment are in .EX blocks")


def check_examples_installed(src, install):
    """Every /usr/share/doc/asyncexec/examples/FILE the pages or README.md name is in the
    install() of install.cmake whose DESTINATION is the examples directory."""
    texts = [plain(open(f, encoding="utf-8").read()) for f in
             glob.glob(os.path.join(src, "scripts", "man", "*"))]
    texts.append(open(os.path.join(src, "README.md"), encoding="utf-8").read())
    named = set()
    for t in texts:
        named |= set(re.findall(r"/usr/share/doc/asyncexec/examples/([\w.-]+\w)", t))
    rule = re.search(r"install\(FILES ([^)]*?)DESTINATION \$\{CMAKE_INSTALL_DOCDIR\}/"
                     r"examples", install)
    have = set(os.path.basename(f) for f in rule.group(1).split()) if rule else set()
    for f in sorted(named - have):
        fail("/usr/share/doc/asyncexec/examples/%s is named in the documents but not "
             "installed there (scripts/debian/install.cmake)" % f)
    if named <= have:
        ok("the %d examples the documents name under /usr/share/doc/asyncexec/examples/ "
           "are installed there" % len(named))


# ---- 5. the schema version the build needs -----------------------------------------------
def check_schema(src):
    m = re.search(r"#define\s+SCHEMA_VERSION\s+(\d+)",
                  open(os.path.join(src, "src", "repo", "repo.h"), encoding="utf-8").read())
    newest = max(int(os.path.basename(p)[:3])
                 for p in glob.glob(os.path.join(src, "sql", "[0-9]*.sql")))
    if not m or int(m.group(1)) != newest:
        fail("src/repo/repo.h SCHEMA_VERSION %s, but the newest migration in sql/ is %d"
             % (m.group(1) if m else "(not found)", newest))
        return
    page = " ".join(plain(l) for l in sections(os.path.join(
        src, "scripts", "man", "asyncexec-ops.7")).get("UPGRADES", []))
    n = re.search(r"This build needs schema version (\d+)\.", page)
    if not n or int(n.group(1)) != newest:
        fail("asyncexec-ops(7) UPGRADES: 'This build needs schema version %s.', but it "
             "needs %d (SCHEMA_VERSION)" % (n.group(1) if n else "(not found)", newest))
        return
    ok("asyncexec-ops(7): the build needs schema version %d, as SCHEMA_VERSION and sql/ say"
       % newest)
    api = plain(open(os.path.join(src, "scripts", "man", "asyncexec-api.7"),
                     encoding="utf-8").read())
    shown = re.findall(r'"schemaVersion":(\d+),"buildSchemaVersion":(\d+)', api)
    if not shown or any(int(a) != newest or int(b) != newest for a, b in shown):
        fail("asyncexec-api(7): the /readyz/detail example shows schemaVersion/"
             "buildSchemaVersion %s, but this build needs %d (SCHEMA_VERSION)"
             % (shown or "(not found)", newest))
    else:
        ok("asyncexec-api(7): the /readyz/detail example shows schema version %d" % newest)
    check_compat(src, page, newest)


def compat_lines(src):
    """{version: compatible-from} of the migrations of sql/ that have the line."""
    out = {}
    for p in glob.glob(os.path.join(src, "sql", "[0-9]*.sql")):
        m = re.search(r"^-- compatible-from: (\d+)$",
                      open(p, encoding="utf-8").read(), re.M)
        if m:
            out[int(os.path.basename(p)[:3])] = int(m.group(1))
    return out


def check_compat(src, page, newest):
    """ops.7's "Today: migration 4 is compatible from 3, 5 from 4, ..." is sql/'s
    compatible-from lines, all of them; "the oldest build that stays ready on schema
    N is a schema-B build" is the lowest B that every migration above B serves."""
    want = compat_lines(src)
    today = re.search(r"Today: (.*?)\.", page)
    said = {int(a): int(b) for a, b in re.findall(r"(\d+) (?:is compatible )?from (\d+)",
                                                  today.group(1))} if today else {}
    if said != want:
        fail("asyncexec-ops(7) UPGRADES 'Today:' says %s, sql/'s compatible-from lines %s"
             % (sorted(said.items()), sorted(want.items())))
        return
    oldest = min(b for b in range(1, newest + 1)
                 if all(want.get(v, v) <= b for v in range(b + 1, newest + 1)))
    m = re.search(r"the oldest build that stays ready on schema (\d+) is a schema-(\d+) "
                  r"build", page)
    if not m or (int(m.group(1)), int(m.group(2))) != (newest, oldest):
        fail("asyncexec-ops(7) UPGRADES: 'the oldest build that stays ready on schema %d "
             "is a schema-%d build' (sql/), found %s" % (newest, oldest,
                                                          "'%s'" % m.group(0) if m else
                                                          "nothing"))
        return
    ok("asyncexec-ops(7): 'Today:' lists the %d compatible-from lines of sql/; a "
       "schema-%d build is the oldest ready on %d" % (len(want), oldest, newest))


def check_page_constant(src, header, name, page, phrases, per_unit=1):
    """Each phrase (a regex with one number) of man page page states the constant name of
    src/header, in units of per_unit (1000: the page says seconds, the header ms). The
    constant is a number or a product of numbers, in parentheses or not, or a string
    of one number ("10")."""
    m = re.search(r"#define\s+%s\s+[(\"]?(\d+(?:\s*\*\s*\d+)*)[)\"]?" % name,
                  open(os.path.join(src, header), encoding="utf-8").read())
    text = plain(open(os.path.join(src, "scripts", "man", page), encoding="utf-8").read())
    said = [re.search(p, text) for p in phrases]
    value = math.prod(int(f) for f in m.group(1).split("*")) if m else None
    if not m or not all(said) or any(
            int(n.group(1).replace(",", "")) * per_unit != value for n in said):
        fail("%s: %s (%s) must state %s (%s) of %s" % (
            page, ", ".join("'%s'" % p for p in phrases),
            ", ".join(n.group(1) if n else "not found" for n in said), name,
            value if m else "not found", header))
        return
    ok("%s: %s, as %s" % (page, ", ".join(n.group(0) for n in said), name))


def check_clock_skew(src):
    check_page_constant(src, "src/lib/api.h", "CLAIM_CLOCK_SKEW_MS", "asyncexec-fcgi.8",
                        [r"clock is up to (\d+) s behind"], 1000)


def check_claim_scan(src):
    check_page_constant(src, "src/repo/repo_claim.c", "CLAIM_IDS_PER_MAX", "asyncexec-api.7",
                        [r"reads the first (\d+) \S+ max \+ \d+ claimable ids"])
    check_page_constant(src, "src/repo/repo_claim.c", "CLAIM_IDS_RACE", "asyncexec-api.7",
                        [r"reads the first \d+ \S+ max \+ (\d+) claimable ids"])
    check_page_constant(src, "src/repo/repo_claim.c", "CLAIM_PATH_STMTS", "asyncexec-api.7",
                        [r"in at most (\d+) statements in all"])
    check_page_constant(src, "src/repo/repo_claim.c", "CLAIM_IDS_GROW", "asyncexec-api.7",
                        [r"the queue is read again from its head, (\d+) times as many per read"])


def check_list_scan(src):
    check_page_constant(src, "src/lib/api.h", "LIST_SCAN_OF", "asyncexec-api.7",
                        [r"a page reads at most (\d+) index entries per item"])
    m = re.search(r"#define\s+LIST_SCAN_OF\s+(\d+)",
                  open(os.path.join(src, "src", "lib", "api.h"), encoding="utf-8").read())
    said = re.search(r"reads at most (\d+) entries per item",
                     open(os.path.join(src, "src", "openapi.json"), encoding="utf-8").read())
    if not m or not said or m.group(1) != said.group(1):
        fail("src/openapi.json: the list's 'reads at most N entries per item' (%s) must "
             "state LIST_SCAN_OF (%s) of src/lib/api.h" % (
                 said.group(1) if said else "not found", m.group(1) if m else "not found"))
        return
    ok("src/openapi.json: %s, as LIST_SCAN_OF" % said.group(0))


def check_inline(src):
    check_page_constant(src, "src/repo/repo.h", "REPO_INLINE_MAX", "asyncexec-api.7",
                        [r"A result or error of at most ([\d,]+) bytes comes with"])
    check_page_constant(src, "src/repo/repo.h", "REPO_INLINE_MAX", "asyncexec-ops.7",
                        [r"VARBINARY\((\d+)\)", r"error of at most ([\d,]+) bytes stores",
                         r"at most ([\d,]+) bytes more per ended execution"])


def check_webhook_seen(src):
    check_page_constant(src, "src/lib/webhook.h", "WEBHOOK_SEEN_MS", "asyncexec-admin.8",
                        [r"wait (\d+) ms after their change is committed"])
    check_page_constant(src, "src/lib/webhook.h", "WEBHOOK_SEEN_SLACK_MS",
                        "asyncexec-admin.8", [r"and (\d+) ms more for a cluster node"])
    check_page_constant(src, "src/lib/webhook.h", "WEBHOOK_SEEN_MS", "asyncexec-notify.8",
                        [r"read, less than (\d+) ms before, that no endpoint"])


def check_side_init(src):
    """The Python fixtures' --init-command is tests/util/side.h's SIDE_INIT."""
    m = re.search(r'#define SIDE_INIT\s+"([^"]+)"', open(os.path.join(src, "tests/util/side.h")).read())
    if not m:
        fail("tests/util/side.h: no SIDE_INIT")
        return
    for f in ("tests/notify/notify_env.py", "tests/dash/test_dash.py"):
        if m.group(1) not in open(os.path.join(src, f)).read():
            fail("%s: its mariadb client does not run tests/util/side.h's SIDE_INIT (%s)"
                 % (f, m.group(1)))
    ok("fixture connections: READ COMMITTED (tests/util/side.h) in the Python helpers too")


def check_stop_waits(src):
    """asyncexec-fcgi(8)'s stop deadline and the database waits inside it."""
    check_page_constant(src, "src/serve/worker.h", "STOP_KILL_SECONDS",
                        "asyncexec-fcgi.8",
                        [r"Workers still running (\d+) s after the SIGTERM",
                         r"that must stay below (\d+) s, so db_connect_timeout"])
    check_page_constant(src, "src/db/db_io.h", "DB_IO_TIMEOUT_SECONDS",
                        "asyncexec-fcgi.8",
                        [r"connection waits at most (\d+) s",
                         r"answered 503 at most (\d+) s plus"])
    check_connect_room(src)
    check_io_waits(src)
    check_page_constant(src, "src/db/db.c", "DB_LOCK_WAIT_SECONDS_STR",
                        "asyncexec-fcgi.8",
                        [r"above the (\d+) s a statement waits for a row lock"])


def check_connect_room(src):
    """asyncexec-fcgi(8)'s bound on db_connect_timeout x nodes, and its list per number
    of nodes, as worker_waits_fit computes them (src/serve/worker.c)."""
    def num(path, name):
        m = re.search(r"#define\s+%s\s+(\d+)" % name,
                      open(os.path.join(src, path), encoding="utf-8").read())
        return int(m.group(1)) if m else None
    vals = [num("src/serve/worker.h", "STOP_KILL_SECONDS"),
            num("src/serve/worker.c", "RETIRE_SLACK_MS"),
            num("src/db/db_io.h", "DB_IO_TIMEOUT_SECONDS")]
    text = plain(open(os.path.join(src, "scripts", "man", "asyncexec-fcgi.8"),
                      encoding="utf-8").read())
    said = re.search(r"times the nodes must be (\d+) s or less: (.*?); no value fits "
                     r"(\d+) nodes or more", text)
    if None in vals or not said:
        fail("asyncexec-fcgi.8: no 'times the nodes must be N s or less: ...; no value "
             "fits N nodes or more' (or a constant of worker_waits_fit is gone)")
        return
    room = (vals[0] * 1000 - vals[1] - 1) // 1000 - vals[2]
    bad = []
    if int(said.group(1)) != room:
        bad.append("%s s, not %d" % (said.group(1), room))
    if int(said.group(3)) != room + 1:
        bad.append("no value fits from %s nodes, not %d" % (said.group(3), room + 1))
    for m in re.finditer(r"(\d+) s(?: \(the default\))? for (?:one server|(\d+)(?: (?:or|to) "
                         r"(\d+))?(?: nodes?)?)", said.group(2)):
        lo = int(m.group(2) or 1)
        hi = int(m.group(3) or lo)
        if any(room // n != int(m.group(1)) for n in range(lo, hi + 1)):
            bad.append("'%s' (room %d s)" % (m.group(0), room))
    if bad:
        fail("asyncexec-fcgi.8: db_connect_timeout x nodes: " + "; ".join(bad))
    else:
        ok("asyncexec-fcgi.8: db_connect_timeout x nodes at %d s or less, per number of "
           "nodes, as worker_waits_fit" % room)


def check_io_waits(src):
    """The read timeout of each program's connections (db_io.h), as ops.7 and
    asyncexec-admin(8) state it."""
    h = "src/db/db_io.h"
    check_page_constant(src, h, "DB_IO_TIMEOUT_SECONDS", "asyncexec-ops.7",
                        [r"(\d+) s in asyncexec-fcgi, whose requests"])
    check_page_constant(src, h, "DB_TOOL_IO_SECONDS", "asyncexec-ops.7",
                        [r"(\d+) s in asyncexec-expire, asyncexec-admin"])
    check_page_constant(src, h, "DB_TOOL_IO_SECONDS", "asyncexec-admin.8",
                        [r"the other connections (\d+) s"])
    check_page_constant(src, h, "DB_MIGRATE_IO_SECONDS", "asyncexec-ops.7",
                        [r"and (\d+) s on the connection of asyncexec-admin migrate"])
    check_page_constant(src, h, "DB_MIGRATE_IO_SECONDS", "asyncexec-admin.8",
                        [r"connection waits up to (\d+) s for an answer"])
    check_page_constant(src, "src/admin/admin_exec.c", "MIGRATE_LOCK_WAIT",
                        "asyncexec-admin.8", [r"waits up to (\d+) s for the lock"])


def check_expire_retries(src):
    check_page_constant(src, "src/expire/expire.h", "EXPIRE_RETRY_BASE_MS",
                        "asyncexec-expire.8", [r"jittered pause \((\d+) ms doubling"])
    check_page_constant(src, "src/expire/expire.h", "EXPIRE_RETRY_CAP_MS",
                        "asyncexec-expire.8", [r"ms doubling to (\d+) s\)"], 1000)


def check_held(src):
    check_page_constant(src, "src/serve/held.h", "HELD_MAX", "asyncexec-fcgi.8",
                        [r"A worker holds at most (\d+) connections",
                         r"\bworker_processes at or below (\d+)"])
    check_page_constant(src, "src/serve/worker.c", "RETIRE_MS", "asyncexec-fcgi.8",
                        [r"(\d+) s at most \(RETIRE_MS"], 1000)
    check_page_constant(src, "src/serve/worker.c", "RETIRE_SLACK_MS", "asyncexec-fcgi.8",
                        [r"and (\d+) s for the request's own work"], 1000)
    check_page_constant(src, "src/serve/worker.h", "STOP_KILL_SECONDS", "asyncexec-fcgi.8",
                        [r"is earlier\): (\d+) s less the longest"])
    check_page_constant(src, "src/http/conn.h", "DRAIN_MAX", "asyncexec-fcgi.8",
                        [r"It reads at most (\d+) MiB so"], 1 << 20)


def check_versions(src):
    """Every version a man page names is project(VERSION)."""
    m = re.search(r"project\(\s*asyncexec\s+VERSION\s+([\d.]+)",
                  open(os.path.join(src, "CMakeLists.txt"), encoding="utf-8").read())
    if not m:
        fail("CMakeLists.txt: no project(asyncexec VERSION X)")
        return
    pats = [r'^\.TH .*"asyncexec ([\d.]+)"', r"\basyncexec_(\d+\.\d+\.\d+)",
            r'\bversion="(\d+\.\d+\.\d+)"', r"\basyncexec-\w+/(\d+\.\d+\.\d+)"]
    n = 0
    for page in sorted(glob.glob(os.path.join(src, "scripts", "man", "*.[578]"))):
        for i, line in enumerate(open(page, encoding="utf-8").read().split("\n")):
            for p in pats:
                for v in re.findall(p, plain(line)):
                    n += 1
                    if v != m.group(1):
                        fail("%s:%d: version %s, but project(VERSION) is %s"
                             % (os.path.basename(page), i + 1, v, m.group(1)))
    ok("man pages: %d version(s) named, each %s (project(VERSION))" % (n, m.group(1)))
    check_openapi_version(src, m.group(1))


def check_openapi_version(src, want):
    """src/openapi.json's info.version, and the version its description names, are
    project(VERSION): GET /v1/openapi.json serves that file as the build's API."""
    info = json.load(open(os.path.join(src, "src", "openapi.json"),
                          encoding="utf-8")).get("info", {})
    got = [info.get("version")] + re.findall(r"\bversion (\d+\.\d+\.\d+)",
                                             info.get("description", ""))
    bad = [v for v in got if v != want]
    if bad:
        fail("src/openapi.json: info.version / its description name %s, but "
             "project(VERSION) is %s" % (", ".join(str(v) for v in bad), want))
    else:
        ok("src/openapi.json: info.version and its description name %s "
           "(project(VERSION))" % want)


def unit_text(src, name):
    return open(os.path.join(src, "scripts", "systemd", name), encoding="utf-8").read()


def check_notify_unit(src):
    """The sender's stop deadline and its IPAddressDeny= suggestion."""
    _, table = config_table(src)
    unit = unit_text(src, "asyncexec-notify.service.in")
    stop = re.search(r"(?m)^TimeoutStopSec=(\d+)$", unit)
    io = re.search(r"#define\s+DB_TOOL_IO_SECONDS\s+(\d+)",
                   open(os.path.join(src, "src", "db", "db_io.h"), encoding="utf-8").read())
    wt = table.get("webhook_timeout", {}).get("max")
    if not stop or not io or wt is None or \
            int(stop.group(1)) <= int(wt) + int(io.group(1)):
        fail("asyncexec-notify.service.in: TimeoutStopSec=%s must be above the largest "
             "webhook_timeout (%s, config.c) plus DB_TOOL_IO_SECONDS (%s): the sender "
             "waits that long on SIGTERM" % (stop.group(1) if stop else "(none)", wt,
                                               io.group(1) if io else "(none)"))
    else:
        ok("asyncexec-notify.service.in: TimeoutStopSec=%s > webhook_timeout max %s + %s"
           % (stop.group(1), wt, io.group(1)))
    page = plain(open(os.path.join(src, "scripts", "man", "asyncexec-notify.8"),
                      encoding="utf-8").read())
    said = re.search(r"TimeoutStopSec is above the largest webhook_timeout \((\d+)\)", page)
    if not said or said.group(1) != wt:
        fail("asyncexec-notify.8: 'TimeoutStopSec is above the largest webhook_timeout "
             "(N)' must name %s, webhook_timeout's maximum (config.c)" % wt)
    listen = table.get("notify_listen", {}).get("default", "")
    host = listen.rsplit(":", 1)[0]
    deny = re.search(r"(?m)^#\s+IPAddressDeny=(.*)$", unit)
    allow = re.search(r"(?m)^#\s+IPAddressAllow=(.*)$", unit)
    if deny and "localhost" in deny.group(1).split() and not (
            allow and ("localhost" in allow.group(1).split() or host in allow.group(1))
            and re.search(r"resolver", unit[allow.start():allow.start() + 600])):
        fail("asyncexec-notify.service.in: the IPAddressDeny= suggestion denies localhost "
             "but no IPAddressAllow= line lets through notify_listen's %s and the "
             "resolver" % host)
    else:
        ok("asyncexec-notify.service.in: the IPAddressDeny= suggestion allows %s and the "
           "resolver" % host)


def check_ops_blocks(src):
    """ops.7's socket overrides bind with FreeBind=yes; a new app host gets the key."""
    text = open(os.path.join(src, "scripts", "man", "asyncexec-ops.7"),
                encoding="utf-8").read()
    for blk in re.findall(r"(?ms)^\.EX\n(\[Socket\]\n.*?)^\.EE", text):
        b = plain(blk)
        if re.search(r"(?m)^ListenStream=[\d.\[]", b) and \
                not re.search(r"(?m)^FreeBind=yes$", b):
            fail("asyncexec-ops.7: a [Socket] override binds an address without "
                 "FreeBind=yes (at boot the address may not be configured yet):\n" + b)
    _, table = config_table(src)
    key = table.get("webhook_key_file", {}).get("default", "?")
    step = re.search(r'(?s)\.SS "Adding an app host"\n\.IP 1\. 4\n(.*?)\n\.IP 2',
                     text)
    if not step or key not in plain(step.group(1)):
        fail("asyncexec-ops.7: step 1 of Adding an app host must copy %s "
             "(webhook_key_file) with the configuration" % key)
    else:
        ok("asyncexec-ops.7: a new app host gets %s; socket overrides use FreeBind" % key)


def check_secrets_tried(src):
    for page, phrase in (("asyncexec-admin.8", r"the secrets of the (\d+) newest webhook"),
                         ("asyncexec-notify.8", r"the secrets of the (\d+) newest endpoints"),
                         ("asyncexec-ops.7", r'says "none of the (\d+) newest opens"')):
        check_page_constant(src, "src/check/check.c", "SEALED_TRY", page, [phrase])


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, admin = sys.argv[1], sys.argv[2]
    check_conf(src)
    check_example(src)
    check_admin(src, admin)
    check_endpoints(src)
    check_pages(src)
    check_schema(src)
    check_clock_skew(src)
    check_claim_scan(src)
    check_inline(src)
    check_list_scan(src)
    check_webhook_seen(src)
    check_side_init(src)
    check_held(src)
    check_expire_retries(src)
    check_stop_waits(src)
    check_versions(src)
    check_notify_unit(src)
    check_ops_blocks(src)
    check_secrets_tried(src)
    check_shipped.run(src, sys.modules[__name__])
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
