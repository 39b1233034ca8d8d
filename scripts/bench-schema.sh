#!/usr/bin/env bash
# scripts/bench-schema.sh — what a schema change costs inside MariaDB: the submit INSERT and
# the claim of this tree against those of an earlier revision, on one server, side by side.
#
#   scripts/bench-schema.sh REV     (BENCH_SCHEMA_N operations per batch, default 3000;
#                                    BENCH_SCHEMA_ROUNDS rounds, default 3;
#                                    BENCH_SCHEMA_DROP="KEY ..." secondary keys of
#                                    s2r_async_execution dropped from "cur" before the
#                                    load: what an index costs to submit and complete,
#                                    with REV = HEAD; not ix_exec_claim, which cur's
#                                    claim forces; the claim row is then meaningless, ref
#                                    running contract v2's select, see below;
#                                    BENCH_SCHEMA_MARK=0: cur's complete sets notify = 0
#                                    instead of the webhook mark's subquery: what the mark
#                                    costs, with REV = HEAD)
#
# Starts a throwaway private MariaDB (state in a temporary directory, removed at the end),
# creates two databases, "ref" from REV's sql/*.sql and "cur" from this tree's, each with
# 100,000 executions of another route in it, and then, round after round, ref first, then
# cur, sends through one mariadb client session (autocommit, READ COMMITTED as the
# application's sessions are, src/db/db.c; each statement prepared once per batch and
# executed with its values, as the application's are):
#   submit     BENCH_SCHEMA_N submit INSERTs into s2r_async_execution, with the columns
#              the binary of that schema writes (cur: priority, due_at, sched_hash and
#              initiator_lineage_id too; the lineage is a live consumer key);
#   claim_complete
#              BENCH_SCHEMA_N claims of one execution each (those submit left), each
#              followed by its complete: cur's claim is this tree's (the first claimable
#              id in claim order read without locks, with the lineage check, then START
#              TRANSACTION, that id locked by primary key with the claimable condition
#              tested again, the lease UPDATE, COMMIT), ref's the locking select of
#              contract v2's binary (REV before 127097e; a later REV is read as v2 too:
#              START TRANSACTION, the select, the lease UPDATE, COMMIT); then the
#              complete's UPDATE (the same statement in both); every claim finds the head
#              of the queue free, as the executions it took before are completed;
#   complete   BENCH_SCHEMA_N completes of executions loaded as claimed (the UPDATE of
#              src/repo/repo_stmts.c FIN_COMPLETE: status, result, payload_inline where the
#              schema has it, winner, times and the webhook mark; cur's pinned to the
#              primary key as this tree's is, ref's as it was before the pin).
# For each batch it records the CPU time of mariadbd per operation, including the 2 s after
# the batch (InnoDB's purge of what it left behind); claim = claim_complete - complete of
# the same round. The table (per round, the median, cur / ref) is
# scripts/lib/bench_schema.py's. The figures are meaningful on an otherwise idle machine
# only; the schema of REV must have the columns named above (schema 10 or later).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/stack.sh
source "$ROOT/scripts/lib/stack.sh"

REV=${1:-}
[[ -n $REV ]] || { echo "usage: scripts/bench-schema.sh REV" >&2; exit 2; }
git -C "$ROOT" rev-parse --verify -q "$REV^{commit}" >/dev/null ||
    { echo "bench-schema: $REV is not a commit of this repository" >&2; exit 2; }
N=${BENCH_SCHEMA_N:-3000}
ROUNDS=${BENCH_SCHEMA_ROUNDS:-3}
[[ $N =~ ^[1-9][0-9]*$ && $ROUNDS =~ ^[1-9][0-9]*$ ]] ||
    { echo "bench-schema: BENCH_SCHEMA_N and BENCH_SCHEMA_ROUNDS must be positive numbers" >&2; exit 2; }
DROP=${BENCH_SCHEMA_DROP:-}
MARK=${BENCH_SCHEMA_MARK:-1}
[[ $MARK == [01] ]] || { echo "bench-schema: BENCH_SCHEMA_MARK must be 0 or 1" >&2; exit 2; }
[[ $DROP =~ ^[a-z_[:space:]]*$ ]] ||
    { echo "bench-schema: BENCH_SCHEMA_DROP: key names (a-z and _), separated by spaces" >&2; exit 2; }

