#!/usr/bin/env python3
"""test_bench_keepalive.py - unit_bench_keepalive: the arithmetic of
scripts/lib/bench_keepalive.py (scripts/bench.sh --keepalive) on made-up records (no
services).

  test_bench_keepalive.py ROOT

Per run: the CPU per request of the application, MariaDB and nginx from the clock ticks
of the samples around it, other% from the machine's busy time less ours, the rate held
and the p99 from the due time kept from bench_pace's line; the pairs' table puts each
setting's p99 of a mode and rate side by side, in the order run.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'notify'))
from notify_env import Checks  # noqa: E402

ROOT = sys.argv[1] if len(sys.argv) > 1 else '.'
SCRIPT = os.path.join(ROOT, 'scripts', 'lib', 'bench_keepalive.py')


def pace(sent, rate, p99):
    return ('sent=%d ok=%d errors=0 seconds=1.000 rate=%.1f late_p99_ms=0.100 '
            'late_max_ms=0.200 p50_ms=0.300 p99_ms=0.900 due_p50_ms=0.400 due_p99_ms=%.3f'
            % (sent, sent, rate, p99))


def main():
    c = Checks()
    check = c.check
    with tempfile.TemporaryDirectory() as d:
        rec = os.path.join(d, 'keepalive.txt')
        out = os.path.join(d, 'keepalive.json')
        # TOTAL BUSY OURS DB APP NGINX, clock ticks of 10,000 us (CLK_TCK 100)
        with open(rec, 'w', encoding='utf-8') as f:
            f.write('off poll 3000|%s|1000 500 400 100 100 100|1200 650 500 120 110 105\n'
                    % pace(1000, 3000.0, 1.5))
            f.write('on poll 3000|%s|1200 650 500 120 110 105|1400 750 620 137 117 110\n'
                    % pace(2000, 3000.0, 0.75))
            f.write('on poll 3000|%s|1400 750 620 137 117 110|1600 850 720 150 130 120\n'
                    % pace(1000, 2999.0, 0.5))
        p = subprocess.run([sys.executable, SCRIPT, rec, out, '100', 'quick', 'abc123'],
                           capture_output=True, text=True, check=False)
        check('exit 0', p.returncode == 0)
        runs = json.load(open(out, encoding='utf-8'))['runs']
        r = runs[0]
        check('off: 10 application ticks over 1,000 requests: 100 us each',
              abs(r['app_us'] - 100) < 1e-6)
        check('off: MariaDB 200 us, nginx 50 us, the three 350 us',
              abs(r['db_us'] - 200) < 1e-6 and abs(r['nginx_us'] - 50) < 1e-6 and
              abs(r['path_us'] - 350) < 1e-6)
        check('off: other%% = (busy 150 - ours 100) / total 200 = 25 (%s)' % r['other_pct'],
              abs(r['other_pct'] - 25) < 1e-6)
        check('off: the rate held and the p99 from the due time kept',
              r['rate_held'] == 3000.0 and r['due_p99_ms'] == 1.5 and r['errors'] == 0)
        check('on: 17 MariaDB ticks over 2,000 requests: 85 us',
              abs(runs[1]['db_us'] - 85) < 1e-6 and runs[1]['keepalive'] == 'on')
        check('on: other% never below 0 (ours over busy: 0)', runs[1]['other_pct'] == 0)
        pair = [line for line in p.stdout.splitlines() if line.startswith('poll     3000')]
        check('the pairs table: off 1.50, on 0.75 and 0.50 in the order run (%s)' % pair,
              len(pair) == 1 and '1.50' in pair[0] and '0.75, 0.50' in pair[0])
        bad = subprocess.run([sys.executable, SCRIPT, rec], capture_output=True, text=True,
                             check=False)
        check('too few arguments: a usage message, not a traceback',
              bad.returncode != 0 and 'Traceback' not in bad.stderr)
    sys.exit(c.done())


if __name__ == '__main__':
    main()
