# shellcheck shell=bash
# scripts/lib/bench_cluster_mode.sh - bench.sh --cluster: functions of scripts/bench.sh, which sources
# this file and whose variables and helpers they use (never run or sourced alone).

# ---- --cluster --------------------------------------------------------------------------
# The same measurements, with the same build, durations, seeds and client settings, first
# on one server and then on the cluster; each row's name is PHASE:MEASUREMENT.
CLUSTER_ROWS=(poll submit complete lifecycle)

# phase_measure PHASE PORT — seed and measure CLUSTER_ROWS through nginx on PORT (the
# stack is provisioned). The claimed executions for complete: the single phase takes
# 1.15 x its submit rate for the warm-up and the run (as main does from the insert probe)
# and the cluster phase reuses that count, so that both complete the same number at most.
phase_measure() {
    local ph=$1 port=$2 url=http://127.0.0.1:$2 t_seed rate
    HTTP_PORT=$port
    t_seed=$SECONDS
    seed --route "$ROUTE_POLL" --count "$WAITING" --out "$PRIVATE/poll-waiting.data" waiting
    stack_log "$ph: seeded $WAITING waiting executions in $((SECONDS - t_seed)) s"
    bench_measure "$ph:poll" "$WARM" "$DUR" "$LUA/poll.lua" "$url" "$PRIVATE/poll-waiting.data"
    bench_measure "$ph:submit" "$WARM" "$DUR" "$LUA/submit.lua" "$url" "$PRIVATE/submit.data"
    if [[ -z ${NEED_WARM:-} ]]; then
        rate=$(bench_report get "$ph:submit")
        NEED_WARM=$(bench_report need "$rate" 1.15 "$WARM" "$BENCH_WRK_THREADS")
        NEED_MAIN=$(bench_report need "$rate" 1.15 "$DUR" "$BENCH_WRK_THREADS")
    fi
    complete_measure "$ph:complete" "$url"
    lifecycle_measure "$ph:lifecycle" "$port"
    CLUSTER_LIFE[$ph]=$LIFE_LINE
}

# complete_measure NAME URL [PROBE] — claim NEED_WARM + NEED_MAIN executions and measure
# complete as row NAME (warm-up NAME-warmup), one distinct claimed execution per request,
# after the insert probe's run PROBE, if given, made once the claims are in. When the run
# used them up (a drifting machine: the insert rate measured slow, complete fast), all of
# it once more with 1.3 x the rate complete reached (NEED_* raised for the next phase too);
# an overrun left after that counts as errors.
complete_measure() {
    local name=$1 url=$2 probe=${3:-} try t_seed
    for try in 1 2; do
        t_seed=$SECONDS
        seed --route "$ROUTE_WORK" --count "$((NEED_WARM + NEED_MAIN))" \
            --out "$PRIVATE/claimed.data" claimed
        stack_log "$name: claimed $((NEED_WARM + NEED_MAIN)) executions in $((SECONDS - t_seed)) s"
        [[ -z $probe ]] || probe_measure insert "$probe"
        bench_wrk "$name-warmup" "$WARM" "$LUA/complete.lua" "$url" \
            "$PRIVATE/claimed.data" 0 "$NEED_WARM" "$BENCH_WRK_THREADS"
        bench_wrk "$name" "$DUR" "$LUA/complete.lua" "$url" "$PRIVATE/claimed.data" \
            "$NEED_WARM" "$NEED_MAIN" "$BENCH_WRK_THREADS"
        ((WRK_OVERRUN > 0 && try == 1)) || break
        stack_warn "$name: complete ran out of claimed executions ($WRK_OVERRUN requests repeated one): again with more"
        NEED_WARM=$(bench_report need "$WRK_RPS" 1.3 "$WARM" "$BENCH_WRK_THREADS")
        NEED_MAIN=$(bench_report need "$WRK_RPS" 1.3 "$DUR" "$BENCH_WRK_THREADS")
    done
    ((WRK_OVERRUN == 0)) ||
        stack_warn "$name: complete ran out of claimed executions ($WRK_OVERRUN requests repeated one; they count as errors)"
    bench_report row "$name"
}

# db_settings — the durability-relevant settings of the server stack_db_sql reaches.
db_settings() {
    sql_value "SELECT CONCAT('innodb_flush_log_at_trx_commit=', @@innodb_flush_log_at_trx_commit,
        ' innodb_doublewrite=', @@innodb_doublewrite, ' log_bin=', @@log_bin,
        ' sync_binlog=', @@sync_binlog, ' innodb_buffer_pool_size=',
        @@innodb_buffer_pool_size DIV 1048576, 'M wsrep_on=', @@wsrep_on,
        ' innodb_autoinc_lock_mode=', @@innodb_autoinc_lock_mode)"
}

