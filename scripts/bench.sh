#!/usr/bin/env bash
# scripts/bench.sh — throughput and latency of asyncexec against ceiling probes, measured
# in one run on this machine (loopback, wrk with 2 threads and 64 connections).
#
#   scripts/bench.sh [--quick] [--json FILE] [--strict] [--perf] [--buffer-pool SIZE] [--shipped]
#   scripts/bench.sh --cluster [--quick] [--json FILE] [--perf]
#   scripts/bench.sh --webhooks [--quick] [--json FILE] [--strict]
#   scripts/bench.sh --keepalive [--quick] [--json FILE]
#
# Builds in Release, starts a private MariaDB, asyncexec-fcgi and nginx the way
# scripts/run-local.sh does (fresh database, state in .local/bench/, random free ports),
# seeds executions over HTTP and measures:
#   probes     hello (fixed JSON), select (one prepared PK SELECT), insert (one autocommit
#              INSERT): FastCGI programs from tests/bench with the same worker count
#              behind the same nginx configuration (a second nginx on another port);
#              both nginx without the shipped keep-alive to the application
#              (scripts/lib/bench.sh bench_nginx_render), as the baseline of issue 18
#              was measured (--shipped: with it); --keepalive measures what it changes
#   asyncexec  poll_waiting, poll_completed (random among the seeded ones), submit,
#              claim (max 1: the executions submit left; no target),
#              complete (claims made beforehand, each request a distinct execution),
#              lifecycle (submit, claim in batches of 10, complete, poll until done;
#              executions per second), poll_prefill (poll_waiting again, just before the
#              filler) and poll_5m (poll_waiting again once filler rows bring the table to
#              5,000,000 rows); list_prefill and list_5m, the first page of the polled
#              key's listing before and after the filler (which shares that key's lineage
#              and route, so the page has the whole table behind it); list_5m_old, the
#              same page by that key once the filler's key is a later key of its lineage
#              (a rotation's old key: it may not see the filler; no target); dash_PAGE, each
#              dashboard page with the filler in place (two clients; p99 <= 100 ms)
# Each asyncexec row follows a run of its probe (select, select#2, insert, insert#2,
# select#3, select#4, select#5, select#6) and its ratio is taken to that neighbour. The
# four big-table rows sit between two select runs (of the same rows), and their flat ratio
# is taken to the mean of the two (poll_5m: its ratio to select#4+select#6 against
# poll_prefill's to select#3+select#5; list_5m: its ratio to select#6+select#8 against
# list_prefill's to select#5+select#7), so that one probe run that dips does not decide
# the row. It prints one table (req/s, p50,
# p99, errors, other% = CPU used by processes outside the bench, db_rt / db_st = database
# round trips / statements executed per request, ratio to the probe, target met), the CPU
# time per request of the application, MariaDB, nginx and wrk, and the RSS of every
# asyncexec-fcgi worker, and the lifecycle at its probes' cost (its submits, polls, claims
# and completes per execution each at the CPU per request of its probe, a claim at the
# insert probe's: the rate the CPU it used would give at that cost; its ratio column is
# to that ceiling, its target 2,000 executions/s), and each p99 limit that is below the
# p99 of its probe itself in this run; the same is written as JSON to
# .local/bench/bench-results.json
# (or FILE). The figures are meaningful only on an otherwise idle machine (other% ~ 0).
# This script starts and stops the processes and takes the samples; the rows (kept in
# .local/bench/out/records.jsonl), their arithmetic, the tables and the JSON are
# scripts/lib/bench_report.py's.
#
#   --quick   3 s per measurement (1 s warm-up), fewer seeds, 1,000,000-row table for
#             poll_5m (reported as such); about 3 minutes on 2 cores (176-198 s)
#   --strict  exit 4 when a target is missed
#   --buffer-pool SIZE
#             start the private MariaDB with innodb_buffer_pool_size = SIZE (a number with
#             M or G) instead of MariaDB's default, 128M; the report's "MariaDB:" line says
#             what the server ran with
#   --shipped run the rows above with the site as nginx/asyncexec.conf ships it, kept
#             connections to the application on, for the probes' nginx and the
#             application's alike; the report's "nginx to the application:" line and the
#             JSON's nginx_upstream ("one request per connection" or "kept connections,
#             as shipped") say which
#   --perf    also profile every measured run system-wide (perf record -a -g, 999 Hz):
#             BENCH_OUT/NAME.perf.data and a summary by process and symbol in
#             BENCH_OUT/NAME.perf.txt; the sampling costs throughput, so the figures of a
#             --perf run are for the profile only
#   --cluster the scale-out comparison instead of the above: poll (waiting), submit,
#             complete and lifecycle, run first on one server (the stack above) and then,
#             with the same build, durations, seeds and client settings, through one nginx
#             over two app hosts on a 3-node Galera cluster (scripts/lib/cluster.sh, state
#             in STATE/cluster, free ports; both hosts pinned to node 1, db_sync_wait as
#             configured: default 1; the one server reached over loopback TCP too, as
#             the nodes are). Prints single, cluster and cluster / single per
#             measurement, and the durability settings of both servers (MariaDB's
#             defaults on both: innodb_flush_log_at_trx_commit = 1, nothing relaxed;
#             the nodes get the one server's buffer pool, 128M). About 4 minutes;
#             with --quick about 1.5
#   --webhooks the cost of completion notifications instead (the same stack, no probes,
#             JSON by default to .local/bench/bench-webhooks.json). (a) submit (to size the
#             claims), then complete (the measurement above: claims made beforehand, each
#             request a distinct execution) five times. The claims of the first four are
#             made at once and InnoDB is let settle (dirty pages, purge); then, back to
#             back after one complete run that is not reported: no_endpoint:complete
#             (tenant bench, which has no endpoint), endpoint:complete (tenant hooked, with
#             an enabled endpoint to the loopback receiver tests/bench/webhook_receiver.py;
#             asyncexec-notify not running: the request path alone), endpoint#2 and
#             no_endpoint#2 (the same in the reverse order: the pairs' runs are compared
#             together, so that a steady drift weighs on both sides alike); then
#             sender:complete (tenant hooked, its own claims, asyncexec-notify running with
#             its default settings and delivering meanwhile). Per run: req/s, p50/p99,
#             database round trips, CPU per complete of the application, MariaDB and nginx
#             (path = the three), of the sender and of the receiver (each from its
#             /proc/PID/stat); the ratios with / without an endpoint, target: path <=
#             1.05 x. The sender starts after no_endpoint#2, and each backlog (the
#             executions the runs marked) is delivered before the next measurement: those
#             drains give the sender's deliveries/s and its (and MariaDB's) CPU per
#             delivery. (b) the latency from the committed transition to the first
#             attempt: tests/bench/bench_pace completes claimed executions of tenant
#             hooked at a fixed 500/s (open loop, 16 connections) for 20 s (--quick 8 s);
#             latency = the receiver's arrival time - the event's completedAt (the same
#             clock, ms), p50/p95/p99/max; sent, received and lost (the run's completed
#             executions in the database without an event; must be 0); target p95 <= 2 s.
#             Tables: the rows, CPU per request by process, the ratios, the deliveries,
#             the latency (the arithmetic is scripts/lib/bench_webhooks.py's; every
#             request the receiver got is in BENCH_OUT/receiver.jsonl). --strict: exit 4
#             when the CPU ratio or the latency target is missed. About 2.5 minutes with
#             --quick, 5 without
#   --keepalive what nginx's kept connections to the application (nginx/asyncexec.conf
#             ships them on; the rows above run without, probes and application alike, as
#             the baseline of issue 18 was measured; --cluster and --webhooks run the
#             shipped site) change, at fixed request rates: tests/bench/bench_pace sends polls (waiting executions,
#             at KA_POLL_RATES/s) and submits (at KA_SUBMIT_RATES/s) on 64 connections,
#             open loop, each rate once with keep-alive off and once on (nginx restarted
#             with the shipped site or with bench_nginx_render's), twice, the order of the
#             pair reversed the second time; each run after a 1 s warm-up at its rate.
#             Per run: the rate held, p50/p99 from each request's due time (what a client
#             sending at that rate sees), CPU per request of the application, MariaDB and
#             nginx, other%. JSON by default to .local/bench/bench-keepalive.json (the
#             arithmetic is scripts/lib/bench_keepalive.py's). No targets. About 4 minutes,
#             with --quick about 2.5
#
# Exit status: 0 done (targets are reported, not enforced), 1 set-up failure or request
# errors during a measurement, 4 with --strict when a target is missed.
# Environment: ASYNCEXEC_BUILD_DIR (default .local/bench/build, kept between runs),
# ASYNCEXEC_BENCH_STATE (default .local/bench).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/stack.sh
source "$ROOT/scripts/lib/stack.sh"
# shellcheck source-path=SCRIPTDIR source=lib/bench.sh
source "$ROOT/scripts/lib/bench.sh"

