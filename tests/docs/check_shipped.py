"""check_shipped: the checks 9-15 of check_docs.py (see its docstring): the programs'
options and --check-config, the cron block, the shipped files' pointers, db_pin_file's
writers, the public server's rate limit, the cluster guide's database users, the sample
output of the example consumer.

check_docs.py calls run(SOURCE_DIR, itself): the failures are counted there.
"""
import glob
import os
import re

h = None    # check_docs, for fail, ok, plain, sections, conf_page_blocks, unit_text

# ---- 9. each program's options, as its man page states them -----------------------------
PROGRAMS = ("fcgi", "expire", "notify", "admin")


def program_options(src, prog):
    """The options (--name) src/main/main_PROG.c compares arguments with, and those its
    usage text names."""
    text = open(os.path.join(src, "src", "main", "main_%s.c" % prog),
                encoding="utf-8").read()
    return set(re.findall(r'"(--[a-z][a-z-]*)"', text)) | \
        set(re.findall(r'(?<![\w-])(--[a-z][a-z-]*)', " ".join(
            re.findall(r'"((?:[^"\\]|\\.)*)"', text))))


def page_options(lines):
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", " ".join(h.plain(l) for l in lines)))


def check_options(src):
    """Every option of a program (src/main/main_*.c) is in its man page's SYNOPSIS, and
    the SYNOPSIS names no other; fcgi, expire and notify describe each in OPTIONS
    (--help and --version aside)."""
    for prog in PROGRAMS:
        want = program_options(src, prog)
        page = "asyncexec-%s.8" % prog
        secs = h.sections(os.path.join(src, "scripts", "man", page))
        have = page_options(secs.get("SYNOPSIS", []))
        bad = False
        for o in sorted(want - have):
            h.fail("%s SYNOPSIS lacks %s (src/main/main_%s.c)" % (page, o, prog))
            bad = True
        for o in sorted(have - want):
            h.fail("%s SYNOPSIS names %s, which src/main/main_%s.c does not take"
                 % (page, o, prog))
            bad = True
        if prog != "admin":
            opts = page_options(l for l in secs.get("OPTIONS", [])
                                if re.match(r"\.B[IR]? ", l))
            for o in sorted(want - opts - {"--help", "--version"}):
                h.fail("%s OPTIONS has no entry for %s (src/main/main_%s.c)"
                     % (page, o, prog))
                bad = True
        if not bad:
            h.ok("%s: SYNOPSIS and OPTIONS name the %d options of src/main/main_%s.c"
               % (page, len(want), prog))


def check_check_config(src):
    """--check-config runs check_run (src/check/check.c) in every program that takes it:
    its page says so in OPTIONS with check.c's levels and exit statuses."""
    levels = re.findall(r'say\(k, "(\w+)"', open(os.path.join(
        src, "src", "check", "check.c"), encoding="utf-8").read())
    if set(levels) != {"ok", "warn", "error"}:
        h.fail("src/check/check.c: its lines are %s, not ok, warn and error; teach "
             "tests/docs/check_docs.py" % ", ".join(sorted(set(levels))))
        return
    say = "ok, warn or error"
    for prog in ("fcgi", "expire", "notify"):
        main = open(os.path.join(src, "src", "main", "main_%s.c" % prog),
                    encoding="utf-8").read()
        if "check_run(" not in main:
            continue
        page = "asyncexec-%s.8" % prog
        lines = h.sections(os.path.join(src, "scripts", "man", page)).get("OPTIONS", [])
        text = " ".join(" ".join(h.plain(l) for l in lines).split())
        m = re.search(r"--check-config (.*?)(?= \.TP|$)", text)
        block = re.sub(r"(?m)^\.\S+\s*", "", m.group(1)) if m else ""
        need = ["One line per check, " + say, "Exit 0 when no line is an error, 1 "
                "otherwise, 2 when the file does not parse"]
        miss = [n for n in need if n not in block]
        if miss:
            h.fail("%s OPTIONS, --check-config: must say '%s' (src/check/check.c, "
                 "check_run)" % (page, "', '".join(miss)))
        else:
            h.ok("%s: --check-config as src/check/check.c runs it" % page)


# ---- 10. the cron lines of the guide are the packaged cron file -------------------------
INSTALL_PATHS = {"@ASYNCEXEC_SBINDIR@": "/usr/sbin",
                 "@ASYNCEXEC_CONF@": "/etc/asyncexec/asyncexec.conf"}


