#!/usr/bin/env python3
"""unit_grants: the privilege probes of the checks match the statements.

usage: check_grants.py SOURCE_DIR CC [-Idir ...]

`asyncexec-admin check` and each binary's --check-config try the table
privileges of src/repo/repo_check.c's probes[] (table, privilege, which
binaries). This derives them instead, from the source, and fails on any
difference, either way:

  1. every statement of src/repo (each struct db_stmt_def array, and
     repo_check.c's own) as the compiler sees it (CC -E: the macros
     expanded), and the privileges it needs on each table: INSERT INTO t
     (ON DUPLICATE KEY UPDATE: and UPDATE, and SELECT when it reads a
     column), UPDATE t ... SET and DELETE [a] FROM t (and SELECT when the
     WHERE reads a column), SELECT on every other table it names;
  2. which binary runs it: the functions of src/repo that name its id (or
     a table of ids that does), the repo functions that name those, and
     so on up to the folders of the binaries (handlers, serve: fcgi;
     admin; expire; notify; check: all four);
  3. each probe's own statement needs exactly its one privilege.

A statement no binary reaches is listed as a note, not a failure.
"""
import glob
import os
import re
import subprocess
import sys

FCGI, EXPIRE, ADMIN, NOTIFY = 1, 2, 4, 8
BINARIES = {FCGI: "asyncexec-fcgi", EXPIRE: "asyncexec-expire",
            ADMIN: "asyncexec-admin", NOTIFY: "asyncexec-notify"}
# the folders (or files) of src/ whose calls into src/repo each binary runs
ROOTS = {
    "handlers": FCGI, "serve": FCGI, "http": FCGI, "main/main_fcgi.c": FCGI,
    "admin": ADMIN, "main/main_admin.c": ADMIN,
    "expire": EXPIRE, "main/main_expire.c": EXPIRE,
    "notify": NOTIFY, "main/main_notify.c": NOTIFY,
    "check": FCGI | EXPIRE | ADMIN | NOTIFY,
}
STR = r'"(?:[^"\\\n]|\\.)*"'
STRS = r"((?:" + STR + r"\s*)+)"
IDENT = re.compile(r"[A-Za-z_]\w*")

failures = []


def fail(msg):
    failures.append(msg)


def c_string(lits):
    """The value of adjacent C string literals (the escapes here: \\ \" \\n)."""
    out = []
    for lit in re.findall(STR, lits):
        out.append(re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(
            m.group(1), m.group(1)), lit[1:-1]))
    return "".join(out)


def strip_c(text):
    """The source without comments, string and character literals and
    preprocessor lines."""
    text = re.sub(r'/\*.*?\*/|//[^\n]*|' + STR + r"|'(?:[^'\\\n]|\\.)*'",
                  lambda m: " " if m.group(0)[0] == "/" else '""', text,
                  flags=re.S)
    return re.sub(r"(?m)^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", "", text)


def toplevel(text):
    """The functions and the data definitions of a file (comments and
    strings stripped): {name: (body, static)} each."""
    funcs, data = {}, {}
    depth, start, head = 0, 0, []
    for i, ch in enumerate(text):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                header = "".join(head)
                body = text[start:i + 1]
                static = re.search(r"\bstatic\b", header) is not None
                if "=" in header:
                    name = re.findall(r"(\w+)\s*(?:\[[^\]]*\]\s*)*=",
                                      header)
                    if name:
                        data[name[-1]] = (body, static)
                elif header.rstrip().endswith(")"):
                    name = re.search(r"(\w+)\s*\(", header)
                    if name:
                        funcs[name.group(1)] = (body, static)
                head = []
        elif depth == 0:
            head.append(ch)
            if ch == ";":
                head = []
    return funcs, data


def preprocess(root, cc, flags, path):
    inc = ["-I" + os.path.join(root, "src", d) for d in ("lib", "db", "repo")]
    return subprocess.run([cc, "-E", "-P", "-D_GNU_SOURCE"] + flags + inc +
                          [path], capture_output=True, text=True,
                          check=True).stdout


