#!/usr/bin/env bash
# scripts/valgrind-worker.sh — one asyncexec-fcgi worker under valgrind memcheck over N
# mixed requests, or its resident memory over many requests.
#
# Usage: scripts/valgrind-worker.sh [N]          memcheck, N requests (default 10000)
#        scripts/valgrind-worker.sh --rss [N]    RSS before/after N requests (default 100000)
#
# Both bring up a private stack (MariaDB, asyncexec-fcgi with workers = 1, nginx) in a
# fresh temporary directory, like scripts/test.sh, and drive tests/bench/bench_mixed
# through nginx: submit, poll, claim, heartbeat, complete, fail (final and retryable),
# cancel, resubmits, late callbacks and a rotation of 4xx requests, every answer checked.
#
# Memcheck (Debug build): asyncexec-fcgi, the master and its worker, runs under valgrind
# (--track-origins=yes --leak-check=full); after the requests it is stopped with SIGTERM
# and the ERROR SUMMARY, definitely and indirectly lost bytes of the master and of the
# worker are printed. Exit 1 on any valgrind error or lost byte, an unexpected answer, or a
# worker that had to be replaced.
#
# --rss (Release build, no valgrind): the worker's VmRSS at start, after a warm-up of 1000
# requests and after N more; a benchmark figure, exit 1 only if the requests fail.
#
# Environment: ASYNCEXEC_BUILD_DIR (default: inside the temporary directory),
# ASYNCEXEC_KEEP=1 (keep the temporary directory on failure). Every wait is bounded; the
# processes started here are stopped by pid.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/stack.sh
source "$ROOT/scripts/lib/stack.sh"
# shellcheck source-path=SCRIPTDIR source=lib/stack_san.sh
source "$ROOT/scripts/lib/stack_san.sh"

MODE=memcheck
if [[ ${1:-} == --rss ]]; then
    MODE=rss
    shift
fi
N=${1:-$([[ $MODE == rss ]] && echo 100000 || echo 10000)}
[[ $N =~ ^[1-9][0-9]{0,7}$ && $# -le 1 ]] || {
    printf 'usage: %s [--rss] [N]\n' "$0" >&2
    exit 2
}
WARMUP=1000

TMP=$(mktemp -d "${TMPDIR:-/tmp}/asyncexec-vgworker.XXXXXX")
chmod 0711 "$TMP"          # nginx's workers (user nobody) must reach the app socket
stack_init "$ROOT" "$TMP" valgrind-worker
BUILD=${ASYNCEXEC_BUILD_DIR:-$TMP/build}
VG_DIR=$TMP/valgrind
DRIVER_PID=

# cleanup — on every exit: stop the driver and the stack, remove the directory.
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [[ -n $DRIVER_PID ]] && stack_pid_alive "$DRIVER_PID"; then
        stack_kill_wait "$DRIVER_PID" bench_mixed 5 || true
    fi
    ((rc == 0)) || stack_tail_logs 30
    stack_finish "$rc" "some processes did not stop"
}
stack_traps cleanup

# drive COUNT SECONDS — COUNT mixed requests through nginx, killed after SECONDS.
drive() {
    local rc=0
    stack_log "driving $1 mixed requests (bound ${2}s)"
    timeout -s TERM "$2" "$BUILD/tests/bench/bench_mixed" --port "$HTTP_PORT" \
        --route "$ROUTE" --requests "$1" &
    DRIVER_PID=$!
    wait "$DRIVER_PID" || rc=$?
    DRIVER_PID=
    ((rc != 124)) || stack_log "bench_mixed did not finish within ${2}s"
    return "$rc"
}

# build BUILD_TYPE — configure and build only what this script runs (the test programs
# are not needed here).
build() {
    local bin
    stack_log "building ($1) in $BUILD"
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE="$1" -DASYNCEXEC_WERROR=ON \
        -DASYNCEXEC_ASAN=OFF -DASYNCEXEC_UBSAN=OFF >/dev/null || stack_die "cmake configure failed"
    cmake --build "$BUILD" -j2 --target asyncexec-fcgi asyncexec-admin bench_mixed ||
        stack_die "build failed"
    for bin in asyncexec-fcgi asyncexec-admin tests/bench/bench_mixed; do
        [[ -x $BUILD/$bin ]] || stack_die "build did not produce $BUILD/$bin"
    done
}

