# shellcheck shell=bash
# scripts/lib/bench.sh — helpers for scripts/bench.sh: running wrk and taking its samples,
# the ceiling probes behind their own nginx, the webhook receiver and sender of --webhooks.
# The records, their arithmetic, the tables and the JSON are scripts/lib/bench_report.py's
# (bench_report) and, for --webhooks, scripts/lib/bench_webhooks.py's (bench_webhooks).
# Needs scripts/lib/stack.sh (sourced and stack_init'ed first) and these variables:
#   BENCH_OUT (directory for raw outputs), BENCH_TOOLS (directory of the bench_* binaries),
#   BENCH_PROBE_SOCK, BENCH_PROBE_LOG, BENCH_PROBE_PIDFILE, BENCH_PROBE_NGINX_DIR,
#   BENCH_RECORDS (the rows: a file in BENCH_OUT).

BENCH_WRK_THREADS=2
BENCH_WRK_CONNS=64
BENCH_WRK_TIMEOUT=5          # wrk --timeout (seconds): slower responses count as errors

BENCH_REPORT_PY=$(dirname "${BASH_SOURCE[0]}")/bench_report.py

# bench_report CMD [ARGS...] — scripts/lib/bench_report.py CMD on the rows in BENCH_RECORDS
# (its usage: scripts/lib/bench_report.py without arguments).
bench_report() {
    local cmd=$1
    shift
    python3 "$BENCH_REPORT_PY" "$cmd" "$BENCH_RECORDS" "$@"
}

# ---- CPU used by others ------------------------------------------------------------------
# The machine may be shared: while a measurement runs, the CPU time spent by processes that
# are not part of the bench (and time stolen by the hypervisor) is recorded as "other%",
# the share of all cores' time. Our processes: this shell and its descendants (MariaDB,
# the application, probes, wrk, the tools) plus both nginx masters and their workers.

# bench_our_pids — our process ids, one per line.
bench_our_pids() {
    local roots=$$ p
    p=$(stack_nginx_pid) && roots+=" $p"
    p=$(bench_probe_nginx stack_nginx_pid) && roots+=" $p"
    ps -e -o pid=,ppid= | awk -v roots="$roots" '
        BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) keep[r[i]] = 1 }
        { par[$1] = $2 }
        END {
            for (changed = 1; changed; ) {
                changed = 0
                for (p in par) if (!(p in keep) && (par[p] in keep)) { keep[p] = 1; changed = 1 }
            }
            for (p in keep) print p
        }'
}

# bench_cpu_sample — "TOTAL BUSY OURS DB APP NGINX" in clock ticks: all CPU time of the
# machine, its busy part (user, nice, system, steal), the time of our processes (with their
# reaped children), and of it MariaDB's, the FastCGI programs' (asyncexec-fcgi or the
# probe) and nginx's. When BENCH_CPU_EXTRA lists pids (scripts/bench.sh --webhooks: the
# sender and the receiver; "-" for one that does not run), one field more per pid, its
# time counted the same way (0 when it is gone).
bench_cpu_sample() {
    local total busy ours=0 db=0 app=0 ngx=0 p stat comm fields t extra=
    read -r total busy < <(awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i; print t, $2 + $3 + $4 + $9; exit }' /proc/stat)
    for p in $(bench_our_pids); do
        stat=$(cat "/proc/$p/stat" 2>/dev/null) || continue
        comm=${stat#*(}
        comm=${comm%)*}
        read -r -a fields <<<"${stat##*) }"
        t=$((fields[11] + fields[12] + fields[13] + fields[14]))
        ours=$((ours + t))
        case $comm in
            mariadbd) db=$((db + t)) ;;
            asyncexec-fcgi | bench_probe) app=$((app + t)) ;;
            nginx) ngx=$((ngx + t)) ;;
        esac
    done
    for p in ${BENCH_CPU_EXTRA:-}; do
        t=0
        if [[ $p =~ ^[0-9]+$ ]] && stat=$(cat "/proc/$p/stat" 2>/dev/null); then
            read -r -a fields <<<"${stat##*) }"
            t=$((fields[11] + fields[12] + fields[13] + fields[14]))
        fi
        extra+=" $t"
    done
    printf '%s %s %s %s %s %s%s\n' "$total" "$busy" "$ours" "$db" "$app" "$ngx" "$extra"
}

# ---- database statements ----------------------------------------------------------------

