#!/usr/bin/env python3
"""The SQL, the write client and the table of scripts/bench-migrate.sh.

    bench_migrate.py load-sql SCHEMA FIRST LAST ROWS
        print the INSERT ... SELECT of executions FIRST..LAST of ROWS (seq_FIRST_to_LAST
        of the sequence engine) with the columns that schema SCHEMA has; and with FIRST
        = 0 the consumer keys of the tenants (s2r_api_key) instead
    bench_migrate.py writer SOCKET DATABASE RATE TAG OUT READY
        one `mariadb` client session (a child process reading statements from a pipe),
        RATE cycles a second until SIGTERM; each cycle an INSERT of a new execution, an
        UPDATE of a waiting one by primary key (a heartbeat: lease, attempts) and a read
        of one by primary key (a poll), each followed by a SELECT whose line answers it;
        a line "KIND SENT_NS WAIT_NS OK" per statement in OUT (KIND i, u or r; OK 0 when
        it failed); touches READY once the first cycle is answered
    bench_migrate.py table DIR [--json FILE]
        the table from DIR's records (see read_records), and its JSON in FILE
"""
import json
import os
import random
import signal
import subprocess
import sys
import time

TENANTS = 7
ROUTES = 4
# a completed execution's result (about 100 bytes), in result_payload (and
# payload_inline from schema 15)
RESULT = ("IF(st = 'completed', CONCAT('{\"ok\":true,\"order\":', seq, ',\"total\":"
          "\"129.90\",\"ref\":\"', LPAD(seq, 12, '0'), '\",\"note\":\"shipped in "
          "full, one parcel\"}'), NULL)")


def schema_columns(schema):
    """The (column, SQL expression over seq and the derived t, st) pairs an execution
    row of schema SCHEMA is loaded with: t the tenant number, st the status."""
    done = "st IN ('completed', 'failed', 'cancelled', 'expired')"
    cols = [
        ('correlation_id', "CONCAT('c-', seq)"),
        ('environment', "'prod'"),
        ('service_key', "CONCAT('svc-', seq %% %d)" % ROUTES),
        ('operation_key', "'run'"),
        ('status', 'st'),
        ('request_payload', "CONCAT('{\"order\":', seq, ',\"items\":[{\"sku\":\"A-1\","
                            "\"qty\":2},{\"sku\":\"B-7\",\"qty\":1}],\"note\":\"bench "
                            "migrate load row\"}')"),
        ('request_sha256', 'UNHEX(SHA2(seq, 256))'),
        ('result_payload', RESULT),
        ('error_payload', "IF(st = 'failed', '{\"code\":\"backend_error\",\"message\":"
                          "\"upstream said no\"}', NULL)"),
        ('initiator_tenant_id', "CONCAT('tenant-', t)"),
        ('initiator_key_hash', "UNHEX(SHA2(CONCAT('key-', t), 256))"),
        ('poll_token_hash', "UNHEX(SHA2(CONCAT('p', seq), 256))"),
        ('callback_token_hash', "IF(st = 'completed' OR st = 'failed', "
                                "UNHEX(SHA2(CONCAT('cb', seq), 256)), NULL)"),
        ('attempts', "IF(st = 'waiting_callback', 0, 1)"),
        ('created_at', 'ca'),
        ('updated_at', 'ca'),
        ('completed_at', 'IF(%s, ca + INTERVAL 2 SECOND, NULL)' % done),
        ('expires_at', 'ca + INTERVAL 7 DAY'),
    ]
    if schema >= 7:
        cols.append(('initiator_lineage', "UNHEX(SHA2(CONCAT('lineage:', t + 1), 256))"))
    if schema >= 8:
        cols.append(('winner_hash', "IF(st = 'completed' OR st = 'failed', "
                                    "UNHEX(SHA2(CONCAT('w', seq), 256)), NULL)"))
    if schema >= 11:
        cols += [('priority', '0'), ('due_at', 'ca'), ('initiator_lineage_id', 't + 1')]
    if schema >= 15:
        cols.append(('payload_inline', RESULT))
    return cols


def load_sql(schema, first, last, rows):
    """The INSERT ... SELECT of executions first..last: 80 % completed, 10 % waiting,
    5 % failed, 3 % expired, 2 % cancelled, spread over TENANTS tenants and ROUTES routes
    of one environment, created over the last 6 days in order; with first = 0 the
    tenants' consumer keys (ids 1..TENANTS, each its own lineage)."""
    if first == 0:
        keys = ',\n'.join(
            "(%d, 'consumer', UNHEX(SHA2('key-%d', 256)), 'tenant-%d', 'bench', "
            "UTC_TIMESTAMP(3)%s)" % (t + 1, t, t, ', %d' % (t + 1) if schema >= 7 else
                                     '')
            for t in range(TENANTS))
        return ('INSERT INTO s2r_api_key (id, kind, key_hash, tenant_id, label, created_at%s)'
                ' VALUES\n%s;\n' % (', lineage_id' if schema >= 7 else '', keys))
    cols = schema_columns(schema)
    return ('INSERT INTO s2r_async_execution (%s)\nSELECT %s\nFROM (SELECT seq, '
            'seq %% %d AS t,\n  ELT(1 + (seq %% 100 >= 80) + (seq %% 100 >= 90) + '
            '(seq %% 100 >= 95) + (seq %% 100 >= 98),\n    \'completed\', '
            '\'waiting_callback\', \'failed\', \'expired\', \'cancelled\') AS st,\n'
            '  UTC_TIMESTAMP(3) - INTERVAL ((%d - seq) * 518400000 DIV %d * 1000)'
            ' MICROSECOND AS ca\n'
            '  FROM seq_%d_to_%d) s;\n'
            % (', '.join(c for c, _ in cols), ',\n  '.join(e for _, e in cols),
               TENANTS, rows, rows, first, last))


