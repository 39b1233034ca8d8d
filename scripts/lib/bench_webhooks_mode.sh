# shellcheck shell=bash
# scripts/lib/bench_webhooks_mode.sh - bench.sh --webhooks: functions of scripts/bench.sh, which sources
# this file and whose variables and helpers they use (never run or sourced alone).

# ---- --webhooks -------------------------------------------------------------------------

# wh_sql SQL — the rows of SQL (mariadb --batch: a header line, then tab-separated rows).
wh_sql() { printf '%s\n' "$1" | stack_db_sql; }

# wh_owed — the deliveries the receiver is owed so far: every delivery made plus the
# executions still marked for one (the sender turns one into the other in a transaction,
# and the one statement sees both at one point). The receiver counts every request, so
# it has them all once its count reaches this (no transition runs meanwhile).
wh_owed() {
    sql_value "SELECT (SELECT COUNT(*) FROM asyncexec.s2r_webhook_delivery) +
        (SELECT COUNT(*) FROM asyncexec.s2r_async_execution WHERE notify = 1)"
}

# wh_sample — "CPU|DELIVERED|RECEIVED|MS|QUERIES": the samples a phase spans.
wh_sample() {
    local cpu d r ms q
    q=$(bench_db_counts)
    cpu=$(bench_cpu_sample)
    d=$(bench_notify_delivered 2>/dev/null) || d=0
    r=$(bench_receiver_count) || stack_die "the webhook receiver does not answer"
    ms=$(date +%s%3N)
    printf '%s|%s|%s|%s|%s\n' "$cpu" "$d" "$r" "$ms" "$q"
}

# wh_phase NAME S0 S1 [shared] — record the deliveries between samples S0 and S1.
wh_phase() {
    local a b
    IFS='|' read -r -a a <<<"$2"
    IFS='|' read -r -a b <<<"$3"
    bench_webhooks phase "$1" "${a[0]}" "${b[0]}" "${a[1]}" "${b[1]}" "${a[2]}" "${b[2]}" \
        "${a[3]}" "${b[3]}" "${a[4]}" "${b[4]}" "${4:-}"
}

# wh_drain NAME [S0] — wait (bounded) until the receiver has every delivery owed so far,
# and record that as phase NAME from sample S0 (default: taken now) on (its throughput and
# CPU per delivery; nothing else runs).
wh_drain() {
    local name=$1 s0=${2:-} owed s1 t0=$SECONDS
    [[ -n $s0 ]] || s0=$(wh_sample)
    owed=$(wh_owed)
    stack_log "$name: waiting for the receiver to have $owed deliveries"
    stack_wait "$WH_DRAIN_LIMIT" bench_receiver_reached "$owed" ||
        stack_warn "$name: the receiver has $(bench_receiver_count) of $owed deliveries after $WH_DRAIN_LIMIT s"
    s1=$(wh_sample)
    wh_phase "$name" "$s0" "$s1"
    stack_log "$name: done in $((SECONDS - t0)) s"
}

