#!/usr/bin/env python3
"""bench_report.py - the records, arithmetic, tables and JSON of scripts/bench.sh.

bench.sh starts and stops the processes and takes the raw samples (wrk's output, CPU
ticks from /proc, the database's statement counters); this program turns them into the
result rows and prints them. The rows live in STORE, a JSON-lines file of records (a
later record of a name replaces the earlier one, the first one's place kept; records of
other kinds are scripts/lib/bench_webhooks.py's and passed over here):

  wrk STORE NAME FILE CPU0 CPU1 Q0 Q1   a wrk run: FILE parsed (requests/s, p50, p99 in
        ms, errors = non-2xx/3xx + socket errors, complete.lua's overrun), other% and the
        CPU time per request from the two "TOTAL BUSY OURS DB APP NGINX" samples, the
        database round trips / statements per request from the two "QUESTIONS QUERIES"
        counts; prints "RPS OVERRUN"; exit 1 when FILE has no result. Samples with
        further fields (bench.sh --webhooks: the sender's and the receiver's ticks) keep
        their deltas in the run and its row (cpu_extra_ticks, with reqs), out of the rest
  row STORE NAME [RUN]                  run RUN (default NAME) as result row NAME (its
        overrun counted as errors); logs the row on stderr
  lifecycle STORE NAME FILE CPU0 CPU1 Q0 Q1 WARM DUR
        bench_lifecycle's summary (FILE's last line) as row NAME: executions/s, its CPU
        and database counts per execution (the samples span the warm-up: scaled to DUR)
  ratio STORE NAME OF MIN [MAX_P99_MS]  NAME's rate / OF's; the target is met when it is
        at least MIN (and NAME's p99 at most MAX_P99_MS) and NAME had no errors; with
        MAX_P99_MS, OF's own p99 is kept with it (the JSON row's probe_p99_ms)
  limits STORE [CONNS]                  a line for each ratio whose p99 limit is below
        the p99 of its probe itself: that probe, at the same load, missed it already;
        with CONNS (wrk's connections), a line for each whose mean latency, CONNS / its
        rate (Little's law), is above its p99 limit
  flat STORE NAME OF PROBE OFPROBE MIN  (NAME's rate / PROBE's) / (OF's / OFPROBE's): NAME
        against OF, each per its own probe (the machine's drift between them taken out);
        PROBE and OFPROBE may be "A+B", the mean of two probe runs' rates (the run right
        before the row and the one right after it); met when at least MIN and NAME had
        no errors
  limit STORE NAME MAX_P99_MS           a target on NAME's p99 alone (no probe): met when
        it is at most MAX_P99_MS and NAME had no errors
  ceiling STORE NAME MIN KIND=PROBE...   lifecycle row NAME at its probes' cost: its
        submits, polls, claims and completes per execution, each at the total CPU per
        request of its PROBE (A+B: the mean of two runs), summed; the ceiling = NAME's
        rate x its total CPU per execution / that sum. Records NAME / ceiling as NAME's
        ratio with the target rate >= MIN (met when NAME had no errors), the ceiling and
        the sum with it (the JSON row's probe_ceiling); prints the line
  budget STORE NAME MIN CLAIM FLOOR KIND=ROW...
        what lifecycle row NAME's claims may cost for it to reach MIN executions/s on
        the CPU it used (its rate x its CPU per execution / MIN), its other requests
        at their own rows' cost (KIND=ROW for submits, polls, completes; A+B the mean),
        per claim request, printed beside row CLAIM's cost and row FLOOR's (no record)
  get STORE NAME                        NAME's rate
  quotient STORE A B                    A's rate / B's, three decimals, or nan
  flat-value STORE NAME OF PROBE OFPROBE
        flat's ratio alone, printed (no row, no target)
  need RATE FACTOR SECONDS THREADS      requests for SECONDS at FACTOR x RATE, a multiple
                                        of THREADS (the claimed executions complete needs)
  mib KIB                               KIB in MiB, two decimals
  table | cpu-table | warning STORE     the result table, the CPU table, the other% warning
  cluster-table STORE M...              single:M beside cluster:M, their ratios
  count STORE errors|missed             rows with request errors / targets missed
  json STORE FILE FIELD...              the JSON document, fields in order: TYPE:KEY=VALUE
        with KEY a.b for nesting and TYPE s (string), n (number or null), b (yes/true:
        true), a (space-separated numbers), kv (space-separated k=v, numbers), and the
        fields rows:KEY (the result rows) and ratios:KEY=M,M... (cluster / single)
"""
import json
import os
import re
import sys

