# shellcheck shell=bash
# shellcheck disable=SC2034  # the STACK_* and CLUSTER_* globals are read by stack.sh and the scripts
# scripts/lib/cluster.sh — the scale-out stack on loopback, for scripts/run-cluster.sh,
# scripts/test-cluster.sh and the cluster benchmark: three MariaDB Galera nodes, two app
# hosts (A and B: one asyncexec-fcgi master each) and one nginx with an upstream over both.
# Built on scripts/lib/stack.sh (source that first); every wait is bounded.
#
#   STATE/nodeN/{data,my.cnf,mysqld.sock,mysqld.pid,mysqld.err,mysqld.out,port}  N = 1..3
#   STATE/db-password                                  the asyncexec user's (all nodes)
#   STATE/app-H.conf, app-H.sock, app-H.pid, app-H.log  H = a, b
#   STATE/nginx/                                       nginx (stack.sh's layout)
#   STATE/base                                         the base port (below)
#
# Ports from a base B (cluster_init): node N listens on B+N (SQL), B+10+N (Galera
# replication), B+20+N (IST), B+30+N (SST); nginx on the port given to cluster_start
# (round robin over both hosts), B+41 (host A only), B+42 (host B only), metrics B+43
# (host A) and B+44 (host B): the shipped loopback server, one port per host. scripts/run-cluster.sh uses B = 3400 (nodes 3401..3403).
#
# Functions that start things die (exit 1) with a clear message; stop functions warn and
# return non-zero, safe in EXIT traps. Usage for a benchmark:
#   source scripts/lib/stack.sh scripts/lib/cluster.sh
#   cluster_init ROOT STATE PREFIX BASE; cluster_start BUILD_DIR HTTP_PORT; ...; cluster_stop_all

CLUSTER_PACKAGES=(galera-4 mariadb-backup rsync socat)
CLUSTER_NODES=(1 2 3)
CLUSTER_HOSTS=(a b)
CLUSTER_GALERA=/usr/lib/galera/libgalera_smm.so
# CLUSTER_NODE_ROOT[N]: a Debian root file system whose mariadbd (and mariadb-install-db)
# runs node N, by chroot (the host's processes and /proc, so pid files hold); unset: the
# host's. scripts/test-cluster-upgrade.sh moves nodes from a Debian 12 root to a 13 one.
CLUSTER_NODE_ROOT=()
# Bounds (seconds): a bootstrap, a join (a full SST sleeps 10 s on the donor), a stop.
CLUSTER_BOOT_TIMEOUT=60
CLUSTER_JOIN_TIMEOUT=240
CLUSTER_STOP_TIMEOUT=120

# cluster_init ROOT STATE PREFIX BASE — stack_init plus the cluster's paths and ports.
cluster_init() {
    stack_init "$1" "$2" "$3"
    CLUSTER_STATE=$2
    CLUSTER_BASE=$4
    if ! [[ $CLUSTER_BASE =~ ^[0-9]+$ ]] || ((CLUSTER_BASE < 1024 || CLUSTER_BASE > 65000)); then
        stack_die "bad base port: $CLUSTER_BASE"
    fi
    CLUSTER_HTTP_A=$((CLUSTER_BASE + 41))
    CLUSTER_HTTP_B=$((CLUSTER_BASE + 42))
    CLUSTER_METRICS_A=$((CLUSTER_BASE + 43))
    CLUSTER_METRICS_B=$((CLUSTER_BASE + 44))
    STACK_DB_PWFILE=$CLUSTER_STATE/db-password
    STACK_NGINX_RENDER=cluster_nginx_render
    cluster_node 1
    cluster_host a
}

