#!/usr/bin/env bash
# scripts/test-cluster-upgrade.sh — a Galera cluster of Debian 12's MariaDB (10.11) moved to
# Debian 13's (11.8) one node at a time, as asyncexec-ops(7), SCALE-OUT, "Debian 12 to 13
# on a cluster" says, with asyncexec's app hosts serving through it.
#
#  1. two roots (scripts/lib/buildroot.sh: bookworm and trixie) with mariadb-server,
#     galera-4, mariadb-backup, rsync and socat; /proc, /sys, /dev and the state directory
#     bound into each; every node's mariadbd runs from a root by chroot
#     (CLUSTER_NODE_ROOT of scripts/lib/cluster.sh: the host's processes, so pid files
#     and the SST script's check of its parent hold);
#  2. the cluster stack of scripts/lib/cluster.sh on the bookworm root's MariaDB: three
#     nodes, app hosts A and B (this tree's build, db_hosts over the nodes), nginx; a
#     route and keys;
#  3. a client (scripts/lib/cluster_upgrade_load.py) runs life cycles through nginx
#     (submit, claim, complete, poll) the whole time;
#  4. nodes 3, 2 and 1 (the writer last), each: stopped (SIGTERM: it leaves the cluster),
#     started from the trixie root on the same data directory, which it rejoins by IST;
#     then mariadb-upgrade as Debian's mariadb.service runs it (/etc/mysql/debian-start:
#     --version-check --silent); checks: every node Synced in a cluster of 3, the node
#     on 11.8, the client's life cycles going on;
#  5. both app hosts reloaded (SIGHUP, as systemctl reload): their writer is node 1 again;
#  6. checks: every answer the client got was 2xx or a 503 problem+json with Retry-After;
#     every acknowledged submit polls 200 and every acknowledged complete polls
#     completed; the executions' count and checksum the same on every node.
#
# Run as root (debootstrap, systemd-nspawn for apt in the roots, chroot, mount). Ports: a
# block of cluster_reserve_base. Ends with "N passed, N failed"; exit 0 only when nothing
# failed. Everything is stopped, unmounted and removed at the end, whatever happened
# (trap; processes by pid).
#   ASYNCEXEC_BUILD_DIR      the build (default: in the temporary directory)
#   ASYNCEXEC_KEEP=1         keep the temporary directory after a failure
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/stack.sh
source "$ROOT/scripts/lib/stack.sh"
# shellcheck source-path=SCRIPTDIR source=lib/cluster.sh
source "$ROOT/scripts/lib/cluster.sh"
# shellcheck source-path=SCRIPTDIR source=lib/buildroot.sh
source "$ROOT/scripts/lib/buildroot.sh"
buildroot_init test-cluster-upgrade

OLD=bookworm
NEW=trixie
PACKAGES="mariadb-server mariadb-client galera-4 mariadb-backup rsync socat"
ROUTE=demo/echo/run
TMP=$(mktemp -d "${TMPDIR:-/tmp}/asyncexec-cluster-upgrade.XXXXXX")
# nginx's workers (user nobody) must reach the app sockets inside.
chmod 0711 "$TMP"
STATE=$TMP/state
BUILD=${ASYNCEXEC_BUILD_DIR:-$TMP/build}
LOAD=$TMP/load.jsonl
STOP=$TMP/load.stop
PORTS_LOCK=
MOUNTS=()
LOADER=
pass=0
fail=0
T_START=$SECONDS

say() { printf '[%4ds] %s\n' "$((SECONDS - T_START))" "$*"; }
ok() { pass=$((pass + 1)); say "ok   $*"; }
bad() { fail=$((fail + 1)); say "FAIL $*"; }
check() { local n=$1; shift; if "$@"; then ok "$n"; else bad "$n"; fi; }

# sql N: the SQL on stdin as root on node N, its rows tab-separated.
sql() { mariadb --no-defaults --user=root --socket="$STATE/node$1/mysqld.sock" -N --batch; }
# status N VAR: node N's global status VAR.
status() { echo "SHOW GLOBAL STATUS LIKE '$2'" | sql "$1" 2>/dev/null | cut -f 2; }
# all_synced: every node Synced, Primary, in a cluster of 3.
all_synced() {
    local n
    for n in "${CLUSTER_NODES[@]}"; do
        [[ $(status "$n" wsrep_local_state_comment) == Synced &&
            $(status "$n" wsrep_cluster_status) == Primary &&
            $(status "$n" wsrep_cluster_size) == 3 ]] || return 1
    done
}
# cycles: the client's life cycles whose poll answered 200 so far.
cycles() { python3 "$ROOT/scripts/lib/cluster_upgrade_load.py" count "$LOAD" 2>/dev/null || echo 0; }
# more N: the client completes N more life cycles (within 60 s).
more() {
    local want=$(($(cycles) + $1))
    stack_wait 60 eval '[ "$(cycles)" -ge '"$want"' ]'
}
# writer H: the node host H's /readyz/detail names.
writer() {
    local port=$CLUSTER_METRICS_A
    [[ $1 == b ]] && port=$CLUSTER_METRICS_B
    curl -s --max-time 5 "http://127.0.0.1:$port/readyz/detail" |
        sed -n 's/.*"dbNode":"\([^"]*\)".*/\1/p'
}