NUM = re.compile(r'^-?[0-9]+(\.[0-9]+)?$')
NONE5 = ['-'] * 5
MIX = ('submits', 'polls', 'claims', 'completes')   # bench_lifecycle's requests


def load(store):
    """The rows of STORE in first-seen order, the runs and the ratios by name."""
    rows, runs, ratios = {}, {}, {}
    try:
        with open(store, encoding='utf-8') as f:
            for line in f:
                r = json.loads(line)
                kind = r.pop('kind')
                if kind in ('row', 'run', 'ratio'):  # others: bench_webhooks.py's
                    {'row': rows, 'run': runs, 'ratio': ratios}[kind][r['name']] = r
    except FileNotFoundError:
        pass
    for name, r in rows.items():
        r.update(ratios.get(name, {}))
    return rows, runs


def append(store, kind, rec):
    with open(store, 'a', encoding='utf-8') as f:
        f.write(json.dumps(dict(kind=kind, **rec)) + '\n')


def log(msg):
    print('bench: ' + msg, file=sys.stderr)


def to_ms(v):
    """A wrk time (812.00us, 1.20ms, 2.01s, 1.00m, 1.00h) in ms, three decimals."""
    for unit, f in (('us', 0.001), ('ms', 1), ('m', 60000), ('h', 3600000), ('s', 1000)):
        if v.endswith(unit):
            v = v[:-len(unit)]
            if re.match(r'^[0-9.]+$', v):
                return '%.3f' % (float(v) * f)
            break
    return 'nan'


def parse_wrk(path):
    """requests/s, requests, p50, p99, errors, overrun of wrk --latency output."""
    rps = reqs = p50 = p99 = None
    errors = overrun = 0
    with open(path, encoding='utf-8', errors='replace') as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            if w[0] == 'Requests/sec:' and len(w) > 1:
                rps = '%.1f' % float(w[1])
            elif ' requests in ' in line and reqs is None:
                reqs = w[0]
            elif w[0] == '50%' and p50 is None and len(w) > 1:
                p50 = to_ms(w[1])
            elif w[0] == '99%' and p99 is None and len(w) > 1:
                p99 = to_ms(w[1])
            elif w[0] == 'overrun' and len(w) > 1 and overrun == 0:
                overrun = int(float(w[1]))
            if 'Non-2xx or 3xx responses:' in line:
                errors += int(w[-1])
            if 'Socket errors:' in line:
                errors += sum(int(n) for n in re.findall(r'[0-9]+', line))
    if None in (rps, p50, p99) or 'nan' in (p50, p99):
        return None
    return dict(rps=rps, reqs=reqs, p50=p50, p99=p99, errors=errors, overrun=overrun)


def ints(s):
    return [int(x) for x in s.split()]


def other_pct(a, b):
    x, y = ints(a), ints(b)
    t = y[0] - x[0]
    if t <= 0:
        return 'nan'
    o = max((y[1] - x[1]) - (y[2] - x[2]), 0)
    return '%.0f' % (100 * o / t)


def cpu_split(a, b, n, scale=1.0):
    """CPU microseconds per request: app, db, nginx, the rest of ours, total. The
    processes of the samples' extra fields (see cpu_extra) are not in the rest."""
    x, y = ints(a), ints(b)
    hz = os.sysconf('SC_CLK_TCK')
    if n <= 0 or hz <= 0:
        return list(NONE5)
    f = scale * 1e6 / hz / n
    ours, db, app, ngx = ((y[i] - x[i]) * f for i in (2, 3, 4, 5))
    extra = sum(y[i] - x[i] for i in range(6, min(len(x), len(y)))) * f
    return ['%.0f' % v for v in (app, db, ngx, ours - db - app - ngx - extra, ours)]


def cpu_extra(a, b):
    """The clock ticks of the samples' extra fields (bench_cpu_sample's BENCH_CPU_EXTRA
    processes, after the first six), one per process; [] when there are none."""
    x, y = ints(a), ints(b)
    return [y[i] - x[i] for i in range(6, min(len(x), len(y)))]


def per_request(a, b, n, scale=1.0, read=1):
    """Round trips and statements per request; the read that took b not counted."""
    x, y = a.split(), b.split()
    if len(x) < 2 or len(y) < 2 or n <= 0:
        return ['-', '-']
    return ['%.2f' % max(((int(y[i]) - int(x[i])) * scale - read) / n, 0) for i in (0, 1)]


