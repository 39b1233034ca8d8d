#!/usr/bin/env bash
# scripts/bench-expire.sh — benchmark asyncexec-expire on a private MariaDB.
#
# Builds (Release) into a temporary directory, starts a private MariaDB there (the same
# way scripts/test.sh does; the system's services are never touched), loads
# BENCH_ROWS (default 1,000,000) overdue executions — waiting, expires_at more than
# purge_grace_days in the past — plus BENCH_LIVE_ROWS (default 100,000) live ones that
# must survive, then runs one `asyncexec-expire`, which expires every overdue row and
# then purges it. Reports rows per second for the expire and the purge step and the
# longest single statement (each statement is its own autocommit transaction), and
# checks them against the targets (>= 50,000 rows/s each, no transaction over 100 ms).
#
# Environment: BENCH_ROWS, BENCH_LIVE_ROWS, BENCH_BATCH (--batch-size, default 1000),
# ASYNCEXEC_BUILD_DIR (default: inside the temporary directory).
# Exit status: 0 targets met, 1 missed or set-up failed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/stack.sh
source "$ROOT/scripts/lib/stack.sh"

ROWS=${BENCH_ROWS:-1000000}
LIVE=${BENCH_LIVE_ROWS:-100000}
BATCH=${BENCH_BATCH:-1000}
CHUNK=100000
TARGET_RATE=50000
TARGET_TX_MS=100

[[ $ROWS =~ ^[0-9]+$ && $LIVE =~ ^[0-9]+$ && $BATCH =~ ^[0-9]+$ ]] ||
    { echo "bench-expire: BENCH_ROWS, BENCH_LIVE_ROWS and BENCH_BATCH must be numbers" >&2; exit 1; }

stack_scratch_init "$ROOT" bench-expire
TMP=$STACK_TMP
BUILD=$STACK_BUILD

# load FIRST COUNT OFFSET_SQL — insert COUNT waiting executions numbered from FIRST
# whose expires_at is UTC now + OFFSET_SQL - (number) ms.
load() {
    local first=$1 count=$2 offset=$3 last
    last=$((first + count - 1))
    stack_db_sql <<SQL
USE asyncexec;
INSERT INTO s2r_async_execution (correlation_id, environment, service_key,
  operation_key, status, request_payload, request_sha256, initiator_tenant_id,
  initiator_key_hash, poll_token_hash, created_at, updated_at, expires_at)
SELECT CONCAT('bench-', seq), 'bench', 'svc', 'op', 'waiting_callback',
  CONCAT('{"n":', seq, '}'), UNHEX(SHA2(seq, 256)), 'tenant',
  UNHEX(SHA2('key', 256)), UNHEX(SHA2(CONCAT('poll', seq), 256)),
  UTC_TIMESTAMP(3) - INTERVAL 30 DAY, UTC_TIMESTAMP(3) - INTERVAL 30 DAY,
  UTC_TIMESTAMP(3) + $offset - INTERVAL seq * 1000 MICROSECOND
FROM seq_${first}_to_${last};
SQL
}

# count_rows WHERE — number of executions matching the condition.
count_rows() {
    mariadb --no-defaults --user=root --socket="$STACK_DB_SOCK" --batch -N \
        -e "SELECT COUNT(*) FROM asyncexec.s2r_async_execution WHERE $1"
}

# cpu_jiffies — "busy steal" jiffies of all CPUs together, from /proc/stat.
cpu_jiffies() {
    awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $9 }' /proc/stat
}

# field NAME LINE — the N of "NAME=N" in the summary line.
field() {
    sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$2"
}