stack_scratch_init "$ROOT" bench-schema
TMP=$STACK_TMP
RECORDS=$TMP/records.txt

sql() { mariadb --no-defaults --user=root --socket="$STACK_DB_SOCK" --batch "$@"; }

# schema DB SOURCE — create database DB from the migrations SOURCE prints (in order).
schema() {
    local db=$1 f
    shift
    sql -e "CREATE DATABASE $db"
    sql "$db" -e "CREATE TABLE s2r_schema_version (version INT UNSIGNED NOT NULL PRIMARY KEY,
        applied_at DATETIME(3) NOT NULL) ENGINE=InnoDB"
    for f in $("$@" list); do
        "$@" cat "$f" | sql "$db" || stack_die "$db: migration $f failed"
    done
}
ref_sql() {
    if [[ $1 == list ]]; then
        git -C "$ROOT" ls-tree --name-only "$REV" sql/ | grep -E '^sql/[0-9]{3}_.*\.sql$' | sort
    else
        git -C "$ROOT" show "$REV:$2"
    fi
}
cur_sql() {
    if [[ $1 == list ]]; then
        (cd "$ROOT" && printf '%s\n' sql/[0-9][0-9][0-9]_*.sql | sort)
    else
        cat "$ROOT/$2"
    fi
}

# load DB — the other route's 100,000 executions (half completed), a live consumer key
# (its id is the lineage of what submit writes), and ROUNDS * N claimed ones for complete.
load() {
    sql "$1" >/dev/null <<SQL
INSERT INTO s2r_api_key (kind, key_hash, tenant_id, label, created_at)
  VALUES ('consumer', UNHEX(SHA2('bench-key', 256)), 'tenant', 'bench', UTC_TIMESTAMP(3));
INSERT INTO s2r_async_execution (correlation_id, environment, service_key, operation_key,
  status, request_payload, request_sha256, result_payload, initiator_tenant_id,
  initiator_key_hash, poll_token_hash, created_at, updated_at, completed_at, expires_at)
SELECT CONCAT('fill-', seq), 'fill', 'svc', 'op',
  IF(seq % 2 = 0, 'completed', 'waiting_callback'), '{"fill":1}', UNHEX(SHA2(seq, 256)),
  IF(seq % 2 = 0, '{"ok":true}', NULL), 'filler', UNHEX(SHA2('f', 256)),
  UNHEX(SHA2(CONCAT('p', seq), 256)), UTC_TIMESTAMP(3), UTC_TIMESTAMP(3),
  IF(seq % 2 = 0, UTC_TIMESTAMP(3), NULL), UTC_TIMESTAMP(3) + INTERVAL 7 DAY
FROM seq_1_to_100000;
INSERT INTO s2r_async_execution (correlation_id, environment, service_key, operation_key,
  status, request_payload, request_sha256, initiator_tenant_id, initiator_key_hash,
  poll_token_hash, callback_token_hash, attempts, lease_expires_at, created_at,
  updated_at, expires_at)
SELECT CONCAT('done-', seq), 'done', 'svc', 'op', 'waiting_callback', '{"n":1}',
  UNHEX(SHA2(seq, 256)), 'tenant', UNHEX(SHA2('k', 256)),
  UNHEX(SHA2(CONCAT('p', seq), 256)), UNHEX(SHA2('cb', 256)), 1,
  UTC_TIMESTAMP(3) + INTERVAL 1 HOUR, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3),
  UTC_TIMESTAMP(3) + INTERVAL 7 DAY
FROM seq_1_to_$((ROUNDS * N));
ANALYZE TABLE s2r_async_execution, s2r_api_key;
SQL
}

# has_column DB COLUMN — 1 when DB's s2r_async_execution has COLUMN, else 0.
has_column() {
    sql -N -e "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = '$1'
        AND table_name = 's2r_async_execution' AND column_name = '$2'"
}

