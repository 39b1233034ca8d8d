#!/usr/bin/env python3
"""The table of scripts/bench-schema.sh: mariadbd CPU per operation by round, the median
and cur / ref, from its records ("ROUND DB OP N MICROSECONDS" lines).

    bench_schema.py RECORDS REV
"""
import statistics
import sys

OPS = ("submit", "claim", "complete", "claim_complete")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    us = {}
    for line in open(sys.argv[1]):
        r, db, op, n, total = line.split()
        us[(int(r), db, op)] = int(total) / int(n)
    rounds = sorted({k[0] for k in us})
    for r in rounds:
        for db in ("ref", "cur"):
            us[(r, db, "claim")] = us[(r, db, "claim_complete")] - us[(r, db, "complete")]
    print("mariadbd CPU per operation in microseconds (ref = %s, cur = this tree)"
          % sys.argv[2])
    print("%-16s %s %10s %10s %8s" % ("operation", " ".join(
        "%15s" % ("round %d ref/cur" % r) for r in rounds), "ref med", "cur med", "cur/ref"))
    for op in OPS:
        ref = [us[(r, "ref", op)] for r in rounds]
        cur = [us[(r, "cur", op)] for r in rounds]
        mr, mc = statistics.median(ref), statistics.median(cur)
        print("%-16s %s %10.1f %10.1f %8s" % (op, " ".join(
            "%15s" % ("%.0f/%.0f" % (a, b)) for a, b in zip(ref, cur)), mr, mc,
            "%.3f" % (mc / mr) if mr > 0 else "-"))
    print("claim = claim_complete - complete of the same round")
    return 0


if __name__ == "__main__":
    sys.exit(main())
