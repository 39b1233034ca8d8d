# shellcheck shell=bash
# scripts/lib/bench.sh — helpers for scripts/bench.sh: running wrk and parsing its output,
# the ceiling probes behind their own nginx, and the result table / JSON.
# Needs scripts/lib/stack.sh (sourced and stack_init'ed first) and these variables:
#   BENCH_OUT (directory for raw outputs), BENCH_TOOLS (directory of the bench_* binaries),
#   BENCH_PROBE_SOCK, BENCH_PROBE_LOG, BENCH_PROBE_PIDFILE, BENCH_PROBE_NGINX_DIR.

BENCH_WRK_THREADS=2
BENCH_WRK_CONNS=64
BENCH_WRK_TIMEOUT=5          # wrk --timeout (seconds): slower responses count as errors

# Results, by row name.
declare -gA R_RPS=() R_P50=() R_P99=() R_ERR=() R_RATIO=() R_OF=() R_TARGET=() R_MET=()
declare -gA R_OTHER=() R_DBQ=() R_CPU=()
declare -ga R_ORDER=()

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
# probe) and nginx's.
bench_cpu_sample() {
    local total busy ours=0 db=0 app=0 ngx=0 p stat comm fields t
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
    printf '%s %s %s %s %s %s\n' "$total" "$busy" "$ours" "$db" "$app" "$ngx"
}

# bench_other_pct "SAMPLE_BEFORE" "SAMPLE_AFTER" — other% between two samples.
bench_other_pct() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        split(a, x, " "); split(b, y, " ")
        t = y[1] - x[1]; o = (y[2] - x[2]) - (y[3] - x[3])
        if (t <= 0) { print "nan"; exit }
        if (o < 0) o = 0
        printf "%.0f", 100 * o / t
    }'
}

# bench_cpu_split "SAMPLE_BEFORE" "SAMPLE_AFTER" N [SCALE] — CPU microseconds per request
# (N requests; the deltas multiplied by SCALE, default 1): "APP DB NGINX REST TOTAL", where
# REST is everything else of ours (wrk, the bench tools, this script).
bench_cpu_split() {
    awk -v a="$1" -v b="$2" -v n="$3" -v s="${4:-1}" -v hz="$(getconf CLK_TCK)" 'BEGIN {
        split(a, x, " "); split(b, y, " ")
        if (n + 0 <= 0 || hz + 0 <= 0) { print "- - - - -"; exit }
        f = s * 1e6 / hz / n
        ours = (y[3] - x[3]) * f; db = (y[4] - x[4]) * f; app = (y[5] - x[5]) * f
        ngx = (y[6] - x[6]) * f; rest = ours - db - app - ngx
        printf "%.0f %.0f %.0f %.0f %.0f\n", app, db, ngx, rest, ours
    }'
}

# ---- database statements ----------------------------------------------------------------

# bench_db_counts — "QUESTIONS QUERIES": statements the server received from clients (round
# trips; a CALL is one) and statements it executed (those inside procedures included).
bench_db_counts() {
    printf "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Queries');\n" |
        stack_db_sql | awk '$1 == "Questions" { q = $2 } $1 == "Queries" { s = $2 }
            END { print q, s }'
}

# bench_per_request "COUNTS_BEFORE" "COUNTS_AFTER" N — "RT STMT": both counts per request
# with two decimals ("-" when unknown); the SHOW STATUS that read the second is not counted.
bench_per_request() {
    awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN {
        split(a, x, " "); split(b, y, " ")
        if (x[1] == "" || y[1] == "" || n + 0 <= 0) { print "- -"; exit }
        r = (y[1] - x[1] - 1) / n; if (r < 0) r = 0
        q = (y[2] - x[2] - 1) / n; if (q < 0) q = 0
        printf "%.2f %.2f\n", r, q
    }'
}

# ---- wrk --------------------------------------------------------------------------------

# bench_to_ms — wrk time values on stdin (e.g. 812.00us, 1.20ms, 2.01s, 1.00m) to ms.
bench_to_ms() {
    awk '{
        v = $1; f = 0
        if (v ~ /us$/)      { sub(/us$/, "", v); f = 0.001 }
        else if (v ~ /ms$/) { sub(/ms$/, "", v); f = 1 }
        else if (v ~ /m$/)  { sub(/m$/, "", v);  f = 60000 }
        else if (v ~ /h$/)  { sub(/h$/, "", v);  f = 3600000 }
        else if (v ~ /s$/)  { sub(/s$/, "", v);  f = 1000 }
        if (f == 0 || v !~ /^[0-9.]+$/) { print "nan"; next }
        printf "%.3f\n", v * f
    }'
}