# cluster_ports — print every port the cluster uses besides nginx's round-robin port.
cluster_ports() {
    local n
    for n in "${CLUSTER_NODES[@]}"; do
        printf '%s\n' $((CLUSTER_BASE + n)) $((CLUSTER_BASE + 10 + n)) \
            $((CLUSTER_BASE + 20 + n)) $((CLUSTER_BASE + 30 + n))
    done
    printf '%s\n' "$CLUSTER_HTTP_A" "$CLUSTER_HTTP_B" "$CLUSTER_METRICS_A" "$CLUSTER_METRICS_B"
}

# cluster_ports_free BASE — true when no socket uses any of the ports of base BASE.
cluster_ports_free() {
    local p
    for p in $(CLUSTER_BASE=$1 CLUSTER_HTTP_A=$(($1 + 41)) CLUSTER_HTTP_B=$(($1 + 42)) \
        CLUSTER_METRICS_A=$(($1 + 43)) CLUSTER_METRICS_B=$(($1 + 44)) cluster_ports); do
        stack_port_in_use "$p" any && return 1
    done
    return 0
}

# cluster_reserve_base — a free block of ports (cluster_ports_free) in 10000..19999 for a
# test run, reserved by an atomic mkdir of TMPDIR/asyncexec-cluster-ports.BASE (the
# caller removes it); prints the base. Two test runs, scripts/test.sh (20000..32767) and
# scripts/run-cluster.sh (3400..3444, 8080) never share a port.
cluster_reserve_base() {
    local base try
    for try in $(seq 1 200); do
        base=$((10000 + (RANDOM % 199) * 50))
        cluster_ports_free "$base" || continue
        stack_port_in_use $((base + 40)) any && continue
        if mkdir "${TMPDIR:-/tmp}/asyncexec-cluster-ports.$base" 2>/dev/null; then
            printf '%s\n' "$base"
            return 0
        fi
    done
    stack_die "no free block of ports found in 10000..19999 after $try tries"
}

# cluster_node N — point stack.sh's STACK_DB_* at node N, so that stack_db_pid,
# stack_db_ping, stack_db_sql, stack_db_provision and stack_db_stop act on it.
cluster_node() {
    CLUSTER_NODE=$1
    STACK_DB_DIR=$CLUSTER_STATE/node$1
    STACK_DB_DATA=$STACK_DB_DIR/data
    STACK_DB_SOCK=$STACK_DB_DIR/mysqld.sock
    STACK_DB_PIDFILE=$STACK_DB_DIR/mysqld.pid
    STACK_DB_ERR=$STACK_DB_DIR/mysqld.err
    STACK_DB_ROOT=${CLUSTER_NODE_ROOT[$1]:-}
}

# cluster_host H — point stack.sh's STACK_CONF / STACK_APP_* at app host H (a or b).
cluster_host() {
    [[ $1 == a || $1 == b ]] || stack_die "no app host '$1' (a or b)"
    CLUSTER_HOST=$1
    STACK_CONF=$CLUSTER_STATE/app-$1.conf
    STACK_APP_SOCK=$CLUSTER_STATE/app-$1.sock
    STACK_APP_PIDFILE=$CLUSTER_STATE/app-$1.pid
    STACK_APP_LOG=$CLUSTER_STATE/app-$1.log
}

# cluster_install_packages — stack.sh's packages and Galera's, installed if missing.
cluster_install_packages() {
    local STACK_PACKAGES=("${STACK_PACKAGES[@]}" "${CLUSTER_PACKAGES[@]}")
    stack_install_packages
}

# cluster_now — seconds since the epoch, with microseconds.
cluster_now() { printf '%s\n' "$EPOCHREALTIME"; }

# cluster_since T0 — seconds elapsed since cluster_now printed T0, one decimal.
cluster_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f\n", b - a }'; }

# ---- Galera nodes -----------------------------------------------------------------------