# gen DB OP ROUND — the batch: its statements prepared once (server-side, as the
# application's are), then executed once per operation.
gen() {
    local mark=1
    [[ $1 == cur ]] && mark=$MARK
    awk -v DB="$1" -v OP="$2" -v R="$3" -v N="$N" -v MARK="$mark" \
        -v INLINE="$(has_column "$1" payload_inline)" '
    function claimable(prio) {
        return "WHERE environment = '\''bench'\'' AND service_key = '\''svc'\'' AND " \
            "operation_key = '\''op'\'' AND status = '\''waiting_callback'\'' AND " \
            "cancel_requested = 0 AND " prio "(lease_expires_at IS NULL OR " \
            "lease_expires_at <= UTC_TIMESTAMP(3)) AND expires_at > UTC_TIMESTAMP(3) AND " \
            "(not_before IS NULL OR not_before <= UTC_TIMESTAMP(3)) AND attempts < 5"
    }
    function prepare(name, text) {
        gsub(/'\''/, "'\'''\''", text)
        printf "PREPARE %s FROM '\''%s'\'';\n", name, text
    }
    BEGIN {
        h = "UNHEX(SHA2('\''x'\'', 256))"
        live = " AND (e.initiator_lineage_id IS NULL OR (SELECT 1 FROM s2r_api_key " \
            "lk0 FORCE INDEX (PRIMARY) WHERE lk0.id = e.initiator_lineage_id AND " \
            "(lk0.revoked_at IS NULL OR lk0.revoked_at > UTC_TIMESTAMP(3)) LIMIT 1) IS NOT " \
            "NULL OR (SELECT 1 FROM s2r_api_key lk FORCE INDEX (ix_key_lineage) WHERE " \
            "lk.lineage_id = e.initiator_lineage_id AND (lk.revoked_at IS NULL OR " \
            "lk.revoked_at > UTC_TIMESTAMP(3)) LIMIT 1) IS NOT NULL)"
        due = "due_at <= UTC_TIMESTAMP(3) + INTERVAL 5 SECOND AND "
        sel = "SELECT id, correlation_id, initiator_tenant_id, request_payload, attempts, " \
            "created_at INTO @id, @cid, @t, @req, @att, @ca FROM s2r_async_execution "
        res = "'\''{\"ok\":true}'\''"
        mark = MARK ? "EXISTS (SELECT 1 FROM s2r_webhook_endpoint w WHERE w.tenant_id " \
            "= s2r_async_execution.initiator_tenant_id AND w.enabled = 1)" : "0"
        pin = DB == "cur" ? "FORCE INDEX (PRIMARY) " : ""
        prepare("fin", "UPDATE s2r_async_execution " pin "SET status = '\''completed'\'', " \
            "result_payload = " res ", " (INLINE ? "payload_inline = " res ", " : "") \
            "winner_hash = " h ", completed_at = UTC_TIMESTAMP(3), updated_at = " \
            "UTC_TIMESTAMP(3), notify = " mark " WHERE id = ? AND status = " \
            "'\''waiting_callback'\'' AND callback_token_hash = UNHEX(SHA2(?, 256))")
        prepare("ins", "INSERT INTO s2r_async_execution (correlation_id, environment, " \
            "service_key, operation_key, status, request_payload, request_sha256, " \
            "initiator_tenant_id, initiator_key_hash, poll_token_hash, created_at, " \
            "updated_at, expires_at, initiator_lineage" (DB == "cur" ? ", priority, " \
            "not_before, due_at, sched_hash, initiator_lineage_id" : "") ") VALUES " \
            "(CONCAT('\''sub-'\'', ?), '\''bench'\'', '\''svc'\'', '\''op'\'', " \
            "'\''waiting_callback'\'', CONCAT('\''{\"bench\":\"submit\",\"n\":'\'', ?, " \
            "'\''}'\''), " h ", '\''tenant'\'', " h ", " h ", UTC_TIMESTAMP(3), " \
            "UTC_TIMESTAMP(3), UTC_TIMESTAMP(3) + INTERVAL 7 DAY, " h \
            (DB == "cur" ? ", 0, NULL, UTC_TIMESTAMP(3), NULL, 1" : "") ")")
        if (DB == "cur") {
            prepare("ids", "SELECT id INTO @id FROM s2r_async_execution e FORCE INDEX " \
                "(ix_exec_claim) " claimable(due "priority IN (9, 8, 7, 6, 5, 4, 3, 2, " \
                "1, 0) AND ") live " ORDER BY priority DESC, due_at, id LIMIT 1")
            prepare("sel", sel "e FORCE INDEX (PRIMARY) " claimable(due) live \
                " AND id = ? LIMIT 1 FOR UPDATE SKIP LOCKED")
        } else
            prepare("sel", sel "FORCE INDEX (ix_exec_claim) " claimable("") \
                " ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED")
        prepare("lease", "UPDATE s2r_async_execution SET callback_token_hash = " h ", " \
            "lease_expires_at = UTC_TIMESTAMP(3) + INTERVAL 60 SECOND, " \
            (DB == "cur" ? "due_at = lease_expires_at, " : "") "attempts = " \
            "attempts + 1 WHERE id = ?")
        if (OP == "complete")   # @done + i: the id of done-i (loaded in one statement)
            print "SET @done = (SELECT id FROM s2r_async_execution WHERE correlation_id = " \
                "'\''done-1'\'' AND initiator_tenant_id = '\''tenant'\'' AND environment = " \
                "'\''done'\'' AND service_key = '\''svc'\'' AND operation_key = '\''op'\'') - 1;"
        print "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;"
        print "SET @x = '\''x'\'', @cb = '\''cb'\'';"
        for (i = (R - 1) * N + 1; i <= R * N; i++) {
            if (OP == "submit")
                printf "SET @i = %d;\nEXECUTE ins USING @i, @i;\n", i
            else if (OP == "complete")
                printf "SET @id = @done + %d;\nEXECUTE fin USING @id, @cb;\n", i
            else if (DB == "cur") {
                print "EXECUTE ids;\nSTART TRANSACTION;\nEXECUTE sel USING @id;"
                print "EXECUTE lease USING @id;\nCOMMIT;\nEXECUTE fin USING @id, @x;"
            } else {
                print "START TRANSACTION;\nEXECUTE sel;"
                print "EXECUTE lease USING @id;\nCOMMIT;\nEXECUTE fin USING @id, @x;"
            }
        }
    }'
}