# wh_complete_measure PHASE URL ROUTE CONSUMER_KEY BACKEND_KEY — complete_measure's
# measurement (claims of ROUTE made beforehand with these keys, InnoDB let settle as
# wh_request_path does, one distinct execution per request, once more with more claims
# after an overrun) as row PHASE:complete; while
# the sender runs, the deliveries during the measured run are recorded as phase
# "during PHASE:complete" (MariaDB's CPU shared with the completes).
wh_complete_measure() {
    local ph=$1 url=$2 route=$3 ak=$4 bk=$5 try t_seed s0 s1
    for try in 1 2; do
        t_seed=$SECONDS
        BENCH_CONSUMER_KEY=$ak BENCH_BACKEND_KEY=$bk seed --route "$route" \
            --count "$((NEED_WARM + NEED_MAIN))" --out "$PRIVATE/claimed.data" claimed
        stack_log "$ph: claimed $((NEED_WARM + NEED_MAIN)) executions in $((SECONDS - t_seed)) s"
        settle_db
        wh_purge_wait
        bench_wrk "$ph:complete-warmup" "$WARM" "$LUA/complete.lua" "$url" \
            "$PRIVATE/claimed.data" 0 "$NEED_WARM" "$BENCH_WRK_THREADS"
        if bench_notify_pid >/dev/null; then s0=$(wh_sample); fi
        bench_wrk "$ph:complete" "$DUR" "$LUA/complete.lua" "$url" "$PRIVATE/claimed.data" \
            "$NEED_WARM" "$NEED_MAIN" "$BENCH_WRK_THREADS"
        if bench_notify_pid >/dev/null; then s1=$(wh_sample); fi
        ((WRK_OVERRUN > 0 && try == 1)) || break
        stack_warn "$ph: complete ran out of claimed executions ($WRK_OVERRUN requests repeated one): again with more"
        NEED_WARM=$(bench_report need "$WRK_RPS" 1.3 "$WARM" "$BENCH_WRK_THREADS")
        NEED_MAIN=$(bench_report need "$WRK_RPS" 1.3 "$DUR" "$BENCH_WRK_THREADS")
        if bench_notify_pid >/dev/null; then wh_drain "backlog of $ph:complete (retry)"; fi
    done
    ((WRK_OVERRUN == 0)) ||
        stack_warn "$ph: complete ran out of claimed executions ($WRK_OVERRUN requests repeated one; they count as errors)"
    bench_report row "$ph:complete"
    if [[ -n ${s1:-} ]]; then wh_phase "during $ph:complete" "$s0" "$s1" shared; fi
}

# wh_purge_wait — wait (bounded) until InnoDB's purge has caught up with what was
# written before (the history list short), so that a measurement does not pay for it.
wh_purge_wait() {
    local h t0=$SECONDS
    while :; do
        h=$(sql_value "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'INNODB_HISTORY_LIST_LENGTH'")
        [[ $h =~ ^[0-9]+$ ]] || { stack_log "InnoDB's history list length is not reported: not waited for"; return 0; }
        ((h < 1000 || SECONDS - t0 >= 60)) && break
        sleep 0.5
    done
    stack_log "InnoDB purge: history list length $h after $((SECONDS - t0)) s"
}

# wh_run NAME FILE K — complete as row NAME with the K-th share (from 0) of NEED_WARM +
# NEED_MAIN claimed executions of data file FILE: warm-up, then the measured run.
wh_run() {
    local name=$1 file=$2 first=$(($3 * (NEED_WARM + NEED_MAIN)))
    bench_wrk "$name-warmup" "$WARM" "$LUA/complete.lua" "$WH_URL" "$file" "$first" \
        "$NEED_WARM" "$BENCH_WRK_THREADS"
    bench_wrk "$name" "$DUR" "$LUA/complete.lua" "$WH_URL" "$file" \
        "$((first + NEED_WARM))" "$NEED_MAIN" "$BENCH_WRK_THREADS"
    ((WRK_OVERRUN == 0)) ||
        stack_warn "$name ran out of claimed executions ($WRK_OVERRUN requests repeated one; they count as errors)"
    bench_report row "$name"
}

# wh_request_path URL — the request path with and without an endpoint: the claims of
# every run made first (tenant bench on ROUTE_WORK, tenant hooked on ROUTE_HOOK), InnoDB
# let settle (dirty pages written, purge caught up), then the runs back to back: one not
# reported (none of the compared runs is the first on a fresh database), then without,
# with, with, without the endpoint (a steady drift weighs on both sides alike).
wh_request_path() {
    local per=$((NEED_WARM + NEED_MAIN)) t_seed=$SECONDS
    WH_URL=$1
    seed --route "$ROUTE_WORK" --count "$((3 * per))" --out "$PRIVATE/claimed-bench.data" claimed
    BENCH_CONSUMER_KEY=$AK_HOOK BENCH_BACKEND_KEY=$BK_HOOK seed --route "$ROUTE_HOOK" \
        --count "$((2 * per))" --out "$PRIVATE/claimed-hooked.data" claimed
    stack_log "claimed $((3 * per)) executions of tenant bench and $((2 * per)) of tenant hooked in $((SECONDS - t_seed)) s"
    settle_db
    wh_purge_wait
    bench_wrk complete-first "$((WARM + DUR))" "$LUA/complete.lua" "$WH_URL" \
        "$PRIVATE/claimed-bench.data" 0 "$per" "$BENCH_WRK_THREADS"
    wh_run no_endpoint:complete "$PRIVATE/claimed-bench.data" 1
    wh_run endpoint:complete "$PRIVATE/claimed-hooked.data" 0
    wh_run "endpoint#2:complete" "$PRIVATE/claimed-hooked.data" 1
    wh_run "no_endpoint#2:complete" "$PRIVATE/claimed-bench.data" 2
}

