#!/usr/bin/env bash
# scripts/bench-migrate.sh — how long each migration after schema FROM takes on a large
# s2r_async_execution, and whether writes and reads go on meanwhile (one server).
#
#   scripts/bench-migrate.sh [ROWS] [--json FILE]
#       ROWS executions (at least 100; default 1,000,000); BENCH_MIGRATE_FROM the
#       schema they are loaded at (default 9, that of 0.2.0); BENCH_MIGRATE_RATE the
#       write client's cycles a second (default 50); BENCH_MIGRATE_BUFFER_POOL the
#       server's innodb_buffer_pool_size (default MariaDB's, 128M); ASYNCEXEC_BUILD_DIR
#       a build to use (default: a Release build inside the temporary directory).
#       --json FILE: the table as JSON too.
#
# Starts a throwaway private MariaDB (state in a temporary directory, removed at the end),
# runs `asyncexec-admin migrate --to FROM`, loads ROWS executions in batches of 100,000
# (INSERT ... SELECT from the sequence engine; 80 % completed with a result of about 100
# bytes, 10 % waiting, 5 % failed, 3 % expired, 2 % cancelled; 7 tenants with a consumer
# key each, 4 routes; the columns schema FROM has: scripts/lib/bench_migrate.py), and then
# applies each later migration on its own (`migrate --to K`, K = FROM+1 .. the latest),
# timing it, while a write client (one mariadb session, paced: an INSERT of a new
# execution, a heartbeat UPDATE of a waiting one by primary key and a read of one by
# primary key per cycle) records how long each of its statements waited. The table
# (scripts/lib/bench_migrate.py): per migration, its wall seconds, the client's
# statements that waited during it and the longest wait of a write and of a read, and
# the table's data and index size after it (information_schema, after ANALYZE TABLE).
# The figures are meaningful on an otherwise idle machine only.
# Exit status: 0, 1 when a migration or the set-up failed, 2 on a usage error.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/stack.sh
source "$ROOT/scripts/lib/stack.sh"