main() {
    local port first n line expired purged expire_ms purge_ms tx_ms erate prate ok=1
    local db_pid busy0 busy1 steal0 steal1 db0 db1 t0 t1 hz cap own other steal
    stack_log "state in $TMP"
    stack_install_packages
    stack_build "$BUILD" Release -DBUILD_TESTING=OFF >"$TMP/build.log" 2>&1 ||
        { tail -n 30 "$TMP/build.log" >&2; exit 1; }
    [[ -x $BUILD/asyncexec-expire ]] || stack_die "no $BUILD/asyncexec-expire"
    port=$(stack_free_port)
    stack_db_up "$port" "$BUILD/asyncexec-admin" >/dev/null

    stack_log "loading $ROWS overdue executions (expires_at 8+ days ago) and $LIVE live ones"
    for ((first = 1; first <= ROWS; first += CHUNK)); do
        n=$((ROWS - first + 1 < CHUNK ? ROWS - first + 1 : CHUNK))
        load "$first" "$n" "INTERVAL -8 DAY"
    done
    for ((first = ROWS + 1; first <= ROWS + LIVE; first += CHUNK)); do
        n=$((ROWS + LIVE - first + 1 < CHUNK ? ROWS + LIVE - first + 1 : CHUNK))
        load "$first" "$n" "INTERVAL 7 DAY"
    done
    stack_db_sql <<<"ANALYZE TABLE asyncexec.s2r_async_execution;" >/dev/null
    stack_log "loaded: $(count_rows 1) rows"

    stack_log "running: asyncexec-expire --config $STACK_CONF --batch-size $BATCH --max-runtime 3600"
    db_pid=$(stack_db_pid)
    read -r busy0 steal0 < <(cpu_jiffies)
    db0=$(stack_pid_jiffies "$db_pid")
    t0=$(date +%s%N)
    line=$(/usr/bin/time -f '%U %S' -o "$TMP/expire.time" "$BUILD/asyncexec-expire" \
        --config "$STACK_CONF" --batch-size "$BATCH" --max-runtime 3600)
    t1=$(date +%s%N)
    read -r busy1 steal1 < <(cpu_jiffies)
    db1=$(stack_pid_jiffies "$db_pid")
    printf '%s\n' "$line"
    # What else ran meanwhile: CPU used by processes other than this MariaDB and
    # asyncexec-expire, and time stolen by the hypervisor, in % of all CPUs.
    hz=$(getconf CLK_TCK)
    cap=$(((t1 - t0) * hz * $(nproc) / 1000000000))  # jiffies all CPUs had
    own=$(awk -v hz="$hz" '{ printf "%d", ($1 + $2) * hz }' "$TMP/expire.time")
    other=$(((busy1 - busy0 - (db1 - db0) - own) * 100 / (cap > 0 ? cap : 1)))
    steal=$(((steal1 - steal0) * 100 / (cap > 0 ? cap : 1)))
    printf 'CPU during the run: MariaDB %s%%, other processes %s%%, steal %s%% (of %s CPUs)\n' \
        "$(((db1 - db0) * 100 / (cap > 0 ? cap : 1)))" "$((other < 0 ? 0 : other))" \
        "$steal" "$(nproc)"
    if ((other > 10 || steal > 10)); then
        stack_warn "other load on this machine disturbed the measurement; run again when it is idle"
    fi
    expired=$(field expired "$line")
    purged=$(field purged "$line")
    expire_ms=$(field expire_ms "$line")
    purge_ms=$(field purge_ms "$line")
    tx_ms=$(field longest_tx_ms "$line")
    [[ -n $expired && -n $purged && -n $tx_ms ]] || stack_die "unexpected summary line"
    ((expired == ROWS && purged == ROWS)) ||
        { stack_warn "expected $ROWS expired and purged"; ok=0; }
    n=$(count_rows "status = 'waiting_callback' AND environment = 'bench'")
    ((n == LIVE)) || { stack_warn "$n live rows left, expected $LIVE"; ok=0; }
    erate=$((expired * 1000 / (expire_ms > 0 ? expire_ms : 1)))
    prate=$((purged * 1000 / (purge_ms > 0 ? purge_ms : 1)))
    printf 'expire: %s rows in %s ms = %s rows/s\n' "$expired" "$expire_ms" "$erate"
    printf 'purge:  %s rows in %s ms = %s rows/s\n' "$purged" "$purge_ms" "$prate"
    printf 'longest single transaction: %s ms (batch size %s)\n' "$tx_ms" "$BATCH"
    ((erate >= TARGET_RATE && prate >= TARGET_RATE)) ||
        { stack_warn "below the target of $TARGET_RATE rows/s"; ok=0; }
    ((tx_ms <= TARGET_TX_MS)) || { stack_warn "a transaction took over $TARGET_TX_MS ms"; ok=0; }
    if ((ok)); then
        printf 'targets met (>= %s rows/s each, no transaction over %s ms)\n' \
            "$TARGET_RATE" "$TARGET_TX_MS"
        return 0
    fi
    return 1
}

main "$@"