# cluster_node_status N — print node N's "wsrep_local_state_comment wsrep_cluster_status"
# (e.g. "Synced Primary"), or "down" when it does not answer; false when down.
cluster_node_status() {
    local out
    cluster_node "$1"
    if ! stack_db_pid >/dev/null || ! out=$(stack_db_sql 2>/dev/null <<'SQL'
SELECT (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
        WHERE VARIABLE_NAME = 'WSREP_LOCAL_STATE_COMMENT'),
       (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
        WHERE VARIABLE_NAME = 'WSREP_CLUSTER_STATUS');
SQL
    ) || [[ -z $out ]]; then
        printf 'down\n'
        return 1
    fi
    printf '%s\n' "$(tail -n 1 <<<"$out" | tr '\t' ' ')"
}

# cluster_node_synced N — true when node N is Synced and in the Primary component.
cluster_node_synced() {
    [[ $(cluster_node_status "$1") == "Synced Primary" ]]
}

# cluster_node_defaults N — node N's defaults file: only the buffer pool (on the command
# line mariabackup would get it and reject it) and an empty [sst] section (with
# --no-defaults the SST scripts would read /etc/mysql). 128M, MariaDB's default and what the
# single-server stack runs with: with 64M a node under a long claim backlog aborted ("Over
# 95 percent of the buffer pool is occupied by lock heaps"). CLUSTER_BUFFER_POOL overrides.
cluster_node_defaults() {
    cluster_node "$1"
    mkdir -p "$STACK_DB_DIR"
    printf '[mysqld]\ninnodb_buffer_pool_size=%s\n\n[sst]\n' "${CLUSTER_BUFFER_POOL:-128M}" \
        >"$STACK_DB_DIR/my.cnf"
}

# cluster_gcomm — the cluster address: every node's replication port.
cluster_gcomm() {
    local n addr=
    for n in "${CLUSTER_NODES[@]}"; do addr+=${addr:+,}127.0.0.1:$((CLUSTER_BASE + 10 + n)); done
    printf 'gcomm://%s\n' "$addr"
}

# cluster_node_args N — set CLUSTER_ARGS to node N's mariadbd command line: the options
# of stack_db_start (its own tmpdir, made here), plus Galera's (mariabackup SST as root).
# log_bin_trust_function_creators (tests only): with wsrep on, CREATE TRIGGER needs SUPER
# without it, and http_replay's trigger (a replay the server refuses) runs as the app's
# user, as on one server.
cluster_node_args() {
    local n=$1 b=$CLUSTER_BASE
    cluster_node_defaults "$n"
    mkdir -p "$STACK_DB_DIR/tmp"
    CLUSTER_ARGS=(--defaults-file="$STACK_DB_DIR/my.cnf"
        --datadir="$STACK_DB_DATA" --socket="$STACK_DB_SOCK" --port=$((b + n))
        --tmpdir="$STACK_DB_DIR/tmp"
        --bind-address=127.0.0.1 --skip-name-resolve --user=root
        --pid-file="$STACK_DB_PIDFILE" --log-error="$STACK_DB_ERR"
        --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci
        --wsrep-on=ON --wsrep-provider="$CLUSTER_GALERA"
        --wsrep-cluster-name=asyncexec --wsrep-node-name="node$n"
        --wsrep-cluster-address="$(cluster_gcomm)"
        --wsrep-node-address=127.0.0.1:$((b + 10 + n))
        --wsrep-node-incoming-address=127.0.0.1:$((b + n))
        --wsrep-sst-receive-address=127.0.0.1:$((b + 30 + n))
        --wsrep-sst-method=mariabackup --wsrep-sst-auth=root:
        --binlog-format=ROW --innodb-autoinc-lock-mode=2
        --log-bin-trust-function-creators=1
        --wsrep-provider-options="gmcast.listen_addr=tcp://127.0.0.1:$((b + 10 + n));ist.recv_addr=127.0.0.1:$((b + 20 + n));gcache.size=64M")
}

