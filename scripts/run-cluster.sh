#!/usr/bin/env bash
# scripts/run-cluster.sh — run the scale-out stack locally: three MariaDB Galera nodes,
# two app hosts (A and B: one asyncexec-fcgi master each, with db_hosts over the three
# nodes) and one nginx balancing over both, all on loopback, all state under
# ROOT/.local/cluster/ (never the system services). Helpers: scripts/lib/cluster.sh.
#
#   scripts/run-cluster.sh [start]  install missing packages (root), build, start what is not
#                                   running (a new cluster: bootstrap node 1, join 2 and 3
#                                   by SST; a stopped one: from the node safe to bootstrap),
#                                   provision a demo route and keys, print curl examples and
#                                   how long the start took. Idempotent.
#   scripts/run-cluster.sh stop     stop what it started (nginx, hosts, nodes 3, 2, 1), by pid.
#   scripts/run-cluster.sh status   each node's wsrep state, each master, nginx; exit status
#                                   1 unless all of them run (and every node is Synced).
#
# Ports: nodes 127.0.0.1:3401..3403 (Galera 3411.., IST 3421.., SST 3431..), nginx
# ASYNCEXEC_PORT (default 8080; a free port if that is taken) over both hosts, 3441 host A
# only, 3442 host B only, metrics 3443 (A) and 3444 (B). ASYNCEXEC_CLUSTER_BASE moves the
# 34xx block. ASYNCEXEC_BUILD_TYPE (default RelWithDebInfo).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/stack.sh
source "$ROOT/scripts/lib/stack.sh"
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$ROOT/scripts/lib/cluster.sh"

STATE=$ROOT/.local/cluster
BUILD=$ROOT/.local/build
KEYS=$STATE/keys.env
ROUTE=demo/echo/run
BASE=${ASYNCEXEC_CLUSTER_BASE:-3400}
[[ -s $STATE/base ]] && BASE=$(cat "$STATE/base")
cluster_init "$ROOT" "$STATE" run-cluster "$BASE"

# http_port — nginx's port if it runs, else ASYNCEXEC_PORT (8080) or, if taken, a free one.
http_port() {
    local p=${ASYNCEXEC_PORT:-8080}
    if stack_nginx_pid >/dev/null && [[ -s $STACK_NGINX_DIR/port ]]; then
        cat "$STACK_NGINX_DIR/port"
    elif stack_port_in_use "$p"; then
        stack_free_port
    else
        printf '%s\n' "$p"
    fi
}

cmd_start() {
    local port
    cluster_install_packages
    mkdir -p "$STATE"
    chmod 0711 "$STATE"
    stack_build "$BUILD" "${ASYNCEXEC_BUILD_TYPE:-RelWithDebInfo}"
    port=$(http_port)
    cluster_start "$BUILD" "$port"
    # A new cluster voids keys created in an earlier one.
    if ((CLUSTER_CREATED)); then rm -f "$KEYS"; fi
    cluster_host a
    stack_provision_keys "$BUILD/asyncexec-admin" "$KEYS" "$ROUTE" run-cluster
    cluster_write_ctl "$BUILD"
    print_summary "$port"
}

# print_summary PORT — topology, files, timings and the curl walk-through.
print_summary() {
    local port=$1 n
    cat <<EOF

asyncexec cluster runs at http://127.0.0.1:$port (nginx, round robin over hosts A and B)
  host A:  http://127.0.0.1:$CLUSTER_HTTP_A  config $STATE/app-a.conf  log $STATE/app-a.log
  host B:  http://127.0.0.1:$CLUSTER_HTTP_B  config $STATE/app-b.conf  log $STATE/app-b.log
  metrics: http://127.0.0.1:$CLUSTER_METRICS_A/metrics (A), http://127.0.0.1:$CLUSTER_METRICS_B/metrics (B)
EOF
    for n in "${CLUSTER_NODES[@]}"; do
        printf '  node %s:  127.0.0.1:%s  %s  (log %s/node%s/mysqld.err)\n' "$n" \
            $((CLUSTER_BASE + n)) "$(cluster_node_status "$n")" "$STATE" "$n"
    done
    cat <<EOF
  started: ${CLUSTER_TIMES:-nodes already running}; everything up in ${CLUSTER_SECONDS}s
  admin:   $BUILD/asyncexec-admin --config $STATE/app-a.conf stats
  control: $ROOT/scripts/clusterctl.sh node-kill|node-start|node-state|node-sql N, master-kill|master-start|master-reload A|B
  keys:    $KEYS
  stop:    $ROOT/scripts/run-cluster.sh stop

EOF
    stack_print_try "http://127.0.0.1:$port" "$KEYS"
}

cmd_stop() {
    cluster_stop_all || stack_die "some processes did not stop (see the messages above)"
}

case ${1:-start} in
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cluster_status ;;
    *) printf 'usage: %s [start|stop|status]\n' "$0" >&2; exit 2 ;;
esac