# cluster_free_base — a base port (cluster.sh's layout) whose ports are all free and
# distinct from DB_PORT / HTTP_PORT / PROBE_PORT; prints it.
cluster_free_base() {
    local try b
    for try in $(seq 1 50); do
        b=$((20000 + RANDOM % 12000))
        cluster_ports_free "$b" || continue
        [[ " $DB_PORT $HTTP_PORT $PROBE_PORT " == *" $((b + 50)) "* ]] && continue
        stack_port_in_use $((b + 50)) any && continue
        printf '%s\n' "$b"
        return 0
    done
    stack_die "no free port range for the cluster after $try tries"
}

# cluster_host_metrics PORT — "REQUESTS WRITER_INDEX FAILOVERS" of the app host whose
# metrics nginx serves on PORT (requests summed over every endpoint and status).
cluster_host_metrics() {
    curl -fsS --max-time 5 "http://127.0.0.1:$1/metrics" 2>/dev/null | awk '
        /^asyncexec_requests_total[{ ]/ { r += $NF }
        /^asyncexec_db_writer_index[{ ]/ { w = $NF }
        /^asyncexec_db_failovers_total[{ ]/ { f += $NF }
        END { printf "%d %s %d\n", r, (w == "" ? "-" : w), f }'
}

# cluster_pool BYTES — give every node the one server's InnoDB buffer pool (cluster.sh
# starts them with 64M; MariaDB's default, which the one server has, is 128M): SET GLOBAL
# on each, then wait (bounded) until each reports the size and its resize has completed.
cluster_pool() {
    local want=$1 n got t0
    [[ $want =~ ^[0-9]+$ ]] || stack_die "no buffer pool size to give the nodes"
    for n in "${CLUSTER_NODES[@]}"; do
        cluster_node "$n"
        printf 'SET GLOBAL innodb_buffer_pool_size = %s;\n' "$want" | stack_db_sql ||
            stack_die "node $n: could not set innodb_buffer_pool_size"
    done
    for n in "${CLUSTER_NODES[@]}"; do
        cluster_node "$n"
        t0=$SECONDS
        while :; do
            got=$(sql_value "SELECT CONCAT(@@GLOBAL.innodb_buffer_pool_size, ' ', (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_RESIZE_STATUS') NOT LIKE '%resiz%' OR (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_RESIZE_STATUS') LIKE 'Completed%')")
            [[ $got == "$want 1" ]] && break
            ((SECONDS - t0 < 60)) || stack_die "node $n: buffer pool not resized to $want within 60 s ($got)"
            sleep 0.5
        done
    done
    cluster_node 1
    stack_log "cluster: innodb_buffer_pool_size = $((want / 1048576))M on every node, as on the one server"
}

# cluster_phase — a fresh cluster in STATE/cluster (nginx on base + 50), provisioned and
# measured; then stopped. Sets CLUSTER_DB_SETTINGS, CLUSTER_WORKERS, CLUSTER_SYNC_WAIT,
# CLUSTER_UP_S and CLUSTER_HOSTS_LINE (requests, writer index and failovers per host).
cluster_phase() {
    local cstate=$STATE/cluster base ma mb
    if [[ -s $cstate/base ]]; then   # leftovers of an interrupted run (by their pid files)
        cluster_init "$ROOT" "$cstate" bench "$(cat "$cstate/base")"
        cluster_stop_all >/dev/null 2>&1 || true
        unset CLUSTER_BASE
    fi
    rm -rf "$cstate" "$PRIVATE"
    (umask 077 && mkdir -p "$PRIVATE")
    base=$(cluster_free_base)
    mkdir -p "$cstate"
    chmod 0711 "$cstate"
    cluster_init "$ROOT" "$cstate" bench "$base"
    cluster_start "$BUILD" $((base + 50))
    CLUSTER_UP_S=$CLUSTER_SECONDS
    cluster_pool "$SINGLE_POOL"
    cluster_node 1    # database counts and settings: the writer, node 1
    cluster_host a
    CLUSTER_WORKERS=$(awk -F= '$1 ~ /^[[:space:]]*workers[[:space:]]*$/ { gsub(/[[:space:]]/, "", $2); print $2 }' "$STACK_CONF")
    CLUSTER_SYNC_WAIT=$(awk -F= '$1 ~ /^[[:space:]]*db_sync_wait[[:space:]]*$/ { gsub(/[[:space:]]/, "", $2); print $2 }' "$STACK_CONF")
    CLUSTER_SYNC_WAIT=${CLUSTER_SYNC_WAIT:-1 (default)}
    CLUSTER_DB_SETTINGS=$(db_settings)
    provision
    phase_measure cluster $((base + 50))
    # both hosts served, both stayed on node 1 (the per-host metrics, this run's only)
    read -r -a ma <<<"$(cluster_host_metrics "$CLUSTER_METRICS_A")"
    read -r -a mb <<<"$(cluster_host_metrics "$CLUSTER_METRICS_B")"
    CLUSTER_HOSTS_LINE="host A ${ma[0]:-?} requests (writer index ${ma[1]:-?}, failovers ${ma[2]:-?}), host B ${mb[0]:-?} requests (writer index ${mb[1]:-?}, failovers ${mb[2]:-?})"
    stack_log "cluster: $CLUSTER_HOSTS_LINE"
    cluster_stop_all || stack_warn "some processes of the cluster did not stop"
    unset CLUSTER_BASE                      # stopped: nothing left for the EXIT trap
    stack_init "$ROOT" "$STATE" bench       # back to the single server's paths
}

# main_cluster — scripts/bench.sh --cluster.
main_cluster() {
    declare -gA CLUSTER_LIFE=()
    STACK_PACKAGES+=(wrk "${CLUSTER_PACKAGES[@]}")
    stack_install_packages
    build
    DB_PORT=$(stack_free_port)
    HTTP_PORT=$(free_port_except "$DB_PORT")
    PROBE_PORT=
    fresh_stack
    provision
    WORKERS=$(awk -F= '$1 ~ /^[[:space:]]*workers[[:space:]]*$/ { gsub(/[[:space:]]/, "", $2); print $2 }' "$STACK_CONF")
    SINGLE_DB_SETTINGS=$(db_settings)
    SINGLE_POOL=$(sql_value 'SELECT @@GLOBAL.innodb_buffer_pool_size')
    phase_measure single "$HTTP_PORT"
    stack_stop_all || stack_warn "some processes did not stop"
    cluster_phase
    report_cluster
}

# report_cluster — the single / cluster / ratio table, the notes and the JSON file.
report_cluster() {
    local elapsed=$((SECONDS - T_START)) errors
    printf '\nasyncexec cluster benchmark (%s): wrk -t%s -c%s, %s s per measurement after %s s warm-up (lifecycle %s s after %s s), 127.0.0.1\n' \
        "$MODE" "$BENCH_WRK_THREADS" "$BENCH_WRK_CONNS" "$DUR" "$WARM" "$LIFE_DUR" "$LIFE_WARM"
    printf 'single: one MariaDB (over loopback TCP, as the nodes), one app host (%s workers), nginx\n' "$WORKERS"
    printf 'cluster: 3 Galera nodes on this host, two app hosts (%s workers each, both pinned to node 1, db_sync_wait %s), one nginx upstream over both (round robin); up in %s s\n\n' \
        "$CLUSTER_WORKERS" "$CLUSTER_SYNC_WAIT" "$CLUSTER_UP_S"
    bench_report cluster-table "${CLUSTER_ROWS[@]}"
    printf '\nCPU per request in microseconds, by process (db = all three nodes on the cluster; lifecycle: per execution):\n'
    bench_report cpu-table
    printf '\npoll, submit, complete: requests/s; lifecycle: executions/s (submit, claim in batches of 10, complete, poll until done)\n'
    printf 'ratio: cluster / single (rates); cpu_ratio: single / cluster (total CPU per request: an estimate of the rate ratio on an otherwise idle, CPU-bound machine)\n'
    printf 'db_rt: database round trips per request, on the single server and on the writer (node 1)\n'
    printf 'cluster hosts: %s\n' "$CLUSTER_HOSTS_LINE"
    printf 'durability, single:  %s\n' "$SINGLE_DB_SETTINGS"
    printf 'durability, node 1:  %s\n' "$CLUSTER_DB_SETTINGS"
    printf 'lifecycle, single:  %s\nlifecycle, cluster: %s\n' "${CLUSTER_LIFE[single]}" "${CLUSTER_LIFE[cluster]}"
    printf 'load average (1/5/15 min) at start: %s; at end: %s\n' "$LOAD_START" "$(cut -d' ' -f1-3 /proc/loadavg)"
    bench_report warning
    bench_report json "$JSON" s:mode="$MODE" b:cluster=true \
        s:generated_at="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
        s:git_commit="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
        n:wrk.threads="$BENCH_WRK_THREADS" n:wrk.connections="$BENCH_WRK_CONNS" \
        n:wrk.duration_s="$DUR" n:wrk.warmup_s="$WARM" \
        n:workers.single="$WORKERS" n:workers.cluster_per_host="$CLUSTER_WORKERS" \
        n:workers.cluster_hosts=2 \
        s:db_settings.single="$SINGLE_DB_SETTINGS" s:db_settings.cluster_node1="$CLUSTER_DB_SETTINGS" \
        n:cluster_up_s="$CLUSTER_UP_S" s:cluster_hosts="$CLUSTER_HOSTS_LINE" \
        ratios:ratios="$(IFS=,; printf '%s' "${CLUSTER_ROWS[*]}")" rows:results \
        n:elapsed_s="$elapsed"
    errors=$(bench_report count errors)
    printf '\nresults (JSON): %s\nelapsed: %s s; %s row(s) with request errors\n' "$JSON" "$elapsed" "$errors"
    if ((errors > 0)); then
        stack_warn "request errors during the measurements: the figures of those rows are not valid"
        exit 1
    fi
}