# cluster_node_recover N — after a crash (grastate.dat says seqno -1) print node N's
# position (UUID:SEQNO) as InnoDB recorded it (mariadbd --wsrep-recover, as Debian's
# galera_recovery does); without it the node would rejoin by a full SST instead of IST.
# Prints nothing when there is no crashed state to recover.
cluster_node_recover() {
    local n=$1 log
    cluster_node "$n"
    [[ -d $STACK_DB_DATA/mysql && $(cluster_grastate "$n" seqno) == -1 ]] || return 0
    log=$STACK_DB_DIR/recover.err
    cluster_node_args "$n"
    rm -f "$log"
    timeout 120 ${STACK_DB_ROOT:+chroot "$STACK_DB_ROOT"} mariadbd "${CLUSTER_ARGS[@]}" --wsrep-recover --log-error="$log" \
        --pid-file="$STACK_DB_DIR/recover.pid" </dev/null >/dev/null 2>&1 ||
        stack_warn "node $n: mariadbd --wsrep-recover failed (see $log)"
    sed -n 's/.*WSREP: Recovered position: *\([0-9a-f-]*:-\{0,1\}[0-9]*\).*/\1/p' "$log" 2>/dev/null | tail -n 1
}

# cluster_node_spawn N [OPTIONS...] — start node N's mariadbd in the background.
cluster_node_spawn() {
    local n=$1
    shift
    cluster_node_args "$n"
    rm -f "$STACK_DB_SOCK" "$STACK_DB_SOCK.lock" "$STACK_DB_PIDFILE"
    printf '%s\n' $((CLUSTER_BASE + n)) >"$STACK_DB_DIR/port"
    stack_spawn "$STACK_DB_DIR/mysqld.out" ${STACK_DB_ROOT:+chroot "$STACK_DB_ROOT"} mariadbd \
        "${CLUSTER_ARGS[@]}" "$@"
}