# start_stack BUILD_TYPE — build, MariaDB, config (one worker), schema, keys, app, nginx.
start_stack() {
    local db_port admin
    stack_install_packages
    build "$1"
    db_port=$(stack_free_port)
    STACK_WORKERS=1 stack_db_up "$db_port" "$BUILD/asyncexec-admin"
    admin=("$BUILD/asyncexec-admin" --config "$STACK_CONF")
    ROUTE=vg/mixed/run
    "${admin[@]}" route add "$ROUTE" >/dev/null || stack_die "route add failed"
    BENCH_CONSUMER_KEY=$("${admin[@]}" key create --tenant vg) || stack_die "key create failed"
    BENCH_BACKEND_KEY=$("${admin[@]}" backend-key create --route "$ROUTE") ||
        stack_die "backend-key create failed"
    export BENCH_CONSUMER_KEY BENCH_BACKEND_KEY
    stack_app_start "$BUILD/asyncexec-fcgi"
    HTTP_PORT=$(stack_free_port)
    stack_nginx_start "$HTTP_PORT"
}

# worker_pid — the pid of the master's only child.
worker_pid() {
    local master kids
    master=$(stack_app_pid) || return 1
    kids=$(ps -o pid= --ppid "$master") || return 1
    kids=${kids//[[:space:]]/}
    [[ $kids =~ ^[0-9]+$ ]] || return 1
    printf '%s\n' "$kids"
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# run_rss — RSS of the worker after the warm-up and after N more requests.
run_rss() {
    local pid start before after
    start_stack Release
    pid=$(worker_pid) || stack_die "cannot find the worker's pid"
    start=$(rss_kb "$pid")
    drive "$WARMUP" 120 || stack_die "warm-up requests failed"
    [[ $(worker_pid) == "$pid" ]] || stack_die "worker $pid was replaced during the warm-up"
    before=$(rss_kb "$pid")
    drive "$N" 1800 || stack_die "requests failed"
    [[ $(worker_pid) == "$pid" ]] || stack_die "worker $pid was replaced during the run"
    after=$(rss_kb "$pid")
    stack_log "worker $pid VmRSS: $start kB at start, $before kB after $WARMUP requests, $after kB after $N more ($((after - before)) kB)"
}

# vg_report — the summary of each valgrind log, master and worker; false on any error.
vg_report() {
    local f pid parent line errs=0 logs=() master
    shopt -s nullglob
    logs=("$VG_DIR"/vg.*)
    shopt -u nullglob
    ((${#logs[@]} == 2)) || { stack_log "expected 2 valgrind logs (master, worker), found ${#logs[@]}"; errs=1; }
    master=$(cat "$STACK_APP_PIDFILE.last")
    for f in "${logs[@]}"; do
        pid=${f##*vg.}
        line=$(stack_vg_summary "$f")
        [[ $pid == "$master" ]] && parent=master || parent=worker
        stack_log "valgrind $parent $line"
        grep -q 'ERROR SUMMARY: 0 errors' "$f" || errs=1
        grep -Eq 'definitely lost: [1-9]|indirectly lost: [1-9]' "$f" && errs=1
    done
    stack_vg_check "${logs[@]}" || errs=1
    ((errs == 0))
}

# run_memcheck — N requests against the worker under valgrind, then its report.
run_memcheck() {
    local rc=0 t0=$SECONDS
    STACK_PACKAGES+=(valgrind)
    stack_vg_wrapper "$VG_DIR"
    STACK_APP_START_TIMEOUT=180
    STACK_APP_STOP_TIMEOUT=180
    STACK_NGINX_START_TIMEOUT=180
    start_stack Debug
    # About 2 ms per request under valgrind here; the bound leaves ten times that.
    drive "$N" $((N / 50 + 120)) || rc=1
    stack_nginx_stop || true
    stack_app_pid >"$STACK_APP_PIDFILE.last" || true
    stack_app_stop || rc=1
    if grep -q 'replacing it' "$STACK_APP_LOG"; then
        stack_log "a worker died and was replaced:"
        grep 'replacing it' "$STACK_APP_LOG" >&2
        rc=1
    fi
    vg_report || rc=1
    stack_log "memcheck of $N requests took $((SECONDS - t0)) s"
    ((rc == 0)) && stack_log "no valgrind error, nothing lost" || stack_log "FAILED"
    return "$rc"
}

stack_log "state in $TMP"
if [[ $MODE == rss ]]; then run_rss; else run_memcheck; fi
