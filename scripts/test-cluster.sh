#!/usr/bin/env bash
# scripts/test-cluster.sh — build with warnings as errors, bring up a throwaway cluster
# stack (three MariaDB Galera nodes, app hosts A and B, nginx over both: scripts/lib/
# cluster.sh) in a fresh temporary directory and run the tests labelled cluster against it.
#
# Usage: scripts/test-cluster.sh [CTEST_ARGS...]   (ctest -L cluster is always given;
#        e.g. scripts/test-cluster.sh -R cluster_http_submit)
#
# Ports: a block of 45 (cluster.sh's layout) in 10000..19999, reserved by a directory
# TMPDIR/asyncexec-cluster-ports.BASE for the run, so that two runs, scripts/test.sh
# (20000..32767) and scripts/run-cluster.sh (3400..3444, 8080) never share a port.
#
# Environment: ASYNCEXEC_BUILD_DIR (default: inside the temporary directory),
# ASYNCEXEC_BUILD_TYPE (default Debug), ASYNCEXEC_KEEP=1 (keep the temporary directory
# when tests fail). Exit status: ctest's, or 1 if the set-up fails.
#
# Exported for the tests: ASYNCEXEC_TEST_HTTP (nginx, round robin over both hosts),
# ASYNCEXEC_TEST_HTTP_A / _B (nginx ports reaching only host A / only host B),
# ASYNCEXEC_TEST_CONFIG / _CONFIG_B (host A's / host B's configuration, db_hosts over the
# three nodes), ASYNCEXEC_TEST_CLUSTERCTL (node-kill|node-start|node-state|node-sql N,
# master-kill|master-start A|B), ASYNCEXEC_TEST_LOGDIR (the state directory: app-a.log,
# app-b.log, nodeN/mysqld.err, nginx/), ASYNCEXEC_TEST_RECORD (the exchanges, for
# cluster_http_openapi), ASYNCEXEC_TEST_METRICS / _METRICS_B (host A's / host B's metrics).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/stack.sh
source "$ROOT/scripts/lib/stack.sh"
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$ROOT/scripts/lib/cluster.sh"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/asyncexec-cluster-test.XXXXXX")
# mktemp makes it 0700; nginx's workers (user nobody) must reach the app sockets inside.
chmod 0711 "$TMP"
BUILD=${ASYNCEXEC_BUILD_DIR:-$TMP/build}
PORTS_LOCK=

stack_init "$ROOT" "$TMP" test-cluster
BASE=$(cluster_reserve_base)
PORTS_LOCK=${TMPDIR:-/tmp}/asyncexec-cluster-ports.$BASE
cluster_init "$ROOT" "$TMP" test-cluster "$BASE"

# show_logs — the end of every log of the stack.
show_logs() {
    local f
    for f in "$TMP"/app-a.log "$TMP"/app-b.log "$STACK_NGINX_ERR" "$TMP"/node[123]/mysqld.err; do
        stack_tail "$f" 60
    done
}

# cleanup — on every exit: stop the cluster, show logs on failure, remove the directory
# (kept with ASYNCEXEC_KEEP=1 on failure) and the port reservation.
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    stack_stop_ctest
    if ((rc != 0)); then
        stack_log "FAILED (status $rc); logs of the cluster stack:"
        show_logs
    fi
    cluster_stop_all || stack_warn "some cluster processes did not stop"
    [[ -z $PORTS_LOCK ]] || rmdir "$PORTS_LOCK" 2>/dev/null || true
    if ((rc != 0)) && [[ ${ASYNCEXEC_KEEP:-0} == 1 ]]; then
        stack_log "kept $TMP"
    else
        rm -rf "$TMP"
    fi
    exit "$rc"
}
stack_traps cleanup

main() {
    local rc=0 t0
    t0=$(cluster_now)
    stack_log "state in $TMP, ports $BASE..$((BASE + 44))"
    cluster_install_packages
    stack_build "$BUILD" "${ASYNCEXEC_BUILD_TYPE:-Debug}" -DASYNCEXEC_WERROR=ON \
        -DASYNCEXEC_ASAN=OFF -DASYNCEXEC_UBSAN=OFF
    # A short cache TTL keeps the revocation tests (which wait for it) quick.
    STACK_CACHE_TTL=1
    cluster_start "$BUILD" $((BASE + 40))
    cluster_write_ctl "$BUILD"

    export ASYNCEXEC_TEST_HTTP=127.0.0.1:$((BASE + 40))
    export ASYNCEXEC_TEST_HTTP_A=127.0.0.1:$CLUSTER_HTTP_A
    export ASYNCEXEC_TEST_HTTP_B=127.0.0.1:$CLUSTER_HTTP_B
    export ASYNCEXEC_TEST_CONFIG=$TMP/app-a.conf
    export ASYNCEXEC_TEST_CONFIG_B=$TMP/app-b.conf
    export ASYNCEXEC_TEST_CLUSTERCTL=$ROOT/scripts/clusterctl.sh
    export ASYNCEXEC_CLUSTER_STATE=$TMP
    export ASYNCEXEC_TEST_LOGDIR=$TMP
    export ASYNCEXEC_TEST_RECORD=$TMP/http-record
    export ASYNCEXEC_TEST_METRICS=127.0.0.1:$CLUSTER_METRICS_A
    export ASYNCEXEC_TEST_METRICS_B=127.0.0.1:$CLUSTER_METRICS_B
    # asyncexec-expire in the tests that run it (http_scale) writes through node 3 first:
    # a third connection, on another node than the hosts' writer, so that the exactly-once
    # checks also hold for writes that certify against each other across nodes.
    sed -e "s|^db_hosts = .*|db_hosts = 127.0.0.1:$((BASE + 3)), 127.0.0.1:$((BASE + 1)), 127.0.0.1:$((BASE + 2))|" \
        -e '/^db_pin_file = /d' "$TMP/app-a.conf" >"$TMP/expire.conf"
    grep -q "^db_hosts = 127.0.0.1:$((BASE + 3))," "$TMP/expire.conf" ||
        stack_die "could not write $TMP/expire.conf"
    export ASYNCEXEC_TEST_EXPIRE_CONFIG=$TMP/expire.conf
    mkdir -p "$ASYNCEXEC_TEST_RECORD"
    stack_run_ctest "$BUILD" -L cluster "$@" || rc=$?
    if ((rc == 0)); then stack_log "all cluster tests passed"; fi
    stack_log "wall time $(cluster_since "$t0")s (cluster start ${CLUSTER_SECONDS}s: $CLUSTER_TIMES)"
    return "$rc"
}

main "$@"
