#!/usr/bin/env python3
"""unit_version: one version everywhere, CMake's project(VERSION) being the source.

usage: check_version.py VERSION CHANGELOG_MD DEBIAN_CHANGELOG BINARY...

Checks, each on its own line ("ok ..." or "FAIL ..."), exit 1 when any failed:
  - CHANGELOG.md's newest version heading ("## X.Y.Z" or "## X.Y.Z (unreleased)") is VERSION;
  - the generated Debian changelog's first entry is "asyncexec (VERSION-REVISION) ...";
  - every BINARY --version prints exactly "NAME VERSION" and exits 0;
  - asyncexec-fcgi carries the metrics line asyncexec_build_info{version="VERSION"} 1
    (src/metrics.c writes it as one string literal).
"""
import os
import re
import subprocess
import sys

failed = 0


def check(name, cond, detail=""):
    global failed
    if cond:
        print("ok   " + name)
    else:
        failed += 1
        print("FAIL " + name + (": " + detail if detail else ""))


def main(argv):
    if len(argv) < 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    version, changelog, debian, binaries = argv[0], argv[1], argv[2], argv[3:]
    if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", version):
        print("not a version X.Y.Z: %r" % version, file=sys.stderr)
        return 2

    heading = None
    with open(changelog, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"## ([0-9]+\.[0-9]+\.[0-9]+)( \(unreleased\))?\s*$", line)
            if m:
                heading = m.group(1)
                break
    check("CHANGELOG.md newest heading is %s" % version, heading == version,
          "found %r" % heading)

    with open(debian, encoding="utf-8") as f:
        first = f.readline()
    m = re.match(r"asyncexec \(([^)-]+)-([^)]+)\) ", first)
    check("Debian changelog first entry is %s-REVISION" % version,
          m is not None and m.group(1) == version, "first line %r" % first.rstrip("\n"))

    for b in binaries:
        name = os.path.basename(b)
        p = subprocess.run([b, "--version"], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=10)
        want = ("%s %s\n" % (name, version)).encode()
        check("%s --version prints '%s %s'" % (name, name, version),
              p.returncode == 0 and p.stdout == want,
              "exit %d, stdout %r" % (p.returncode, p.stdout))
        if name == "asyncexec-fcgi":
            with open(b, "rb") as f:
                data = f.read()
            line = b'asyncexec_build_info{version="%s"} 1\n' % version.encode()
            check("asyncexec-fcgi carries %r" % line.decode().rstrip("\n"), line in data)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