def num(s):
    if s is None or not NUM.match(str(s)):
        return None
    return int(s) if re.match(r'^-?[0-9]+$', str(s)) else float(s)


def cmd_wrk(store, name, path, cpu0, cpu1, q0, q1):
    w = parse_wrk(path)
    if w is None:
        return 1
    n = int(w['reqs'] or 0)
    w.update(name=name, other=other_pct(cpu0, cpu1), dbq=per_request(q0, q1, n),
             cpu=cpu_split(cpu0, cpu1, n))
    if cpu_extra(cpu0, cpu1):
        w['cpu_extra_ticks'] = cpu_extra(cpu0, cpu1)
    append(store, 'run', w)
    print(w['rps'], w['overrun'])
    return 0


def add_row(store, name, rps, p50, p99, errors, other, dbq, cpu, **extra):
    append(store, 'row', dict(name=name, rps=rps, p50=p50, p99=p99, errors=str(errors),
                              other=other, dbq=dbq, cpu=cpu, **extra))
    log('%-15s %10s req/s   p50 %8s ms   p99 %8s ms   errors %s   other %s%%   db rt/st %s'
        % (name, rps, p50, p99, errors, other, ' '.join(dbq)))


def cmd_row(store, name, run=None):
    _, runs = load(store)
    w = runs[run or name]
    extra = {}
    if 'cpu_extra_ticks' in w:
        extra = dict(reqs=w['reqs'], cpu_extra_ticks=w['cpu_extra_ticks'])
    add_row(store, name, w['rps'], w['p50'], w['p99'], w['errors'] + w['overrun'],
            w['other'], w['dbq'], w['cpu'], **extra)
    return 0


def cmd_lifecycle(store, name, path, cpu0, cpu1, q0, q1, warm, dur):
    with open(path, encoding='utf-8') as f:
        lines = f.read().splitlines()
    life = dict(kv.split('=', 1) for kv in (lines[-1].split() if lines else []) if '=' in kv)
    done = int(life.get('done', 0))
    scale = float(dur) / (float(warm) + float(dur))
    mix = {k: '%.2f' % (int(life.get(k, 0)) / done) if done > 0 else '-'
           for k in MIX}
    add_row(store, name, life.get('exec_per_s', ''), life.get('p50_ms', ''),
            life.get('p99_ms', ''), life.get('errors', ''), other_pct(cpu0, cpu1),
            per_request(q0, q1, done, scale, read=0), cpu_split(cpu0, cpu1, done, scale),
            mix=mix)
    return 0


def cost(rows, name):
    """Row NAME's total CPU microseconds per request; for "A+B", the mean of A's and B's
    (None if one is missing)."""
    if '+' in name:
        parts = [cost(rows, n) for n in name.split('+')]
        return None if None in parts else sum(parts) / len(parts)
    return num(rows.get(name, {}).get('cpu', NONE5)[4])


def cmd_ceiling(store, name, mn, *probes):
    """Row NAME (a lifecycle) at its probes' cost: each of its requests per execution
    (MIX) at the total CPU per request of its probe, PROBES being KIND=PROBE (A+B: the
    mean of two runs), one per MIX kind; the ceiling = NAME's rate x its total CPU per
    execution / that sum (the CPU NAME used, spent at the probes' cost). Records the
    ratio NAME / ceiling with the target rate >= MN (met when NAME had no errors) and
    prints the ceiling line of the report."""
    rows, _ = load(store)
    r, of = rows[name], dict(p.split('=', 1) for p in probes)
    mix = {k: num(r.get('mix', {}).get(k)) for k in MIX}
    costs = {k: cost(rows, of.get(k, '')) for k in MIX}
    total, rps = num(r['cpu'][4]), rate(rows, name)
    parts = [(mix[k], costs[k]) for k in MIX]
    ok = None not in [x for p in parts for x in p] + [total, rps]
    floor = sum(m * c for m, c in parts) if ok else None
    ceil = rps * total / floor if ok and floor > 0 else None
    met = rps is not None and rps >= float(mn) and r['errors'] == '0'
    append(store, 'ratio', dict(name=name, ratio=quotient(rps, ceil), of='probe ceiling',
                                target='>=%s exec/s' % mn, met='yes' if met else 'no',
                                ceiling='%.1f' % ceil if ceil is not None else '-',
                                floor_us='%.0f' % floor if floor is not None else '-'))
    if ceil is None:
        print('%s at its probes\' cost: not computed (a probe row or the mix is missing)'
              % name)
        return 0
    print('%s at its probes\' cost: %.1f executions/s, ratio %s: per execution %s '
          '= %.0f us of CPU (the probes\' total per request), against the %s us it used '
          'at %.1f/s' % (name, ceil, quotient(rps, ceil), ', '.join(
              '%.2f %s at %s\'s %.0f us' % (mix[k], k, of[k], costs[k]) for k in MIX),
              floor, r['cpu'][4], rps))
    return 0


