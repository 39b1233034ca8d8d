#!/usr/bin/env python3
"""bench_webhooks.py - the records, arithmetic, tables and JSON of scripts/bench.sh
--webhooks (bench_report.py's sibling: that one keeps the wrk rows, this one the
deliveries and the latency, in the same STORE, as records of their own kinds).

  phase STORE NAME CPU0 CPU1 D0 D1 R0 R1 MS0 MS1 Q0 Q1 [SHARED]
        deliveries the sender made between two samples: D = its delivered counter
        (asyncexec_webhook_attempts_total{result="delivered"}), R = the receiver's count of
        requests, MS = wall clock in ms, Q = "QUESTIONS QUERIES", CPU = bench_cpu_sample
        with the sender's and the receiver's ticks as fields 7 and 8. Records deliveries,
        seconds, deliveries/s and the CPU per delivery of the sender, the receiver and
        (unless SHARED = shared: completes ran meanwhile) MariaDB
  latency STORE NAME RECORDS EXPECTED ROUTE PACE CPU0 CPU1 D0 D1 MS0 MS1 Q0 Q1 RATE GOAL_MS
        the latency run: RECORDS = the receiver's JSON lines ({at, id, body}), EXPECTED =
        the executions the client completed (a mariadb --batch result with a header:
        correlation id, completed_at in ms since the epoch), ROUTE = ENV/SVC/OP of the run's
        events, PACE = bench_pace's summary line. Latency = first arrival of the event's
        webhook-id - its completedAt; lost = expected executions no event arrived for.
        The CPU per complete and per delivery over the window (the drain included)
  table STORE BASES HOOKS MAX_RATIO     the result rows, the CPU per request, the ratios
        with / without an endpoint: BASES and HOOKS are comma-separated complete rows, in
        pairs measured one after the other (without, with); each pair, then all of HOOKS
        to all of BASES with the target (app + db + nginx CPU per complete, the endpoint
        with the sender stopped, at most MAX_RATIO x), then the other complete rows (the
        sender running) to all of BASES; the deliveries, the latency
  count STORE missed BASES HOOKS MAX_RATIO  targets missed (the CPU ratio, the latency)
  json STORE FILE BASES HOOKS MAX_RATIO FIELD...  bench_report.py's json FIELDs (with
        rows:results), the results' cpu with path, sender and receiver, then ratios,
        deliveries and latency
"""
import datetime
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_report as br  # noqa: E402

HZ = os.sysconf('SC_CLK_TCK')
US_PER_TICK = 1e6 / HZ if HZ > 0 else 0


def load(store):
    """rows (bench_report's), phases and latencies by name, in first-seen order."""
    rows, _ = br.load(store)
    phases, lat = {}, {}
    try:
        with open(store, encoding='utf-8') as f:
            for line in f:
                r = json.loads(line)
                kind = r.pop('kind')
                if kind == 'wh_phase':
                    phases[r['name']] = r
                elif kind == 'wh_latency':
                    lat[r['name']] = r
    except FileNotFoundError:
        pass
    return rows, phases, lat


def fmt(v, spec='%.0f'):
    return '-' if v is None else spec % v


def per(ticks, n):
    return ticks * US_PER_TICK / n if n and n > 0 else None


def delta(a, b):
    x, y = br.ints(a), br.ints(b)
    return [y[i] - x[i] for i in range(min(len(x), len(y)))]


def cpu_of(d):
    """{app, db, nginx, sender, receiver, ours} ticks of a bench_cpu_sample delta."""
    d = d + [0] * (8 - len(d))
    return dict(ours=d[2], db=d[3], app=d[4], nginx=d[5], sender=d[6], receiver=d[7])


def other(a, b):
    return br.other_pct(a, b)


def queries(a, b):
    x, y = a.split(), b.split()
    return int(y[0]) - int(x[0]) - 1 if len(x) > 1 and len(y) > 1 else None


