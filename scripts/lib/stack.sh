# shellcheck shell=bash
# scripts/lib/stack.sh — shared helpers for scripts/run-local.sh and scripts/test.sh.
#
# Brings up a private stack under one state directory, never touching the system services:
#   STATE/mariadb/{data,mysqld.sock,mysqld.pid,mysqld.err,port}   private MariaDB
#   STATE/asyncexec.conf, STATE/db-password (0600)                 application config
#   STATE/webhook.key (0640)                                       webhook_key_file
#   STATE/asyncexec.pid, STATE/asyncexec.log                       asyncexec-fcgi
#   STATE/nginx/{nginx.conf,site.conf,nginx.pid,error.log,port}    private nginx
#   RUN/asyncexec.sock, RUN/nginx-tmp/                             what nginx's workers reach
#
# RUN is STATE unless stack_run_dir moves it: started as root, nginx's workers run as
# www-data (STACK_NGINX_USER), the socket is listen_mode 0660 with listen_group www-data
# (as the packaged socket unit), and RUN must be a directory www-data can enter.
#
# Usage: source this file, then `stack_init ROOT STATE PREFIX`. Every wait is bounded.
# Functions that start things die (exit 1) with a clear message; stop functions never
# exit, they warn and return non-zero, so they are safe in EXIT traps.

# Debian packages needed to build and run the stack.
STACK_PACKAGES=(cmake make gcc pkg-config libfcgi-dev libmariadb-dev libjson-c-dev libssl-dev
                uuid-dev libcurl4-openssl-dev mariadb-server mariadb-client nginx curl
                python3-jsonschema php-cli php-curl jq)
# Commands the tests need, each with the Debian package that provides it, installed only
# when the command is missing (a node from elsewhere, with its own npm, is used as it is;
# chromium: the dashboard's browser tests, tests/dash).
STACK_COMMANDS=(node:nodejs npm:npm chromium:chromium)

# Bounds (seconds) for the waits below.
STACK_DB_START_TIMEOUT=60
STACK_DB_STOP_TIMEOUT=60
STACK_APP_START_TIMEOUT=30
STACK_APP_STOP_TIMEOUT=30
STACK_NGINX_START_TIMEOUT=30
STACK_NGINX_STOP_TIMEOUT=15

# The user and group nginx's workers run as when nginx is started as root (Debian's
# www-data, as in the system nginx); empty otherwise (they run as the caller, who owns
# the socket).
if ((EUID == 0)); then STACK_NGINX_USER=www-data; else STACK_NGINX_USER=; fi

# Optional command prefix for asyncexec-fcgi (scripts/test.sh --valgrind sets valgrind and
# its options here) and the process name its pid file must then show: valgrind runs as
# its tool binary, whose name the kernel truncates to "memcheck-amd64-".
STACK_APP_WRAPPER=()
STACK_APP_COMM=asyncexec-fcgi

# stack_init ROOT STATE PREFIX — set the paths used by every other function.
stack_init() {
    STACK_ROOT=$1
    STACK_STATE=$2
    STACK_PREFIX=$3
    STACK_DB_DIR=$STACK_STATE/mariadb
    STACK_DB_DATA=$STACK_DB_DIR/data
    STACK_DB_SOCK=$STACK_DB_DIR/mysqld.sock
    STACK_DB_PIDFILE=$STACK_DB_DIR/mysqld.pid
    STACK_DB_ERR=$STACK_DB_DIR/mysqld.err
    # a root file system whose MariaDB tools stack_db_init runs (chroot); empty: the host's
    STACK_DB_ROOT=
    STACK_CONF=$STACK_STATE/asyncexec.conf
    STACK_DB_PWFILE=$STACK_STATE/db-password
    STACK_WEBHOOK_KEY=$STACK_STATE/webhook.key
    STACK_RUN=$STACK_STATE
    STACK_APP_SOCK=$STACK_RUN/asyncexec.sock
    STACK_APP_PIDFILE=$STACK_STATE/asyncexec.pid
    STACK_APP_LOG=$STACK_STATE/asyncexec.log
    STACK_NGINX_DIR=$STACK_STATE/nginx
    STACK_NGINX_PIDFILE=$STACK_NGINX_DIR/nginx.pid
    STACK_NGINX_ERR=$STACK_NGINX_DIR/error.log
}