# wh_latency_measure NAME — the latency run: WH_RATE x WH_DUR executions of ROUTE_PACE
# claimed (the sender idle meanwhile), then completed by bench_pace at WH_RATE/s; the
# window lasts until the receiver has every delivery owed (bounded); then the route's
# completed executions are read from the database and matched with the receiver's records.
wh_latency_measure() {
    local name=$1 n=$((WH_RATE * WH_DUR)) t_seed s0 s1 owed pace_ok=1 a b
    t_seed=$SECONDS
    BENCH_CONSUMER_KEY=$AK_HOOK BENCH_BACKEND_KEY=$BK_HOOK seed --route "$ROUTE_PACE" \
        --count "$n" --out "$PRIVATE/pace.data" claimed
    stack_log "$name: claimed $n executions of $ROUTE_PACE in $((SECONDS - t_seed)) s"
    s0=$(wh_sample)
    "$BENCH_TOOLS/bench_pace" --port "$HTTP_PORT" --rate "$WH_RATE" --duration "$WH_DUR" \
        --connections 16 "$PRIVATE/pace.data" >"$BENCH_OUT/$name.txt" \
        2>"$BENCH_OUT/$name.err" || pace_ok=0
    [[ $(tail -n 1 "$BENCH_OUT/$name.txt") == sent=* ]] ||
        { cat "$BENCH_OUT/$name.err" >&2; stack_die "bench_pace failed"; }
    ((pace_ok)) || stack_warn "bench_pace reported errors: $(tail -n 1 "$BENCH_OUT/$name.txt")"
    owed=$(wh_owed)
    stack_wait "$WH_DRAIN_LIMIT" bench_receiver_reached "$owed" ||
        stack_warn "$name: the receiver has $(bench_receiver_count) of $owed deliveries after $WH_DRAIN_LIMIT s"
    s1=$(wh_sample)
    wh_sql "SELECT correlation_id,
            TIMESTAMPDIFF(MICROSECOND, '1970-01-01', completed_at) / 1000
        FROM asyncexec.s2r_async_execution
        WHERE environment = '${ROUTE_PACE%%/*}' AND service_key = '$(cut -d/ -f2 <<<"$ROUTE_PACE")'
          AND operation_key = '${ROUTE_PACE##*/}' AND status = 'completed'" \
        >"$BENCH_OUT/$name.expected" || stack_die "could not read the completed executions"
    bench_receiver_count >/dev/null     # the receiver's records flushed
    IFS='|' read -r -a a <<<"$s0"
    IFS='|' read -r -a b <<<"$s1"
    bench_webhooks latency "$name" "$BENCH_RECEIVER_RECORDS" "$BENCH_OUT/$name.expected" \
        "$ROUTE_PACE" "$(tail -n 1 "$BENCH_OUT/$name.txt")" "${a[0]}" "${b[0]}" \
        "${a[1]}" "${b[1]}" "${a[3]}" "${b[3]}" "${a[4]}" "${b[4]}" "$WH_RATE" "$WH_GOAL_P95_MS"
}

