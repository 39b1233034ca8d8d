#!/usr/bin/env python3
"""scripts/lib/bench_keepalive.py - the tables and JSON of scripts/bench.sh --keepalive.

    bench_keepalive.py RECORDS JSON CLK_TCK MODE COMMIT

RECORDS has one line per run, written by bench.sh's ka_run:
    KEEP MODE RATE|PACE|CPU0|CPU1
KEEP is off or on, MODE poll or submit, RATE the requests/s asked for, PACE
tests/bench/bench_pace's summary line (key=value fields), CPU0 and CPU1 the
bench_cpu_sample lines before and after the run ("TOTAL BUSY OURS DB APP NGINX", clock
ticks). Prints one row per run in the order run, then per mode and rate the two runs of
each setting side by side; writes every run to JSON.
"""
import json
import sys


def pace_fields(line):
    out = {}
    for part in line.split():
        k, _, v = part.partition("=")
        out[k] = float(v)
    return out


def run_of(line, tick_us):
    head, pace, c0, c1 = line.rstrip("\n").split("|")
    keep, mode, rate = head.split()
    p = pace_fields(pace)
    a = [int(x) for x in c0.split()]
    b = [int(x) for x in c1.split()]
    d = [y - x for x, y in zip(a, b)]
    total, busy, ours, db, app, ngx = d[:6]
    sent = p["sent"] or 1
    return {
        "keepalive": keep, "mode": mode, "rate_asked": int(rate),
        "rate_held": p["rate"], "sent": int(p["sent"]), "ok": int(p["ok"]),
        "errors": int(p["errors"]), "due_p50_ms": p["due_p50_ms"],
        "due_p99_ms": p["due_p99_ms"], "late_p99_ms": p["late_p99_ms"],
        "app_us": app * tick_us / sent, "db_us": db * tick_us / sent,
        "nginx_us": ngx * tick_us / sent,
        "path_us": (app + db + ngx) * tick_us / sent,
        "other_pct": 100.0 * max(busy - ours, 0) / total if total > 0 else 0.0,
    }


def main(argv):
    if len(argv) != 6:
        sys.exit(__doc__)
    records, out, tck, mode, commit = argv[1:]
    tick_us = 1e6 / int(tck)
    with open(records, encoding="utf-8") as f:
        runs = [run_of(line, tick_us) for line in f if line.strip()]
    hdr = "%-6s %-9s %6s %9s %9s %9s %7s %7s %7s %8s %6s %6s"
    print("keep-alive between nginx and the application, off against on, at fixed rates "
          "(open loop, tests/bench/bench_pace)")
    print()
    print(hdr % ("mode", "keepalive", "asked", "held", "p50_ms", "p99_ms", "app_us",
                 "db_us", "ngx_us", "path_us", "errors", "other%"))
    for r in runs:
        print("%-6s %-9s %6d %9.1f %9.2f %9.2f %7.0f %7.0f %7.0f %8.0f %6d %6.1f" % (
            r["mode"], r["keepalive"], r["rate_asked"], r["rate_held"], r["due_p50_ms"],
            r["due_p99_ms"], r["app_us"], r["db_us"], r["nginx_us"], r["path_us"],
            r["errors"], r["other_pct"]))
    print()
    print("p99_ms from each request's due time; held: requests sent / seconds (below asked: "
          "the client fell behind, every connection busy); path_us: application + MariaDB "
          "+ nginx CPU per request")
    print()
    print("%-6s %6s  %-26s  %-26s" % ("mode", "asked", "p99_ms off (runs)", "p99_ms on (runs)"))
    keys = []
    for r in runs:
        if (r["mode"], r["rate_asked"]) not in keys:
            keys.append((r["mode"], r["rate_asked"]))
    for m, rate in keys:
        cell = {}
        for keep in ("off", "on"):
            cell[keep] = ", ".join("%.2f" % r["due_p99_ms"] for r in runs
                                   if r["mode"] == m and r["rate_asked"] == rate and
                                   r["keepalive"] == keep)
        print("%-6s %6d  %-26s  %-26s" % (m, rate, cell["off"], cell["on"]))
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"mode": mode, "git_commit": commit, "keepalive": True, "runs": runs}, f,
                  indent=1)
        f.write("\n")
    print()
    print("results (JSON): %s" % out)


if __name__ == "__main__":
    main(sys.argv)