def cron_lines(text):
    """The non-comment lines of a cron file, install paths filled in, a PATH= without
    repeated directories."""
    out = []
    for line in text.split("\n"):
        if not line.strip() or line.startswith("#"):
            continue
        for k, v in INSTALL_PATHS.items():
            line = line.replace(k, v)
        if line.startswith("PATH="):
            dirs = line[5:].split(":")
            line = "PATH=" + ":".join(d for i, d in enumerate(dirs) if d not in dirs[:i])
        out.append(line)
    return out


def check_cron(src):
    """asyncexec-ops(7)'s cron lines (the block after "The cron line") are those of
    scripts/cron/asyncexec-expire.in, which the package installs as the example."""
    want = cron_lines(open(os.path.join(src, "scripts", "cron", "asyncexec-expire.in"),
                           encoding="utf-8").read())
    ops = open(os.path.join(src, "scripts", "man", "asyncexec-ops.7"),
               encoding="utf-8").read()
    m = re.search(r"(?ms)^The cron line .*?^\.EX\n(.*?)^\.EE", ops)
    have = cron_lines(h.plain(m.group(1))) if m else []
    if have != want:
        h.fail("asyncexec-ops(7)'s cron block (after 'The cron line') must be the lines of "
             "scripts/cron/asyncexec-expire.in with the install paths:\n  %s\nnot\n  %s"
             % ("\n  ".join(want), "\n  ".join(have) or "(no block)"))
    else:
        h.ok("asyncexec-ops(7): the cron block is scripts/cron/asyncexec-expire.in's %d "
           "lines" % len(want))


# ---- 11. the shipped files' pointers into the documents --------------------------------
SHIPPED = ("scripts/systemd", "scripts/cron", "scripts/examples", "scripts/debian", "nginx")


def doc_titles(src, doc):
    """The section titles of README.md or of man page doc ("asyncexec-ops(7)"), in lower
    case: headings, .SH/.SS titles and the bold lead-ins of paragraphs."""
    if doc.startswith("README"):
        text = open(os.path.join(src, "README.md"), encoding="utf-8").read()
        return [t.strip().lower() for t in re.findall(r"(?m)^#+ (.*)$", text)]
    m = re.match(r"(asyncexec[-.\w]*)\((\d)\)$", doc)
    path = os.path.join(src, "scripts", "man", "%s.%s" % m.groups()) if m else ""
    if not os.path.exists(path):
        return None
    text = open(path, encoding="utf-8").read()
    titles = [h.plain(t).strip().strip('"') for t in
              re.findall(r"(?m)^\.S[HS] (.*)$", text)]
    titles += [h.plain(t) for t in re.findall(r"(?m)^\\fB(.*?)\\f[RP]", text)]
    return [t.strip().lower() for t in titles]


def check_pointers(src):
    """Each 'README, "Title"' or 'asyncexec-x(N), "Title"' in a shipped file (units, cron
    file, examples, package scripts, nginx site) names a section that exists."""
    n = 0
    for d in SHIPPED:
        for path in sorted(glob.glob(os.path.join(src, d, "*"))):
            if not os.path.isfile(path):
                continue
            try:
                text = open(path, encoding="utf-8").read()
            except UnicodeDecodeError:
                continue
            text = re.sub(r"\n\s*#\s*", " ", text)    # a pointer across comment lines
            for doc, title in re.findall(r'(README(?:\.md)?|asyncexec[-.\w]*\(\d\)),? '
                                         r'"([^"]+)"', text):
                n += 1
                titles = doc_titles(src, doc)
                t = title.lower()
                if titles is None or not any(x == t or x.startswith(t + " ")
                                             or x.startswith(t + ".") for x in titles):
                    h.fail('%s: %s has no section "%s"' % (os.path.relpath(path, src),
                                                         doc, title))
                    n -= 1
    h.ok("shipped files: %d pointers into the README and the man pages name a section" % n)


# ---- 12. who writes db_pin_file, and whose unit lets it -------------------------------
def pin_writers(src):
    """The programs that write db_pin_file: pin_save writes only for a process with the
    shared page (pin_move is 0 without it), which pin_init maps in src/serve/master.c;
    so the programs whose main runs master_run. None when the code changed shape."""
    hits = [p for p in glob.glob(os.path.join(src, "src", "**", "*.c"), recursive=True)
            if re.search(r"\bpin_init\(\)", open(p, encoding="utf-8").read())
            and not p.endswith(os.path.join("db", "pin.c"))]
    if [os.path.relpath(p, src) for p in hits] != ["src/serve/master.c"]:
        return None
    return sorted("asyncexec-" + re.sub(r"^main_|\.c$", "", os.path.basename(p))
                  for p in glob.glob(os.path.join(src, "src", "main", "main_*.c"))
                  if "master_run(" in open(p, encoding="utf-8").read())