# bench_db_counts — "QUESTIONS QUERIES": statements the server received from clients (round
# trips; a CALL is one) and statements it executed (those inside procedures included).
bench_db_counts() {
    printf "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Queries');\n" |
        stack_db_sql | awk '$1 == "Questions" { q = $2 } $1 == "Queries" { s = $2 }
            END { print q, s }'
}

# ---- wrk --------------------------------------------------------------------------------

# bench_perf_start NAME — system-wide perf record (call graphs, 999 Hz) in the background
# into BENCH_OUT/NAME.perf.data; sets BENCH_PERF_PID.
bench_perf_start() {
    command -v perf >/dev/null || stack_die "--perf needs perf (apt-get install linux-perf)"
    perf record -q -F 999 -a -g -o "$BENCH_OUT/$1.perf.data" >/dev/null 2>&1 &
    BENCH_PERF_PID=$!
    sleep 0.5 # perf needs a moment to attach to every CPU
}

# bench_perf_stop NAME — stop the recorder (SIGINT), wait for it, and write the flat
# profile by process and symbol to BENCH_OUT/NAME.perf.txt.
bench_perf_stop() {
    kill -INT "$BENCH_PERF_PID" 2>/dev/null || true
    wait "$BENCH_PERF_PID" 2>/dev/null || true
    BENCH_PERF_PID=
    perf report -q -i "$BENCH_OUT/$1.perf.data" --no-children --percent-limit 0.3 \
        --sort comm,dso,sym >"$BENCH_OUT/$1.perf.txt" 2>/dev/null -g none ||
        stack_warn "perf report failed for $1"
    stack_log "profile of $1: $BENCH_OUT/$1.perf.txt"
}

# bench_wrk NAME SECONDS SCRIPT URL [SCRIPT_ARGS...] — one wrk run (2 threads, 64
# connections); raw output in BENCH_OUT/NAME.txt, recorded as run NAME (bench_report wrk);
# sets WRK_RPS and WRK_OVERRUN (complete.lua's requests that repeated an execution).
bench_wrk() {
    local name=$1 secs=$2 script=$3 url=$4 out cpu0 cpu1 q0 q1 got
    shift 4
    out=$BENCH_OUT/$name.txt
    q0=$(bench_db_counts)
    [[ ${BENCH_PERF:-0} == 1 && $name != *-warmup ]] && bench_perf_start "$name"
    cpu0=$(bench_cpu_sample)
    wrk -t"$BENCH_WRK_THREADS" -c"$BENCH_WRK_CONNS" -d"${secs}s" \
        --timeout "${BENCH_WRK_TIMEOUT}s" --latency -s "$script" "$url" -- "$@" \
        >"$out" 2>&1 || { cat "$out" >&2; stack_die "wrk failed ($name)"; }
    cpu1=$(bench_cpu_sample)
    [[ -n ${BENCH_PERF_PID:-} ]] && bench_perf_stop "$name"
    q1=$(bench_db_counts)
    if ! got=$(bench_report wrk "$name" "$out" "$cpu0" "$cpu1" "$q0" "$q1"); then
        cat "$out" >&2
        stack_die "could not parse the wrk output of $name ($out)"
    fi
    # shellcheck disable=SC2034  # WRK_RPS and WRK_OVERRUN are read by bench.sh
    read -r WRK_RPS WRK_OVERRUN <<<"$got"
}

# bench_measure NAME WARMUP SECONDS SCRIPT URL [SCRIPT_ARGS...] — warm-up run (discarded),
# then the measured run, recorded as row NAME.
bench_measure() {
    local name=$1 warm=$2 secs=$3
    shift 3
    if [[ $warm != 0 ]]; then
        bench_wrk "$name-warmup" "$warm" "$@"
    fi
    bench_wrk "$name" "$secs" "$@"
    bench_report row "$name"
}

# ---- probes -----------------------------------------------------------------------------

bench_probe_pid() { stack_pid_from_file "$BENCH_PROBE_PIDFILE" bench_probe; }

# bench_probe_start MODE [OPTION...] — start the probe program on BENCH_PROBE_SOCK with
# OPTIONs (--max-id N); wait for the socket.
bench_probe_start() {
    local mode=$1 rc=0
    shift
    rm -f "$BENCH_PROBE_SOCK"
    stack_log "starting probe '$mode' $* (log $BENCH_PROBE_LOG)"
    stack_spawn "$BENCH_PROBE_LOG" "$BENCH_TOOLS/bench_probe" --config "$STACK_CONF" \
        --listen "$BENCH_PROBE_SOCK" "$@" "$mode"
    printf '%s\n' "$STACK_SPAWNED_PID" >"$BENCH_PROBE_PIDFILE"
    stack_wait_ready 30 "$STACK_SPAWNED_PID" test -S "$BENCH_PROBE_SOCK" || rc=$?
    if ((rc != 0)); then
        stack_tail "$BENCH_PROBE_LOG"
        stack_die "probe '$mode' did not start"
    fi
}