# bench_wrk_parse FILE — set WRK_RPS, WRK_P50, WRK_P99 (ms), WRK_ERRORS (non-2xx/3xx
# responses + socket errors) and WRK_OVERRUN (complete.lua) from wrk --latency output.
bench_wrk_parse() {
    local f=$1
    WRK_RPS=$(awk '/^Requests\/sec:/ { printf "%.1f", $2 }' "$f")
    WRK_REQS=$(awk '/ requests in / { print $1; exit }' "$f")
    WRK_P50=$(awk '$1 == "50%" { print $2; exit }' "$f" | bench_to_ms)
    WRK_P99=$(awk '$1 == "99%" { print $2; exit }' "$f" | bench_to_ms)
    WRK_ERRORS=$(awk '
        /Non-2xx or 3xx responses:/ { n += $NF }
        /Socket errors:/ { gsub(/[^0-9 ]/, " "); for (i = 1; i <= NF; i++) n += $i }
        END { print n + 0 }' "$f")
    WRK_OVERRUN=$(awk '$1 == "overrun" { print $2 + 0; exit }' "$f")
    WRK_OVERRUN=${WRK_OVERRUN:-0}
    [[ -n $WRK_RPS && -n $WRK_P50 && -n $WRK_P99 && $WRK_P50 != nan && $WRK_P99 != nan ]]
}

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
# connections); raw output in BENCH_OUT/NAME.txt; sets the WRK_* values.
bench_wrk() {
    local name=$1 secs=$2 script=$3 url=$4 out cpu0 cpu1 q0 q1
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
    WRK_OTHER=$(bench_other_pct "$cpu0" "$cpu1")
    q1=$(bench_db_counts)
    if ! bench_wrk_parse "$out"; then
        cat "$out" >&2
        stack_die "could not parse the wrk output of $name ($out)"
    fi
    WRK_DBQ=$(bench_per_request "$q0" "$q1" "$WRK_REQS")
    WRK_CPU=$(bench_cpu_split "$cpu0" "$cpu1" "$WRK_REQS")
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
    bench_record "$name" "$WRK_RPS" "$WRK_P50" "$WRK_P99" "$WRK_ERRORS" "$WRK_OTHER" \
        "$WRK_DBQ" "$WRK_CPU"
}

# ---- results ----------------------------------------------------------------------------

# bench_record NAME RPS P50_MS P99_MS ERRORS OTHER_PCT "DB_RT DB_ST" "CPU_SPLIT" — add (or
# replace) a row.
bench_record() {
    local name=$1
    [[ -n ${R_RPS[$name]+x} ]] || R_ORDER+=("$name")
    R_RPS[$name]=$2
    R_P50[$name]=$3
    R_P99[$name]=$4
    R_ERR[$name]=$5
    R_OTHER[$name]=$6
    R_DBQ[$name]=$7
    R_CPU[$name]=${8:-- - - - -}
    R_RATIO[$name]=
    R_OF[$name]=
    R_TARGET[$name]=
    R_MET[$name]=
    stack_log "$(printf '%-15s %10s req/s   p50 %8s ms   p99 %8s ms   errors %s   other %s%%   db rt/st %s' \
        "$name" "$2" "$3" "$4" "$5" "$6" "$7")"
}

# bench_ratio NAME OF MIN [MAX_P99_MS] — ratio of NAME's req/s to OF's; the target is met
# when the ratio is at least MIN (and NAME's p99 at most MAX_P99_MS, when given) and NAME
# had no errors.
bench_ratio() {
    local name=$1 of=$2 min=$3 maxp99=${4:-} ratio met target
    ratio=$(awk -v a="${R_RPS[$name]}" -v b="${R_RPS[$of]}" \
        'BEGIN { if (b > 0) printf "%.3f", a / b; else print "nan" }')
    target=">=$min x $of"
    met=$(awk -v r="$ratio" -v m="$min" 'BEGIN { print (r != "nan" && r + 0 >= m + 0) ? "yes" : "no" }')
    if [[ -n $maxp99 ]]; then
        target+=", p99<=${maxp99}ms"
        if awk -v p="${R_P99[$name]}" -v m="$maxp99" 'BEGIN { exit !(p + 0 > m + 0) }'; then
            met=no
        fi
    fi
    if [[ ${R_ERR[$name]} != 0 ]]; then met=no; fi
    R_RATIO[$name]=$ratio
    R_OF[$name]=$of
    R_TARGET[$name]=$target
    R_MET[$name]=$met
}

# bench_table — the result table (stdout).
bench_table() {
    local name d
    printf '%-15s %10s %9s %9s %6s %6s %6s %6s %6s  %-13s %-34s %s\n' \
        name req/s p50_ms p99_ms errors other% db_rt db_st ratio of target met
    for name in "${R_ORDER[@]}"; do
        read -r -a d <<<"${R_DBQ[$name]:-- -}"
        printf '%-15s %10s %9s %9s %6s %6s %6s %6s %6s  %-13s %-34s %s\n' "$name" \
            "${R_RPS[$name]}" "${R_P50[$name]}" "${R_P99[$name]}" "${R_ERR[$name]}" \
            "${R_OTHER[$name]:--}" "${d[0]}" "${d[1]}" "${R_RATIO[$name]:--}" \
            "${R_OF[$name]:--}" "${R_TARGET[$name]:--}" "${R_MET[$name]:--}"
    done
}

# bench_cpu_table — CPU microseconds per request by process kind (stdout).
bench_cpu_table() {
    local name c
    printf '%-15s %8s %8s %8s %10s %8s\n' name app_us db_us nginx_us wrk+tools total_us
    for name in "${R_ORDER[@]}"; do
        read -r -a c <<<"${R_CPU[$name]}"
        printf '%-15s %8s %8s %8s %10s %8s\n' "$name" "${c[0]}" "${c[1]}" "${c[2]}" \
            "${c[3]}" "${c[4]}"
    done
}

# bench_rows_with_errors — the number of result rows with request errors.
bench_rows_with_errors() {
    local name n=0
    for name in "${R_ORDER[@]}"; do
        [[ ${R_ERR[$name]} == 0 ]] || n=$((n + 1))
    done
    printf '%s\n' "$n"
}

# bench_other_warning — a warning line (stdout) when other processes took more than 10 %
# of the CPU during any measurement.
bench_other_warning() {
    local name max=0
    for name in "${R_ORDER[@]}"; do
        [[ ${R_OTHER[$name]} =~ ^[0-9]+$ ]] && ((R_OTHER[$name] > max)) && max=${R_OTHER[$name]}
    done
    if ((max > 10)); then
        printf 'WARNING: other processes used up to %s%% of the CPU during measurements: the figures and ratios are disturbed; rerun on an otherwise idle machine.\n' \
            "$max"
    fi
}

# bench_cluster_ratio M — cluster:M's rate / single:M's, three decimals ("nan" if unknown).
bench_cluster_ratio() {
    awk -v a="${R_RPS[cluster:$1]:-}" -v b="${R_RPS[single:$1]:-}" \
        'BEGIN { if (b + 0 > 0 && a != "") printf "%.3f", a / b; else print "nan" }'
}

# bench_cluster_cpu_ratio M — single:M's total CPU per request / cluster:M's, three
# decimals: what the rate ratio would be on a CPU-bound machine that nothing else uses.
bench_cluster_cpu_ratio() {
    local s c
    read -r -a s <<<"${R_CPU[single:$1]:-- - - - -}"
    read -r -a c <<<"${R_CPU[cluster:$1]:-- - - - -}"
    awk -v a="${s[4]}" -v b="${c[4]}" \
        'BEGIN { if (a ~ /^[0-9.]+$/ && b + 0 > 0) printf "%.3f", a / b; else print "nan" }'
}

# bench_cluster_table M... — per measurement M: the single:M and cluster:M rows side by
# side (rate, p50, p99, errors, other%, database round trips per request), the ratio
# of the rates and the inverse ratio of the CPU time per request.
bench_cluster_table() {
    local m s c ds dc f='%-10s %10s %8s %8s %5s %5s %5s | %10s %8s %8s %5s %5s %5s | %6s %9s\n'
    # shellcheck disable=SC2059
    printf "$f" measure single p50_ms p99_ms err oth% db_rt cluster p50_ms p99_ms err oth% db_rt \
        ratio cpu_ratio
    for m in "$@"; do
        s=single:$m c=cluster:$m
        read -r -a ds <<<"${R_DBQ[$s]:-- -}"
        read -r -a dc <<<"${R_DBQ[$c]:-- -}"
        # shellcheck disable=SC2059
        printf "$f" "$m" "${R_RPS[$s]:--}" "${R_P50[$s]:--}" "${R_P99[$s]:--}" "${R_ERR[$s]:--}" \
            "${R_OTHER[$s]:--}" "${ds[0]}" "${R_RPS[$c]:--}" "${R_P50[$c]:--}" "${R_P99[$c]:--}" \
            "${R_ERR[$c]:--}" "${R_OTHER[$c]:--}" "${dc[0]}" "$(bench_cluster_ratio "$m")" \
            "$(bench_cluster_cpu_ratio "$m")"
    done
}

# bench_cluster_json_ratios M... — {"M": {"single": rate, "cluster": rate, "ratio": r,
# "cpu_ratio": c}, ...}
bench_cluster_json_ratios() {
    local m sep=''
    printf '{'
    for m in "$@"; do
        printf '%s%s: {"single": %s, "cluster": %s, "ratio": %s, "cpu_ratio": %s}' "$sep" \
            "$(bench_json_str "$m")" "$(bench_json_num "${R_RPS[single:$m]:-}")" \
            "$(bench_json_num "${R_RPS[cluster:$m]:-}")" \
            "$(bench_json_num "$(bench_cluster_ratio "$m")")" \
            "$(bench_json_num "$(bench_cluster_cpu_ratio "$m")")"
        sep=', '
    done
    printf '}'
}

# bench_json_str S — S as a JSON string (the values here are plain ASCII).
bench_json_str() {
    local s=${1//\\/\\\\}
    s=${s//\"/\\\"}
    printf '"%s"' "$s"
}

# bench_json_num S — S as a JSON number, or null when empty / not a number.
bench_json_num() {
    if [[ $1 =~ ^-?[0-9]+(\.[0-9]+)?$ ]]; then printf '%s' "$1"; else printf 'null'; fi
}

# bench_json_rows — the result rows as a JSON array.
bench_json_rows() {
    local name sep='' c d
    printf '['
    for name in "${R_ORDER[@]}"; do
        read -r -a c <<<"${R_CPU[$name]}"
        read -r -a d <<<"${R_DBQ[$name]:-- -}"
        printf '%s\n    {"name": %s, "requests_per_s": %s, "p50_ms": %s, "p99_ms": %s, "errors": %s, "other_cpu_pct": %s, "db_round_trips_per_request": %s, "db_statements_per_request": %s, "cpu_us_per_request": {"app": %s, "db": %s, "nginx": %s, "wrk_and_tools": %s, "total": %s}, "ratio": %s, "ratio_of": %s, "target": %s, "met": %s}' \
            "$sep" "$(bench_json_str "$name")" "$(bench_json_num "${R_RPS[$name]}")" \
            "$(bench_json_num "${R_P50[$name]}")" "$(bench_json_num "${R_P99[$name]}")" \
            "$(bench_json_num "${R_ERR[$name]}")" "$(bench_json_num "${R_OTHER[$name]}")" \
            "$(bench_json_num "${d[0]}")" "$(bench_json_num "${d[1]}")" \
            "$(bench_json_num "${c[0]}")" "$(bench_json_num "${c[1]}")" \
            "$(bench_json_num "${c[2]}")" "$(bench_json_num "${c[3]}")" \
            "$(bench_json_num "${c[4]}")" \
            "$(bench_json_num "${R_RATIO[$name]}")" \
            "$( [[ -n ${R_OF[$name]} ]] && bench_json_str "${R_OF[$name]}" || printf null)" \
            "$( [[ -n ${R_TARGET[$name]} ]] && bench_json_str "${R_TARGET[$name]}" || printf null)" \
            "$(case ${R_MET[$name]} in yes) printf true ;; no) printf false ;; *) printf null ;; esac)"
        sep=,
    done
    printf '\n  ]'
}

# ---- probes -----------------------------------------------------------------------------

bench_probe_pid() { stack_pid_from_file "$BENCH_PROBE_PIDFILE" bench_probe; }

# bench_probe_start MODE — start the probe program on BENCH_PROBE_SOCK; wait for the socket.
bench_probe_start() {
    local mode=$1 rc=0
    rm -f "$BENCH_PROBE_SOCK"
    stack_log "starting probe '$mode' (log $BENCH_PROBE_LOG)"
    stack_spawn "$BENCH_PROBE_LOG" "$BENCH_TOOLS/bench_probe" --config "$STACK_CONF" \
        --listen "$BENCH_PROBE_SOCK" "$mode"
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

# bench_probe_nginx CMD... — run a stack_nginx_* function against the probes' nginx: the
# same site configuration (nginx/asyncexec.conf rendered by stack.sh), its own directory
# and port, fastcgi_pass to the probe socket. The locals are seen by the called function.
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