usage() { echo "usage: scripts/bench-migrate.sh [ROWS] [--json FILE]" >&2; exit 2; }
ROWS=1000000
JSON=
while (($#)); do
    case $1 in
        --json) (($# >= 2)) || usage; JSON=$(realpath -m "$2"); shift 2 ;;
        [0-9]*) ROWS=$1; shift ;;
        *) usage ;;
    esac
done
FROM=${BENCH_MIGRATE_FROM:-9}
RATE=${BENCH_MIGRATE_RATE:-50}
CHUNK=100000
POOL=${BENCH_MIGRATE_BUFFER_POOL:-}
[[ $ROWS =~ ^[1-9][0-9]{2,}$ && $FROM =~ ^[1-9][0-9]*$ && $RATE =~ ^[1-9][0-9]*$ ]] ||
    { echo "bench-migrate: ROWS (>= 100), BENCH_MIGRATE_FROM and" \
        "BENCH_MIGRATE_RATE must be positive numbers" >&2; exit 2; }
[[ -z $POOL || $POOL =~ ^[1-9][0-9]*[KMG]?$ ]] ||
    { echo "bench-migrate: BENCH_MIGRATE_BUFFER_POOL: a size such as 2G" >&2; exit 2; }
LATEST=$(cd "$ROOT/sql" && printf '%s\n' [0-9][0-9][0-9]_*.sql | sort | tail -n 1)
LATEST=$((10#${LATEST%%_*}))
((FROM < LATEST)) || { echo "bench-migrate: BENCH_MIGRATE_FROM must be below $LATEST" >&2; exit 2; }

stack_scratch_init "$ROOT" bench-migrate
TMP=$STACK_TMP
BUILD=$STACK_BUILD
PY=$ROOT/scripts/lib/bench_migrate.py
RECORDS=$TMP/records.txt
WRITER_PID=

sql() { mariadb --no-defaults --user=root --socket="$STACK_DB_SOCK" --batch -N asyncexec "$@"; }
admin() { "$BUILD/asyncexec-admin" --config "$STACK_CONF" "$@"; }

# size SCHEMA — the record of the table's data and index bytes (fresh statistics).
size() {
    sql -e "ANALYZE TABLE s2r_async_execution" >/dev/null
    printf 'size %s %s\n' "$1" "$(sql -e "SELECT data_length, index_length FROM
        information_schema.tables WHERE table_schema = 'asyncexec'
        AND table_name = 's2r_async_execution'")" >>"$RECORDS"
}

# stop_writer — end the write client (SIGTERM: it finishes its statement); its status.
stop_writer() {
    local rc=0
    [[ -n $WRITER_PID ]] || return 0
    kill -s TERM "$WRITER_PID" 2>/dev/null || true
    wait "$WRITER_PID" || rc=$?
    WRITER_PID=
    return "$rc"
}

# migrate_one K — migrate --to K with the write client running; its record.
migrate_one() {
    local k=$1 t0 t1 rc=0
    rm -f "$TMP/ready"
    python3 "$PY" writer "$STACK_DB_SOCK" asyncexec "$RATE" "$k" "$TMP/writes.$k" \
        "$TMP/ready" &
    WRITER_PID=$!
    stack_wait_ready 30 "$WRITER_PID" test -e "$TMP/ready" ||
        stack_die "the write client did not start (see $TMP/writes.$k.err)"
    t0=$(date +%s%N)
    admin migrate --to "$k" >>"$TMP/migrate.log" 2>&1 || rc=$?
    t1=$(date +%s%N)
    stop_writer || stack_die "the write client failed (see $TMP/writes.$k.err)"
    printf 'migrate %s %s %s %s\n' "$k" "$t0" "$t1" "$rc" >>"$RECORDS"
    stack_log "migration $k: status $rc, $(((t1 - t0) / 1000000)) ms"
    ((rc == 0)) || { tail -n 20 "$TMP/migrate.log" >&2; return 1; }
    size "$k"
}

# on_exit — the EXIT trap: the write client, then stack_scratch_cleanup's (the server
# and the temporary directory), keeping the exit status.
on_exit() {
    local rc=$?
    stop_writer || true
    set +e  # (exit RC) hands RC on as $?, which under set -e would end the trap here
    (exit "$rc")
    stack_scratch_cleanup
}

main() {
    local port first n k
    trap on_exit EXIT
    stack_log "state in $TMP; $ROWS executions at schema $FROM, then migrations to $LATEST"
    stack_install_packages
    if [[ -z ${ASYNCEXEC_BUILD_DIR:-} ]]; then
        stack_build "$BUILD" Release -DBUILD_TESTING=OFF >"$TMP/build.log" 2>&1 ||
            { tail -n 30 "$TMP/build.log" >&2; exit 1; }
    fi
    [[ -x $BUILD/asyncexec-admin ]] || stack_die "no $BUILD/asyncexec-admin"
    port=$(stack_free_port)
    stack_db_init
    # shellcheck disable=SC2034  # read by stack_db_start
    [[ -z $POOL ]] || STACK_DB_OPTS=(--innodb-buffer-pool-size="$POOL")
    stack_db_start "$port"
    stack_db_provision
    stack_write_config "$port"
    admin migrate --to "$FROM" >>"$TMP/migrate.log" 2>&1 ||
        { tail -n 20 "$TMP/migrate.log" >&2; stack_die "migrate --to $FROM failed"; }
    : >"$RECORDS"
    printf 'rows %s\nfrom %s\nrate %s\nmariadb %s\n' "$ROWS" "$FROM" "$RATE" \
        "$(sql -e 'SELECT CONCAT(VERSION(), ", innodb_buffer_pool_size ",
            @@innodb_buffer_pool_size DIV 1048576, "M")')" >>"$RECORDS"

    stack_log "loading $ROWS executions"
    python3 "$PY" load-sql "$FROM" 0 0 "$ROWS" | sql || stack_die "loading the keys failed"
    for ((first = 1; first <= ROWS; first += CHUNK)); do
        n=$((ROWS - first + 1 < CHUNK ? ROWS - first + 1 : CHUNK))
        python3 "$PY" load-sql "$FROM" "$first" $((first + n - 1)) "$ROWS" | sql ||
            stack_die "loading executions $first.. failed"
    done
    size "$FROM"
    stack_log "loaded: $(sql -e 'SELECT COUNT(*) FROM s2r_async_execution') rows"

    for ((k = FROM + 1; k <= LATEST; k++)); do
        migrate_one "$k" || break
    done
    python3 "$PY" table "$TMP" ${JSON:+--json "$JSON"}
}

main "$@"