def cmd_budget(store, name, mn, claim, floor_row, *own):
    """What the claims of row NAME (a lifecycle) may cost for it to reach MN executions/s
    with the CPU it used (its rate x its total CPU per execution, spread over MN): that
    budget less its submits, polls and completes each at the total CPU per request of its
    own row (OWN: KIND=ROW, A+B the mean), per claim request; printed beside row CLAIM's
    cost and row FLOOR_ROW's (a request that reads nothing, the least any costs). No
    record."""
    rows, _ = load(store)
    r, of = rows[name], dict(p.split('=', 1) for p in own)
    mix = {k: num(r.get('mix', {}).get(k)) for k in MIX}
    total, rps = num(r['cpu'][4]), rate(rows, name)
    parts = [(mix[k], cost(rows, of.get(k, ''))) for k in MIX if k != 'claims']
    vals = [x for p in parts for x in p] + [total, rps, mix['claims'],
                                            cost(rows, claim), cost(rows, floor_row)]
    if None in vals or not mix['claims']:
        print('%s\'s claims: budget not computed (a row or the mix is missing)' % name)
        return 0
    at_min = rps * total / float(mn)
    rest = sum(m * c for m, c in parts)
    left = max(at_min - rest, 0.0)    # none when the other requests take it all
    print('%s\'s claims: at %s executions/s on the CPU this run used (%s us per execution '
          'at %.1f/s: %.0f at %s/s), its submits, polls and completes at their own rows\' '
          'cost take %.0f us, which leaves %.0f us per execution for its %.2f claims: %s '
          'against the %.0f us of a claim request (row %s) and the %.0f us of %s, which '
          'reads nothing' % (
              name, mn, r['cpu'][4], rps, at_min, mn, rest, left, mix['claims'],
              '%.0f us per claim request' % (left / mix['claims']) if left > 0 else 'nothing',
              cost(rows, claim), claim, cost(rows, floor_row), floor_row))
    return 0


def rate(rows, name):
    """Row NAME's req/s; for "A+B", the mean of rows A's and B's (None if one is missing)."""
    if '+' in name:
        parts = [rate(rows, n) for n in name.split('+')]
        return None if None in parts else sum(parts) / len(parts)
    try:
        return float(rows[name]['rps'])
    except (KeyError, ValueError):
        return None


def quotient(a, b):
    return '%.3f' % (a / b) if a is not None and b is not None and b > 0 else 'nan'


def cmd_ratio(store, name, of, mn, maxp99=None):
    rows, _ = load(store)
    r = quotient(rate(rows, name), rate(rows, of))
    met = r != 'nan' and float(r) >= float(mn)
    target = '>=%s x %s' % (mn, of)
    extra = {}
    if maxp99:
        target += ', p99<=%sms' % maxp99
        if float(rows[name]['p99']) > float(maxp99):
            met = False
        extra = dict(max_p99=maxp99, probe_p99=rows.get(of, {}).get('p99', '-'))
    if rows[name]['errors'] != '0':
        met = False
    append(store, 'ratio', dict(name=name, ratio=r, of=of, target=target,
                                met='yes' if met else 'no', **extra))
    return 0


def cmd_limits(store, conns=None):
    """Prints a line for each ratio whose p99 limit is below its probe's own p99 (the
    platform alone, at the same connections, did not reach it in this run); with CONNS
    (wrk's connections, each one request at a time), one for each whose mean latency,
    CONNS / its rate (Little's law), is above its p99 limit."""
    rows, _ = load(store)
    for name, r in rows.items():
        lim, p99 = num(r.get('max_p99')), num(r.get('probe_p99'))
        if lim is not None and p99 is not None and p99 > lim:
            print('%s: its p99 limit of %s ms is below the p99 of its probe %s itself, '
                  '%s ms at the same load' % (name, r['max_p99'], r['of'], r['probe_p99']))
        x = rate(rows, name)
        if lim is not None and conns and x and float(conns) / x * 1000 > lim:
            print('%s: at %s connections and %.1f requests/s its mean latency is %.2f ms '
                  '(connections / rate, Little\'s law), above its p99 limit of %s ms: '
                  'meeting the limit at this rate needs 99 %% of the requests faster '
                  'than the mean' % (name, conns, x, float(conns) / x * 1000, r['max_p99']))
    return 0


