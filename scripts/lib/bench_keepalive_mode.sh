# shellcheck shell=bash
# scripts/lib/bench_keepalive_mode.sh - bench.sh --keepalive: functions of scripts/bench.sh, which sources
# this file and whose variables and helpers they use (never run or sourced alone).

# ka_nginx off|on — nginx restarted with one request per connection (bench_nginx_render)
# or with the shipped site (stack_nginx_render).
ka_nginx() {
    stack_nginx_stop >/dev/null || stack_die "nginx did not stop"
    if [[ $1 == off ]]; then STACK_NGINX_RENDER=bench_nginx_render; else STACK_NGINX_RENDER=stack_nginx_render; fi
    stack_nginx_start "$HTTP_PORT" >/dev/null
}

# ka_run KEEP MODE RATE FILE — one bench_pace run after its warm-up; a record line
# "KEEP MODE RATE|PACE LINE|CPU BEFORE|CPU AFTER" appended to BENCH_OUT/keepalive.txt.
ka_run() {
    local keep=$1 mode=$2 rate=$3 file=$4 c0 c1 out
    "$BENCH_TOOLS/bench_pace" --port "$HTTP_PORT" --rate "$rate" --duration 1 \
        --connections "$BENCH_WRK_CONNS" --mode "$mode" "$file" >/dev/null 2>&1 || true
    c0=$(bench_cpu_sample)
    out=$("$BENCH_TOOLS/bench_pace" --port "$HTTP_PORT" --rate "$rate" --duration "$KA_DUR" \
        --connections "$BENCH_WRK_CONNS" --mode "$mode" "$file" 2>>"$BENCH_OUT/keepalive.err") ||
        stack_warn "bench_pace $mode at $rate/s, keep-alive $keep: errors ($out)"
    c1=$(bench_cpu_sample)
    [[ $out == sent=* ]] || stack_die "bench_pace failed: $(tail -n 3 "$BENCH_OUT/keepalive.err")"
    printf '%s %s %s|%s|%s|%s\n' "$keep" "$mode" "$rate" "$out" "$c0" "$c1" >>"$BENCH_OUT/keepalive.txt"
    stack_log "keep-alive $keep, $mode at $rate/s: $out"
}

# main_keepalive — scripts/bench.sh --keepalive.
main_keepalive() {
    local round rate keep order
    stack_install_packages
    BUILD_EXTRA=(bench_pace)
    build
    DB_PORT=$(stack_free_port)
    HTTP_PORT=$(free_port_except "$DB_PORT")
    PROBE_PORT=
    STACK_NGINX_RENDER=stack_nginx_render
    fresh_stack
    provision
    seed --route "$ROUTE_POLL" --count "$WAITING" --out "$PRIVATE/waiting.data" waiting
    for round in 1 2; do
        order="off on"
        ((round == 2)) && order="on off"
        for rate in $KA_POLL_RATES; do
            for keep in $order; do ka_nginx "$keep"; ka_run "$keep" poll "$rate" "$PRIVATE/waiting.data"; done
        done
        for rate in $KA_SUBMIT_RATES; do
            for keep in $order; do ka_nginx "$keep"; ka_run "$keep" submit "$rate" "$PRIVATE/submit.data"; done
        done
    done
    python3 "$ROOT/scripts/lib/bench_keepalive.py" "$BENCH_OUT/keepalive.txt" "$JSON" \
        "$(getconf CLK_TCK)" "$MODE" "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    printf 'raw outputs: %s/keepalive.txt\n' "$BENCH_OUT"
}
