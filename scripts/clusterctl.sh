#!/usr/bin/env bash
# scripts/clusterctl.sh — controls a running loopback cluster (scripts/lib/cluster.sh):
#
#   scripts/clusterctl.sh [--state DIR] node-kill|node-start|node-state|node-sql N
#   scripts/clusterctl.sh [--state DIR] master-kill|master-start|master-reload A|B
#
#   node-kill N       SIGKILL node N (1..3); returns once its pid is gone
#   node-start N      start node N (a join, or a bootstrap when no node runs); returns once
#                     it is Synced; prints "node N synced in S s by IST|SST|none"
#   node-state N      prints wsrep_local_state_comment and wsrep_cluster_status, or "down"
#   node-sql N        runs the SQL on stdin as root on node N
#   master-kill A|B   SIGKILL that app host's asyncexec-fcgi master (returns once it is gone)
#   master-start A|B  start it again (its configuration rewritten)
#   master-reload A|B SIGHUP to that host's master (a reload: the writer back to node 1)
#
# DIR is the cluster's state: --state, else ASYNCEXEC_CLUSTER_STATE, else .local/cluster
# (scripts/run-cluster.sh's). Its base port is DIR/base and the build and settings the
# configurations were written with DIR/clusterctl.env (both written when the cluster
# starts: cluster_start, cluster_write_ctl). scripts/test-cluster.sh exports this script
# as ASYNCEXEC_TEST_CLUSTERCTL. Exit status: 0 done, 1 failed, 2 usage.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/stack.sh
source "$ROOT/scripts/lib/stack.sh"
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$ROOT/scripts/lib/cluster.sh"

usage() {
    printf 'usage: %s [--state DIR] node-kill|node-start|node-state|node-sql N | master-kill|master-start|master-reload A|B\n' "$0" >&2
    exit 2
}

node_arg() { [[ ${1:-} =~ ^[123]$ ]] || { printf 'clusterctl: node 1, 2 or 3\n' >&2; exit 2; }; }

host_arg() {
    case ${1:-} in A | a) printf 'a\n' ;; B | b) printf 'b\n' ;;
        *) printf 'clusterctl: host A or B\n' >&2; exit 2 ;; esac
}

# load_settings STATE — BUILD, STACK_CACHE_TTL and STACK_WORKERS from STATE/clusterctl.env.
load_settings() {
    local key value
    [[ -r $1/clusterctl.env ]] || { printf 'clusterctl: no cluster in %s (no clusterctl.env)\n' "$1" >&2; exit 1; }
    while IFS='=' read -r key value; do
        case $key in
            build) BUILD=$value ;;
            cache_ttl) STACK_CACHE_TTL=$value ;;
            workers) STACK_WORKERS=$value ;;
        esac
    done <"$1/clusterctl.env"
}

# node_start N — join node N, or bootstrap it when no other node is synced.
node_start() {
    local mode=join others=0 n t0
    for n in "${CLUSTER_NODES[@]}"; do [[ $n != "$1" ]] && cluster_node_synced "$n" && others=1; done
    if ((others == 0)); then
        mode=bootstrap
        [[ $(cluster_bootstrap_node) == "$1" ]] || { printf 'clusterctl: no node runs and node %s is not the one to bootstrap from\n' "$1" >&2; exit 1; }
    fi
    t0=$(cluster_now)
    cluster_node_start "$1" "$mode"
    printf 'node %s synced in %s s by %s\n' "$1" "$(cluster_since "$t0")" "$CLUSTER_TRANSFER"
}

main() {
    local state=${ASYNCEXEC_CLUSTER_STATE:-$ROOT/.local/cluster} pid
    if [[ ${1:-} == --state ]]; then
        (($# >= 2)) || usage
        state=$2
        shift 2
    fi
    load_settings "$state"
    [[ -s $state/base ]] || { printf 'clusterctl: no base port in %s\n' "$state" >&2; exit 1; }
    cluster_init "$ROOT" "$state" clusterctl "$(cat "$state/base")"
    case ${1:-} in
        node-kill) node_arg "${2:-}"; cluster_node_kill "$2" ;;
        node-start) node_arg "${2:-}"; node_start "$2" ;;
        node-state) node_arg "${2:-}"; cluster_node_status "$2" || true ;;
        node-sql) node_arg "${2:-}"; cluster_node "$2"; stack_db_sql ;;
        master-kill) cluster_master_kill "$(host_arg "${2:-}")" ;;
        master-start) cluster_app_start "$(host_arg "${2:-}")" "$BUILD/asyncexec-fcgi" ;;
        master-reload)
            cluster_host "$(host_arg "${2:-}")"
            pid=$(stack_app_pid) || { printf 'clusterctl: that master is not running\n' >&2; exit 1; }
            kill -s HUP "$pid" ;;
        *) usage ;;
    esac
}

main "$@"