def flat(rows, name, of, probe, ofprobe):
    a, b = rate(rows, name), rate(rows, probe)
    c, d = rate(rows, of), rate(rows, ofprobe)
    return quotient(a / b, c / d) if None not in (a, b, c, d) and b > 0 and d > 0 else 'nan'


def cmd_flat(store, name, of, probe, ofprobe, mn):
    rows, _ = load(store)
    r = flat(rows, name, of, probe, ofprobe)
    met = r != 'nan' and float(r) >= float(mn) and rows[name]['errors'] == '0'
    append(store, 'ratio', dict(name=name, ratio=r, of=of,
                                target='>=%s x %s, per probe' % (mn, of),
                                met='yes' if met else 'no'))
    return 0


def cmd_limit(store, name, maxp99):
    """A target on p99 alone (pages with no probe to compare with): met when row NAME's
    p99 is at most MAXP99 ms and it had no errors."""
    rows, _ = load(store)
    met = rows[name]['errors'] == '0' and num(rows[name]['p99']) is not None and \
        float(rows[name]['p99']) <= float(maxp99)
    append(store, 'ratio', dict(name=name, ratio='-', of='-', target='p99<=%sms' % maxp99,
                                met='yes' if met else 'no'))
    return 0


def cmd_table(store):
    rows, _ = load(store)
    f = '%-15s %10s %9s %9s %6s %6s %6s %6s %6s  %-13s %-34s %s'
    print(f % ('name', 'req/s', 'p50_ms', 'p99_ms', 'errors', 'other%', 'db_rt', 'db_st',
               'ratio', 'of', 'target', 'met'))
    for name, r in rows.items():
        print(f % (name, r['rps'], r['p50'], r['p99'], r['errors'], r['other'] or '-',
                   r['dbq'][0], r['dbq'][1], r.get('ratio') or '-', r.get('of') or '-',
                   r.get('target') or '-', r.get('met') or '-'))
    return 0


def cmd_cpu_table(store):
    rows, _ = load(store)
    f = '%-15s %8s %8s %8s %10s %8s'
    print(f % ('name', 'app_us', 'db_us', 'nginx_us', 'wrk+tools', 'total_us'))
    for name, r in rows.items():
        print(f % ((name,) + tuple(r['cpu'])))
    return 0


def cpu_ratio(rows, m):
    s = rows.get('single:' + m, {}).get('cpu', NONE5)[4]
    c = rows.get('cluster:' + m, {}).get('cpu', NONE5)[4]
    ok = re.match(r'^[0-9.]+$', s) and num(c) is not None and float(c) > 0
    return '%.3f' % (float(s) / float(c)) if ok else 'nan'


def cmd_cluster_table(store, *ms):
    rows, _ = load(store)
    f = '%-10s %10s %8s %8s %5s %5s %5s | %10s %8s %8s %5s %5s %5s | %6s %9s'
    print(f % ('measure', 'single', 'p50_ms', 'p99_ms', 'err', 'oth%', 'db_rt', 'cluster',
               'p50_ms', 'p99_ms', 'err', 'oth%', 'db_rt', 'ratio', 'cpu_ratio'))
    for m in ms:
        s, c = rows.get('single:' + m, {}), rows.get('cluster:' + m, {})
        side = []
        for r in (s, c):
            side += [r.get(k) or '-' for k in ('rps', 'p50', 'p99', 'errors', 'other')]
            side.append(r.get('dbq', ['-'])[0])
        print(f % tuple([m] + side + [quotient(rate(rows, 'cluster:' + m),
                                                rate(rows, 'single:' + m)),
                                       cpu_ratio(rows, m)]))
    return 0


def cmd_warning(store):
    rows, _ = load(store)
    top = max([int(r['other']) for r in rows.values() if re.match(r'^[0-9]+$', r['other'])],
              default=0)
    if top > 10:
        print('WARNING: other processes used up to %d%% of the CPU during measurements: the '
              'figures and ratios are disturbed; rerun on an otherwise idle machine.' % top)
    return 0


def cmd_count(store, what):
    rows, _ = load(store)
    if what == 'errors':
        print(sum(1 for r in rows.values() if r['errors'] != '0'))
    else:
        print(sum(1 for r in rows.values() if r.get('met') == 'no'))
    return 0