# bind SRC DIR: SRC bound on DIR (made), recorded for the cleanup.
bind() {
    mkdir -p "$2" && mount --bind "$1" "$2" || stack_die "mount --bind $1 $2"
    MOUNTS+=("$2")
}

# make_root SUITE: a root of SUITE in $TMP/root-SUITE with MariaDB and Galera, the host's
# /etc/hosts, and its /proc, /sys, /dev and $STATE bound into it.
make_root() {
    local r=$TMP/root-$1
    say "root $1: debootstrap cache, apt-get install $PACKAGES"
    buildroot_make "$1" "$r"
    buildroot_run "$1" "$r" -- sh -c "apt-get update -qq && apt-get install -y -qq \
        --no-install-recommends $PACKAGES" >"$TMP/apt-$1.log" 2>&1 ||
        { tail -n 20 "$TMP/apt-$1.log"; stack_die "apt-get install in the $1 root"; }
    # mariadb-install-db resolves this host's name
    cp /etc/hosts "$r/etc/hosts" || stack_die "copy /etc/hosts into the $1 root"
    bind /proc "$r/proc"
    bind /sys "$r/sys"
    bind /dev "$r/dev"
    bind "$STATE" "$r$STATE"
    say "root $1: $(chroot "$r" mariadbd --version | sed 's/ for .*//')"
}

cleanup() {
    local rc=$? i
    trap - EXIT INT TERM
    touch "$STOP"
    [[ -n $LOADER ]] && { kill "$LOADER" 2>/dev/null; wait "$LOADER" 2>/dev/null; }
    if ((fail > 0 || rc != 0)); then
        for i in "$STATE"/app-a.log "$STATE"/app-b.log "$STATE"/node[123]/mysqld.err; do
            stack_tail "$i" 30
        done
    fi
    [[ -n ${CLUSTER_BASE:-} ]] && { cluster_stop_all || stack_warn "some cluster processes did not stop"; }
    buildroot_stop || true
    for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
        umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" 2>/dev/null ||
            stack_warn "could not unmount ${MOUNTS[i]}"
    done
    [[ -z $PORTS_LOCK ]] || rmdir "$PORTS_LOCK" 2>/dev/null || true
    ((rc == 0 && fail > 0)) && rc=1
    ((rc != 0 && pass + fail == 0)) && fail=1
    if ((rc != 0)) && [[ ${ASYNCEXEC_KEEP:-0} == 1 ]]; then
        say "kept $TMP"
    else
        buildroot_remove "$TMP/root-$OLD"
        buildroot_remove "$TMP/root-$NEW"
        rm -rf --one-file-system "$TMP"
    fi
    say "total $((SECONDS - T_START)) s"
    printf '%d passed, %d failed\n' "$pass" "$fail"
    exit "$rc"
}

# upgrade_node N: node N stopped, started from the new root, mariadb-upgrade run.
upgrade_node() {
    local n=$1 rc v t
    cluster_node_stop "$n" || stack_die "node $n did not stop"
    CLUSTER_NODE_ROOT[n]=$TMP/root-$NEW
    t=$(cluster_now)
    cluster_node_start "$n"
    t=$(cluster_since "$t")
    v=$(echo 'SELECT VERSION()' | sql "$n")
    check "node $n: started from the $NEW root ($v), Synced again by $CLUSTER_TRANSFER in $t s" \
        eval '[[ $v == 11.8.* && $CLUSTER_TRANSFER == IST ]]'
    chroot "$TMP/root-$NEW" mariadb-upgrade --no-defaults --user=root \
        --socket="$STATE/node$n/mysqld.sock" --version-check --silent >"$TMP/upgrade-$n.log" 2>&1
    rc=$?
    sed 's/^/    /' "$TMP/upgrade-$n.log" | tail -n 5
    check "node $n: mariadb-upgrade --version-check --silent (as debian-start runs it): exit 0" \
        test "$rc" -eq 0
    check "node $n: every node Synced and Primary in a cluster of 3; the client went on (20 life cycles)" \
        eval 'stack_wait 60 all_synced && more 20'
}