# stack_run_dir — when nginx's workers (STACK_NGINX_USER) cannot enter STATE (a clone in
# /root, whose mode is 0700), keep what they must reach in /run/asyncexec-local/HASH
# instead (HASH: of STATE's path, so start and stop agree), root:www-data 0750.
stack_run_dir() {
    local h
    [[ -n $STACK_NGINX_USER ]] || return 0
    runuser -u "$STACK_NGINX_USER" -- test -x "$STACK_STATE" 2>/dev/null && return 0
    h=$(printf '%s' "$STACK_STATE" | sha256sum | cut -c1-12)
    STACK_RUN=/run/asyncexec-local/$h
    STACK_APP_SOCK=$STACK_RUN/asyncexec.sock
    install -d -m 0755 /run/asyncexec-local
    install -d -m 0750 -g "$STACK_NGINX_USER" "$STACK_RUN"
    printf '%s\n' "$STACK_STATE" >"$STACK_RUN/state"
}

# ---- messages ---------------------------------------------------------------------------

stack_log()  { printf '%s: %s\n' "$STACK_PREFIX" "$*" >&2; }
stack_warn() { printf '%s: warning: %s\n' "$STACK_PREFIX" "$*" >&2; }
stack_die()  { printf '%s: error: %s\n' "$STACK_PREFIX" "$*" >&2; exit 1; }

# stack_tail FILE [LINES] — show the end of a log file, labelled.
stack_tail() {
    local file=$1 lines=${2:-40}
    if [[ -s $file ]]; then
        printf '%s: ---- last %s lines of %s ----\n' "$STACK_PREFIX" "$lines" "$file" >&2
        tail -n "$lines" "$file" >&2
        printf '%s: ---- end of %s ----\n' "$STACK_PREFIX" "$file" >&2
    else
        printf '%s: (%s is empty or missing)\n' "$STACK_PREFIX" "$file" >&2
    fi
}

# stack_tail_logs [LINES] — the app log, nginx error log and MariaDB error log.
stack_tail_logs() {
    stack_tail "$STACK_APP_LOG" "${1:-40}"
    stack_tail "$STACK_NGINX_ERR" "${1:-40}"
    stack_tail "$STACK_DB_ERR" "${1:-40}"
}

# ---- processes --------------------------------------------------------------------------

# stack_pid_alive PID — true if PID exists and is not a zombie.
stack_pid_alive() {
    local stat
    [[ $1 =~ ^[0-9]+$ ]] || return 1
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }              # drop "pid (comm) "; comm may contain spaces
    [[ ${stat:0:1} != Z ]]
}

stack_pid_gone() { ! stack_pid_alive "$1"; }

# stack_pid_from_file FILE COMM — print the pid in FILE if that process is alive and its
# name is COMM (guards against a stale pid file whose pid was reused).
stack_pid_from_file() {
    local pid comm
    [[ -r $1 ]] || return 1
    read -r pid <"$1" || [[ -n ${pid:-} ]] || return 1
    stack_pid_alive "$pid" || return 1
    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
    [[ $comm == "$2" ]] || return 1
    printf '%s\n' "$pid"
}

# stack_wait SECONDS CMD... — run CMD every 0.2 s until it succeeds; false on timeout.
stack_wait() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.2
    done
}

# stack_wait_ready SECONDS PID CMD... — like stack_wait, but gives up early (status 2)
# when process PID dies. Status 1 = timeout.
stack_wait_ready() {
    local deadline=$((SECONDS + $1)) pid=$2
    shift 2
    until "$@"; do
        stack_pid_alive "$pid" || return 2
        ((SECONDS < deadline)) || return 1
        sleep 0.2
    done
}

# stack_spawn LOG CMD... — start CMD in the background in its own session (so a Ctrl-C
# or hang-up of the calling terminal does not reach it), stdin from /dev/null, stdout and
# stderr appended to LOG. Sets STACK_SPAWNED_PID.
stack_spawn() {
    local log=$1
    shift
    setsid "$@" </dev/null >>"$log" 2>&1 &
    STACK_SPAWNED_PID=$!
}

# stack_kill_wait PID NAME SECONDS [SIGNAL] — signal PID (default TERM), wait until it is
# gone; after SECONDS send SIGKILL. Returns non-zero only if it survives even that.
stack_kill_wait() {
    local pid=$1 name=$2 secs=$3 sig=${4:-TERM}
    kill -s "$sig" "$pid" 2>/dev/null || true
    if ! stack_wait "$secs" stack_pid_gone "$pid"; then
        stack_warn "$name (pid $pid) still running ${secs}s after SIG$sig; sending SIGKILL"
        kill -s KILL "$pid" 2>/dev/null || true
        if ! stack_wait 10 stack_pid_gone "$pid"; then
            stack_warn "$name (pid $pid) did not exit even after SIGKILL"
            return 1
        fi
    fi
    wait "$pid" 2>/dev/null || true  # reap it if it is our own child
    stack_log "stopped $name (pid $pid)"
}

# ---- ports ------------------------------------------------------------------------------