# bench_probe_stop — stop the probe program if it runs (safe in EXIT traps).
bench_probe_stop() {
    local pid
    pid=$(bench_probe_pid) || return 0
    stack_kill_wait "$pid" "probe (bench_probe)" 15 || return 1
    rm -f "$BENCH_PROBE_PIDFILE" "$BENCH_PROBE_SOCK"
}

# bench_nginx_render PORT — stack_nginx_render, then one request per connection: upstream
# asyncexec_app's keepalive lines removed and fastcgi_keep_conn off. scripts/bench.sh's
# main rows run so (it sets STACK_NGINX_RENDER), the application's and the probes' nginx
# alike, as the issue-18 baseline they are compared with was measured: each ratio holds the
# request path to its probe over the same transport. What the shipped keep-alive changes
# is measured by scripts/bench.sh --keepalive.
bench_nginx_render() {
    local f=$STACK_NGINX_DIR/site.conf
    stack_nginx_render "$1"
    sed -i -e '/^upstream asyncexec_app {/,/^}/{/^[[:space:]]*keepalive/d}' \
        -e 's|^\([[:space:]]*\)fastcgi_keep_conn on;|\1fastcgi_keep_conn off;|' "$f"
    if grep -q '^[[:space:]]*fastcgi_keep_conn on;' "$f" ||
        sed -n '/^upstream asyncexec_app {/,/^}/p' "$f" | grep -q keepalive; then
        stack_die "bench: could not turn keep-alive off in $f"
    fi
}

# bench_probe_nginx CMD... — run a stack_nginx_* function against the probes' nginx: the
# same site configuration as the application's (nginx/asyncexec.conf rendered by
# STACK_NGINX_RENDER), its own directory and port, fastcgi_pass to the probe socket. The
# locals are seen by the called function.
# shellcheck disable=SC2034
bench_probe_nginx() {
    local STACK_NGINX_DIR=$BENCH_PROBE_NGINX_DIR
    local STACK_NGINX_PIDFILE=$BENCH_PROBE_NGINX_DIR/nginx.pid
    local STACK_NGINX_ERR=$BENCH_PROBE_NGINX_DIR/error.log
    local STACK_APP_SOCK=$BENCH_PROBE_SOCK
    local STACK_APP_LOG=$BENCH_PROBE_LOG
    "$@"
}

# ---- processes --------------------------------------------------------------------------

# bench_worker_rss_kib — VmRSS (KiB) of each asyncexec-fcgi worker (children of the master),
# one per line.
bench_worker_rss_kib() {
    local master child
    master=$(stack_app_pid) || return 1
    for child in $(ps -o pid= --ppid "$master"); do
        awk '/^VmRSS:/ { print $2 }' "/proc/$child/status" 2>/dev/null || true
    done
}

# ---- webhooks (scripts/bench.sh --webhooks) ---------------------------------------------
# The loopback receiver (tests/bench/webhook_receiver.py) and the sender (asyncexec-notify).
# Need BENCH_RECEIVER_PIDFILE, BENCH_RECEIVER_PORTFILE, BENCH_RECEIVER_LOG,
# BENCH_RECEIVER_RECORDS (its records), BENCH_NOTIFY_CONF (the sender's configuration, with
# notify_listen = 127.0.0.1:BENCH_NOTIFY_PORT), BENCH_NOTIFY_PIDFILE, BENCH_NOTIFY_LOG.

BENCH_RECEIVER_PY=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/tests/bench/webhook_receiver.py
BENCH_WEBHOOKS_PY=$(dirname "${BASH_SOURCE[0]}")/bench_webhooks.py

# bench_webhooks CMD [ARGS...] — scripts/lib/bench_webhooks.py CMD on BENCH_RECORDS.
bench_webhooks() {
    local cmd=$1
    shift
    python3 "$BENCH_WEBHOOKS_PY" "$cmd" "$BENCH_RECORDS" "$@"
}

bench_receiver_pid() { stack_pid_from_file "$BENCH_RECEIVER_PIDFILE" python3; }

