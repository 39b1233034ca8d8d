#!/usr/bin/env python3
"""test_release_load.py - unit_release_load: scripts/lib/release_load.py
(scripts/test-release-upgrade.sh) on made-up records (no services).

  test_release_load.py ROOT

The polls are counted by status; the 503s' span and MariaDB's stop and start are in
seconds from the first poll; the verdict is the first 200 at or after MariaDB's last
start, within MAX_GAP seconds (none after it, or later: exit 1); without a restart in the
journal there is nothing to wait for (exit 0).
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'notify'))
from notify_env import Checks  # noqa: E402

ROOT = sys.argv[1] if len(sys.argv) > 1 else '.'
SCRIPT = os.path.join(ROOT, 'scripts', 'lib', 'release_load.py')
T0 = 1765100000.0
STOP = ('%.6f c systemd[1]: Stopped mariadb.service - MariaDB 10.11.18 database server.\n'
        % (T0 + 10))
START = ('%.6f c systemd[1]: Started mariadb.service - MariaDB 11.8.9 database server.\n'
         % (T0 + 40))


def run(d, polls, journal, gap='10'):
    """release_load.py on polls [(seconds from T0, status)] and the journal's text."""
    lp, jp = os.path.join(d, 'load'), os.path.join(d, 'journal')
    with open(lp, 'w', encoding='utf-8') as f:
        for t, s in polls:
            extra = ' 1 application/problem+json' if s == '503' else '  application/json'
            f.write('%.6f %s%s\n' % (T0 + t, s, extra))
    with open(jp, 'w', encoding='utf-8') as f:
        f.write(journal)
    r = subprocess.run([sys.executable, SCRIPT, lp, jp, gap], capture_output=True,
                       text=True, check=False)
    return r.returncode, r.stdout.strip()


def main():
    c = Checks()
    with tempfile.TemporaryDirectory() as d:
        polls = [(0, '200'), (5, '200'), (11, '503'), (20, '000'), (39, '503'),
                 (41.5, '200'), (42, '200')]
        rc, out = run(d, polls, '-- Journal begins --\n' + STOP + START)
        c.check('recovered 1.5 s after the start: exit 0', rc == 0, out)
        c.check('the answers by status', 'answers 000 1, 200 4, 503 2' in out, out)
        c.check('the 503s from 11.0 to 39.0 s', '503 from 11.0 to 39.0 s' in out, out)
        c.check('MariaDB stopped at 10.0 s, started at 40.0 s',
                'MariaDB stopped at 10.0 s; MariaDB started at 40.0 s' in out, out)
        c.check('the first 200 1.5 s after its last start',
                'the first 200 1.5 s after its last start' in out, out)

        rc, out = run(d, polls, STOP + START, gap='1')
        c.check('MAX_GAP 1 against 1.5 s: exit 1, says so', rc == 1 and 'over 1 s' in out,
                (rc, out))

        rc, out = run(d, polls[:5], STOP + START)
        c.check('no 200 after the start: exit 1, says so',
                rc == 1 and "no 200 after MariaDB's last start" in out, (rc, out))

        twice = START.replace('%.6f' % (T0 + 40), '%.6f' % (T0 + 42.5))
        rc, out = run(d, polls + [(43, '200')], STOP + START + twice)
        c.check('two starts: measured from the last (0.5 s)',
                rc == 0 and 'the first 200 0.5 s after its last start' in out, (rc, out))

        rc, out = run(d, [(0, '200'), (1, '200')], '-- No entries --\n')
        c.check('no restart in the journal: exit 0, no verdict',
                rc == 0 and 'after its last start' not in out, (rc, out))

        rc, out = run(d, [], STOP + START)
        c.check('no polls: exit 1', rc == 1 and 'no polls recorded' in out, (rc, out))

    bad = subprocess.run([sys.executable, SCRIPT, 'load'], capture_output=True, text=True,
                         check=False)
    c.check('too few arguments: exit 2, a usage message, not a traceback',
            bad.returncode == 2 and 'release_load.py LOAD' in bad.stderr
            and 'Traceback' not in bad.stderr, bad.stderr)
    sys.exit(c.done())


if __name__ == '__main__':
    main()