# measure DB OP ROUND — one batch: a record "ROUND DB OP N MICROSECONDS".
measure() {
    local db_pid c0 c1 hz
    gen "$1" "$2" "$3" >"$TMP/q.sql"
    db_pid=$(stack_db_pid)
    hz=$(getconf CLK_TCK)
    c0=$(stack_pid_jiffies "$db_pid")
    sql "$1" <"$TMP/q.sql" >/dev/null
    sleep 2
    c1=$(stack_pid_jiffies "$db_pid")
    printf '%s %s %s %s %s\n' "$3" "$1" "$2" "$N" $(((c1 - c0) * 1000000 / hz)) >>"$RECORDS"
    stack_log "round $3, $1 $2: $(((c1 - c0) * 1000000 / hz / N)) us each"
}

main() {
    local port r db op
    stack_log "state in $TMP; $REV (ref) against this tree (cur)"
    stack_install_packages
    port=$(stack_free_port)
    stack_db_init
    stack_db_start "$port"
    schema ref ref_sql
    schema cur cur_sql
    ((MARK)) || stack_log "cur: complete without the webhook mark (notify = 0)"
    for k in $DROP; do
        sql cur -e "ALTER TABLE s2r_async_execution DROP KEY $k" ||
            stack_die "BENCH_SCHEMA_DROP: s2r_async_execution has no key $k"
        stack_log "cur: $k dropped"
    done
    load ref
    load cur
    : >"$RECORDS"
    for ((r = 1; r <= ROUNDS; r++)); do
        for op in submit claim_complete complete; do
            for db in ref cur; do
                measure "$db" "$op" "$r"
            done
        done
    done
    python3 "$ROOT/scripts/lib/bench_schema.py" "$RECORDS" "$REV"
}

main "$@"