QUICK=0
CLUSTER=0
WEBHOOKS=0
KEEPALIVE=0
BENCH_PERF=0
STRICT=0
JSON=
BUFFER_POOL=
SHIPPED=0
while (($#)); do
    case $1 in
        --quick) QUICK=1 ;;
        --cluster) CLUSTER=1 ;;
        --webhooks) WEBHOOKS=1 ;;
        --keepalive) KEEPALIVE=1 ;;
        --shipped) SHIPPED=1 ;;
        --strict) STRICT=1 ;;
        --perf) BENCH_PERF=1 ;;
        --buffer-pool)
            (($# >= 2)) || { echo "bench: --buffer-pool needs a size" >&2; exit 2; }
            BUFFER_POOL=$2
            shift ;;
        --json)
            (($# >= 2)) || { echo "bench: --json needs a file name" >&2; exit 2; }
            JSON=$2
            shift ;;
        --json=*) JSON=${1#--json=} ;;
        -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "bench: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done

if ((CLUSTER + WEBHOOKS + KEEPALIVE > 1)); then
    echo "bench: --cluster, --webhooks and --keepalive are separate runs" >&2
    exit 2
fi
if ((KEEPALIVE && (STRICT || BENCH_PERF))) || ((KEEPALIVE)) && [[ -n $BUFFER_POOL ]]; then
    echo "bench: --keepalive takes --quick and --json only" >&2
    exit 2
fi
if ((SHIPPED && (CLUSTER || WEBHOOKS || KEEPALIVE))); then
    echo "bench: --shipped is for the main rows (--cluster and --webhooks run the shipped site already)" >&2
    exit 2
fi
if [[ -n $BUFFER_POOL ]]; then
    [[ $BUFFER_POOL =~ ^[1-9][0-9]*[MG]$ ]] ||
        { echo "bench: --buffer-pool SIZE: a number with M or G, such as 1G" >&2; exit 2; }
    ((CLUSTER)) && { echo "bench: --buffer-pool is for the one-server runs, not --cluster" >&2; exit 2; }
    # read by stack_db_start (scripts/lib/stack.sh)
    # shellcheck disable=SC2034
    STACK_DB_OPTS=(--innodb-buffer-pool-size="$BUFFER_POOL")
fi
if ((CLUSTER && STRICT)); then
    echo "bench: --strict has no targets to enforce with --cluster" >&2
    exit 2
fi
if ((CLUSTER)); then
    [[ -f $ROOT/scripts/lib/cluster.sh ]] || { echo "bench: --cluster needs scripts/lib/cluster.sh" >&2; exit 1; }
    # shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
    source "$ROOT/scripts/lib/cluster.sh"
fi

STATE=${ASYNCEXEC_BENCH_STATE:-$ROOT/.local/bench}
BUILD=${ASYNCEXEC_BUILD_DIR:-$STATE/build}
mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)
# nginx's workers (user nobody) must reach the sockets inside.
chmod 0711 "$STATE"
if ((WEBHOOKS)); then [[ -n $JSON ]] || JSON=$STATE/bench-webhooks.json; fi
if ((KEEPALIVE)); then [[ -n $JSON ]] || JSON=$STATE/bench-keepalive.json; fi
[[ -n $JSON ]] || JSON=$STATE/bench-results.json
stack_init "$ROOT" "$STATE" bench

BENCH_TOOLS=$BUILD/tests/bench
BENCH_OUT=$STATE/out
BENCH_RECORDS=$BENCH_OUT/records.jsonl
BENCH_PROBE_SOCK=$STATE/probe.sock
BENCH_PROBE_LOG=$STATE/probe.log
BENCH_PROBE_PIDFILE=$STATE/probe.pid
BENCH_PROBE_NGINX_DIR=$STATE/nginx-probe
PRIVATE=$STATE/private           # keys and seed data files (0700)
LUA=$ROOT/tests/bench
# --webhooks: the receiver and the sender
BENCH_RECEIVER_PIDFILE=$STATE/receiver.pid
BENCH_RECEIVER_PORTFILE=$STATE/receiver.port
BENCH_RECEIVER_LOG=$STATE/receiver.log
BENCH_RECEIVER_RECORDS=$BENCH_OUT/receiver.jsonl
BENCH_NOTIFY_CONF=$STATE/notify.conf
BENCH_NOTIFY_PIDFILE=$STATE/notify.pid
BENCH_NOTIFY_LOG=$STATE/notify.log
BUILD_EXTRA=()                   # more targets to build (--webhooks)

# ---- parameters -------------------------------------------------------------------------
if ((QUICK)); then
    MODE=quick DUR=3 WARM=1 WAITING=10000 COMPLETED=2000 TABLE_ROWS=1000000
    LIFE_DUR=3 LIFE_WARM=1
else
    MODE=full DUR=10 WARM=2 WAITING=10000 COMPLETED=10000 TABLE_ROWS=5000000
    LIFE_DUR=10 LIFE_WARM=2
fi
FILLER_BATCH=500000
SEED_THREADS=8
ROUTE_POLL=bench/poll/run       # waiting executions that poll_waiting reads
ROUTE_DONE=bench/done/run       # completed executions that poll_completed reads
ROUTE_WORK=bench/work/run       # submit writes here; complete finalizes claims of it
ROUTE_LIFE=bench/life/run       # the lifecycle driver's own route
ROUTE_HOOK=bench/hook/run       # --webhooks: tenant hooked's completes (it has the endpoint)
ROUTE_PACE=bench/pace/run       # --webhooks: the latency run's completes (tenant hooked)
WH_RATE=500                     # --webhooks: completes/s of the latency run
WH_DUR=$((QUICK ? 8 : 20))      # --webhooks: its seconds
WH_GOAL_P95_MS=2000             # --webhooks: its target
WH_MAX_RATIO=1.05               # --webhooks: CPU per complete, endpoint / none
WH_DRAIN_LIMIT=300              # --webhooks: seconds a backlog may take to arrive
WH_BASES='no_endpoint:complete,no_endpoint#2:complete'   # --webhooks: without, with
WH_HOOKS='endpoint:complete,endpoint#2:complete'         #   (in pairs)
KA_POLL_RATES="3000 5000 7000 9000"     # --keepalive: polls/s of its runs
KA_SUBMIT_RATES="2000 3000 4000 5000"   # --keepalive: submits/s of its runs
KA_DUR=$((QUICK ? 3 : 6))               # --keepalive: seconds per run
T_START=$SECONDS
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

# One bench at a time per state directory: a lock directory holding our pid (taken over
# when its owner is gone). Taken before the EXIT trap is set, so that a second run does
# not stop the first one's processes on its way out.
LOCK=$STATE/.lock
if ! mkdir "$LOCK" 2>/dev/null; then
    owner=$(cat "$LOCK/pid" 2>/dev/null || true)
    if [[ -n $owner ]] && stack_pid_alive "$owner"; then
        stack_die "another scripts/bench.sh (pid $owner) runs with state in $STATE"
    fi
    rm -rf "$LOCK"
    mkdir "$LOCK" || stack_die "cannot create $LOCK"
fi
printf '%s\n' "$$" >"$LOCK/pid"

# ---- clean-up ---------------------------------------------------------------------------
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if ((rc != 0 && rc != 4)); then
        stack_log "FAILED (status $rc); state and logs in $STATE"
        stack_tail_logs 30
        stack_tail "$BENCH_PROBE_LOG" 10
    fi
    bench_probe_stop || stack_warn "the probe did not stop"
    bench_probe_nginx stack_nginx_stop || stack_warn "the probes' nginx did not stop"
    bench_notify_stop || stack_warn "asyncexec-notify did not stop"
    bench_receiver_stop || stack_warn "the webhook receiver did not stop"
    if [[ -n ${CLUSTER_BASE:-} ]]; then
        cluster_stop_all || stack_warn "some processes of the cluster did not stop"
        stack_init "$ROOT" "$STATE" bench   # back to the single server's paths
    fi
    stack_stop_all || stack_warn "some processes did not stop"
    rm -rf "$LOCK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- helpers ----------------------------------------------------------------------------
admin() { "$BUILD/asyncexec-admin" --config "$STACK_CONF" "$@"; }

# build — configure (Release) and build the service and the bench tools only.
build() {
    stack_log "building (Release) in $BUILD"
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON >/dev/null ||
        stack_die "cmake configure failed"
    cmake --build "$BUILD" -j2 --target asyncexec-fcgi asyncexec-admin bench_probe \
        bench_seed bench_lifecycle "${BUILD_EXTRA[@]}" >"$STATE/build.log" 2>&1 ||
        { tail -n 40 "$STATE/build.log" >&2; stack_die "build failed (see $STATE/build.log)"; }
}

# free_port_except PORT... — a free port not among the given ones.
free_port_except() {
    local p try
    for try in 1 2 3 4 5 6 7 8 9 10; do
        p=$(stack_free_port)
        [[ " $* " == *" $p "* ]] || { printf '%s\n' "$p"; return 0; }
    done
    stack_die "no distinct free port found"
}

# fresh_stack — a new MariaDB data directory, schema, app and nginx.
fresh_stack() {
    # leftovers of an interrupted run (found by their pid files)
    {
        bench_probe_stop
        bench_probe_nginx stack_nginx_stop
        bench_notify_stop
        bench_receiver_stop
        stack_stop_all
    } >/dev/null 2>&1 || true
    rm -rf "$STACK_DB_DIR" "$BENCH_OUT" "$PRIVATE" "$STACK_NGINX_DIR" "$BENCH_PROBE_NGINX_DIR"
    rm -f "$STACK_APP_LOG" "$BENCH_PROBE_LOG"
    mkdir -p "$BENCH_OUT"
    (umask 077 && mkdir -p "$PRIVATE")
    stack_db_up "$DB_PORT" "$BUILD/asyncexec-admin"
    # --cluster: the nodes are reached over loopback TCP (db_hosts), so is the one server
    if ((CLUSTER)); then sed -i 's|^db_socket = |# db_socket = |' "$STACK_CONF"; fi
    stack_db_sql <<'SQL' || stack_die "could not create the bench_probe table"
CREATE TABLE asyncexec.bench_probe (
  id         BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  payload    VARBINARY(255) NOT NULL,
  created_at DATETIME(3) NOT NULL
) ENGINE=InnoDB;
SQL
    stack_app_start "$BUILD/asyncexec-fcgi"
    stack_nginx_start "$HTTP_PORT"
}

# provision — routes, a consumer key (tenant bench) and a backend key; into PRIVATE.
provision() {
    local r
    for r in "$ROUTE_POLL" "$ROUTE_DONE" "$ROUTE_WORK" "$ROUTE_LIFE"; do
        admin route add "$r" >/dev/null || stack_die "route add $r failed"
    done
    AK=$(admin key create --tenant bench --label bench) || stack_die "key create failed"
    BK=$(admin backend-key create --route "$ROUTE_DONE" --route "$ROUTE_WORK" \
        --route "$ROUTE_LIFE" --label bench) || stack_die "backend-key create failed"
    [[ $AK =~ ^ak_[A-Za-z0-9_-]+$ && $BK =~ ^bk_[A-Za-z0-9_-]+$ ]] ||
        stack_die "unexpected key format from asyncexec-admin"
    export BENCH_CONSUMER_KEY=$AK BENCH_BACKEND_KEY=$BK
    printf 'key %s\npath /v1/executions/%s\n' "$AK" "$ROUTE_WORK" >"$PRIVATE/submit.data"
}

seed() {
    "$BENCH_TOOLS/bench_seed" --port "$HTTP_PORT" --threads "$SEED_THREADS" "$@" ||
        stack_die "seeding failed: bench_seed $*"
}

# sql_value SQL — one value from the private MariaDB (as root).
sql_value() { printf '%s\n' "$1" | stack_db_sql | tail -n 1; }

# fill_table ROWS — add filler executions (tenant "filler") until the table has ROWS rows.
fill_table() {
    local want=$1 have n start t0=$SECONDS
    have=$(sql_value 'SELECT COUNT(*) FROM asyncexec.s2r_async_execution')
    stack_log "adding $((want - have)) filler rows (table has $have) in batches of $FILLER_BATCH"
    while ((have < want)); do
        n=$((want - have < FILLER_BATCH ? want - have : FILLER_BATCH))
        start=$have
        # Sequential 36-character correlation ids; half completed, half waiting; the same
        # route as the polled executions, another tenant, no usable tokens; the lineage of
        # the polled executions' key, so that the listing (list_prefill, list_Nm) has the
        # filler behind its first page.
        stack_db_sql <<SQL || stack_die "filler insert failed"
USE asyncexec;
SET @lin = (SELECT initiator_lineage FROM s2r_async_execution WHERE environment = 'bench'
  AND service_key = 'poll' AND operation_key = 'run' AND initiator_tenant_id <> 'filler'
  AND initiator_lineage IS NOT NULL LIMIT 1);
INSERT INTO s2r_async_execution
  (correlation_id, environment, service_key, operation_key, status, request_payload,
   request_sha256, result_payload, initiator_tenant_id, initiator_key_hash,
   poll_token_hash, callback_token_hash, attempts, created_at, updated_at, completed_at,
   expires_at, initiator_lineage)
SELECT CONCAT('filler-', LPAD(seq + $start, 29, '0')), 'bench', 'poll', 'run',
       IF(seq % 2 = 0, 'completed', 'waiting_callback'), '{"bench":"filler","n":1}',
       UNHEX(SHA2('filler', 256)), IF(seq % 2 = 0, '{"ok":true}', NULL), 'filler',
       UNHEX(SHA2('filler-key', 256)), UNHEX(SHA2('filler-token', 256)),
       IF(seq % 2 = 0, UNHEX(SHA2('filler-callback', 256)), NULL), seq % 2,
       UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), IF(seq % 2 = 0, UTC_TIMESTAMP(3), NULL),
       UTC_TIMESTAMP(3) + INTERVAL 7 DAY, @lin
FROM seq_1_to_$n;
SQL
        have=$((have + n))
    done
    stack_log "table has $have rows (filled in $((SECONDS - t0)) s)"
    settle_db
}

# settle_db — let InnoDB write back the pages the bulk insert dirtied (bounded wait), so
# that the next measurement sees a table at rest rather than the tail of its loading:
# flushing is made eager for the wait and set back afterwards.
settle_db() {
    local saved dirty t0=$SECONDS limit=$((QUICK ? 15 : 60))
    saved=$(sql_value 'SELECT CONCAT(@@GLOBAL.innodb_max_dirty_pages_pct, " ", @@GLOBAL.innodb_io_capacity, " ", @@GLOBAL.innodb_io_capacity_max)')
    read -r -a saved <<<"$saved"
    ((${#saved[@]} == 3)) || stack_die "could not read the InnoDB flushing settings"
    stack_db_sql <<'SQL' >/dev/null
SET GLOBAL innodb_io_capacity_max = 100000;
SET GLOBAL innodb_io_capacity = 50000;
SET GLOBAL innodb_max_dirty_pages_pct = 0;
SQL
    while :; do
        dirty=$(sql_value "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_PAGES_DIRTY'")
        [[ $dirty =~ ^[0-9]+$ ]] || dirty=0
        ((dirty < 200 || SECONDS - t0 >= limit)) && break
        sleep 0.5
    done
    stack_db_sql <<SQL >/dev/null
SET GLOBAL innodb_max_dirty_pages_pct = ${saved[0]};
SET GLOBAL innodb_io_capacity = ${saved[1]};
SET GLOBAL innodb_io_capacity_max = ${saved[2]};
SQL
    stack_log "InnoDB settled in $((SECONDS - t0)) s ($dirty dirty pages left)"
}

# probe_measure MODE NAME [OPTION...] — run probe MODE (with bench_probe's OPTIONs) and
# measure it as row NAME (wrk as for the asyncexec row it is the reference of).
probe_measure() {
    local mode=$1 name=$2
    shift 2
    bench_probe_start "$mode" "$@"
    case $mode in
        insert) bench_measure "$name" "$WARM" "$DUR" "$LUA/submit.lua" "$PURL" "$PRIVATE/submit.data" ;;
        *) bench_measure "$name" "$WARM" "$DUR" "$LUA/poll.lua" "$PURL" "$PRIVATE/poll-waiting.data" ;;
    esac
    bench_probe_stop
}

# lifecycle_measure NAME PORT — bench_lifecycle through nginx on PORT (route ROUTE_LIFE,
# LIFE_WARM + LIFE_DUR seconds), recorded as row NAME (executions/s; database counts and
# CPU per execution, the warm-up included pro rata); LIFE_LINE = the driver's summary.
lifecycle_measure() {
    local name=$1 port=$2 lf life_ok=1 cpu0 cpu1 q0 q1
    lf=$BENCH_OUT/$name.txt
    q0=$(bench_db_counts)
    cpu0=$(bench_cpu_sample)
    "$BENCH_TOOLS/bench_lifecycle" --port "$port" --route "$ROUTE_LIFE" \
        --consumers 32 --backends 16 --queue 16 --poll-delay-ms 10 --batch 10 \
        --warmup "$LIFE_WARM" --duration "$LIFE_DUR" >"$lf" 2>"$BENCH_OUT/$name.err" ||
        life_ok=0
    # (the sample spans the warm-up too)
    cpu1=$(bench_cpu_sample)
    q1=$(bench_db_counts)
    LIFE_LINE=$(tail -n 1 "$lf")
    [[ $LIFE_LINE == done=* ]] || { cat "$BENCH_OUT/$name.err" >&2; stack_die "bench_lifecycle failed"; }
    ((life_ok)) || stack_warn "bench_lifecycle reported errors: $LIFE_LINE"
    # per execution: the samples span the warm-up too, so they are scaled to the window
    bench_report lifecycle "$name" "$lf" "$cpu0" "$cpu1" "$q0" "$q1" "$LIFE_WARM" "$LIFE_DUR"
}

# ---- --cluster, --webhooks, --keepalive: their functions -------------------------------
# shellcheck source-path=SCRIPTDIR source=lib/bench_cluster_mode.sh
source "$ROOT/scripts/lib/bench_cluster_mode.sh"
# shellcheck source-path=SCRIPTDIR source=lib/bench_webhooks_mode.sh
source "$ROOT/scripts/lib/bench_webhooks_mode.sh"
# shellcheck source-path=SCRIPTDIR source=lib/bench_keepalive_mode.sh
source "$ROOT/scripts/lib/bench_keepalive_mode.sh"

# ---- main -------------------------------------------------------------------------------
main() {
    local url rate rss rss_max rows t_seed

    if ((SHIPPED)); then
        STACK_NGINX_RENDER=stack_nginx_render
        UPSTREAM="kept connections, as shipped"
    else
        STACK_NGINX_RENDER=bench_nginx_render
        UPSTREAM="one request per connection"
    fi
    STACK_PACKAGES+=(wrk)
    stack_install_packages
    build
    DB_PORT=$(stack_free_port)
    HTTP_PORT=$(free_port_except "$DB_PORT")
    PROBE_PORT=$(free_port_except "$DB_PORT" "$HTTP_PORT")
    fresh_stack
    DB_SETTINGS=$(db_settings)
    provision
    WORKERS=$(awk -F= '$1 ~ /^[[:space:]]*workers[[:space:]]*$/ { gsub(/[[:space:]]/, "", $2); print $2 }' "$STACK_CONF")
    url=http://127.0.0.1:$HTTP_PORT
    PURL=http://127.0.0.1:$PROBE_PORT

    # Seeds: waiting executions (poll_waiting, select probe) and completed ones.
    t_seed=$SECONDS
    seed --route "$ROUTE_POLL" --count "$WAITING" --out "$PRIVATE/poll-waiting.data" waiting
    seed --route "$ROUTE_DONE" --count "$COMPLETED" --out "$PRIVATE/poll-completed.data" completed
    stack_log "seeded $WAITING waiting and $COMPLETED completed executions in $((SECONDS - t_seed)) s"

    # Each asyncexec measurement follows right after a run of its probe (same wrk script,
    # same duration) and its ratio is taken to that run: a neighbour on this shared
    # 2-core machine drifts less than one minutes away. Probes run behind the probes'
    # nginx, one at a time.
    bench_probe_start hello
    bench_probe_nginx stack_nginx_start "$PROBE_PORT"
    bench_measure hello "$WARM" "$DUR" "$LUA/poll.lua" "$PURL" "$PRIVATE/poll-waiting.data"
    bench_probe_stop

    probe_measure select select
    bench_measure poll_waiting "$WARM" "$DUR" "$LUA/poll.lua" "$url" "$PRIVATE/poll-waiting.data"
    bench_report ratio poll_waiting select 0.85 10
    probe_measure select select#2
    bench_measure poll_completed "$WARM" "$DUR" "$LUA/poll.lua" "$url" "$PRIVATE/poll-completed.data"
    bench_report ratio poll_completed select#2 0.85 10
    probe_measure insert insert
    bench_measure submit "$WARM" "$DUR" "$LUA/submit.lua" "$url" "$PRIVATE/submit.data"
    bench_report ratio submit insert 0.85 10
    # claim: one waiting execution per request, the oldest of those the submit run left on
    # ROUTE_WORK (its id read, then a transaction: lock, update, commit); no target, its
    # CPU per request is what contract v3's priority order and lineage check are measured by
    bench_measure claim "$WARM" "$DUR" "$LUA/claim.lua" "$url" "$BK" "$ROUTE_WORK"

    # complete: one distinct claimed execution per request, enough for the warm-up and the
    # measured run at 1.15 x the insert probe's rate (a request that makes one durable
    # single-row write is not expected to beat the probe that does only that); insert#2
    # runs once the claims are in, right before it.
    rate=$(bench_report get insert)
    NEED_WARM=$(bench_report need "$rate" 1.15 "$WARM" "$BENCH_WRK_THREADS")
    NEED_MAIN=$(bench_report need "$rate" 1.15 "$DUR" "$BENCH_WRK_THREADS")
    complete_measure complete "$url" insert#2
    bench_report ratio complete insert#2 0.85 15

    # Mixed life cycle: executions per second, latency submit -> poll sees completed.
    lifecycle_measure lifecycle "$HTTP_PORT"
    LIFE=$LIFE_LINE
    # ... and at its probes' cost: what its requests would take if each cost its probe
    # (a claim: one durable write, the least it makes)
    LIFE_CEILING=$(bench_report ceiling lifecycle 2000 submits=insert+insert#2 \
        polls=select+select#2 claims=insert+insert#2 completes=insert+insert#2)
    # ... and what its claims could cost for the 2,000/s, its other requests at their own
    # rows' cost (beside the claim row's cost and hello's, a request that reads nothing)
    LIFE_BUDGET=$(bench_report budget lifecycle 2000 claim hello submits=submit \
        polls=poll_waiting+poll_completed completes=complete)

    # Worker memory after the runs above, and again after the big-table poll.
    RSS_RUNS=$(bench_worker_rss_kib | xargs)

    # Big table: poll_waiting once more right before the filler goes in (poll_prefill,
    # after a select probe run), then again once the table has TABLE_ROWS rows. The target
    # is taken against poll_prefill, the neighbouring measurement of the same polls (the
    # table then holds the seeds and what the runs above added, far below 5,000,000 rows),
    # each first divided by the mean of the select probe runs right before and right after
    # it (select#3 and select#5; select#4 and select#6 after the filler, of the same rows:
    # --max-id), so that the machine's speed drifting while the filler goes in (minutes),
    # or one probe run that dips, is not taken for the table's cost; the plain quotients
    # and the ratio to poll_waiting are reported as well.
    probe_measure select select#3
    PREFILL_ROWS=$(sql_value 'SELECT COUNT(*) FROM asyncexec.s2r_async_execution')
    PREFILL_MAX_ID=$(sql_value 'SELECT MAX(id) FROM asyncexec.s2r_async_execution')
    bench_measure poll_prefill "$WARM" "$DUR" "$LUA/poll.lua" "$url" "$PRIVATE/poll-waiting.data"
    bench_report ratio poll_prefill select#3 0.85 10
    probe_measure select select#5 --max-id "$PREFILL_MAX_ID"
    bench_measure list_prefill "$WARM" "$DUR" "$LUA/list.lua" "$url" "$PRIVATE/poll-waiting.data"
    probe_measure select select#7 --max-id "$PREFILL_MAX_ID"
    fill_table "$TABLE_ROWS"
    rows=$(sql_value 'SELECT COUNT(*) FROM asyncexec.s2r_async_execution')
    POLL_BIG=poll_$((TABLE_ROWS / 1000000))m
    LIST_BIG=list_$((TABLE_ROWS / 1000000))m
    probe_measure select select#4 --max-id "$PREFILL_MAX_ID"
    bench_measure "$POLL_BIG" "$WARM" "$DUR" "$LUA/poll.lua" "$url" "$PRIVATE/poll-waiting.data"
    WAITING_RATIO=$(bench_report quotient "$POLL_BIG" poll_waiting)
    # the listing's first page, its key's lineage now holding the filler too; probe runs
    # right before and after it, as select#5 and select#7 around list_prefill
    probe_measure select select#6 --max-id "$PREFILL_MAX_ID"
    bench_report flat "$POLL_BIG" poll_prefill select#4+select#6 select#3+select#5 0.90
    bench_measure "$LIST_BIG" "$WARM" "$DUR" "$LUA/list.lua" "$url" "$PRIVATE/poll-waiting.data"
    probe_measure select select#8 --max-id "$PREFILL_MAX_ID"
    bench_report flat "$LIST_BIG" list_prefill select#6+select#8 select#5+select#7 0.90
    old_key_list "$url"
    FLAT_PLAIN="$POLL_BIG / poll_prefill = $(bench_report quotient "$POLL_BIG" poll_prefill), $LIST_BIG / list_prefill = $(bench_report quotient "$LIST_BIG" list_prefill), select#4 / select#3 = $(bench_report quotient select#4 select#3), select#6 / select#5 = $(bench_report quotient select#6 select#5), select#8 / select#7 = $(bench_report quotient select#8 select#7); per the probe before alone (the rule before the mean): $POLL_BIG $(bench_report flat-value "$POLL_BIG" poll_prefill select#4 select#3), $LIST_BIG $(bench_report flat-value "$LIST_BIG" list_prefill select#6 select#5)"
    dash_measure
    RSS_BIG=$(bench_worker_rss_kib | xargs)
    rss_max=0
    for rss in $RSS_RUNS $RSS_BIG; do
        if ((rss > rss_max)); then rss_max=$rss; fi
    done
    RSS_MAX_MIB=$(bench_report mib "$rss_max")
    RSS_MET=no
    if ((rss_max > 0 && rss_max <= 8192)); then RSS_MET=yes; fi

    report "$rows"
}

# old_key_list URL — the first page of the big table's listing as a rotation's old key
# reads it (row LIST_BIG_old, no target): the filler's key (SHA-256 of "filler-key", the
# submitter of every filler row, all newer than the listed key's own) becomes a later key
# of the listed key's lineage, the row "asyncexec-admin key rotate" would add. Once the
# workers' cached copies of the listed key are a cache TTL old (a key's successor is
# cached with it), each page reads LIST_SCAN_OF x 21 filler entries and answers an empty
# page with a token. The key row is removed after the run.
old_key_list() {
    local url=$1 ttl=${STACK_CACHE_TTL:-5}
    stack_db_sql <<SQL || stack_die "could not add the successor key"
INSERT INTO asyncexec.s2r_api_key (kind, key_hash, tenant_id, label, created_at, lineage_id)
SELECT 'consumer', UNHEX(SHA2('filler-key', 256)), k.tenant_id, 'bench successor',
       UTC_TIMESTAMP(3), COALESCE(k.lineage_id, k.id)
  FROM asyncexec.s2r_async_execution e
  JOIN asyncexec.s2r_api_key k ON k.key_hash = e.initiator_key_hash
 WHERE e.environment = 'bench' AND e.service_key = 'poll' AND e.operation_key = 'run'
   AND e.initiator_tenant_id <> 'filler' LIMIT 1;
SQL
    sleep $((ttl + 1))    # a cache TTL: every worker reads the listed key again
    bench_measure "${LIST_BIG}_old" "$WARM" "$DUR" "$LUA/list.lua" "$url" \
        "$PRIVATE/poll-waiting.data"
    sql_value "DELETE FROM asyncexec.s2r_api_key WHERE key_hash = UNHEX(SHA2('filler-key', 256))" \
        >/dev/null || stack_die "could not remove the successor key"
}

# dash_measure — the operator dashboard's pages on the loopback server of the stack's nginx
# (issue 21), with the big table in place: two operators' browsers (wrk -t1 -c2) for DUR
# seconds each; target p99 <= 100 ms, no errors (rows dash_PAGE).
dash_measure() {
    local page mport
    mport=$(cat "$STACK_NGINX_DIR/metrics-port")
    for page in health routes attention tenants keys webhooks; do
        BENCH_WRK_THREADS=1 BENCH_WRK_CONNS=2 bench_measure "dash_$page" "$WARM" "$DUR" \
            "$LUA/get.lua" "http://127.0.0.1:$mport/dashboard/$page"
        bench_report limit "dash_$page" 100
    done
}

# report ROWS — the table, the notes and the JSON file.
report() {
    local rows=$1 missed errors elapsed
    elapsed=$((SECONDS - T_START))

    printf '\nasyncexec benchmark (%s): wrk -t%s -c%s, %s s per measurement after %s s warm-up, %s workers, 127.0.0.1\n\n' \
        "$MODE" "$BENCH_WRK_THREADS" "$BENCH_WRK_CONNS" "$DUR" "$WARM" "$WORKERS"
    bench_report table
    printf '\nMariaDB: %s\n' "$DB_SETTINGS"
    printf 'nginx to the application (and to the probes): %s\n' "$UPSTREAM"
    printf '\nCPU per request in microseconds, by process (lifecycle: per execution, warm-up included pro rata):\n'
    bench_report cpu-table
    printf '\nworker RSS (KiB): %s after lifecycle, %s after %s; max %s MiB (target <= 8 MiB: %s)\n' \
        "$RSS_RUNS" "$RSS_BIG" "$POLL_BIG" "$RSS_MAX_MIB" "$RSS_MET"
    printf 'lifecycle: executions/s; p50/p99 = submit -> poll sees completed; %s\n' "$LIFE"
    printf '%s\n%s\n' "$LIFE_CEILING" "$LIFE_BUDGET"
    bench_report limits "$BENCH_WRK_CONNS"
    printf '%s: poll_waiting with %s rows in s2r_async_execution%s; poll_prefill: the same with %s rows, just before the filler; %s / poll_waiting = %s\n' \
        "$POLL_BIG" "$rows" \
        "$( ((QUICK)) && printf ' (--quick: %s rows instead of 5,000,000)' "$TABLE_ROWS")" \
        "$PREFILL_ROWS" "$POLL_BIG" "$WAITING_RATIO"
    printf 'flat rows: (%s / mean(select#4, select#6)) / (poll_prefill / mean(select#3, select#5)), (%s / mean(select#6, select#8)) / (list_prefill / mean(select#5, select#7)); select#4 to select#8 select the rows select#3 did (ids up to %s); plain quotients: %s\n' \
        "$POLL_BIG" "$LIST_BIG" "$PREFILL_MAX_ID" "$FLAT_PLAIN"
    printf 'dash_*: GET /dashboard/PAGE on the loopback server with %s rows, wrk -t1 -c2 (two operators), target p99 <= 100 ms\n' "$rows"
    printf 'ratios: each to the probe run made right before it (select, select#2, insert, insert#2, select#3); the flat rows to the mean of the runs right before and after (select#3 to select#8)\n'
    printf 'other%%: CPU time of processes outside this bench plus steal, in %% of all cores, during the measurement\n'
    printf 'db_rt / db_st: per request (lifecycle: per execution), statements the database received (round trips; a CALL is one) / executed (inside procedures too)\n'
    printf 'load average (1/5/15 min) at start: %s; at end: %s\n' "$LOAD_START" "$(cut -d' ' -f1-3 /proc/loadavg)"
    printf 'raw wrk outputs: %s/\n' "$BENCH_OUT"
    bench_report warning

    missed=$(bench_report count missed)
    errors=$(bench_report count errors)
    [[ $RSS_MET == yes ]] || missed=$((missed + 1))

    # git_uncommitted_changes: to what is built (src/, sql/, CMakeLists.txt)
    bench_report json "$JSON" s:mode="$MODE" \
        s:generated_at="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
        s:git_commit="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
        b:git_uncommitted_changes="$( [[ -n $(git -C "$ROOT" status --porcelain -- src sql CMakeLists.txt 2>/dev/null) ]] && echo true || echo false)" \
        n:wrk.threads="$BENCH_WRK_THREADS" n:wrk.connections="$BENCH_WRK_CONNS" \
        n:wrk.duration_s="$DUR" n:wrk.warmup_s="$WARM" n:workers="$WORKERS" \
        n:seeded.waiting="$WAITING" n:seeded.completed="$COMPLETED" \
        s:big_table.row="$POLL_BIG" n:big_table.rows="$rows" s:db_settings="$DB_SETTINGS" \
        s:nginx_upstream="$UPSTREAM" \
        n:big_table.prefill_rows="$PREFILL_ROWS" n:big_table.ratio_to_poll_waiting="$WAITING_RATIO" \
        s:load_average.start="$LOAD_START" s:load_average.end="$(cut -d' ' -f1-3 /proc/loadavg)" \
        rows:results kv:lifecycle="$LIFE" \
        a:worker_rss_kib.after_lifecycle="$RSS_RUNS" a:worker_rss_kib.after_"$POLL_BIG"="$RSS_BIG" \
        n:worker_rss_max_mib="$RSS_MAX_MIB" b:worker_rss_target_met="$RSS_MET" \
        n:targets_missed="$missed" n:rows_with_errors="$errors" n:elapsed_s="$elapsed"
    bench_finish "$elapsed" "$missed" "$errors"
}

if ((CLUSTER)); then
    main_cluster
elif ((KEEPALIVE)); then
    main_keepalive
elif ((WEBHOOKS)); then
    main_webhooks
else
    main
fi