class Client:
    """One mariadb client process; each request is statements followed by a SELECT
    whose one line is the answer."""

    def __init__(self, socket, database, errlog):
        self.p = subprocess.Popen(
            ['mariadb', '--no-defaults', '--user=root', '--socket=' + socket,
             '--batch', '--skip-column-names', '--unbuffered', '--force', database],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog, text=True,
            bufsize=1)

    def ask(self, sql):
        """Send SQL; the answer line (without its newline); EOFError if it ended."""
        self.p.stdin.write(sql + '\n')
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise EOFError('mariadb ended')
        return line.rstrip('\n')

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=60)


def writer(socket, database, rate, tag, out, ready):
    """The write client (see the module's doc); 0, or 1 when mariadb ended."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    with open(out + '.err', 'w', encoding='utf-8') as err:
        c = Client(socket, database, err)
    c.ask('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED; SELECT 1;')
    lo, hi = (int(x) for x in c.ask(
        'SELECT MIN(id), MAX(id) FROM s2r_async_execution;').split('\t'))
    ids = [int(x) for x in c.ask(
        "SELECT GROUP_CONCAT(id) FROM (SELECT id FROM s2r_async_execution "
        "WHERE environment = 'prod' AND service_key = 'svc-0' AND operation_key = 'run' "
        "AND status = 'waiting_callback' LIMIT 2000) w;").split(',')]
    rnd = random.Random(tag)
    period = 1e9 / rate
    n, due = 0, time.time_ns()
    with open(out, 'w', encoding='utf-8') as f:
        while not stop:
            n += 1
            reqs = [
                ('i', "INSERT INTO s2r_async_execution (correlation_id, environment, "
                      "service_key, operation_key, request_payload, request_sha256, "
                      "initiator_tenant_id, initiator_key_hash, poll_token_hash, "
                      "created_at, updated_at, expires_at) VALUES ('w-%s-%d', 'prod', "
                      "'svc-1', 'run', '{\"n\":%d}', UNHEX(SHA2('%d', 256)), 'tenant-1', "
                      "UNHEX(SHA2('key-1', 256)), UNHEX(SHA2('w%d', 256)), "
                      "UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), UTC_TIMESTAMP(3) + INTERVAL 7 "
                      "DAY); SELECT ROW_COUNT();" % (tag, n, n, n, n)),
                ('u', "UPDATE s2r_async_execution SET lease_expires_at = "
                      "UTC_TIMESTAMP(3) + INTERVAL 60 SECOND, attempts = attempts + 1, "
                      "updated_at = UTC_TIMESTAMP(3) WHERE id = %d; SELECT ROW_COUNT();"
                      % rnd.choice(ids)),
                ('r', "SET @s = (SELECT status FROM s2r_async_execution WHERE id = "
                      "%d); SELECT ROW_COUNT() >= 0;" % rnd.randint(lo, hi)),
            ]
            for kind, sql in reqs:
                t0 = time.time_ns()
                try:
                    ans = c.ask(sql)
                except EOFError:
                    return 1
                f.write('%s %d %d %d\n' % (kind, t0, time.time_ns() - t0,
                                           1 if ans == '1' else 0))
            f.flush()
            if n == 1:
                open(ready, 'w', encoding='utf-8').close()
            due = max(due + period, time.time_ns())
            time.sleep(max(0.0, (due - time.time_ns()) / 1e9))
    c.close()
    return 0


def read_records(d):
    """DIR's records: DIR/records.txt lines "rows N", "from N", "rate N" (the
    writer's cycles a second), "mariadb VERSION",
    "size SCHEMA DATA_BYTES INDEX_BYTES" (after the load and after each migration),
    "migrate SCHEMA START_NS END_NS STATUS"; DIR/writes.SCHEMA the writer's lines during
    that migration. A dict: rows, from, rate, mariadb, size {schema: (data, index)},
    migrations [(schema, start, end, status, [(kind, sent, wait, ok)])]."""
    r = dict(rows=0, rate=0, mariadb='', size={}, migrations=[])
    for line in open(os.path.join(d, 'records.txt'), encoding='utf-8'):
        w = line.split()
        if not w:
            continue
        if w[0] in ('rows', 'from', 'rate'):
            r[w[0]] = int(w[1])
        elif w[0] == 'mariadb':
            r['mariadb'] = ' '.join(w[1:])
        elif w[0] == 'size':
            r['size'][int(w[1])] = (int(w[2]), int(w[3]))
        elif w[0] == 'migrate':
            k = int(w[1])
            ops = []
            path = os.path.join(d, 'writes.%d' % k)
            if os.path.exists(path):
                for op in open(path, encoding='utf-8'):
                    o = op.split()
                    if len(o) == 4:
                        ops.append((o[0], int(o[1]), int(o[2]), int(o[3])))
            r['migrations'].append((k, int(w[2]), int(w[3]), int(w[4]), ops))
    return r


def window(ops, start, end, kinds):
    """Of the statements of KINDS that were waiting at some time in [start, end]
    (sent before end and answered after start): (how many, the longest wait in ns
    (0 when none), how many failed)."""
    inside = [o for o in ops if o[0] in kinds and o[1] <= end and o[1] + o[2] >= start]
    return (len(inside), max((o[2] for o in inside), default=0),
            sum(1 for o in inside if not o[3]))


def summary(r):
    """One dict per migration: schema, seconds, status; the client's writes (INSERT
    and UPDATE) and reads waiting during it, the longest wait of a write, an INSERT,
    an UPDATE and a read in ms, the failed writes and reads; the table's data and
    index MB after it."""
    rows = []
    for k, start, end, status, ops in r['migrations']:
        nw, lw, fw = window(ops, start, end, 'iu')
        li, lu = window(ops, start, end, 'i')[1], window(ops, start, end, 'u')[1]
        nr, lr, fr = window(ops, start, end, 'r')
        data, index = r['size'].get(k, (0, 0))
        rows.append(dict(schema=k, seconds=round((end - start) / 1e9, 3), status=status,
                         writes=nw, longest_write_ms=round(lw / 1e6, 1),
                         longest_insert_ms=round(li / 1e6, 1),
                         longest_update_ms=round(lu / 1e6, 1),
                         failed_writes=fw, reads=nr, longest_read_ms=round(lr / 1e6, 1),
                         failed_reads=fr, data_mb=round(data / 2**20, 1),
                         index_mb=round(index / 2**20, 1)))
    return rows


def table(d, json_path):
    """Print the table of DIR (and write its JSON); 0, or 1 if a migration failed."""
    r = read_records(d)
    rows = summary(r)
    frm = r.get('from', 0)
    data, index = r['size'].get(frm, (0, 0))
    print('s2r_async_execution: %d rows at schema %d, %.1f MB data + %.1f MB index '
          '(MariaDB %s)' % (r['rows'], frm, data / 2**20, index / 2**20, r['mariadb']))
    print('%-9s %9s %7s %10s %10s %7s %9s %8s %8s' % (
        'migration', 'seconds', 'writes', 'insert ms', 'update ms', 'reads', 'read ms',
        'data MB', 'index MB'))
    for x in rows:
        print('%-9s %9.2f %7d %10.1f %10.1f %7d %9.1f %8.1f %8.1f%s' % (
            '%03d' % x['schema'], x['seconds'], x['writes'], x['longest_insert_ms'],
            x['longest_update_ms'], x['reads'], x['longest_read_ms'], x['data_mb'],
            x['index_mb'],
            ''.join(s for s in (
                '  FAILED (status %d)' % x['status'] if x['status'] else '',
                '  %d writes failed' % x['failed_writes'] if x['failed_writes'] else '',
                '  %d reads failed' % x['failed_reads'] if x['failed_reads'] else ''))))
    if rows:
        print('%-9s %9.2f' % ('total', sum(x['seconds'] for x in rows)))
    print('writes, reads: the client\'s statements that waited during the migration '
          '(one session, %d cycles a second);\ninsert, update, read ms: the longest wait '
          'of one; data and index MB: after the migration' % r['rate'])
    if json_path:
        with open(json_path, 'w', encoding='utf-8') as f:
            json.dump(dict(rows=r['rows'], schema_from=frm, mariadb=r['mariadb'],
                           writer_rate=r['rate'],
                           data_mb=round(data / 2**20, 1),
                           index_mb=round(index / 2**20, 1), migrations=rows), f,
                      indent=1)
            f.write('\n')
    return 1 if any(x['status'] for x in rows) else 0


def main(argv):
    if len(argv) == 6 and argv[1] == 'load-sql':
        sys.stdout.write(load_sql(*(int(a) for a in argv[2:])))
        return 0
    if len(argv) == 8 and argv[1] == 'writer':
        return writer(argv[2], argv[3], float(argv[4]), argv[5], argv[6], argv[7])
    if len(argv) in (3, 5) and argv[1] == 'table' and (len(argv) == 3 or
                                                       argv[3] == '--json'):
        return table(argv[2], argv[4] if len(argv) == 5 else None)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