# bench_receiver_start — the receiver on a free loopback port; sets BENCH_RECEIVER_PORT
# and BENCH_RECEIVER_PID.
bench_receiver_start() {
    local rc=0
    rm -f "$BENCH_RECEIVER_PORTFILE" "$BENCH_RECEIVER_RECORDS"
    stack_log "starting the webhook receiver (log $BENCH_RECEIVER_LOG)"
    stack_spawn "$BENCH_RECEIVER_LOG" python3 "$BENCH_RECEIVER_PY" \
        --port-file "$BENCH_RECEIVER_PORTFILE" --out "$BENCH_RECEIVER_RECORDS"
    BENCH_RECEIVER_PID=$STACK_SPAWNED_PID
    printf '%s\n' "$BENCH_RECEIVER_PID" >"$BENCH_RECEIVER_PIDFILE"
    stack_wait_ready 30 "$BENCH_RECEIVER_PID" test -s "$BENCH_RECEIVER_PORTFILE" || rc=$?
    if ((rc != 0)); then
        stack_tail "$BENCH_RECEIVER_LOG"
        stack_die "the webhook receiver did not start"
    fi
    read -r BENCH_RECEIVER_PORT <"$BENCH_RECEIVER_PORTFILE"
}

# bench_receiver_count — the number of requests the receiver got so far.
bench_receiver_count() {
    curl -fsS --max-time 5 "http://127.0.0.1:$BENCH_RECEIVER_PORT/count"
}

# bench_receiver_reached N — true once the receiver got N requests or more.
bench_receiver_reached() {
    local n
    n=$(bench_receiver_count 2>/dev/null) && [[ $n =~ ^[0-9]+$ ]] && ((n >= $1))
}

# bench_receiver_stop — stop the receiver if it runs (its records flushed; EXIT-trap safe).
bench_receiver_stop() {
    local pid
    pid=$(bench_receiver_pid) || return 0
    stack_kill_wait "$pid" "webhook receiver" 15 || return 1
    rm -f "$BENCH_RECEIVER_PIDFILE"
}

# the kernel keeps 15 characters of a process name
bench_notify_pid() { stack_pid_from_file "$BENCH_NOTIFY_PIDFILE" asyncexec-notif; }

bench_notify_ready() {
    curl -fsS --max-time 2 -o /dev/null "http://127.0.0.1:$BENCH_NOTIFY_PORT/readyz" 2>/dev/null
}

# bench_notify_start BIN — asyncexec-notify on BENCH_NOTIFY_CONF; waits for /readyz 200;
# sets BENCH_NOTIFY_PID.
bench_notify_start() {
    local rc=0
    stack_log "starting asyncexec-notify (log $BENCH_NOTIFY_LOG)"
    stack_spawn "$BENCH_NOTIFY_LOG" "$1" --config "$BENCH_NOTIFY_CONF"
    BENCH_NOTIFY_PID=$STACK_SPAWNED_PID
    printf '%s\n' "$BENCH_NOTIFY_PID" >"$BENCH_NOTIFY_PIDFILE"
    stack_wait_ready 30 "$BENCH_NOTIFY_PID" bench_notify_ready || rc=$?
    if ((rc != 0)); then
        stack_tail "$BENCH_NOTIFY_LOG"
        stack_die "asyncexec-notify did not become ready"
    fi
}

# bench_notify_delivered — the sender's attempts that delivered, so far.
bench_notify_delivered() {
    curl -fsS --max-time 5 "http://127.0.0.1:$BENCH_NOTIFY_PORT/metrics" | awk '
        $1 == "asyncexec_webhook_attempts_total{result=\"delivered\"}" { n = $2 }
        END { if (n == "") exit 1; print n }'
}

# bench_notify_stop — stop the sender if it runs (SIGTERM: it finishes its transfers).
bench_notify_stop() {
    local pid
    pid=$(bench_notify_pid) || return 0
    stack_kill_wait "$pid" asyncexec-notify 30 || return 1
    rm -f "$BENCH_NOTIFY_PIDFILE"
}

# bench_finish ELAPSED MISSED ERRORS — the report's last lines (the JSON's path, the time,
# targets missed, rows with request errors) and the exit: 1 when a row had request errors
# (its figures are not valid), 4 with --strict when a target was missed, else returns.
bench_finish() {
    printf '\nresults (JSON): %s\n' "$JSON"
    printf 'elapsed: %s s; %s target(s) missed; %s row(s) with request errors\n' "$1" "$2" "$3"
    if (($3 > 0)); then
        stack_warn "request errors during the measurements: the figures of those rows are not valid"
        exit 1
    fi
    if ((STRICT && $2 > 0)); then exit 4; fi
}