def json_rows(rows):
    out = []
    for name, r in rows.items():
        c = [num(v) for v in r['cpu']]
        out.append({
            'name': name, 'requests_per_s': num(r['rps']), 'p50_ms': num(r['p50']),
            'p99_ms': num(r['p99']), 'errors': num(r['errors']),
            'other_cpu_pct': num(r['other']),
            'db_round_trips_per_request': num(r['dbq'][0]),
            'db_statements_per_request': num(r['dbq'][1]),
            'cpu_us_per_request': dict(zip(('app', 'db', 'nginx', 'wrk_and_tools', 'total'), c)),
            'ratio': num(r.get('ratio')), 'ratio_of': r.get('of') or None,
            'target': r.get('target') or None,
            'met': {'yes': True, 'no': False}.get(r.get('met'))})
        if 'mix' in r:
            out[-1]['requests_per_execution'] = {k: num(v) for k, v in r['mix'].items()}
        if 'probe_p99' in r:
            out[-1]['probe_p99_ms'] = num(r['probe_p99'])
        if 'ceiling' in r:
            out[-1]['probe_ceiling'] = {'per_s': num(r['ceiling']),
                                        'cpu_us_per_execution': num(r['floor_us'])}
    return out


def cmd_json(store, path, *fields):
    rows, _ = load(store)
    doc = {}
    for field in fields:
        typ, _, rest = field.partition(':')
        key, _, value = rest.partition('=')
        if typ == 's':
            v = value
        elif typ == 'n':
            v = num(value)
        elif typ == 'b':
            v = value in ('yes', 'true')
        elif typ == 'a':
            v = [num(x) for x in value.split()]
        elif typ == 'kv':
            v = {k: num(x) for k, _, x in (kv.partition('=') for kv in value.split())}
        elif typ == 'rows':
            v = json_rows(rows)
        elif typ == 'ratios':
            v = {m: {'single': num(rows.get('single:' + m, {}).get('rps')),
                     'cluster': num(rows.get('cluster:' + m, {}).get('rps')),
                     'ratio': num(quotient(rate(rows, 'cluster:' + m), rate(rows, 'single:' + m))),
                     'cpu_ratio': num(cpu_ratio(rows, m))}
                 for m in value.split(',') if m}
        else:
            print('bench_report: bad field ' + field, file=sys.stderr)
            return 2
        d = doc
        parts = key.split('.')
        for p in parts[:-1]:
            d = d.setdefault(p, {})
        d[parts[-1]] = v
    with open(path + '.tmp', 'w', encoding='utf-8') as f:
        json.dump(doc, f, indent=2)
        f.write('\n')
    os.replace(path + '.tmp', path)
    return 0


def cmd_get(store, name):
    rows, _ = load(store)
    print(rows[name]['rps'])
    return 0


def cmd_quotient(store, a, b):
    rows, _ = load(store)
    print(quotient(rate(rows, a), rate(rows, b)))
    return 0


def cmd_flat_value(store, name, of, probe, ofprobe):
    rows, _ = load(store)
    print(flat(rows, name, of, probe, ofprobe))
    return 0


def cmd_mib(kib):
    print('%.2f' % (float(kib) / 1024))
    return 0


def cmd_need(rps, factor, seconds, threads):
    r = float('%.6g' % (float(rps) * float(factor)))
    t = int(threads)
    print(int(r * float(seconds) / t + 1) * t)
    return 0


COMMANDS = {
    'wrk': cmd_wrk, 'row': cmd_row, 'lifecycle': cmd_lifecycle, 'ratio': cmd_ratio,
    'flat': cmd_flat, 'limit': cmd_limit, 'limits': cmd_limits, 'ceiling': cmd_ceiling,
    'budget': cmd_budget,
    'get': cmd_get, 'quotient': cmd_quotient, 'flat-value': cmd_flat_value,
    'need': cmd_need, 'mib': cmd_mib,
    'table': cmd_table,
    'cpu-table': cmd_cpu_table, 'cluster-table': cmd_cluster_table, 'warning': cmd_warning,
    'count': cmd_count, 'json': cmd_json,
}


STORELESS = ('need', 'mib')


def main(argv):
    if len(argv) < 2 or argv[1] not in COMMANDS:
        print(__doc__, file=sys.stderr)
        return 2
    args = argv[2:]
    if argv[1] in STORELESS:
        args = args[1:]          # bench.sh's bench_report passes the store to every command
    return COMMANDS[argv[1]](*args)


if __name__ == '__main__':
    sys.exit(main(sys.argv))