# main_webhooks — scripts/bench.sh --webhooks.
main_webhooks() {
    local url rate owed s0
    STACK_PACKAGES+=(wrk)
    stack_install_packages
    BUILD_EXTRA=(asyncexec-notify bench_pace)
    build
    DB_PORT=$(stack_free_port)
    HTTP_PORT=$(free_port_except "$DB_PORT")
    BENCH_NOTIFY_PORT=$(free_port_except "$DB_PORT" "$HTTP_PORT")
    PROBE_PORT=
    fresh_stack
    provision
    # tenant hooked, with the endpoint: its own routes, so that no claim of one tenant's
    # runs takes the other's executions
    admin route add "$ROUTE_HOOK" >/dev/null || stack_die "route add $ROUTE_HOOK failed"
    admin route add "$ROUTE_PACE" >/dev/null || stack_die "route add $ROUTE_PACE failed"
    AK_HOOK=$(admin key create --tenant hooked --label bench-hooked) ||
        stack_die "key create failed"
    BK_HOOK=$(admin backend-key create --route "$ROUTE_HOOK" --route "$ROUTE_PACE" \
        --label bench-hooked) || stack_die "backend-key create failed"
    WORKERS=$(awk -F= '$1 ~ /^[[:space:]]*workers[[:space:]]*$/ { gsub(/[[:space:]]/, "", $2); print $2 }' "$STACK_CONF")
    url=http://127.0.0.1:$HTTP_PORT
    # the sender's configuration: the stack's, and a loopback receiver allowed
    { cat "$STACK_CONF"; printf '\n# scripts/bench.sh --webhooks: the receiver is on loopback\nwebhook_allow_http = 1\nwebhook_allow_networks = 127.0.0.1/32\nnotify_listen = 127.0.0.1:%s\n' "$BENCH_NOTIFY_PORT"; } >"$BENCH_NOTIFY_CONF"
    WH_CONCURRENCY=$(awk -F= '$1 ~ /^[[:space:]]*webhook_concurrency[[:space:]]*$/ { gsub(/[[:space:]]/, "", $2); v = $2 } END { print (v == "" ? "8 (default)" : v) }' "$BENCH_NOTIFY_CONF")

    # The receiver runs (idle) from the start: the endpoint's URL names its port.
    bench_receiver_start
    BENCH_CPU_EXTRA="- $BENCH_RECEIVER_PID"
    WH_ENDPOINT=$(admin webhook add --tenant hooked --url "http://127.0.0.1:$BENCH_RECEIVER_PORT/hook" --json |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])') ||
        stack_die "webhook add failed"
    stack_log "endpoint $WH_ENDPOINT of tenant hooked: http://127.0.0.1:$BENCH_RECEIVER_PORT/hook (its secret not kept)"

    # (a) the cost on the request path; submit sizes the claims (1.15 x its rate per run,
    # as --cluster does)
    bench_measure submit "$WARM" "$DUR" "$LUA/submit.lua" "$url" "$PRIVATE/submit.data"
    rate=$(bench_report get submit)
    NEED_WARM=$(bench_report need "$rate" 1.15 "$WARM" "$BENCH_WRK_THREADS")
    NEED_MAIN=$(bench_report need "$rate" 1.15 "$DUR" "$BENCH_WRK_THREADS")
    wh_request_path "$url"
    # the sender, and the endpoint runs' marked executions delivered (the first sample
    # before it starts: its ticks and its counter are 0 then)
    owed=$(wh_owed)
    s0=$(wh_sample)
    bench_notify_start "$BUILD/asyncexec-notify"
    BENCH_CPU_EXTRA="$BENCH_NOTIFY_PID $BENCH_RECEIVER_PID"
    stack_log "asyncexec-notify: $owed executions of the endpoint runs to deliver"
    wh_drain "backlog of endpoint runs" "$s0"
    wh_complete_measure sender "$url" "$ROUTE_HOOK" "$AK_HOOK" "$BK_HOOK"
    wh_drain "backlog of sender:complete"

    # (b) the latency at a steady rate
    wh_latency_measure "pace_${WH_RATE}"
    WH_STATES=$(sql_value "SELECT GROUP_CONCAT(CONCAT(state, '=', n) ORDER BY state SEPARATOR ' ') FROM
        (SELECT state, COUNT(*) AS n FROM asyncexec.s2r_webhook_delivery GROUP BY state) s")
    WH_MARKED=$(sql_value 'SELECT COUNT(*) FROM asyncexec.s2r_async_execution WHERE notify = 1')
    bench_notify_stop || stack_warn "asyncexec-notify did not stop"
    report_webhooks
}