def cmd_phase(store, name, cpu0, cpu1, d0, d1, r0, r1, ms0, ms1, q0, q1, shared=''):
    c = cpu_of(delta(cpu0, cpu1))
    n = int(d1) - int(d0)
    secs = (int(ms1) - int(ms0)) / 1000.0
    q = queries(q0, q1)
    rec = dict(name=name, deliveries=n, received=int(r1) - int(r0), seconds=round(secs, 3),
               per_s=round(n / secs, 1) if secs > 0 else None,
               sender_us=per(c['sender'], n), receiver_us=per(c['receiver'], n),
               db_us=None if shared else per(c['db'], n),
               db_rt=None if shared or q is None or n <= 0 else round(q / n, 2),
               other=other(cpu0, cpu1), shared=bool(shared))
    br.append(store, 'wh_phase', rec)
    br.log('%-28s %7d deliveries in %7.3f s (%s/s)   sender %s us   receiver %s us   db %s us'
           ' per delivery   other %s%%' % (name, n, secs, fmt(rec['per_s'], '%.1f'),
                                           fmt(rec['sender_us']), fmt(rec['receiver_us']),
                                           fmt(rec['db_us']), rec['other']))
    return 0


def epoch_ms(rfc3339):
    """ms since the epoch of 2025-12-01T00:00:00.123Z (None when it does not parse)."""
    m = re.match(r'^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?Z$', rfc3339 or '')
    if not m:
        return None
    frac = (m.group(7) or '0').ljust(6, '0')
    t = datetime.datetime(*(int(m.group(i)) for i in range(1, 7)),
                          tzinfo=datetime.timezone.utc)
    return int(t.timestamp()) * 1000 + int(frac) / 1000.0