def stmt_arrays(pp):
    """{array name: {id: sql}} of the db_stmt_def arrays of a
    preprocessed file, and the id -> sql of its defs[ID].sql = "..."."""
    arrays = {}
    for m in re.finditer(r"db_stmt_def\s+(\w+)\s*\[[^\]]*\]\s*=\s*\{", pp):
        depth, j = 1, m.end()
        while depth:
            s = re.compile(STR).match(pp, j)
            if s:
                j = s.end()
                continue
            depth += {"{": 1, "}": -1}.get(pp[j], 0)
            j += 1
        body = pp[m.end():j - 1]
        arrays[m.group(1)] = {e.group(1): c_string(e.group(2)) for e in
                              re.finditer(r"\[\s*(\w+)\s*\]\s*=\s*\{\s*" +
                                          STRS, body)}
    assigned = {m.group(1): c_string(m.group(2)) for m in re.finditer(
        r"defs\[\s*(\w+)\s*\]\.sql\s*=\s*" + STRS + r";", pp)}
    return arrays, assigned


def sql_quotes_out(sql):
    return re.sub(r"'(?:[^'\\]|\\.|'')*'", "''", sql)


def reads_columns(text):
    """Whether SQL text names a column (lower case: the keywords and the
    functions of these statements are upper case)."""
    return re.search(r"\b[a-z_][a-z0-9_]*\b", text) is not None


def privileges(sql):
    """The (table, privilege) pairs statement sql needs."""
    s = " ".join(sql_quotes_out(sql).split())
    s = re.sub(r"^SET STATEMENT .*? FOR ", "", s)
    kind = s.split(" ", 1)[0]
    where = s.find(" WHERE ")
    reads = where >= 0 and reads_columns(s[where + 7:])
    need = set()
    for m in re.finditer(r"\bs2r_\w+\b(?!\.)", s):
        t, before = m.group(0), s[:m.start()]
        alias = re.match(r" ([a-z_][a-z0-9_]*)\b", s[m.end():])
        if kind == "INSERT" and re.search(r"^INSERT (IGNORE )?INTO $",
                                          before):
            need.add((t, "INSERT"))
            odku = s.find(" ON DUPLICATE KEY UPDATE ")
            if odku >= 0:
                need.add((t, "UPDATE"))
                rest = re.sub(r"VALUES\(\w+\)", "", s[odku + 25:])
                rest = re.sub(r"(^|,)\s*[a-z_]\w*\s*=", ",", rest)
                if reads_columns(rest):
                    need.add((t, "SELECT"))
            continue
        if kind == "UPDATE" and " SET " not in before:
            need.add((t, "UPDATE"))
            if reads:
                need.add((t, "SELECT"))
            continue
        if kind == "DELETE":
            target = re.match(r"DELETE (\w+ )?FROM ", s)
            if target and ((target.group(1) is None and
                            before == "DELETE FROM ") or
                           (alias and target.group(1) and
                            alias.group(1) == target.group(1).strip())):
                need.add((t, "DELETE"))
                if reads:
                    need.add((t, "SELECT"))
                continue
        need.add((t, "SELECT"))
    return need


def repo_files(root):
    return sorted(glob.glob(os.path.join(root, "src", "repo", "*.c")))


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def statements(root, cc, flags):
    """[(file, array, id, sql)] of every statement but the probes, and
    the probes: [(table, privilege, who, sql)]."""
    out, probes = [], []
    for path in repo_files(root):
        pp = preprocess(root, cc, flags, path)
        arrays, assigned = stmt_arrays(pp)
        name = os.path.basename(path)
        for arr, stmts in arrays.items():
            out += [(name, arr, i, sql) for i, sql in stmts.items()]
        out += [(name, "defs", i, sql) for i, sql in assigned.items()]
        if name == "repo_check.c":
            for m in re.finditer(r'\{\s*\{\s*"(s2r_\w+)"\s*,\s*"(\w+)"\s*,'
                                 r'\s*([0-9xa-fA-F|\s]+)\}\s*,\s*' + STRS +
                                 r"\}", pp):
                who = 0
                for bit in m.group(3).split("|"):
                    who |= int(bit.strip(), 0)
                probes.append((m.group(1), m.group(2), who,
                               c_string(m.group(4))))
    return out, probes