# report_webhooks — the tables, the notes and the JSON file of --webhooks.
report_webhooks() {
    local missed errors elapsed=$((SECONDS - T_START))
    printf '\nasyncexec webhook benchmark (%s): wrk -t%s -c%s, %s s per measurement after %s s warm-up, %s workers, 127.0.0.1; asyncexec-notify: webhook_concurrency %s, the receiver on 127.0.0.1\n\n' \
        "$MODE" "$BENCH_WRK_THREADS" "$BENCH_WRK_CONNS" "$DUR" "$WARM" "$WORKERS" "$WH_CONCURRENCY"
    bench_webhooks table "$WH_BASES" "$WH_HOOKS" "$WH_MAX_RATIO"
    printf '\nno_endpoint: tenant bench, without any endpoint (route %s); endpoint: tenant hooked, with an enabled endpoint, asyncexec-notify not running (route %s); sender: tenant hooked, asyncexec-notify running and delivering meanwhile; in this order (after one complete run not reported): no_endpoint, endpoint, endpoint#2, no_endpoint#2, sender\n' "$ROUTE_WORK" "$ROUTE_HOOK"
    printf 'deliveries: "backlog of X" = the executions X marked, delivered once the sender runs (nothing else running); "during X" = delivered while X ran (db_us shared with the completes: -)\n'
    printf 'deliveries at the end: %s; executions still marked: %s\n' "${WH_STATES:-none}" "$WH_MARKED"
    printf 'other%%: CPU time of processes outside this bench plus steal, in %% of all cores, during the measurement\n'
    printf 'load average (1/5/15 min) at start: %s; at end: %s\n' "$LOAD_START" "$(cut -d' ' -f1-3 /proc/loadavg)"
    printf 'raw outputs: %s/ (receiver.jsonl: every request the receiver got)\n' "$BENCH_OUT"
    bench_report warning
    missed=$(bench_webhooks count missed "$WH_BASES" "$WH_HOOKS" "$WH_MAX_RATIO")
    errors=$(bench_report count errors)
    bench_webhooks json "$JSON" "$WH_BASES" "$WH_HOOKS" "$WH_MAX_RATIO" \
        s:mode="$MODE" b:webhooks=true \
        s:generated_at="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
        s:git_commit="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
        b:git_uncommitted_changes="$( [[ -n $(git -C "$ROOT" status --porcelain -- src sql CMakeLists.txt 2>/dev/null) ]] && echo true || echo false)" \
        n:wrk.threads="$BENCH_WRK_THREADS" n:wrk.connections="$BENCH_WRK_CONNS" \
        n:wrk.duration_s="$DUR" n:wrk.warmup_s="$WARM" n:workers="$WORKERS" \
        s:webhook_concurrency="$WH_CONCURRENCY" n:latency_run.rate="$WH_RATE" \
        n:latency_run.duration_s="$WH_DUR" n:latency_run.connections=16 \
        n:targets.cpu_ratio_max="$WH_MAX_RATIO" n:targets.latency_p95_ms_max="$WH_GOAL_P95_MS" \
        s:deliveries_at_end="${WH_STATES:-}" n:executions_still_marked="$WH_MARKED" \
        s:load_average.start="$LOAD_START" s:load_average.end="$(cut -d' ' -f1-3 /proc/loadavg)" \
        rows:results n:targets_missed="$missed" n:rows_with_errors="$errors" \
        n:elapsed_s="$elapsed"
    bench_finish "$elapsed" "$missed" "$errors"
}