def check_pin_writers(src):
    """asyncexec.conf(5)'s db_pin_file block names the programs that write the file
    ("Written by:"), and the packaged unit of each lets it write /var/lib/asyncexec."""
    want = pin_writers(src)
    if want is None:
        h.fail("pin_init() is called elsewhere than src/serve/master.c: teach "
             "tests/docs/check_docs.py which programs write db_pin_file")
        return
    b = h.conf_page_blocks(os.path.join(src, "scripts", "man", "asyncexec.conf.5"))
    m = re.search(r"Written by: (.*?)\.(\s|$)", b.get("db_pin_file", ""))
    got = sorted(re.findall(r"(asyncexec-\w+)\(8\)", m.group(1))) if m else []
    bad = False
    if got != want:
        h.fail("asyncexec.conf(5), db_pin_file: 'Written by: %s', but it is written by %s (the "
             "programs that run master_run, which maps the pin's shared page)"
             % (", ".join(got) or "(none)", ", ".join(want)))
        bad = True
    for prog in want:
        unit = h.unit_text(src, prog + ".service.in")
        if "ProtectSystem=strict" in unit and not re.search(
                r"(?m)^(StateDirectory=asyncexec|ReadWritePaths=-?/var/lib/asyncexec)$",
                unit):
            h.fail("%s.service.in: ProtectSystem=strict without StateDirectory=asyncexec "
                 "or ReadWritePaths=/var/lib/asyncexec, but %s writes db_pin_file"
                 % (prog, prog))
            bad = True
    if not bad:
        h.ok("db_pin_file: written by %s, whose unit may write /var/lib/asyncexec"
           % ", ".join(want))


# ---- 13. the rate limit of the public server -------------------------------------------
def nginx_blocks(text, head):
    """The bodies of the blocks "HEAD {...}" of an nginx file (comments dropped), each
    with its head's argument: [(arg, body)]."""
    text = re.sub(r"(?m)#.*$", "", text)
    out = []
    for m in re.finditer(r"(?m)^\s*%s\s*([^{;]*)\{" % head, text):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        out.append((m.group(1).strip(), text[m.end():i - 1]))
    return out


def check_rate_limit(src):
    """Every location of the public server (the one on port 80) that passes to the
    application has limit_req, as asyncexec-api(7) says of nginx's 429."""
    text = open(os.path.join(src, "nginx", "asyncexec.conf"), encoding="utf-8").read()
    public = [b for _, b in nginx_blocks(text, "server")
              if re.search(r"(?m)^\s*listen 80;", b)]
    if len(public) != 1:
        h.fail("nginx/asyncexec.conf: no one server with 'listen 80;'")
        return
    bad = [arg for arg, b in nginx_blocks(public[0], "location")
           if "fastcgi_pass" in b and "limit_req " not in b]
    for arg in bad:
        h.fail("nginx/asyncexec.conf: location %s passes to the application without "
             "limit_req (asyncexec-api(7): the rate limit covers every such path)" % arg)
    api = h.plain(open(os.path.join(src, "scripts", "man", "asyncexec-api.7"),
                     encoding="utf-8").read())
    if "on every path the public server passes to the application" not in api:
        h.fail("asyncexec-api(7), 429: must say the rate limit is 'on every path the "
             "public server passes to the application'")
        bad.append("api.7")
    if not bad:
        h.ok("nginx/asyncexec.conf: every location of the public server that passes to the "
           "application is rate-limited")


# ---- 14. the database users of the cluster guide ---------------------------------------
def grants_in(text):
    """[(privileges, user, host)] of the GRANT statements in text (plain)."""
    out = []
    for privs, user, host in re.findall(r"GRANT ([A-Z, ]+?) ON \S+ TO '([^']+)'@'([^']+)'",
                                        text):
        out.append(({p.strip() for p in privs.split(",")}, user, host))
    return out


