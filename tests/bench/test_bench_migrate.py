#!/usr/bin/env python3
"""test_bench_migrate.py - unit_bench_migrate: scripts/lib/bench_migrate.py
(scripts/bench-migrate.sh) on made-up records (no services).

  test_bench_migrate.py ROOT

The write client's statements counted for a migration are those waiting at some time
during it (sent before its end, answered after its start), with their whole wait; the
table's seconds, longest insert, update, write and read waits, failures, sizes in MB
and exit status from the records; the columns the load writes at a schema are columns
that the migrations up to that schema create.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'notify'))
from notify_env import Checks  # noqa: E402

ROOT = sys.argv[1] if len(sys.argv) > 1 else '.'
SCRIPT = os.path.join(ROOT, 'scripts', 'lib', 'bench_migrate.py')
sys.path.insert(0, os.path.join(ROOT, 'scripts', 'lib'))
import bench_migrate  # noqa: E402

MS = 1000000
S = 1000 * MS


def write(path, text):
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)


def check_window(check):
    # the migration runs from 10 s to 20 s
    ops = [('i', 5 * S, 1 * MS, 1),        # answered before it began: not counted
           ('u', 9 * S, 2 * S, 1),         # sent before, answered during: 2,000 ms
           ('i', 12 * S, 30 * MS, 1),
           ('r', 15 * S, 1 * MS, 0),       # a failed read
           ('u', 19 * S, 3 * S, 0),        # answered after the end, failed: 3,000 ms
           ('i', 21 * S, 1 * MS, 1)]       # sent after the end: not counted
    check('writes waiting during it: 3, the longest 3 s, 1 failed',
          bench_migrate.window(ops, 10 * S, 20 * S, 'iu') == (3, 3 * S, 1))
    check('inserts: 1, the longest 30 ms',
          bench_migrate.window(ops, 10 * S, 20 * S, 'i') == (1, 30 * MS, 0))
    check('reads: 1, failed',
          bench_migrate.window(ops, 10 * S, 20 * S, 'r') == (1, 1 * MS, 1))
    check('none of a kind: (0, 0, 0)',
          bench_migrate.window(ops, 30 * S, 40 * S, 'iu') == (0, 0, 0))


def check_table(check, d):
    write(os.path.join(d, 'records.txt'),
          'rows 1000\nfrom 9\nrate 50\nmariadb 10.11.6-MariaDB\n'
          'size 9 104857600 52428800\n'
          'migrate 10 10000000000 12500000000 0\nsize 10 104857600 62914560\n'
          'migrate 11 20000000000 50000000000 0\nsize 11 115343360 57671680\n')
    write(os.path.join(d, 'writes.10'),
          'i 9900000000 200000000 1\nu 10100000000 5000000 1\n'
          'r 10200000000 1000000 1\nr 13000000000 1000000 1\n')
    write(os.path.join(d, 'writes.11'),
          'i 19990000000 25000000000 1\nu 45000000000 6000000 0\n'
          'r 46000000000 2500000 1\n')
    out = os.path.join(d, 'out.json')
    p = subprocess.run([sys.executable, SCRIPT, 'table', d, '--json', out],
                       capture_output=True, text=True, check=False)
    check('exit 0 when every migration succeeded', p.returncode == 0, p.stderr)
    j = json.load(open(out, encoding='utf-8'))
    m = {x['schema']: x for x in j['migrations']}
    check('the load: 1,000 rows at schema 9, 100 MB data + 50 MB index, rate 50',
          (j['rows'], j['schema_from'], j['data_mb'], j['index_mb'], j['writer_rate'])
          == (1000, 9, 100.0, 50.0, 50))
    check('010: 2.5 s, 2 writes (the insert sent before it), insert 200 ms, update 5 ms',
          (m[10]['seconds'], m[10]['writes'], m[10]['longest_insert_ms'],
           m[10]['longest_update_ms'], m[10]['longest_write_ms']) ==
          (2.5, 2, 200.0, 5.0, 200.0), m[10])
    check('010: 1 read (the one after its end not), 1 ms; 60 MB index after it',
          (m[10]['reads'], m[10]['longest_read_ms'], m[10]['index_mb']) ==
          (1, 1.0, 60.0), m[10])
    check('011: 30 s, an insert that waited 25 s, a failed update, 110 MB data',
          (m[11]['seconds'], m[11]['longest_write_ms'], m[11]['failed_writes'],
           m[11]['data_mb']) == (30.0, 25000.0, 1, 110.0), m[11])
    line = [x for x in p.stdout.splitlines() if x.startswith('011')]
    check('the table: 011 with its failed write named', len(line) == 1 and
          '1 writes failed' in line[0] and '25000.0' in line[0], line)
    check('the table: the total seconds', re.search(r'^total +32\.50$', p.stdout, re.M)
          is not None, p.stdout)
    write(os.path.join(d, 'records.txt'),
          'rows 1000\nfrom 9\nrate 50\nmariadb x\nsize 9 1 1\n'
          'migrate 10 10000000000 12500000000 1\n')
    p = subprocess.run([sys.executable, SCRIPT, 'table', d], capture_output=True,
                       text=True, check=False)
    check('a failed migration: exit 1 and FAILED in its row',
          p.returncode == 1 and 'FAILED (status 1)' in p.stdout, p.stdout)


def check_columns(check):
    migrations = sorted(f for f in os.listdir(os.path.join(ROOT, 'sql'))
                        if re.match(r'^\d{3}_.*\.sql$', f))
    for schema in (1, 7, 9, 10, 11, 14, len(migrations)):
        text = ''.join(open(os.path.join(ROOT, 'sql', f), encoding='utf-8').read()
                       for f in migrations[:schema])
        missing = [c for c, _ in bench_migrate.schema_columns(schema)
                   if not re.search(r'\b%s\b' % c, text)]
        check('schema %d: every column loaded exists by then' % schema, not missing,
              missing)
    sql = bench_migrate.load_sql(9, 1, 100, 1000)
    check('the load reads seq_1_to_100 and spreads 1,000 rows',
          'FROM seq_1_to_100)' in sql and '(1000 - seq)' in sql, sql)
    keys = bench_migrate.load_sql(9, 0, 0, 1000)
    check('the keys: %d tenants, each its own lineage' % bench_migrate.TENANTS,
          keys.count("'consumer'") == bench_migrate.TENANTS and 'lineage_id' in keys)


def main():
    c = Checks()
    check_window(c.check)
    with tempfile.TemporaryDirectory() as d:
        check_table(c.check, d)
    check_columns(c.check)
    bad = subprocess.run([sys.executable, SCRIPT, 'table'], capture_output=True,
                         text=True, check=False)
    c.check('too few arguments: a usage message, not a traceback',
            bad.returncode == 2 and 'Traceback' not in bad.stderr)
    sys.exit(c.done())


if __name__ == '__main__':
    main()
