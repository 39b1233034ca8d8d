#!/usr/bin/env python3
"""tests/http/test_socket_access.py - who may speak FastCGI to the test stack's socket.

The stack of scripts/test.sh is made as scripts/run-local.sh makes its own
(scripts/lib/stack.sh): the socket named by `listen` in ASYNCEXEC_TEST_CONFIG is mode
0660; started as root, its group is www-data, the user nginx's workers run as. FastCGI
has no authentication, so any other local user (here: nobody) must be refused by the
file's permissions, while www-data connects (nginx serves every other HTTP test through
it). Prints "N passed, N failed"; exit 1 when a check failed.
"""
import grp
import os
import re
import stat
import subprocess
import sys

PROBE = ("import socket,sys\n"
         "s=socket.socket(socket.AF_UNIX)\n"
         "try:\n s.connect(sys.argv[1])\nexcept PermissionError:\n sys.exit(13)\n")


def listen_path(config):
    with open(config, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"\s*listen\s*=\s*(\S+)", line)
            if m:
                return m.group(1)
    raise SystemExit(f"no listen line in {config}")


def connect_as(user, path):
    """Exit status of a connect to PATH as USER: 0 connected, 13 permission denied."""
    return subprocess.run(["runuser", "-u", user, "--", sys.executable, "-c", PROBE, path],
                          check=False).returncode


def main():
    path = listen_path(os.environ["ASYNCEXEC_TEST_CONFIG"])
    st = os.stat(path)
    results = []

    def check(what, ok, got):
        results.append(ok)
        print(("ok   " if ok else "FAIL ") + what + ("" if ok else f": {got}"))

    check("is a socket", stat.S_ISSOCK(st.st_mode), oct(st.st_mode))
    mode = stat.S_IMODE(st.st_mode)
    check("mode 0660", mode == 0o660, oct(mode))
    if os.geteuid() == 0:
        group = grp.getgrgid(st.st_gid).gr_name
        check("group www-data (nginx's workers)", group == "www-data", group)
        rc = connect_as("nobody", path)
        check("user nobody is refused", rc == 13, f"exit {rc}")
        rc = connect_as("www-data", path)
        check("user www-data connects", rc == 0, f"exit {rc}")
    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