def pct(v, p):
    """Nearest-rank percentile of the sorted list v."""
    if not v:
        return None
    i = max(0, min(len(v) - 1, int(-(-p * len(v) // 100)) - 1))
    return v[i]


def kvs(line):
    return {k: br.num(v) for k, _, v in (kv.partition('=') for kv in line.split()) if k}


def cmd_latency(store, name, records, expected, route, pace, cpu0, cpu1, d0, d1, ms0, ms1,
                q0, q1, rate, goal_ms):
    env, svc, op = route.split('/')
    want = {}
    with open(expected, encoding='utf-8') as f:
        for i, line in enumerate(f):
            w = line.rstrip('\n').split('\t')
            if i == 0 or len(w) < 2:
                continue                       # the header of mariadb --batch
            want[w[0]] = float(w[1])
    first, seen, cids, bad_body, mismatch = {}, {}, {}, 0, 0
    with open(records, encoding='utf-8') as f:
        for line in f:
            r = json.loads(line)
            try:
                d = json.loads(r['body'])['data']
            except (ValueError, KeyError, TypeError):
                bad_body += 1
                continue
            if (d.get('environment'), d.get('service'), d.get('operation')) != (env, svc, op):
                continue
            wid = r.get('id', '')
            seen[wid] = seen.get(wid, 0) + 1
            if wid in first:
                continue
            first[wid] = (r['at'], d.get('correlationId'), epoch_ms(d.get('completedAt')))
            cids.setdefault(d.get('correlationId'), set()).add(wid)
    lat = []
    for at, cid, done in first.values():
        if done is None:
            bad_body += 1
            continue
        lat.append(at - done)
        if cid in want and abs(want[cid] - done) > 0.5:
            mismatch += 1
    lat.sort()
    p = kvs(pace)
    c = cpu_of(delta(cpu0, cpu1))
    ok = int(p.get('ok') or 0)
    n = int(d1) - int(d0)
    secs = (int(ms1) - int(ms0)) / 1000.0
    lost = sorted(set(want) - set(cids))
    q = queries(q0, q1)
    rec = dict(name=name, rate_target=br.num(rate), rate_sent=p.get('rate'),
               seconds=p.get('seconds'), sent=p.get('sent'), ok=ok,
               errors=p.get('errors'), late_p99_ms=p.get('late_p99_ms'),
               late_max_ms=p.get('late_max_ms'), complete_p50_ms=p.get('p50_ms'),
               complete_p99_ms=p.get('p99_ms'), expected=len(want),
               received=len(set(want) & set(cids)), events=len(first),
               lost=len(lost), lost_examples=lost[:5],
               repeats=sum(v - 1 for v in seen.values()),
               executions_with_two_ids=sum(1 for s in cids.values() if len(s) > 1),
               unexpected=len(set(cids) - set(want)), completed_at_mismatch=mismatch,
               bad_bodies=bad_body,
               p50_ms=pct(lat, 50), p95_ms=pct(lat, 95), p99_ms=pct(lat, 99),
               max_ms=lat[-1] if lat else None, min_ms=lat[0] if lat else None,
               goal_p95_ms=br.num(goal_ms),
               window_s=round(secs, 3), deliveries=n, other=other(cpu0, cpu1),
               cpu_per_complete=dict((k, per(c[k], ok)) for k in ('app', 'db', 'nginx')),
               cpu_per_complete_ours=per(c['ours'], ok),
               db_rt_per_complete=round(q / ok, 2) if q is not None and ok > 0 else None,
               sender_us=per(c['sender'], n), receiver_us=per(c['receiver'], n))
    rec['met'] = (rec['p95_ms'] is not None and rec['p95_ms'] <= float(goal_ms) and
                  rec['lost'] == 0 and rec['errors'] == 0 and rec['expected'] == ok > 0)
    br.append(store, 'wh_latency', rec)
    br.log('%s: %d sent at %s/s, %d received, %d lost; latency p50 %s p95 %s p99 %s max %s ms'
           % (name, ok, fmt(rec['rate_sent'], '%.1f'), rec['received'], rec['lost'],
              fmt(rec['p50_ms']), fmt(rec['p95_ms']), fmt(rec['p99_ms']),
              fmt(rec['max_ms'])))
    return 0


def row_cpu(r):
    """{app, db, nginx, path, sender, receiver, rest, total} us per request of a row."""
    v = [br.num(x) for x in r['cpu']]
    out = dict(zip(('app', 'db', 'nginx', 'rest', 'total'), v))
    out['path'] = (None if None in (out['app'], out['db'], out['nginx'])
                   else out['app'] + out['db'] + out['nginx'])
    out['same'] = (None if None in (out['app'], out['nginx'])
                   else out['app'] + out['nginx'])
    ticks = r.get('cpu_extra_ticks') or []
    n = br.num(r.get('reqs'))
    out['sender'] = per(ticks[0], n) if len(ticks) > 0 and n else None
    out['receiver'] = per(ticks[1], n) if len(ticks) > 1 and n else None
    return out


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def pooled(rows, names):
    """{rps, app, db, nginx, path, errors} of the runs names together: the mean req/s,
    the CPU per request over all their requests (None when one is missing)."""
    rs = [rows[n] for n in names if n in rows]
    if not rs or len(rs) != len(names):
        return None
    w = [br.num(r.get('reqs')) or 0 for r in rs]
    out = dict(rps=sum(br.num(r['rps']) or 0 for r in rs) / len(rs),
               errors=sum(int(r['errors']) for r in rs))
    for k in ('app', 'db', 'nginx', 'path', 'same'):
        v = [row_cpu(r)[k] for r in rs]
        out[k] = (None if None in v or sum(w) <= 0
                  else sum(a * b for a, b in zip(v, w)) / sum(w))
    return out


def ratios(rows, bases, hooks, max_ratio):
    """[(name, of, {rps, app, db, nginx, path, target, met})]: each run of hooks to the
    run of bases beside it (comma-separated lists, in pairs), then all of hooks together to
    all of bases together, with the target (the endpoint with the sender stopped: the
    request path, at most max_ratio x), then every other complete row to all of bases."""
    bases, hooks = bases.split(','), hooks.split(',')
    out = []

    def q_of(h, b):
        q = dict(rps=ratio(h['rps'], b['rps']))
        for k in ('app', 'db', 'nginx', 'path', 'same'):
            q[k] = ratio(h[k], b[k])
        q['db_over_same'] = ratio(q['db'], q['same'])
        q['target'], q['met'] = None, None
        return q

    for h, b in zip(hooks, bases):
        ph, pb = pooled(rows, [h]), pooled(rows, [b])
        if ph and pb:
            out.append((h, b, q_of(ph, pb)))
    ph, pb = pooled(rows, hooks), pooled(rows, bases)
    if len(hooks) > 1:
        hname = '%s (%d runs)' % (hooks[0].split(':')[0], len(hooks))
        bname = '%s (%d runs)' % (bases[0].split(':')[0], len(bases))
    else:
        hname, bname = hooks[0], bases[0]
    if ph and pb:
        q = q_of(ph, pb)
        q['target'] = 'path <= %s x' % max_ratio
        q['met'] = (q['path'] is not None and q['path'] <= float(max_ratio) and
                    ph['errors'] == 0 and pb['errors'] == 0)
        if len(hooks) > 1:
            out.append((hname, bname, q))
        else:
            out[-1] = (hname, bname, q)
    for n in rows:
        if n.endswith(':complete') and n not in bases and n not in hooks and pb:
            out.append((n, bname, q_of(pooled(rows, [n]), pb)))
    return out


def cmd_table(store, bases, hooks, max_ratio):
    rows, phases, lats = load(store)
    f = '%-22s %10s %9s %9s %6s %6s %6s %6s'
    print(f % ('name', 'req/s', 'p50_ms', 'p99_ms', 'errors', 'other%', 'db_rt', 'db_st'))
    for name, r in rows.items():
        print(f % (name, r['rps'], r['p50'], r['p99'], r['errors'], r['other'] or '-',
                   r['dbq'][0], r['dbq'][1]))

    print('\nCPU per request in microseconds, by process (path = app + db + nginx; sender ='
          ' asyncexec-notify; receiver = the loopback receiver; latency run: per complete,'
          ' over the run and its drain):')
    f = '%-22s %7s %7s %8s %7s %9s %11s %9s %8s'
    print(f % ('name', 'app_us', 'db_us', 'nginx_us', 'path_us', 'sender_us', 'receiver_us',
               'wrk+tools', 'total_us'))
    for name, r in rows.items():
        c = row_cpu(r)
        print(f % (name, fmt(c['app']), fmt(c['db']), fmt(c['nginx']), fmt(c['path']),
                   fmt(c['sender']), fmt(c['receiver']), fmt(c['rest']), fmt(c['total'])))
    for name, l in lats.items():
        c = l['cpu_per_complete']
        path = (None if None in c.values() else sum(c.values()))
        sender = per_complete(l, 'sender_us')
        receiver = per_complete(l, 'receiver_us')
        print(f % (name, fmt(c['app']), fmt(c['db']), fmt(c['nginx']), fmt(path),
                   fmt(sender), fmt(receiver), '-', fmt(l['cpu_per_complete_ours'])))

    print('\nwith / without an endpoint: requests/s and CPU per complete, to the run(s)'
          ' without (several runs together: mean req/s, CPU over all their requests)')
    f = '%-28s %-28s %6s %6s %6s %6s %6s %6s %7s  %-14s %s'
    print(f % ('name', 'of', 'req/s', 'app', 'db', 'nginx', 'path', 'same', 'db/same',
               'target', 'met'))
    for name, of, v in ratios(rows, bases, hooks, max_ratio):
        print(f % (name, of, fmt(v['rps'], '%.3f'), fmt(v['app'], '%.3f'),
                   fmt(v['db'], '%.3f'), fmt(v['nginx'], '%.3f'), fmt(v['path'], '%.3f'),
                   fmt(v['same'], '%.3f'), fmt(v['db_over_same'], '%.3f'),
                   v['target'] or '-', {True: 'yes', False: 'no'}.get(v['met'], '-')))
    print('same = app + nginx: their work does not depend on the endpoint, so their ratio'
          ' is the drift of the machine between the runs; db/same = MariaDB\'s ratio with'
          ' that drift divided out (where an endpoint could cost: SET_NOTIFY\'s subquery'
          ' and the mark)')

    print('\ndeliveries, asyncexec-notify -> the receiver (CPU per delivery in microseconds):')
    f = '%-28s %10s %9s %9s %9s %9s %11s %6s %6s %6s'
    print(f % ('phase', 'deliveries', 'received', 'seconds', 'per_s', 'sender_us',
               'receiver_us', 'db_us', 'db_rt', 'other%'))
    for name, p in phases.items():
        print(f % (name, p['deliveries'], p['received'], '%.3f' % p['seconds'],
                   fmt(p['per_s'], '%.1f'), fmt(p['sender_us']), fmt(p['receiver_us']),
                   fmt(p['db_us']), fmt(p['db_rt'], '%.2f'), p['other']))
    for name, l in lats.items():
        print(f % (name, l['deliveries'], l['received'], '%.3f' % l['window_s'],
                   fmt(l['deliveries'] / l['window_s'] if l['window_s'] else None, '%.1f'),
                   fmt(l['sender_us']), fmt(l['receiver_us']), '-', '-', l['other']))

    for name, l in lats.items():
        print('\nlatency, committed transition (the event\'s completedAt) -> first attempt at'
              ' the receiver, %s completes/s for %s s (%s):' % (
                  fmt(l['rate_target'], '%g'), fmt(l['seconds'], '%.1f'), name))
        f = '%8s %9s %6s %8s %6s %6s %8s %8s %8s %8s  %-24s %s'
        print(f % ('rate', 'rate_sent', 'sent', 'received', 'lost', 'repeat', 'p50_ms',
                   'p95_ms', 'p99_ms', 'max_ms', 'target', 'met'))
        print(f % (fmt(l['rate_target'], '%g'), fmt(l['rate_sent'], '%.1f'), l['ok'],
                   l['received'], l['lost'], l['repeats'], fmt(l['p50_ms']),
                   fmt(l['p95_ms']), fmt(l['p99_ms']), fmt(l['max_ms']),
                   'p95<=%gms, lost=0' % l['goal_p95_ms'], 'yes' if l['met'] else 'no'))
        print('client: %s request errors; start behind schedule p99 %s ms, max %s ms; complete'
              ' answered p50 %s ms, p99 %s ms; events for other executions %s, completedAt'
              ' unlike the database %s, unreadable bodies %s%s' % (
                  l['errors'], fmt(l['late_p99_ms'], '%.1f'), fmt(l['late_max_ms'], '%.1f'),
                  fmt(l['complete_p50_ms'], '%.2f'), fmt(l['complete_p99_ms'], '%.2f'),
                  l['unexpected'], l['completed_at_mismatch'], l['bad_bodies'],
                  '; lost e.g. ' + ' '.join(l['lost_examples']) if l['lost'] else ''))
    return 0


def per_complete(l, key):
    """A latency run's sender / receiver CPU per complete (its figures are per delivery)."""
    v = l.get(key)
    return v * l['deliveries'] / l['ok'] if v is not None and l['ok'] else None


def cmd_count(store, what, bases, hooks, max_ratio):
    rows, _, lats = load(store)
    if what != 'missed':
        print('bench_webhooks: count missed only', file=sys.stderr)
        return 2
    n = sum(1 for _, _, v in ratios(rows, bases, hooks, max_ratio) if v['met'] is False)
    n += sum(1 for l in lats.values() if not l['met'])
    print(n)
    return 0


def rnd(v, nd=0):
    if v is None:
        return None
    return round(v, nd) if nd else int(round(v))


def cmd_json(store, path, bases, hooks, max_ratio, *fields):
    br.cmd_json(store, path, *fields)
    rows, phases, lats = load(store)
    with open(path, encoding='utf-8') as f:
        doc = json.load(f)
    for item in doc.get('results', []):
        r = rows.get(item['name'])
        if r is not None and r.get('cpu_extra_ticks'):
            c = row_cpu(r)
            item['cpu_us_per_request'].update(path=c['path'], sender=rnd(c['sender']),
                                              receiver=rnd(c['receiver']))
    doc['ratios'] = [dict({k: (round(v, 3) if isinstance(v, float) else v)
                           for k, v in q.items()}, name=n, of=of)
                     for n, of, q in ratios(rows, bases, hooks, max_ratio)]
    doc['deliveries'] = [dict(p, sender_us=rnd(p['sender_us']),
                              receiver_us=rnd(p['receiver_us']), db_us=rnd(p['db_us']))
                         for p in phases.values()]
    doc['latency'] = []
    for l in lats.values():
        l = dict(l)
        for k in ('p50_ms', 'p95_ms', 'p99_ms', 'max_ms', 'min_ms'):
            l[k] = rnd(l[k], 1) if l[k] is not None else None
        l['cpu_per_complete'] = {k: rnd(v) for k, v in l['cpu_per_complete'].items()}
        for k in ('cpu_per_complete_ours', 'sender_us', 'receiver_us'):
            l[k] = rnd(l[k])
        doc['latency'].append(l)
    with open(path + '.tmp', 'w', encoding='utf-8') as f:
        json.dump(doc, f, indent=2)
        f.write('\n')
    os.replace(path + '.tmp', path)
    return 0


COMMANDS = {'phase': cmd_phase, 'latency': cmd_latency, 'table': cmd_table,
            'count': cmd_count, 'json': cmd_json}


def main(argv):
    if len(argv) < 3 or argv[1] not in COMMANDS:
        print(__doc__, file=sys.stderr)
        return 2
    return COMMANDS[argv[1]](*argv[2:])


if __name__ == '__main__':
    sys.exit(main(sys.argv))
