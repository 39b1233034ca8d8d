#!/usr/bin/env bash
# scripts/bench-sql.sh — what each hot-path statement costs inside MariaDB, without nginx,
# FastCGI or the application: the evidence behind the bounds in README "Performance".
#
#   scripts/bench-sql.sh            (BENCH_SQL_N statements per variant, default 5000)
#
# Starts a throwaway private MariaDB (as scripts/bench-expire.sh does; state in a temporary
# directory, removed at the end), applies the migrations with asyncexec-admin, loads
# executions, and sends BENCH_SQL_N statements of each variant through one mariadb client
# session (text protocol, autocommit). For each it prints the wall time and the CPU time of
# mariadbd per statement, the latter including the 2 s after the batch, so that InnoDB's
# background purge of what an UPDATE left behind is counted:
#   insert_probe      the insert probe's INSERT (tests/bench/bench_probe.c): narrow table
#   insert_submit     submit's INSERT into s2r_async_execution (primary key + 4 indexes)
#   select_pk         poll's columns by primary key (the poll read since schema 3)
#   select_unique     the same by the unique (tenant, route, correlation id) key
#   update_complete   complete's compare-and-set UPDATE (status, result, times)
#   update_no_status  the same UPDATE without the status change: no secondary index moves
#   update_no_index   update_complete on a copy of the table without ix_exec_claim,
#                     ix_exec_expiry and ix_exec_abandon
# The figures are meaningful on an otherwise idle machine only.
# Environment: ASYNCEXEC_BUILD_DIR (default: a Release build in the temporary directory).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/stack.sh
source "$ROOT/scripts/lib/stack.sh"

N=${BENCH_SQL_N:-5000}
[[ $N =~ ^[1-9][0-9]*$ ]] || { echo "bench-sql: BENCH_SQL_N must be a positive number" >&2; exit 1; }

stack_scratch_init "$ROOT" bench-sql
TMP=$STACK_TMP
BUILD=$STACK_BUILD

sql() { mariadb --no-defaults --user=root --socket="$STACK_DB_SOCK" asyncexec "$@"; }

# gen VARIANT FIRST — N statements of VARIANT on rows FIRST+1 .. FIRST+N.
gen() {
    awk -v V="$1" -v F="$2" -v N="$N" '
    BEGIN {
        res = "{\"bench\":\"complete\",\"ok\":true,\"values\":[1,2,3]}"
        cas = " WHERE id = %d AND status = '\''waiting_callback'\'' AND " \
              "callback_token_hash = UNHEX(SHA2('\''cb'\'', 256));\n"
        cols = "id, status, initiator_key_hash, poll_token_hash, cancel_requested, " \
               "created_at, updated_at, completed_at, expires_at, result_payload, error_payload"
        for (i = F + 1; i <= F + N; i++) {
            if (V == "insert_probe")
                printf "INSERT INTO probe (payload, created_at) VALUES " \
                       "('\''{\"bench\":\"insert\",\"n\":%d}'\'', UTC_TIMESTAMP(3));\n", i
            else if (V == "insert_submit")
                printf "INSERT INTO s2r_async_execution (correlation_id, environment, " \
                       "service_key, operation_key, status, request_payload, request_sha256, " \
                       "initiator_tenant_id, initiator_key_hash, poll_token_hash, created_at, " \
                       "updated_at, expires_at) VALUES ('\''sub-%d'\'', '\''bench'\'', " \
                       "'\''svc'\'', '\''op'\'', '\''waiting_callback'\'', " \
                       "'\''{\"bench\":\"submit\",\"n\":%d}'\'', UNHEX(SHA2('\''r'\'', 256)), " \
                       "'\''tenant'\'', UNHEX(SHA2('\''k'\'', 256)), UNHEX(SHA2('\''p'\'', 256)), " \
                       "UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), UTC_TIMESTAMP(3) + INTERVAL 7 DAY);\n", i, i
            else if (V == "select_pk")
                printf "SELECT %s FROM s2r_async_execution WHERE id = %d AND " \
                       "initiator_tenant_id = '\''tenant'\'' AND environment = '\''bench'\'' AND " \
                       "service_key = '\''svc'\'' AND operation_key = '\''op'\'' AND " \
                       "correlation_id = '\''bench-%d'\'';\n", cols, i, i
            else if (V == "select_unique")
                printf "SELECT %s FROM s2r_async_execution WHERE " \
                       "initiator_tenant_id = '\''tenant'\'' AND environment = '\''bench'\'' AND " \
                       "service_key = '\''svc'\'' AND operation_key = '\''op'\'' AND " \
                       "correlation_id = '\''bench-%d'\'';\n", cols, i
            else if (V == "update_complete" || V == "update_no_index")
                printf "UPDATE %s SET status = '\''completed'\'', result_payload = '\''%s'\'', " \
                       "completed_at = UTC_TIMESTAMP(3), updated_at = UTC_TIMESTAMP(3)" cas,
                       V == "update_complete" ? "s2r_async_execution" : "noindex", res, i
            else if (V == "update_no_status")
                printf "UPDATE s2r_async_execution SET result_payload = '\''%s'\'', " \
                       "completed_at = UTC_TIMESTAMP(3), updated_at = UTC_TIMESTAMP(3)" cas, res, i
        }
    }'
}