main() {
    local n h sums
    [[ $(id -u) -eq 0 ]] || stack_die "run as root (debootstrap, chroot, mount)"
    stack_init "$ROOT" "$STATE" test-cluster-upgrade
    BASE=$(cluster_reserve_base)
    PORTS_LOCK=${TMPDIR:-/tmp}/asyncexec-cluster-ports.$BASE
    cluster_init "$ROOT" "$STATE" test-cluster-upgrade "$BASE"
    say "state in $STATE, ports $BASE..$((BASE + 44))"
    mkdir -p "$STATE"
    cluster_install_packages
    buildroot_host_tools
    stack_build "$BUILD" "${ASYNCEXEC_BUILD_TYPE:-RelWithDebInfo}" | tail -n 3
    make_root "$OLD"
    make_root "$NEW"
    check "the $NEW root's mariadb.service runs /etc/mysql/debian-start, which runs mariadb-upgrade --version-check" \
        eval 'grep -q "^ExecStartPost=.*/etc/mysql/debian-start" "$TMP/root-$NEW/usr/lib/systemd/system/mariadb.service" &&
        grep -q "^MYUPGRADE=.*mariadb-upgrade .*--version-check" "$TMP/root-$NEW/etc/mysql/debian-start"'
    for n in "${CLUSTER_NODES[@]}"; do CLUSTER_NODE_ROOT[n]=$TMP/root-$OLD; done

    # (a stack_die inside exits: no redirection here, or the cleanup's report would follow it)
    cluster_start "$BUILD" $((BASE + 40))
    cluster_write_ctl "$BUILD"
    check "three nodes of $OLD's MariaDB ($(echo 'SELECT VERSION()' | sql 1)), Synced; hosts A and B on node 1" \
        eval 'all_synced && [ "$(writer a) $(writer b)" = "127.0.0.1:$((BASE + 1)) 127.0.0.1:$((BASE + 1))" ]'
    cluster_host a
    "$BUILD/asyncexec-admin" --config "$STACK_CONF" route add "$ROUTE" >/dev/null &&
        ASYNCEXEC_CONSUMER_KEY=$("$BUILD/asyncexec-admin" --config "$STACK_CONF" key create --tenant demo) &&
        ASYNCEXEC_BACKEND_KEY=$("$BUILD/asyncexec-admin" --config "$STACK_CONF" backend-key create --route "$ROUTE") ||
        stack_die "asyncexec-admin route add, key create, backend-key create"
    export ASYNCEXEC_CONSUMER_KEY ASYNCEXEC_BACKEND_KEY

    python3 "$ROOT/scripts/lib/cluster_upgrade_load.py" run "127.0.0.1:$((BASE + 40))" "$ROUTE" \
        "$LOAD" "$STOP" &
    LOADER=$!
    check "the client runs life cycles through nginx (20)" more 20

    for n in 3 2 1; do upgrade_node "$n"; done
    say "writers before the reload: A $(writer a), B $(writer b)"
    for h in a b; do "$ROOT/scripts/clusterctl.sh" --state "$STATE" master-reload "$h" >/dev/null; done
    check "both app hosts reloaded: their writer is node 1 again" \
        stack_wait 30 eval '[ "$(writer a) $(writer b)" = "127.0.0.1:$((BASE + 1)) 127.0.0.1:$((BASE + 1))" ]'
    check "the client went on after the reload (20 life cycles)" more 20

    touch "$STOP"
    wait "$LOADER"
    LOADER=
    python3 "$ROOT/scripts/lib/cluster_upgrade_load.py" check "127.0.0.1:$((BASE + 40))" "$ROUTE" \
        "$LOAD" >"$TMP/check.out" 2>&1
    n=$?
    sed 's/^/    /' "$TMP/check.out"
    check "every answer 2xx or 503 problem+json with Retry-After; every acknowledged submit and complete holds" \
        test "$n" -eq 0
    sums=$(for n in "${CLUSTER_NODES[@]}"; do
        printf 'SET SESSION wsrep_sync_wait = 1; %s\n' "SELECT COUNT(*), COALESCE(BIT_XOR(CRC32(CONCAT_WS('|', id,
            correlation_id, status, attempts, MD5(IFNULL(result_payload, '')), IFNULL(completed_at, '')))), 0)
            FROM asyncexec.s2r_async_execution" | sql "$n"
    done | sort -u)
    say "executions (count, checksum) per node: $(echo "$sums" | tr '\n' ' ')"
    check "the executions' count and checksum are the same on the three nodes" \
        test "$(echo "$sums" | grep -c .)" -eq 1
}

trap cleanup EXIT
trap 'exit 1' INT TERM HUP
main "$@"
exit 0