def check_cluster_users(src):
    """asyncexec-ops(7) SCALE-OUT (GALERA): the app hosts' users are granted over the
    network (not 'localhost', which a TCP client never matches: 1045) the table privileges
    src/repo/repo_check.c probes, a migrate user those and check.c's DDL ones, and a
    migrate.conf reaches the cluster over TCP (db_hosts, that user, db_password_file)."""
    probes = set(re.findall(r'\{ \{ T_\w+, "([A-Z]+)"', open(os.path.join(
        src, "src", "repo", "repo_check.c"), encoding="utf-8").read()))
    m = re.search(r"ddl\[DDL_N\] = \{([^}]*)\}", open(os.path.join(
        src, "src", "check", "check.c"), encoding="utf-8").read())
    ddl = set(re.findall(r'"([A-Z]+)"', m.group(1))) if m else set()
    if not probes or not ddl:
        h.fail("src/repo/repo_check.c's probes or src/check/check.c's ddl[] not found")
        return
    secs = h.sections(os.path.join(src, "scripts", "man", "asyncexec-ops.7"))
    text = h.plain("\n".join(secs.get("SCALE-OUT (GALERA)", [])))
    g = grants_in(text)
    svc = [x for x in g if x[0] >= probes and not x[0] >= ddl]
    mig = [x for x in g if x[0] >= probes | ddl]
    bad = []
    if not svc or any(h == "localhost" for _, _, h in svc):
        bad.append("a GRANT of %s to the service's user at the app hosts' addresses "
                   "(not 'localhost')" % ", ".join(sorted(probes)))
    if not mig or any(h == "localhost" for _, _, h in mig):
        bad.append("a GRANT of %s to a migrate user at the app hosts' addresses"
                   % ", ".join(sorted(probes | ddl)))
    else:
        ok_conf = False
        for blk in re.findall(r"(?ms)^\.EX\n(.*?)^\.EE", "\n".join(
                secs.get("SCALE-OUT (GALERA)", []))):
            b = h.plain(blk)
            if re.search(r"\bdb_hosts = ", b) and \
                    re.search(r"\bdb_user = %s\b" % re.escape(mig[0][1]), b) and \
                    re.search(r"\bdb_password_file = ", b) and "db_socket" not in b \
                    and re.search(r"asyncexec-admin --config \S+ migrate", b):
                ok_conf = True
        if not ok_conf:
            bad.append("a migrate.conf with db_hosts, db_user = %s and "
                       "db_password_file (no db_socket), and the migrate it runs"
                       % mig[0][1])
    for b in bad:
        h.fail("asyncexec-ops(7) SCALE-OUT (GALERA) lacks " + b)
    if not bad:
        h.ok("asyncexec-ops(7) SCALE-OUT: the app hosts' users and grants, migrate over TCP")


# ---- 15. the example consumer's sample output ---------------------------------------------
def consumer_lines(src):
    """{'poll 200': ['status', 'etag', ...], ...}: each line consumer.php says with
    NAME=VALUE fields, by the text before its first field, with those fields' names."""
    text = open(os.path.join(src, "scripts", "examples", "consumer.php"),
                encoding="utf-8").read()
    out = {}
    for call in re.findall(r"\bsay\(((?:['\"])[^;]*?)\);", text, re.S):
        m = re.match(r"""['"]([a-z][a-z0-9 ]*?) ?(\w+)=""", call)
        if m:
            out[m.group(1)] = re.findall(r"(?<![\w$'\[])(\w+)=", call)
    return out


def check_consumer_sample(src):
    """Each line of asyncexec-api(7)'s examples that starts as a line of consumer.php
    does has that line's fields, in its order; a poll 200 line is among them."""
    want = consumer_lines(src)
    seen, page = set(), os.path.join(src, "scripts", "man", "asyncexec-api.7")
    for line in open(page, encoding="utf-8"):
        line = h.plain(line.rstrip("\n"))
        for head, fields in want.items():
            if not line.startswith(head + " ") or "=" not in line:
                continue
            seen.add(head)
            have = re.findall(r"(?:^| )(\w+)=", line[len(head):])
            if have != fields:
                h.fail("asyncexec-api.7: the sample line '%s' has the fields %s; "
                       "consumer.php prints %s" % (line, have, fields))
    if "poll 200" not in want or "poll 200" not in seen:
        h.fail("asyncexec-api.7: no sample 'poll 200' line of consumer.php")
    else:
        h.ok("asyncexec-api.7: the consumer's sample lines have its fields (%s)"
             % ", ".join(sorted(seen)))


def run(src, docs):
    """Runs the checks 9-14 on source tree src, reporting through module docs."""
    global h
    h = docs
    check_options(src)
    check_check_config(src)
    check_cron(src)
    check_pointers(src)
    check_pin_writers(src)
    check_rate_limit(src)
    check_cluster_users(src)
    check_consumer_sample(src)