# cluster_node_start N [bootstrap] — start node N unless it runs (a new cluster from it
# with "bootstrap", else a join); return once it is Synced and Primary. Sets
# CLUSTER_TRANSFER (IST, SST or none: how it got the cluster's state, from its log).
cluster_node_start() {
    local n=$1 mode=${2:-join} pid rc=0 off=0 secs=$CLUSTER_JOIN_TIMEOUT extra=() pos
    CLUSTER_TRANSFER=none
    cluster_node "$n"
    if pid=$(stack_db_pid); then
        stack_log "node $n already running (pid $pid)"
        return 0
    fi
    stack_port_in_use $((CLUSTER_BASE + n)) && stack_die "port $((CLUSTER_BASE + n)) is in use (node $n)"
    mkdir -p "$STACK_DB_DATA"
    [[ -f $STACK_DB_ERR ]] && off=$(stat -c %s "$STACK_DB_ERR")
    if [[ $mode == bootstrap ]]; then
        extra=(--wsrep-new-cluster)
        secs=$CLUSTER_BOOT_TIMEOUT
    fi
    pos=$(cluster_node_recover "$n")
    if [[ -n $pos ]]; then
        stack_log "node $n recovered its position $pos (it crashed)"
        extra+=(--wsrep-start-position="$pos")
    fi
    cluster_node "$n"
    stack_log "starting node $n (${mode}) on 127.0.0.1:$((CLUSTER_BASE + n))"
    cluster_node_spawn "$n" "${extra[@]}"
    stack_wait_ready "$secs" "$STACK_SPAWNED_PID" cluster_node_synced "$n" || rc=$?
    cluster_node "$n"
    if ((rc == 0)); then
        # The SST script runs for an IST too: it then reports "Running IST".
        CLUSTER_TRANSFER=$(tail -c +$((off + 1)) "$STACK_DB_ERR" | awk '
            /Running IST/ { runist = 1 }
            /SST succeeded|mariabackup SST completed/ { sst = 1 }
            /IST received/ { ist = 1 }
            END { print runist ? "IST" : sst ? "SST" : ist ? "IST" : "none" }')
        return 0
    fi
    stack_tail "$STACK_DB_ERR" 30
    ((rc == 2)) && stack_die "node $n exited during start-up (see $STACK_DB_ERR)"
    stack_kill_wait "$STACK_SPAWNED_PID" "node $n" 10 || true
    stack_die "node $n was not Synced within ${secs}s (see $STACK_DB_ERR)"
}

# cluster_node_stop N — stop node N (SIGTERM: a clean leave) if it runs.
cluster_node_stop() {
    local pid
    cluster_node "$1"
    pid=$(stack_db_pid) || return 0
    stack_kill_wait "$pid" "node $1" "$CLUSTER_STOP_TIMEOUT"
}

# cluster_node_kill N — SIGKILL node N; return once its pid is gone.
cluster_node_kill() {
    local pid
    cluster_node "$1"
    if ! pid=$(stack_db_pid); then
        stack_warn "node $1 is not running"
        return 1
    fi
    kill -s KILL "$pid" 2>/dev/null || true
    stack_wait 30 stack_pid_gone "$pid" || { stack_warn "node $1 (pid $pid) survived SIGKILL"; return 1; }
    stack_log "killed node $1 (pid $pid)"
}

# cluster_grastate N KEY — print KEY (seqno, safe_to_bootstrap) of node N's grastate.dat.
cluster_grastate() {
    sed -n "s/^$2:[[:space:]]*//p" "$CLUSTER_STATE/node$1/data/grastate.dat" 2>/dev/null
}

# cluster_bootstrap_node — the node to start a stopped cluster from: the one Galera marked
# safe_to_bootstrap (the last to leave cleanly); after a crash of all, the highest seqno
# (marked safe here, with a warning); node 1 for a new cluster.
cluster_bootstrap_node() {
    local n best=1 seq top=-2
    for n in "${CLUSTER_NODES[@]}"; do
        if [[ $(cluster_grastate "$n" safe_to_bootstrap) == 1 ]]; then
            printf '%s\n' "$n"
            return 0
        fi
    done
    [[ -f $CLUSTER_STATE/node1/data/grastate.dat ]] || { printf '1\n'; return 0; }
    for n in "${CLUSTER_NODES[@]}"; do
        seq=$(cluster_grastate "$n" seqno)
        [[ $seq =~ ^-?[0-9]+$ ]] && ((seq > top)) && { top=$seq; best=$n; }
    done
    stack_warn "no node is safe_to_bootstrap (not a clean stop): bootstrapping node $best (seqno $top)"
    sed -i 's/^safe_to_bootstrap:.*/safe_to_bootstrap: 1/' "$CLUSTER_STATE/node$best/data/grastate.dat"
    printf '%s\n' "$best"
}

# cluster_db_start — start every node that is not running: a running Synced node is
# joined; with none running, bootstrap (cluster_bootstrap_node; a new cluster: node 1's
# data directory created first) and join the others one at a time. Prints the times.
# Sets CLUSTER_CREATED=1 when the cluster was created now.
cluster_db_start() {
    local n boot='' t0 t
    CLUSTER_CREATED=0
    for n in "${CLUSTER_NODES[@]}"; do
        cluster_node_synced "$n" && { boot=$n; break; }
    done
    if [[ -z $boot ]]; then
        boot=$(cluster_bootstrap_node)
        cluster_node "$boot"
        if [[ ! -d $STACK_DB_DATA/mysql ]]; then
            stack_db_init
            CLUSTER_CREATED=1
        fi
        t0=$(cluster_now)
        cluster_node_start "$boot" bootstrap
        t=$(cluster_since "$t0")
        stack_log "node $boot bootstrapped in ${t}s"
        CLUSTER_TIMES="bootstrap node $boot ${t}s"
    fi
    for n in "${CLUSTER_NODES[@]}"; do
        cluster_node "$n"
        stack_db_pid >/dev/null && continue
        t0=$(cluster_now)
        cluster_node_start "$n"
        t=$(cluster_since "$t0")
        stack_log "node $n joined in ${t}s ($CLUSTER_TRANSFER)"
        CLUSTER_TIMES+="${CLUSTER_TIMES:+, }join node $n ${t}s ($CLUSTER_TRANSFER)"
    done
}

# cluster_db_stop — stop the nodes, the last one first (node 1 leaves last, so that it is
# the one safe to bootstrap from). Non-zero if one did not stop.
cluster_db_stop() {
    local rc=0 i
    for ((i = ${#CLUSTER_NODES[@]} - 1; i >= 0; i--)); do
        cluster_node_stop "${CLUSTER_NODES[i]}" || rc=1
    done
    return "$rc"
}

# ---- app hosts --------------------------------------------------------------------------

# cluster_db_hosts — the db_hosts value: every node, in order.
cluster_db_hosts() {
    local n list=
    for n in "${CLUSTER_NODES[@]}"; do list+=${list:+, }127.0.0.1:$((CLUSTER_BASE + n)); done
    printf '%s\n' "$list"
}

# cluster_write_config H FCGI_BIN — host H's configuration: stack_write_config's, plus
# db_hosts over the three nodes in order (node 1 preferred). The application then ignores
# db_socket, db_host and db_port; they stay, naming node 1, for tools and tests that reach
# it directly (root SQL through the socket). An asyncexec-fcgi that does not know db_hosts
# (an older build) gets node 1 only, with a warning.
cluster_write_config() {
    local h=$1 bin=$2
    cluster_node 1
    cluster_host "$h"
    stack_write_config $((CLUSTER_BASE + 1))
    sed -i -e "s|^# MariaDB: the unix socket is used.*|# MariaDB Galera: every worker writes to the first reachable node of db_hosts (pinned);\n# db_socket/db_host/db_port (node 1) are not used then (tools and tests use them).\ndb_hosts = $(cluster_db_hosts)\n# the writer pin across restarts of the master (a reload goes back to node 1)\ndb_pin_file = $CLUSTER_STATE/app-$h.pin|" \
        -e "1s|.*|# asyncexec configuration of app host ${h^^} of the cluster in $CLUSTER_STATE|" \
        -e "2s|.*|# (written by scripts/lib/cluster.sh; rewritten on every start).|" "$STACK_CONF"
    grep -q '^db_hosts = ' "$STACK_CONF" || stack_die "could not add db_hosts to $STACK_CONF"
    if "$bin" --config "$STACK_CONF" --check-config 2>&1 | grep -q 'db_hosts: unknown key'; then
        stack_warn "$bin does not know db_hosts: host ${h^^} uses node 1 only"
        sed -i -e '/^db_hosts = /d' -e '/^db_pin_file = /d' "$STACK_CONF"
    fi
}

# cluster_app_start H FCGI_BIN — start host H's master (stack_app_start) unless it runs.
cluster_app_start() {
    cluster_write_config "$1" "$2"
    cluster_host "$1"
    stack_app_start "$2"
}

# cluster_app_orphans H — print the pids of host H's workers whose master is gone (their
# pids were noted by cluster_master_kill in app-H.orphans; only those still named
# asyncexec-fcgi).
cluster_app_orphans() {
    local f=$CLUSTER_STATE/app-$1.orphans pid
    [[ -s $f ]] || return 0
    while read -r pid; do
        stack_pid_alive "$pid" && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$STACK_APP_COMM" ]] &&
            printf '%s\n' "$pid"
    done <"$f"
}

# cluster_app_stop H — stop host H's master (graceful) and any orphaned worker of it.
cluster_app_stop() {
    local rc=0 pid
    cluster_host "$1"
    stack_app_stop || rc=1
    for pid in $(cluster_app_orphans "$1"); do
        stack_kill_wait "$pid" "orphaned worker of host ${1^^}" 10 || rc=1
    done
    rm -f "$CLUSTER_STATE/app-$1.orphans"
    return "$rc"
}

# cluster_master_kill H — SIGKILL host H's master; return once its pid is gone, then wait
# (at most 10 s) for its workers to stop and say whether they did (they are noted in
# app-H.orphans so that a stop ends them if they stay).
cluster_master_kill() {
    local pid kids
    cluster_host "$1"
    if ! pid=$(stack_app_pid); then
        stack_warn "host ${1^^}'s master is not running"
        return 1
    fi
    kids=$(awk -v p="$pid" '{ s = $0; sub(/.*\) /, "", s); split(s, f, " ");
        if (f[2] == p) { n = FILENAME; gsub(/[^0-9]/, "", n); print n } }' \
        /proc/[0-9]*/stat 2>/dev/null || true)   # exit 2 when a process vanished meanwhile
    [[ -z $kids ]] || printf '%s\n' "$kids" >>"$CLUSTER_STATE/app-$1.orphans"
    kill -s KILL "$pid" 2>/dev/null || true
    stack_wait 30 stack_pid_gone "$pid" || { stack_warn "master (pid $pid) survived SIGKILL"; return 1; }
    stack_log "killed host ${1^^}'s master (pid $pid)"
    if stack_wait 10 cluster_no_orphans "$1"; then
        stack_log "its workers have stopped"
    else
        stack_warn "host ${1^^}'s workers still run 10 s after their master died: $(cluster_app_orphans "$1" | tr '\n' ' ')"
    fi
}

cluster_no_orphans() { [[ -z $(cluster_app_orphans "$1") ]]; }

# ---- nginx ------------------------------------------------------------------------------

# cluster_nginx_render PORT — stack_nginx_render for host A's socket, then: the upstream
# asyncexec_app over both hosts (with a shared zone, so that nginx's workers alternate
# together); host B on the loopback metrics server as the shipped file's "#h2 " template
# says (upstream asyncexec_host2, its port CLUSTER_METRICS_B in the map and the listen:
# host A's metrics on CLUSTER_METRICS_A, host B's on CLUSTER_METRICS_B, each from its own
# host, as an operator's file); for the tests only, the API server on CLUSTER_HTTP_A / _B
# too, through a map on the port the request came to (PORT: both hosts; _A / _B: one host,
# upstreams asyncexec_host1 / asyncexec_host2).
cluster_nginx_render() {
    local port=$1 d=$STACK_NGINX_DIR a b f
    a=$CLUSTER_STATE/app-a.sock
    b=$CLUSTER_STATE/app-b.sock
    mkdir -p "$d"
    printf '%s\n' "$CLUSTER_METRICS_A" >"$d/metrics-port"
    STACK_APP_SOCK=$a stack_nginx_render "$port"
    f=$d/site.conf
    sed -i -e "/^upstream asyncexec_app {/,/^}/s|^\([[:space:]]*\)server unix:$a;|\1zone asyncexec_app 64k;\n\1server unix:$a;\n\1server unix:$b;|" \
        -e "/^[[:space:]]*#h2 /{s|#h2 ||;s|server 10\.0\.0\.12:9000;|server unix:$b;|;s|9181|$CLUSTER_METRICS_B|g;}" \
        -e "s|fastcgi_pass asyncexec_app;|fastcgi_pass \$asyncexec_cluster_pass;|" \
        -e "s|^\([[:space:]]*\)listen 127.0.0.1:$port;|&\n\1listen 127.0.0.1:$CLUSTER_HTTP_A;\n\1listen 127.0.0.1:$CLUSTER_HTTP_B;|" "$f"
    cat >>"$f" <<EOF

# ---- added by scripts/lib/cluster.sh: the API server's per-host ports (tests only) ----
map \$server_port \$asyncexec_cluster_pass {
    $CLUSTER_HTTP_A asyncexec_host1;
    $CLUSTER_HTTP_B asyncexec_host2;
    default asyncexec_app;
}
EOF
    if [[ $(grep -c "server unix:$b;" "$f") != 2 ]] || ! grep -q "listen 127.0.0.1:$CLUSTER_HTTP_B;" "$f" ||
        ! grep -q "^[[:space:]]*listen 127.0.0.1:$CLUSTER_METRICS_B;" "$f" ||
        ! grep -q "^[[:space:]]*$CLUSTER_METRICS_B asyncexec_host2;" "$f" ||
        grep -q "^[[:space:]]*#h2 \\|fastcgi_pass asyncexec_app;" "$f"; then
        stack_die "nginx/asyncexec.conf: the cluster's rewrite of $f did not apply"
    fi
}

# ---- the whole cluster ------------------------------------------------------------------

# cluster_start BUILD_DIR HTTP_PORT — nodes (cluster_db_start), the asyncexec database and
# user, the schema (migrated once, through host A's config), both app hosts, nginx on
# HTTP_PORT; whatever runs already is kept. CLUSTER_TIMES says how long the nodes took.
cluster_start() {
    local build=$1 port=$2 t0 h
    t0=$(cluster_now)
    CLUSTER_TIMES=
    mkdir -p "$CLUSTER_STATE"
    printf '%s\n' "$CLUSTER_BASE" >"$CLUSTER_STATE/base"
    cluster_db_start
    CLUSTER_DB_SECONDS=$(cluster_since "$t0")
    stack_log "database nodes up in ${CLUSTER_DB_SECONDS}s: ${CLUSTER_TIMES:-all were running}"
    cluster_node 1
    stack_db_provision
    cluster_write_config a "$build/asyncexec-fcgi"
    stack_migrate "$build/asyncexec-admin"
    for h in "${CLUSTER_HOSTS[@]}"; do cluster_app_start "$h" "$build/asyncexec-fcgi"; done
    cluster_host a
    stack_nginx_start "$port"
    CLUSTER_SECONDS=$(cluster_since "$t0")
    stack_log "cluster up in ${CLUSTER_SECONDS}s"
}

# cluster_stop_all — nginx, the app hosts, the nodes (cluster_db_stop). Non-zero if any
# did not stop.
cluster_stop_all() {
    local rc=0 h
    stack_nginx_stop || rc=1
    for h in "${CLUSTER_HOSTS[@]}"; do cluster_app_stop "$h" || rc=1; done
    cluster_db_stop || rc=1
    return "$rc"
}

# cluster_status — one line per node (wsrep state), app host and nginx; true when all run.
cluster_status() {
    local n h pid rc=0 st
    for n in "${CLUSTER_NODES[@]}"; do
        st=$(cluster_node_status "$n") || rc=1
        cluster_node "$n"
        pid=$(stack_db_pid) || pid=-
        stack_log "node $n (127.0.0.1:$((CLUSTER_BASE + n)), pid $pid): $st"
    done
    for h in "${CLUSTER_HOSTS[@]}"; do
        cluster_host "$h"
        if pid=$(stack_app_pid); then
            stack_log "host ${h^^}: asyncexec-fcgi running (pid $pid), $(grep -m 1 -E '^db_(hosts|socket) = ' "$STACK_CONF")"
        else
            stack_log "host ${h^^}: asyncexec-fcgi not running"; rc=1
        fi
    done
    if pid=$(stack_nginx_pid); then
        stack_log "nginx running (pid $pid) on 127.0.0.1:$(cat "$STACK_NGINX_DIR/port") (both hosts), :$CLUSTER_HTTP_A (A), :$CLUSTER_HTTP_B (B)"
    else
        stack_log "nginx not running"; rc=1
    fi
    return "$rc"
}

# cluster_write_ctl BUILD_DIR — STATE/clusterctl.env, what scripts/clusterctl.sh needs
# besides STATE/base: the build and the settings the configurations were written with
# (master-start rewrites them).
cluster_write_ctl() {
    printf 'build=%s\ncache_ttl=%s\nworkers=%s\n' "$1" "${STACK_CACHE_TTL:-}" \
        "${STACK_WORKERS:-}" >"$CLUSTER_STATE/clusterctl.env"
}
