#!/usr/bin/env bash
# scripts/run-local.sh — run asyncexec locally: private MariaDB, asyncexec-fcgi and nginx,
# all state under ROOT/.local/ (never the system services); the FastCGI socket (0660,
# group www-data when run as root) and nginx's temporary files too, unless nginx's workers
# cannot enter ROOT (a clone in /root): then in /run/asyncexec-local/HASH.
#
#   scripts/run-local.sh [start]   install missing packages (root), build, start, provision a
#                                  demo route and keys, print curl examples. Idempotent.
#   scripts/run-local.sh stop      stop what it started (nginx, app, MariaDB), by pid.
#   scripts/run-local.sh status    show what runs.
#
# Environment: ASYNCEXEC_PORT (nginx, default 8080), ASYNCEXEC_DB_PORT (MariaDB, default 3307),
# ASYNCEXEC_BUILD_TYPE (default RelWithDebInfo).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/stack.sh
source "$ROOT/scripts/lib/stack.sh"

STATE=$ROOT/.local
BUILD=$STATE/build
KEYS=$STATE/keys.env
ROUTE=demo/echo/run
stack_init "$ROOT" "$STATE" run-local
# A clone nginx's workers cannot enter (in /root): the socket and nginx's temporary files
# go to /run/asyncexec-local/HASH instead; the rest stays in .local.
stack_run_dir

# all_running — true when MariaDB, the application and nginx all run.
all_running() {
    stack_db_pid >/dev/null && stack_app_pid >/dev/null && stack_nginx_pid >/dev/null
}

# http_port — the port nginx runs on (if it runs), else the requested one.
http_port() {
    if stack_nginx_pid >/dev/null && [[ -s $STACK_NGINX_DIR/port ]]; then
        cat "$STACK_NGINX_DIR/port"
    else
        printf '%s\n' "${ASYNCEXEC_PORT:-8080}"
    fi
}

# start_stack — bring up whatever is not running yet.
start_stack() {
    local db_port=${ASYNCEXEC_DB_PORT:-3307}
    stack_install_packages
    mkdir -p "$STATE"
    stack_build "$BUILD" "${ASYNCEXEC_BUILD_TYPE:-RelWithDebInfo}"
    if stack_db_pid >/dev/null && [[ -s $STACK_DB_DIR/port ]]; then
        db_port=$(cat "$STACK_DB_DIR/port")
    fi
    stack_db_up "$db_port" "$BUILD/asyncexec-admin"
    # A fresh data directory voids keys created in an earlier one.
    if ((STACK_DB_CREATED)); then rm -f "$KEYS"; fi
    stack_app_start "$BUILD/asyncexec-fcgi"
    stack_nginx_start "$(http_port)"
    stack_provision_keys "$BUILD/asyncexec-admin" "$KEYS" "$ROUTE" run-local
}

# print_usage_examples — config, admin usage and curl walk-through with the real keys.
print_usage_examples() {
    local base
    base=http://127.0.0.1:$(http_port)
    cat <<EOF

asyncexec runs at $base
  config:  $STACK_CONF
  admin:   $BUILD/asyncexec-admin --config $STACK_CONF route list
           $BUILD/asyncexec-admin --config $STACK_CONF key create --tenant T [--label L]
           $BUILD/asyncexec-admin --config $STACK_CONF backend-key create --route ENV/SVC/OP
           $BUILD/asyncexec-admin --config $STACK_CONF stats
  metrics: http://127.0.0.1:$(cat "$STACK_NGINX_DIR/metrics-port" 2>/dev/null)/metrics (loopback only)
  logs:    $STACK_APP_LOG  $STACK_NGINX_ERR  $STACK_DB_ERR
  socket:  $STACK_APP_SOCK (mode 0660${STACK_NGINX_USER:+, group $STACK_NGINX_USER})
  keys:    $KEYS
  stop:    $ROOT/scripts/run-local.sh stop

EOF
    stack_print_try "$base" "$KEYS"
}

cmd_start() {
    if all_running && [[ -s $KEYS ]]; then
        stack_log "already running (state in $STATE)"
    else
        start_stack
    fi
    print_usage_examples
}

cmd_stop() {
    stack_stop_all || stack_die "some processes did not stop (see the messages above)"
    if [[ $STACK_RUN != "$STACK_STATE" ]]; then rm -rf "$STACK_RUN"; fi
}

cmd_status() {
    local pid
    if pid=$(stack_db_pid); then stack_log "MariaDB running (pid $pid)"; else stack_log "MariaDB not running"; fi
    if pid=$(stack_app_pid); then stack_log "asyncexec-fcgi running (pid $pid)"; else stack_log "asyncexec-fcgi not running"; fi
    if pid=$(stack_nginx_pid); then stack_log "nginx running (pid $pid) on port $(http_port)"; else stack_log "nginx not running"; fi
}

case ${1:-start} in
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    *) printf 'usage: %s [start|stop|status]\n' "$0" >&2; exit 2 ;;
esac
