#!/usr/bin/env python3
"""test_bench_report.py - unit_bench_report: the arithmetic of scripts/lib/bench_report.py
that a benchmark's verdicts rest on, run on made-up records (no services).

  test_bench_report.py ROOT

The lifecycle's probe ceiling (ceiling): the requests per execution that the lifecycle
row keeps from bench_lifecycle's summary, priced at their probes' CPU per request, the
ceiling, the ratio, the row target and the JSON row; and not computed when a probe row
is missing. What the lifecycle's claims may cost for its target rate (budget). A ratio
with a p99 limit (ratio): missed on the p99 alone, its probe's own p99 kept, and named
(limits) when that is over the limit too, or when the mean latency at the connections
(Little's law) is.
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1] if len(sys.argv) > 1 else '.'
REPORT = os.path.join(ROOT, 'scripts', 'lib', 'bench_report.py')
failures = 0


def check(what, ok):
    global failures
    print('%s %s' % ('ok  ' if ok else 'FAIL', what))
    if not ok:
        failures += 1


def report(store, *args):
    """bench_report.py ARGS on STORE: (exit status, stdout)."""
    p = subprocess.run([sys.executable, REPORT, args[0], store] + list(args[1:]),
                       capture_output=True, text=True, check=False)
    return p.returncode, p.stdout


def row(f, name, rps, total, p99='5.000', errors='0'):
    f.write(json.dumps(dict(kind='row', name=name, rps=rps, p50='1.000', p99=p99,
                            errors=errors, other='0', dbq=['1.00', '1.00'],
                            cpu=['1', '1', '1', '1', total])) + '\n')


def lifecycle(store, d):
    """A lifecycle row through the lifecycle command: 1,000 executions done in 1 s of a
    1 s warm-up + 1 s window, 2,000 us of CPU per execution (the samples' ticks
    scaled), 1 submit, 2 polls, 0.4 claims and 1 complete per execution."""
    summary = os.path.join(d, 'lifecycle.txt')
    with open(summary, 'w', encoding='utf-8') as f:
        f.write('done=1000 seconds=1.000 exec_per_s=1000.0 p50_ms=60.0 p99_ms=140.0 '
                'submits=1000 polls=2000 claims=400 claimed=1000 completes=1000 '
                'errors=0\n')
    hz = os.sysconf('SC_CLK_TCK')
    # TOTAL BUSY OURS DB APP NGINX: ours = 2 s per window of 1 s = 4 s with the warm-up
    ticks = 4 * hz
    a = '0 0 0 0 0 0'
    b = '%d %d %d %d %d %d' % (ticks, ticks, ticks, ticks // 2, ticks // 4, ticks // 8)
    return report(store, 'lifecycle', 'lifecycle', summary, a, b, '0 0', '0 0', '1', '1')


def main():
    with tempfile.TemporaryDirectory() as d:
        store = os.path.join(d, 'records.jsonl')
        with open(store, 'w', encoding='utf-8') as f:
            for name, total in (('insert', '240'), ('insert#2', '260'),
                                ('select', '190'), ('select#2', '210')):
                row(f, name, '5000.0', total)
        rc, _ = lifecycle(store, d)
        check('lifecycle row recorded', rc == 0)
        rc, out = report(store, 'ceiling', 'lifecycle', '2000', 'submits=insert+insert#2',
                         'polls=select+select#2', 'claims=insert+insert#2',
                         'completes=insert+insert#2')
        # per execution: 1 x 250 + 2 x 200 + 0.4 x 250 + 1 x 250 = 1,000 us; the
        # lifecycle used 2,000 us at 1,000/s: ceiling 1,000 x 2,000 / 1,000 = 2,000
        check('ceiling printed: %s' % out.strip()[:60],
              rc == 0 and '2000.0 executions/s, ratio 0.500' in out and
              '0.40 claims at insert+insert#2\'s 250 us' in out and '= 1000 us' in out)
        _, table = report(store, 'table')
        line = [x for x in table.splitlines() if x.startswith('lifecycle ')]
        check('table: ratio 0.500 of the probe ceiling, >=2000 exec/s missed',
              len(line) == 1 and ' 0.500 ' in line[0] and 'probe ceiling' in line[0] and
              '>=2000 exec/s' in line[0] and line[0].rstrip().endswith(' no'))
        rc, _ = report(store, 'json', os.path.join(d, 'out.json'), 'rows:results')
        with open(os.path.join(d, 'out.json'), encoding='utf-8') as f:
            life = [r for r in json.load(f)['results'] if r['name'] == 'lifecycle']
        check('JSON: requests per execution and probe_ceiling',
              rc == 0 and len(life) == 1 and
              life[0].get('requests_per_execution') ==
              {'submits': 1.0, 'polls': 2.0, 'claims': 0.4, 'completes': 1.0} and
              life[0].get('probe_ceiling') ==
              {'per_s': 2000.0, 'cpu_us_per_execution': 1000} and
              life[0]['cpu_us_per_request']['total'] == 2000 and life[0]['met'] is False)
        check('a rate above the target meets it (1,000 >= 900 below)',
              report(store, 'ceiling', 'lifecycle', '900', 'submits=insert',
                     'polls=select', 'claims=insert', 'completes=insert')[0] == 0 and
              [x for x in report(store, 'table')[1].splitlines()
               if x.startswith('lifecycle ')][0].rstrip().endswith(' yes'))
        _, out = report(store, 'ceiling', 'lifecycle', '2000', 'submits=insert#9',
                        'polls=select', 'claims=insert', 'completes=insert')
        check('a missing probe row: not computed', 'not computed' in out)

        # the claims' budget: 1,000/s at 2,000 us per execution is 1,250 us at 1,600/s;
        # 1 x 300 + 2 x 200 + 1 x 300 = 1,000 us for the rest leaves 250 us, 625 us per
        # claim request at 0.4 claims per execution
        with open(store, 'a', encoding='utf-8') as f:
            for name, total in (('submit', '300'), ('poll_waiting', '150'),
                                ('poll_completed', '250'), ('complete', '300'),
                                ('claim', '1100'), ('hello', '90')):
                row(f, name, '4000.0', total)
        own = ('submits=submit', 'polls=poll_waiting+poll_completed',
               'completes=complete')
        rc, out = report(store, 'budget', 'lifecycle', '1600', 'claim', 'hello', *own)
        check('budget: 625 us per claim request against the claim row\'s 1100: %s'
              % out.strip()[-120:],
              rc == 0 and '1250 at 1600/s' in out and 'take 1000 us' in out and
              'leaves 250 us per execution for its 0.40 claims: 625 us per claim request'
              in out and 'the 1100 us of a claim request (row claim)' in out and
              'the 90 us of hello' in out)
        rc, out = report(store, 'budget', 'lifecycle', '2000', 'claim', 'hello', *own)
        check('budget: nothing left at 2,000/s (1,000 us, all taken)',
              rc == 0 and 'for its 0.40 claims: nothing against' in out)
        rc, out = report(store, 'budget', 'lifecycle', '2500', 'claim', 'hello', *own)
        check('budget: the others over it at 2,500/s (800 us against 1,000): leaves 0, '
              'not a negative figure',
              rc == 0 and 'take 1000 us, which leaves 0 us per execution for its 0.40 '
              'claims: nothing against' in out)
        rc, out = report(store, 'budget', 'lifecycle', '2000', 'claim', 'hello',
                         'submits=submit#9', *own[1:])
        check('budget: a missing row: not computed', 'not computed' in out)

        # a p99 limit fails a ratio that the rate alone meets
        with open(store, 'a', encoding='utf-8') as f:
            row(f, 'submit', '4900.0', '300', p99='12.000')
        report(store, 'ratio', 'submit', 'insert', '0.85', '10')
        sub = [x for x in report(store, 'table')[1].splitlines()
               if x.startswith('submit ')]
        check('ratio 0.980 with p99 12 ms against 10: missed',
              len(sub) == 1 and ' 0.980 ' in sub[0] and sub[0].rstrip().endswith(' no'))

        # a limit below the probe's own p99 is named; one above it is not
        with open(store, 'a', encoding='utf-8') as f:
            row(f, 'insert#3', '5000.0', '240', p99='13.500')
            row(f, 'complete', '4000.0', '300', p99='14.000')
        report(store, 'ratio', 'complete', 'insert#3', '0.85', '10')
        rc, out = report(store, 'limits')
        check('limits: complete\'s 10 ms below insert#3\'s own 13.500 ms, not submit\'s',
              rc == 0 and out.splitlines() == [
                  'complete: its p99 limit of 10 ms is below the p99 of its probe '
                  'insert#3 itself, 13.500 ms at the same load'])
        # with the connections: the mean latency, 64 / rate (Little's law), above a limit
        rc, out = report(store, 'limits', '64')
        little = [x for x in out.splitlines() if 'Little' in x]
        check('limits 64: submit (13.06 ms at 4,900/s) and complete (16.00 ms at 4,000/s) '
              'above 10 ms: %s' % little,
              rc == 0 and len(little) == 2 and little[0].startswith(
                  'submit: at 64 connections and 4900.0 requests/s its mean latency is '
                  '13.06 ms') and little[1].startswith(
                  'complete: at 64 connections and 4000.0 requests/s its mean latency is '
                  '16.00 ms') and 'above its p99 limit of 10 ms' in little[1])
        rc, out = report(store, 'limits', '16')
        check('limits 16: no mean above a limit (3.27 and 4.00 ms)',
              rc == 0 and 'Little' not in out and 'insert#3 itself' in out)
        rc, _ = report(store, 'json', os.path.join(d, 'out.json'), 'rows:results')
        with open(os.path.join(d, 'out.json'), encoding='utf-8') as f:
            got = {r['name']: r for r in json.load(f)['results']}
        check('JSON: probe_p99_ms 5.0 (submit), 13.5 (complete), none without a limit',
              rc == 0 and got['submit'].get('probe_p99_ms') == 5.0 and
              got['complete'].get('probe_p99_ms') == 13.5 and
              'probe_p99_ms' not in got['insert'] and 'probe_p99_ms' not in got['lifecycle'])
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