# stack_port_in_use PORT [any] — true if a TCP socket (v4 or v6) listens on local port
# PORT; with "any", true if any socket in any state (TIME_WAIT, ...) uses it.
stack_port_in_use() {
    local hex
    hex=$(printf '%04X' "$1")
    awk -v p=":$hex\$" -v any="${2:-}" \
        '$2 ~ p && (any != "" || $4 == "0A") { found = 1 } END { exit !found }' \
        /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# stack_free_port — print a port in 20000..32767 that no socket uses (below Linux's
# ephemeral range 32768.., so outgoing connections do not grab it meanwhile).
stack_free_port() {
    local port try
    for try in $(seq 1 100); do
        port=$((20000 + RANDOM % 12768))
        if ! stack_port_in_use "$port" any; then
            printf '%s\n' "$port"
            return 0
        fi
    done
    stack_die "no free TCP port found after $try tries"
}

# ---- packages and build -----------------------------------------------------------------

# stack_missing_packages — print the packages of STACK_PACKAGES that are not installed.
stack_missing_packages() {
    local pkg
    for pkg in "${STACK_PACKAGES[@]}"; do
        if [[ $(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null) != ii* ]]; then
            printf '%s\n' "$pkg"
        fi
    done
    for pkg in "${STACK_COMMANDS[@]}"; do
        command -v "${pkg%%:*}" >/dev/null 2>&1 || printf '%s\n' "${pkg#*:}"
    done
}

# stack_install_packages — apt-get install whatever is missing. A temporary policy-rc.d
# keeps the packages' maintainer scripts from starting the system MariaDB and nginx.
stack_install_packages() {
    local missing policy=/usr/sbin/policy-rc.d own_policy=0 rc=0
    mapfile -t missing < <(stack_missing_packages)
    ((${#missing[@]})) || return 0
    ((EUID == 0)) || stack_die "missing packages: ${missing[*]} (run as root to install them)"
    stack_log "installing missing packages: ${missing[*]}"
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 0755 "$policy" && own_policy=1
    fi
    apt-get update -q || rc=$?
    if ((rc == 0)); then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            "${missing[@]}" </dev/null || rc=$?
    fi
    ((own_policy)) && rm -f "$policy"
    ((rc == 0)) || stack_die "apt-get failed (status $rc) installing: ${missing[*]}"
}

# stack_build BUILD_DIR BUILD_TYPE [CMAKE_ARGS...] — configure and build; check binaries.
stack_build() {
    local build=$1 type=$2 bin
    shift 2
    [[ -f $STACK_ROOT/CMakeLists.txt ]] || stack_die "no CMakeLists.txt in $STACK_ROOT"
    stack_log "building ($type) in $build"
    cmake -S "$STACK_ROOT" -B "$build" -DCMAKE_BUILD_TYPE="$type" "$@" ||
        stack_die "cmake configure failed"
    cmake --build "$build" -j2 || stack_die "build failed"
    for bin in asyncexec-fcgi asyncexec-admin asyncexec-expire; do
        [[ -x $build/$bin ]] || stack_die "build did not produce $build/$bin"
    done
}

# ---- MariaDB ----------------------------------------------------------------------------

stack_db_pid() { stack_pid_from_file "$STACK_DB_PIDFILE" mariadbd; }

# stack_db_ping — true when the private server answers on its socket.
stack_db_ping() {
    mariadb-admin --no-defaults --user=root --socket="$STACK_DB_SOCK" \
        --connect-timeout=2 ping >/dev/null 2>&1
}

# stack_db_sql — run the SQL on stdin as root through the private socket.
stack_db_sql() {
    mariadb --no-defaults --user=root --socket="$STACK_DB_SOCK" --batch
}

# stack_db_init — create the data directory unless it exists (with STACK_DB_ROOT set, by
# the mariadb-install-db of that root file system, chroot). Sets STACK_DB_CREATED=1
# when it was created now (callers then know older keys are void).
# shellcheck disable=SC2034  # STACK_DB_CREATED is read by the calling scripts
stack_db_init() {
    STACK_DB_CREATED=0
    [[ -d $STACK_DB_DATA/mysql ]] && return 0
    mkdir -p "$STACK_DB_DIR/tmp"
    stack_log "initialising MariaDB data directory $STACK_DB_DATA"
    # its own tmpdir, as stack_db_start's (the bootstrap server starts as one does)
    if ! ${STACK_DB_ROOT:+chroot "$STACK_DB_ROOT"} mariadb-install-db --no-defaults \
        --datadir="$STACK_DB_DATA" --user=root \
        --tmpdir="$STACK_DB_DIR/tmp" \
        --auth-root-authentication-method=normal >"$STACK_DB_DIR/install.log" 2>&1; then
        stack_tail "$STACK_DB_DIR/install.log"
        rm -rf "$STACK_DB_DATA"
        stack_die "mariadb-install-db failed"
    fi
    STACK_DB_CREATED=1
}

# stack_db_start PORT — start the private server (TCP on 127.0.0.1:PORT and a unix socket)
# unless it runs already, with the options of the array STACK_DB_OPTS too, if set (bench.sh
# --buffer-pool); return once it answers ping.
stack_db_start() {
    local port=$1 pid rc=0
    if pid=$(stack_db_pid); then
        stack_log "MariaDB already running (pid $pid)"
        return 0
    fi
    [[ -d $STACK_DB_DATA/mysql ]] || stack_die "no MariaDB data directory in $STACK_DB_DATA"
    stack_port_in_use "$port" && stack_die "port $port is in use; cannot start MariaDB there"
    rm -f "$STACK_DB_SOCK" "$STACK_DB_SOCK.lock" "$STACK_DB_PIDFILE"
    printf '%s\n' "$port" >"$STACK_DB_DIR/port"
    stack_log "starting MariaDB on 127.0.0.1:$port, socket $STACK_DB_SOCK"
    # --no-defaults: no /etc/mysql config. --skip-name-resolve: no DNS lookups on connect
    # (TCP clients match the @'127.0.0.1' account, socket clients @'localhost').
    # utf8mb4 / utf8mb4_general_ci: the server defaults of Debian's packaged config.
    # --tmpdir of its own: a starting server deletes every #sql file in its tmpdir, so
    # with a shared /tmp it took the on-disk temporary tables of the others' queries.
    mkdir -p "$STACK_DB_DIR/tmp"
    stack_spawn "$STACK_DB_DIR/mysqld.out" mariadbd --no-defaults \
        --datadir="$STACK_DB_DATA" --socket="$STACK_DB_SOCK" --port="$port" \
        --tmpdir="$STACK_DB_DIR/tmp" \
        --bind-address=127.0.0.1 --skip-name-resolve --user=root \
        --pid-file="$STACK_DB_PIDFILE" --log-error="$STACK_DB_ERR" \
        --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
        ${STACK_DB_OPTS[@]+"${STACK_DB_OPTS[@]}"}
    stack_wait_ready "$STACK_DB_START_TIMEOUT" "$STACK_SPAWNED_PID" stack_db_ping || rc=$?
    ((rc == 0)) && return 0
    stack_tail "$STACK_DB_ERR"
    stack_tail "$STACK_DB_DIR/mysqld.out" 10
    ((rc == 2)) && stack_die "MariaDB exited during start-up (see $STACK_DB_ERR)"
    stack_kill_wait "$STACK_SPAWNED_PID" MariaDB 10 || true
    stack_die "MariaDB did not answer ping within ${STACK_DB_START_TIMEOUT}s (see $STACK_DB_ERR)"
}

# stack_db_stop — stop the private server if it runs; return once its pid is gone.
stack_db_stop() {
    local pid
    if ! pid=$(stack_db_pid); then
        stack_log "MariaDB not running"
        return 0
    fi
    stack_kill_wait "$pid" MariaDB "$STACK_DB_STOP_TIMEOUT"
}

# stack_random_hex BYTES — print 2*BYTES random hex digits.
stack_random_hex() {
    od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'
}

# stack_db_provision — database `asyncexec`, user asyncexec@localhost and @127.0.0.1 with
# ALL on it. The password is random and kept in STACK_DB_PWFILE (0600; reused if present).
stack_db_provision() {
    local pw
    if [[ -s $STACK_DB_PWFILE ]]; then
        read -r pw <"$STACK_DB_PWFILE"
    else
        pw=$(stack_random_hex 24)
        (umask 077 && printf '%s\n' "$pw" >"$STACK_DB_PWFILE")
    fi
    chmod 0600 "$STACK_DB_PWFILE"
    [[ $pw =~ ^[0-9a-f]+$ ]] || stack_die "unexpected content in $STACK_DB_PWFILE"
    # The password travels on stdin, never on a command line.
    stack_db_sql <<SQL || stack_die "could not create the asyncexec database and user"
CREATE DATABASE IF NOT EXISTS asyncexec CHARACTER SET utf8mb4;
CREATE USER IF NOT EXISTS 'asyncexec'@'localhost' IDENTIFIED BY '$pw';
CREATE USER IF NOT EXISTS 'asyncexec'@'127.0.0.1' IDENTIFIED BY '$pw';
ALTER USER 'asyncexec'@'localhost' IDENTIFIED BY '$pw';
ALTER USER 'asyncexec'@'127.0.0.1' IDENTIFIED BY '$pw';
GRANT ALL PRIVILEGES ON asyncexec.* TO 'asyncexec'@'localhost';
GRANT ALL PRIVILEGES ON asyncexec.* TO 'asyncexec'@'127.0.0.1';
SQL
}

# ---- application ------------------------------------------------------------------------

# stack_webhook_key — STACK_WEBHOOK_KEY, the key webhook secrets are sealed under (one
# line, the standard base64 of 32 random bytes, 0640), made once and never replaced: the
# secrets stored under it would no longer open.
stack_webhook_key() {
    if [[ ! -s $STACK_WEBHOOK_KEY ]]; then
        (umask 027 && head -c 32 /dev/urandom | base64 >"$STACK_WEBHOOK_KEY") ||
            stack_die "could not write $STACK_WEBHOOK_KEY"
    fi
    chmod 0640 "$STACK_WEBHOOK_KEY"
}

# stack_write_config DB_PORT — write STACK_CONF (keys as in the spec), and the webhook
# key file it names (stack_webhook_key).
stack_write_config() {
    local sock
    for sock in "$STACK_APP_SOCK" "$STACK_DB_SOCK"; do   # sun_path holds 107 bytes
        ((${#sock} <= 107)) || stack_die "socket path too long (max 107 bytes): $sock"
    done
    stack_webhook_key
    cat >"$STACK_CONF" <<EOF
# asyncexec configuration for the private stack in $STACK_STATE
# (written by scripts/lib/stack.sh; rewritten on every start).

# MariaDB: the unix socket is used; host/port are the TCP fallback of the same server.
db_socket = $STACK_DB_SOCK
db_host = 127.0.0.1
db_port = $1
db_name = asyncexec
db_user = asyncexec
db_password_file = $STACK_DB_PWFILE
db_connect_timeout = 2

# FastCGI socket: only its owner and nginx's workers (group ${STACK_NGINX_USER:-of the owner}) connect.
listen = $STACK_APP_SOCK
listen_mode = 0660
${STACK_NGINX_USER:+listen_group = $STACK_NGINX_USER}
workers = ${STACK_WORKERS:-4}

# Worker caches of keys, routes and grants: a revoked key stops working within this.
cache_ttl_seconds = ${STACK_CACHE_TTL:-5}

# The key webhook secrets are sealed under (asyncexec-admin webhook, asyncexec-notify).
webhook_key_file = $STACK_WEBHOOK_KEY

log_level = info
EOF
}

stack_app_pid() { stack_pid_from_file "$STACK_APP_PIDFILE" "$STACK_APP_COMM"; }

# stack_migrate ADMIN_BIN — apply the schema.
stack_migrate() {
    stack_log "migrating: $1 --config $STACK_CONF migrate"
    "$1" --config "$STACK_CONF" migrate || stack_die "asyncexec-admin migrate failed"
}

# stack_db_up PORT ADMIN — the private database up and ready for the app: the data
# directory (stack_db_init: STACK_DB_CREATED=1 when it is new), mariadbd on 127.0.0.1:PORT
# (stack_db_start), the asyncexec database and user (stack_db_provision), STACK_CONF for
# that port (stack_write_config: STACK_CACHE_TTL and STACK_WORKERS as set) and the schema
# (stack_migrate ADMIN, its output on stdout).
stack_db_up() {
    stack_db_init
    stack_db_start "$1"
    stack_db_provision
    stack_write_config "$1"
    stack_migrate "$2"
}

# stack_app_start FCGI_BIN — start asyncexec-fcgi unless it runs; wait for its socket.
stack_app_start() {
    local bin=$1 pid rc=0
    if pid=$(stack_app_pid); then
        stack_log "asyncexec-fcgi already running (pid $pid)"
        return 0
    fi
    "$bin" --config "$STACK_CONF" --check-config >/dev/null ||
        stack_die "$bin rejected $STACK_CONF"
    rm -f "$STACK_APP_SOCK"        # stale socket: the wait below must see a fresh one
    stack_log "starting asyncexec-fcgi (log $STACK_APP_LOG)"
    stack_spawn "$STACK_APP_LOG" "${STACK_APP_WRAPPER[@]}" "$bin" --config "$STACK_CONF"
    printf '%s\n' "$STACK_SPAWNED_PID" >"$STACK_APP_PIDFILE"
    stack_wait_ready "$STACK_APP_START_TIMEOUT" "$STACK_SPAWNED_PID" test -S "$STACK_APP_SOCK" ||
        rc=$?
    ((rc == 0)) && return 0
    stack_tail "$STACK_APP_LOG"
    ((rc == 2)) && stack_die "asyncexec-fcgi exited during start-up (see $STACK_APP_LOG)"
    stack_kill_wait "$STACK_SPAWNED_PID" asyncexec-fcgi 10 || true
    stack_die "asyncexec-fcgi did not create $STACK_APP_SOCK within ${STACK_APP_START_TIMEOUT}s"
}

# stack_app_stop — SIGTERM (graceful) and wait until the master is gone.
stack_app_stop() {
    local pid
    if ! pid=$(stack_app_pid); then
        stack_log "asyncexec-fcgi not running"
        return 0
    fi
    stack_kill_wait "$pid" asyncexec-fcgi "$STACK_APP_STOP_TIMEOUT" || return 1
    rm -f "$STACK_APP_PIDFILE"
}

# stack_provision_keys ADMIN_BIN KEYS ROUTE LABEL — the demo route ROUTE (added unless it
# exists), a consumer key (tenant demo, label LABEL) and a backend key for ROUTE, saved to
# KEYS (0600). Reused when KEYS exists (the database is the one they were created in).
stack_provision_keys() {
    local admin=$1 keys=$2 route=$3 label=$4 ak bk
    if [[ -s $keys ]]; then
        stack_log "reusing keys from $keys"
        return 0
    fi
    if "$admin" --config "$STACK_CONF" route add "$route" >/dev/null; then
        stack_log "route $route added"
    elif [[ $("$admin" --config "$STACK_CONF" route list 2>/dev/null) == *"$route"* ]]; then
        stack_log "route $route exists already"
    else
        stack_die "could not add route $route"
    fi
    ak=$("$admin" --config "$STACK_CONF" key create --tenant demo --label "$label") ||
        stack_die "key create failed"
    [[ $ak =~ ^ak_[A-Za-z0-9_-]{43}$ ]] || stack_die "key create printed an unexpected key"
    bk=$("$admin" --config "$STACK_CONF" backend-key create --route "$route") ||
        stack_die "backend-key create failed"
    [[ $bk =~ ^bk_[A-Za-z0-9_-]{43}$ ]] || stack_die "backend-key create printed an unexpected key"
    (umask 077 && printf 'ASYNCEXEC_CONSUMER_KEY=%s\nASYNCEXEC_BACKEND_KEY=%s\n' "$ak" "$bk" >"$keys")
    stack_log "created a consumer key (tenant demo) and a backend key for $route; saved in $keys"
}

# stack_print_try BASE KEYS — the curl walk-through of the demo route (demo/echo/run) with
# the keys saved in KEYS, against the nginx at BASE (http://host:port).
stack_print_try() {
    local ak bk
    ak=$(sed -n 's/^ASYNCEXEC_CONSUMER_KEY=//p' "$2")
    bk=$(sed -n 's/^ASYNCEXEC_BACKEND_KEY=//p' "$2")
    cat <<EOF
Try it (paste into bash; each step uses values captured by the previous one):

BASE=$1
AK=$ak
BK=$bk
EOF
    cat <<'EOF'
CID=demo-$(date +%s)

# 1. submit: 202 with correlationId and pollToken
R=$(curl -sS -X POST "$BASE/v1/executions/demo/echo/run" -H "Authorization: Bearer $AK" \
  -H 'Content-Type: application/json' -H "X-Correlation-Id: $CID" -d '{"hello":"world"}'); echo "$R"
POLL=$(printf '%s' "$R" | sed -n 's/.*"pollToken": *"\([^"]*\)".*/\1/p')

# 2. poll: status waiting_callback
curl -sS -i "$BASE/v1/executions/demo/echo/run/$CID" -H "Authorization: Bearer $AK" -H "X-Poll-Token: $POLL"; echo

# 3. claim as the backend: id and callbackToken
R=$(curl -sS -X POST "$BASE/v1/backend/demo/echo/run/claim" -H "Authorization: Bearer $BK" \
  -H 'Content-Type: application/json' -d '{"max":1,"leaseSeconds":60}'); echo "$R"
ID=$(printf '%s' "$R" | sed -n 's/.*"id": *\([0-9]*\).*/\1/p')
CBT=$(printf '%s' "$R" | sed -n 's/.*"callbackToken": *"\([^"]*\)".*/\1/p')

# 4. complete with a result
curl -sS -i -X POST "$BASE/v1/callbacks/$ID/complete" -H "Authorization: Bearer $BK" \
  -H "X-Callback-Token: $CBT" -H 'Content-Type: application/json' -d '{"result":{"echo":{"hello":"world"}}}'; echo

# 5. poll again: status completed, with the result
curl -sS -i "$BASE/v1/executions/demo/echo/run/$CID" -H "Authorization: Bearer $AK" -H "X-Poll-Token: $POLL"; echo
EOF
}

# ---- nginx ------------------------------------------------------------------------------

stack_nginx_pid() { stack_pid_from_file "$STACK_NGINX_PIDFILE" nginx; }

# stack_nginx_render PORT — site.conf from nginx/asyncexec.conf (listen and socket
# rewritten) wrapped in a complete nginx.conf whose files all live in STACK_NGINX_DIR.
stack_nginx_render() {
    local port=$1 d=$STACK_NGINX_DIR mport
    mkdir -p "$d"
    # the loopback-only metrics server gets a free port of its own
    if [[ ! -s $d/metrics-port ]] || stack_port_in_use "$(cat "$d/metrics-port")"; then
        stack_free_port >"$d/metrics-port"
    fi
    mport=$(cat "$d/metrics-port")
    sed -e "s|^\([[:space:]]*\)listen 80;|\1listen 127.0.0.1:$port;|" \
        -e "s|^\([[:space:]]*\)listen 127.0.0.1:9180;|\1listen 127.0.0.1:$mport;|" \
        -e "s|/var/log/nginx/asyncexec.access.log|$d/access.log|" \
        -e "s|unix:/run/asyncexec/asyncexec.sock|unix:$STACK_APP_SOCK|g" \
        "$STACK_ROOT/nginx/asyncexec.conf" >"$d/site.conf"
    grep -q "listen 127.0.0.1:$port;" "$d/site.conf" ||
        stack_die "nginx/asyncexec.conf has no 'listen 80;' line to rewrite"
    grep -q "listen 127.0.0.1:$mport;" "$d/site.conf" ||
        stack_die "nginx/asyncexec.conf has no 'listen 127.0.0.1:9180;' line to rewrite"
    grep -q "unix:$STACK_APP_SOCK;" "$d/site.conf" ||
        stack_die "nginx/asyncexec.conf has no 'server unix:/run/asyncexec/asyncexec.sock;' (upstream asyncexec_app)"
    mkdir -p "$STACK_RUN/nginx-tmp"
    cat >"$d/nginx.conf" <<EOF
# Private nginx for the stack in $STACK_STATE (written by scripts/lib/stack.sh).
${STACK_NGINX_USER:+user $STACK_NGINX_USER $STACK_NGINX_USER;}
worker_processes 2;
pid $STACK_NGINX_PIDFILE;
error_log $STACK_NGINX_ERR warn;

events {
    worker_connections 1024;
}

http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log $d/access.log;
    client_body_temp_path $STACK_RUN/nginx-tmp/client_body;
    fastcgi_temp_path $STACK_RUN/nginx-tmp/fastcgi;
    proxy_temp_path $STACK_RUN/nginx-tmp/proxy;
    uwsgi_temp_path $STACK_RUN/nginx-tmp/uwsgi;
    scgi_temp_path $STACK_RUN/nginx-tmp/scgi;
    keepalive_timeout 65;

    include $d/site.conf;
}
EOF
}

# stack_check_worker_access — as root, nginx's workers run as STACK_NGINX_USER: they must
# be able to enter the directory of the application socket and of nginx's temporary files.
stack_check_worker_access() {
    [[ -n $STACK_NGINX_USER ]] || return 0
    runuser -u "$STACK_NGINX_USER" -- test -x "$STACK_RUN" 2>/dev/null ||
        stack_die "user $STACK_NGINX_USER (nginx workers) cannot enter $STACK_RUN; make its parent directories searchable by it (chmod o+x) or use another location"
}

# stack_healthz PORT — true when GET /healthz through nginx succeeds.
stack_healthz() {
    curl -fsS --max-time 2 -o /dev/null "http://127.0.0.1:$1/healthz" 2>/dev/null
}

# stack_nginx_start PORT — render, check and start nginx; wait until /healthz answers.
# STACK_NGINX_RENDER names the render function (default stack_nginx_render; the cluster's
# wraps it, scripts/lib/cluster.sh).
stack_nginx_start() {
    local port=$1 d=$STACK_NGINX_DIR pid
    if pid=$(stack_nginx_pid); then
        stack_log "nginx already running (pid $pid)"
        return 0
    fi
    stack_port_in_use "$port" && stack_die "port $port is in use; cannot start nginx there"
    stack_check_worker_access
    "${STACK_NGINX_RENDER:-stack_nginx_render}" "$port"
    nginx -t -q -p "$d/" -c "$d/nginx.conf" || stack_die "nginx -t rejected $d/nginx.conf"
    printf '%s\n' "$port" >"$d/port"
    stack_log "starting nginx on 127.0.0.1:$port (config $d/nginx.conf)"
    # nginx daemonizes itself; its pid lands in STACK_NGINX_PIDFILE.
    if ! nginx -p "$d/" -c "$d/nginx.conf" </dev/null >>"$d/startup.log" 2>&1; then
        stack_tail "$d/startup.log"
        stack_die "nginx failed to start"
    fi
    if ! stack_wait "$STACK_NGINX_START_TIMEOUT" stack_healthz "$port"; then
        stack_tail "$STACK_NGINX_ERR"
        stack_tail "$STACK_APP_LOG"
        stack_die "GET http://127.0.0.1:$port/healthz did not succeed within ${STACK_NGINX_START_TIMEOUT}s"
    fi
}

# stack_nginx_stop — fast shutdown (SIGTERM) and wait until the master is gone.
stack_nginx_stop() {
    local pid
    if ! pid=$(stack_nginx_pid); then
        stack_log "nginx not running"
        return 0
    fi
    stack_kill_wait "$pid" nginx "$STACK_NGINX_STOP_TIMEOUT"
}

# stack_stop_all — nginx, then the application, then MariaDB. Non-zero if any failed.
stack_stop_all() {
    local rc=0
    stack_nginx_stop || rc=1
    stack_app_stop || rc=1
    stack_db_stop || rc=1
    return "$rc"
}

# stack_finish RC WARNING — the end of a script's EXIT trap: stop the stack (WARNING if
# something did not stop), keep the state directory when RC failed and ASYNCEXEC_KEEP=1,
# else remove it; exit RC.
stack_finish() {
    local rc=$1
    stack_stop_all || stack_warn "$2"
    if ((rc != 0)) && [[ ${ASYNCEXEC_KEEP:-0} == 1 ]]; then
        stack_log "kept $STACK_STATE"
    else
        rm -rf "$STACK_STATE"
    fi
    exit "$rc"
}

# stack_traps FUNC — run FUNC on exit; INT and TERM exit 130 and 143 (so FUNC runs too).
stack_traps() {
    trap "$1" EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# ---- ctest ------------------------------------------------------------------------------

STACK_CTEST_PID=

# stack_run_ctest BUILD ARGS... — ctest --output-on-failure -j2 ARGS in BUILD, in its own
# process group (so that an interrupt can end all of it: stack_stop_ctest); its status.
stack_run_ctest() {
    local build=$1 rc=0
    shift
    # --no-tests=error: a filter that selects no test fails rather than passes.
    stack_log "running: ctest --test-dir $build --output-on-failure --no-tests=error -j2 $*"
    setsid ctest --test-dir "$build" --output-on-failure --no-tests=error -j2 "$@" &
    STACK_CTEST_PID=$!
    wait "$STACK_CTEST_PID" || rc=$?
    STACK_CTEST_PID=
    return "$rc"
}

# stack_stop_ctest — if ctest still runs (we were interrupted), end its process group.
stack_stop_ctest() {
    [[ -n $STACK_CTEST_PID ]] && stack_pid_alive "$STACK_CTEST_PID" || return 0
    stack_log "stopping ctest (process group $STACK_CTEST_PID)"
    kill -s TERM -- "-$STACK_CTEST_PID" 2>/dev/null || true
    if ! stack_wait 10 stack_pid_gone "$STACK_CTEST_PID"; then
        kill -s KILL -- "-$STACK_CTEST_PID" 2>/dev/null || true
    fi
}

# ---- throwaway database for the statement benchmarks -----------------------------------

# stack_scratch_init ROOT PREFIX — a temporary state directory for a benchmark that needs
# only MariaDB: sets STACK_TMP (removed on exit, with the server stopped, by an EXIT trap
# this installs) and STACK_BUILD (ASYNCEXEC_BUILD_DIR or STACK_TMP/build).
stack_scratch_init() {
    STACK_TMP=$(mktemp -d "${TMPDIR:-/tmp}/asyncexec-$2.XXXXXX")
    stack_init "$1" "$STACK_TMP" "$2"
    STACK_BUILD=${ASYNCEXEC_BUILD_DIR:-$STACK_TMP/build}
    trap stack_scratch_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# stack_scratch_cleanup — the EXIT trap of stack_scratch_init; keeps the exit status.
stack_scratch_cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    ((rc == 0)) || stack_tail "$STACK_DB_ERR" 20
    stack_db_stop || stack_warn "MariaDB did not stop"
    rm -rf "$STACK_TMP"
    exit "$rc"
}

# stack_pid_jiffies PID — user + system jiffies PID has used (all its threads).
stack_pid_jiffies() {
    local stat
    stat=$(cat "/proc/$1/stat")
    stat=${stat##*) }
    awk '{ print $12 + $13 }' <<<"$stat"
}
