#!/usr/bin/env python3
"""The answers a poller got through a Debian release upgrade, against MariaDB's restart.

scripts/test-release-upgrade.sh: release_load.py LOAD JOURNAL MAX_GAP
  LOAD     lines "EPOCH STATUS RETRY-AFTER CONTENT-TYPE", one per poll (000: no answer)
  JOURNAL  journalctl -u mariadb -o short-unix of the upgrade
  MAX_GAP  seconds: the longest the service may stay unready once MariaDB has started

Prints one line: the answers by status; the span of the 503s; when MariaDB stopped and
started (seconds from the first poll); the first 200 after MariaDB's last start. Exit 0
when a 200 followed MariaDB's last start within MAX_GAP seconds (or MariaDB never
restarted), else 1 (the reason on the line).
"""
import sys
from collections import Counter


def load(path):
    """(epoch, status) of each poll, in order."""
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2:
                out.append((float(parts[0]), parts[1]))
    return out


def mariadb_events(path):
    """(epoch, 'stopped' | 'started') of each systemd line about the unit."""
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.split(None, 1)
            if len(parts) < 2:
                continue
            try:
                t = float(parts[0])
            except ValueError:
                continue
            if "systemd[1]: Stopped mariadb" in parts[1]:
                out.append((t, "stopped"))
            elif "systemd[1]: Started mariadb" in parts[1]:
                out.append((t, "started"))
    return out


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    polls, events, max_gap = load(argv[1]), mariadb_events(argv[2]), float(argv[3])
    if not polls:
        print("no polls recorded")
        return 1
    t0 = polls[0][0]
    counts = Counter(s for _, s in polls)
    parts = ["answers " + ", ".join(f"{s} {n}" for s, n in sorted(counts.items()))]
    err = [t for t, s in polls if s == "503"]
    if err:
        parts.append(f"503 from {err[0] - t0:.1f} to {err[-1] - t0:.1f} s")
    for t, what in events:
        parts.append(f"MariaDB {what} at {t - t0:.1f} s")
    rc = 0
    starts = [t for t, what in events if what == "started"]
    if starts:
        after = [t for t, s in polls if s == "200" and t >= starts[-1]]
        if not after:
            parts.append("no 200 after MariaDB's last start")
            rc = 1
        else:
            gap = after[0] - starts[-1]
            parts.append(f"the first 200 {gap:.1f} s after its last start")
            if gap > max_gap:
                parts.append(f"over {max_gap:g} s")
                rc = 1
    print("; ".join(parts))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