# measure VARIANT FIRST — one batch; prints the row of the table.
measure() {
    local db_pid c0 c1 t0 t1 hz
    gen "$1" "$2" >"$TMP/q.sql"
    db_pid=$(stack_db_pid)
    hz=$(getconf CLK_TCK)
    c0=$(stack_pid_jiffies "$db_pid")
    t0=$(date +%s%N)
    sql <"$TMP/q.sql" >/dev/null
    t1=$(date +%s%N)
    sleep 2
    c1=$(stack_pid_jiffies "$db_pid")
    printf '%-18s %8d %12d %14d\n' "$1" "$N" $(((t1 - t0) / 1000 / N)) \
        $(((c1 - c0) * 1000000 / hz / N))
}

main() {
    local port rows
    stack_log "state in $TMP"
    stack_install_packages
    stack_build "$BUILD" Release -DBUILD_TESTING=OFF >"$TMP/build.log" 2>&1 ||
        { tail -n 30 "$TMP/build.log" >&2; exit 1; }
    port=$(stack_free_port)
    stack_db_up "$port" "$BUILD/asyncexec-admin" >/dev/null
    rows=$((4 * N))
    stack_log "loading $rows waiting, claimed executions"
    sql >/dev/null <<SQL
CREATE TABLE probe (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  payload BLOB NOT NULL, created_at DATETIME(3) NOT NULL) ENGINE=InnoDB;
INSERT INTO s2r_async_execution (correlation_id, environment, service_key,
  operation_key, status, request_payload, request_sha256, initiator_tenant_id,
  initiator_key_hash, poll_token_hash, callback_token_hash, attempts,
  lease_expires_at, created_at, updated_at, expires_at)
SELECT CONCAT('bench-', seq), 'bench', 'svc', 'op', 'waiting_callback',
  CONCAT('{"n":', seq, '}'), UNHEX(SHA2(seq, 256)), 'tenant', UNHEX(SHA2('k', 256)),
  UNHEX(SHA2(CONCAT('poll', seq), 256)), UNHEX(SHA2('cb', 256)), 1,
  UTC_TIMESTAMP(3) + INTERVAL 1 HOUR, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3),
  UTC_TIMESTAMP(3) + INTERVAL 7 DAY
FROM seq_1_to_${rows};
CREATE TABLE noindex LIKE s2r_async_execution;
ALTER TABLE noindex DROP KEY ix_exec_claim, DROP KEY ix_exec_expiry, DROP KEY ix_exec_abandon;
INSERT INTO noindex SELECT * FROM s2r_async_execution;
ANALYZE TABLE s2r_async_execution, noindex, probe;
SQL
    printf '%-18s %8s %12s %14s\n' variant statements wall_us/stmt mariadbd_us/stmt
    measure insert_probe 0
    measure insert_submit 0
    measure select_pk 0
    measure select_unique 0
    measure update_complete 0
    measure update_no_status "$N"
    measure update_no_index 0
}

main "$@"