def call_graph(root, stmts):
    """The binaries (a mask) that reach each statement (file, id)."""
    ids = {}                  # file -> the statement ids it defines
    for f, _, i, _ in stmts:
        ids.setdefault(f, set()).add(i)
    home = {}                 # an id defined in one file only -> that file
    for f, defined in ids.items():
        for i in defined:
            home[i] = f if i not in home else None
    arrays = {a for _, a, _, _ in stmts}
    funcs = {}                # (file, name) -> (idents, static)
    refs = {}                 # (file, name) -> statement ids it names
    for path in repo_files(root):
        f = os.path.basename(path)
        fn, data = toplevel(strip_c(read(path)))
        own = ids.get(f, set()) | {i for i, h in home.items() if h}
        tables = {d: set(IDENT.findall(b)) & own for d, (b, _) in
                  data.items() if d not in arrays}
        for name, (body, static) in fn.items():
            idents = set(IDENT.findall(body))
            named = idents & own
            for d in idents & tables.keys():
                named |= tables[d]
            funcs[(f, name)] = (idents, static)
            refs[(f, name)] = {(f if i in ids.get(f, ()) else home[i], i)
                               for i in named}
    public = {n: (f, n) for (f, n), (_, st) in funcs.items() if not st}

    def callees(key):
        f, _ = key
        for ident in funcs[key][0]:
            if (f, ident) in funcs and funcs[(f, ident)][1]:
                yield (f, ident)
            elif ident in public:
                yield public[ident]
    who = {}
    for where, mask in ROOTS.items():
        paths = [os.path.join(root, "src", where)]
        if os.path.isdir(paths[0]):
            paths = glob.glob(os.path.join(paths[0], "*.c"))
        seen = set()
        todo = [public[i] for p in paths for i in
                set(IDENT.findall(strip_c(read(p)))) if i in public]
        while todo:
            key = todo.pop()
            if key in seen:
                continue
            seen.add(key)
            todo += list(callees(key))
        for key in seen:
            for s in refs[key]:
                who[s] = who.get(s, 0) | mask
    return who


def main(root, cc, flags):
    stmts, probes = statements(root, cc, flags)
    if not probes or len(stmts) < 100:
        fail("found %d statements and %d probes: the parse broke" %
             (len(stmts), len(probes)))
    who = call_graph(root, stmts)
    need = {b: set() for b in BINARIES}
    why = {}
    for f, arr, i, sql in stmts:
        mask = who.get((f, i), 0)
        if mask == 0:
            print("note: %s %s (%s) runs in no binary" % (f, i, arr))
        for p in privileges(sql):
            for b in BINARIES:
                if mask & b:
                    need[b].add(p)
                    why.setdefault((b, p), "%s %s" % (f, i))
    have = {b: set() for b in BINARIES}
    for t, priv, mask, sql in probes:
        if privileges(sql) != {(t, priv)}:
            fail("the probe of %s on %s needs %s" % (priv, t,
                 sorted(privileges(sql))))
        for b in BINARIES:
            if mask & b:
                have[b].add((t, priv))
    for b, name in BINARIES.items():
        for t, priv in sorted(need[b] - have[b]):
            fail("%s needs %s on %s (%s) but no probe tries it for it" %
                 (name, priv, t, why[(b, (t, priv))]))
        for t, priv in sorted(have[b] - need[b]):
            fail("%s is probed for %s on %s, which none of its statements "
                 "needs" % (name, priv, t))
    for msg in failures:
        print("FAIL: " + msg)
    print("%d statements, %d probes, %d failures" %
          (len(stmts), len(probes), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
