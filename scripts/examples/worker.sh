#!/bin/sh
# scripts/examples/worker.sh — an example asyncexec backend worker in POSIX sh + curl + jq.
#
#   ASYNCEXEC_URL=http://127.0.0.1:8080 ASYNCEXEC_BACKEND_KEY=bk_... \
#       scripts/examples/worker.sh ENV/SERVICE/OPERATION
#
# It claims one execution at a time, runs the work in the background while it heartbeats
# (every HEARTBEAT_SECONDS, with a progress value), and reports the outcome:
#   work exits 0   complete with the work's standard output (a JSON value) as the result
#   work exits 75  fail retryably ("retryAfterSeconds": RETRY_AFTER_SECONDS) while the
#                  server has attempts left; the last attempt becomes failed
#   other exit     fail for good with the work's standard error as the message
# A heartbeat that answers cancelRequested: true stops the work and acknowledges with the
# `cancelled` callback. A 409 means the claim is no longer ours (the lease lapsed and
# another claim took it, or it ended): the work is dropped, nothing is reported. A 503
# (or nginx's 429/502/504) is retried after its Retry-After, at most RETRIES times; a
# repeated complete/fail after a lost answer gets the same 200 again (the idempotent
# winner), so retrying a callback is safe.
# Scheduling (contract v3) needs no change here: claim order is the server's (priority, due).
#
# Environment:
#   ASYNCEXEC_URL          base URL (required), e.g. http://127.0.0.1:8080
#   ASYNCEXEC_BACKEND_KEY  backend key serving the route (required)
#   WORK_CMD               the work: a command run with the request JSON on standard input
#                          and ATTEMPT in its environment (default: the demo work below)
#   LEASE_SECONDS          lease per claim and heartbeat (default 30)
#   HEARTBEAT_SECONDS      heartbeat period (default LEASE_SECONDS / 3)
#   RETRY_AFTER_SECONDS    delay of a retryable failure (default 5)
#   IDLE_SECONDS           wait after an empty claim (default 2)
#   MAX_ITERATIONS         claims to make before exiting, empty ones included (0 = forever)
#   RETRIES                attempts of one HTTP call on 503/429/502/504 (default 5)
#
# Demo work (no WORK_CMD): the request may hold {"seconds":N} (work that long, reporting
# progress), {"failTimes":N} (fail retryably while ATTEMPT <= N), {"fatal":"message"}
# (fail for good); the result is {"echo":<request>,"attempt":ATTEMPT}.
#
# Exit status: 0 after MAX_ITERATIONS, 1 on a usage error, 2 when the server is
# unreachable or keeps refusing (401, 404, 5xx after RETRIES).
set -u

: "${ASYNCEXEC_URL:?set ASYNCEXEC_URL}"
: "${ASYNCEXEC_BACKEND_KEY:?set ASYNCEXEC_BACKEND_KEY}"
LEASE_SECONDS=${LEASE_SECONDS:-30}
HEARTBEAT_SECONDS=${HEARTBEAT_SECONDS:-$((LEASE_SECONDS / 3))}
RETRY_AFTER_SECONDS=${RETRY_AFTER_SECONDS:-5}
IDLE_SECONDS=${IDLE_SECONDS:-2}
MAX_ITERATIONS=${MAX_ITERATIONS:-0}
RETRIES=${RETRIES:-5}
[ $# -eq 1 ] || { echo "usage: $0 ENV/SERVICE/OPERATION" >&2; exit 1; }
ROUTE=$1
TMP=$(mktemp -d "${TMPDIR:-/tmp}/asyncexec-worker.XXXXXX") || exit 2
WORK_PID=
trap 'stop_work; rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

log() { printf 'worker: %s\n' "$*" >&2; }

# call METHOD PATH BODY [TOKEN] — one API call, retried on 503/429/502/504 after
# Retry-After. Sets STATUS; the body is in $TMP/body.
call() {
    n=0
    while :; do
        STATUS=$(curl -sS -o "$TMP/body" -D "$TMP/headers" -w '%{http_code}' \
            -X "$1" -H "Authorization: Bearer $ASYNCEXEC_BACKEND_KEY" \
            -H 'Content-Type: application/json' -H "X-Callback-Token: ${4:--}" \
            --data-binary "$3" "$ASYNCEXEC_URL$2") || STATUS=000
        case $STATUS in
        503|429|502|504|000) ;;
        *) return 0 ;;
        esac
        n=$((n + 1))
        [ "$n" -lt "$RETRIES" ] || return 0
        ra=$(sed -n 's/^[Rr]etry-[Aa]fter: *\([0-9][0-9]*\).*/\1/p' "$TMP/headers" 2>/dev/null)
        log "$1 $2: $STATUS, again in ${ra:-1} s"
        sleep "${ra:-1}"
    done
}

# The demo work: reads the request on standard input (see the header).
demo_work() {
    req=$(cat)
    secs=$(printf '%s' "$req" | jq -r '.seconds // 0')
    fail_times=$(printf '%s' "$req" | jq -r '.failTimes // 0')
    fatal=$(printf '%s' "$req" | jq -r '.fatal // empty')
    [ -z "$fatal" ] || { printf '%s' "$fatal" >&2; return 1; }
    [ "$ATTEMPT" -gt "$fail_times" ] || { printf 'try again (attempt %s)' "$ATTEMPT" >&2; return 75; }
    i=0
    while [ "$i" -lt "$secs" ]; do
        sleep 1
        i=$((i + 1))
        printf '%s\n' "$i" > "$TMP/progress"
    done
    printf '%s' "$req" | jq -c --argjson a "$ATTEMPT" '{echo: ., attempt: $a}'
}

stop_work() {
    [ -n "$WORK_PID" ] || return 0
    kill "$WORK_PID" 2>/dev/null
    wait "$WORK_PID" 2>/dev/null
    WORK_PID=
}

# heartbeat ID TOKEN ELAPSED — 0 to go on, 1 to drop the work (409), 2 when cancel was
# requested.
heartbeat() {
    step=$(cat "$TMP/progress" 2>/dev/null || echo 0)
    body=$(jq -cn --argjson l "$LEASE_SECONDS" --argjson e "$3" --argjson s "${step:-0}" \
        '{leaseSeconds: $l, progress: {elapsedSeconds: $e, step: $s}}')
    call POST "/v1/callbacks/$1/heartbeat" "$body" "$2"
    case $STATUS in
    200) [ "$(jq -r .cancelRequested "$TMP/body")" = true ] && return 2; return 0 ;;
    409) log "execution $1: the claim is no longer ours ($(jq -r .currentStatus "$TMP/body"))"
         return 1 ;;
    *)   log "execution $1: heartbeat $STATUS"; return 0 ;;
    esac
}

# report ID TOKEN VERB BODY — one finalizing callback; a 409 is logged, not retried.
report() {
    call POST "/v1/callbacks/$1/$3" "$4" "$2"
    case $STATUS in
    200) log "execution $1: $3 -> $(jq -r .status "$TMP/body")" ;;
    409) log "execution $1: $3 lost (currentStatus $(jq -r .currentStatus "$TMP/body"))" ;;
    *)   log "execution $1: $3 answered $STATUS" ;;
    esac
}

# run ITEM — does one claimed execution (ITEM: its JSON from the claim).
run() {
    id=$(printf '%s' "$1" | jq -r .id)
    tok=$(printf '%s' "$1" | jq -r .callbackToken)
    attempt=$(printf '%s' "$1" | jq -r .attempt)
    printf '%s' "$1" | jq -c .request > "$TMP/request"
    rm -f "$TMP/progress" "$TMP/out" "$TMP/err" "$TMP/rc"
    (
        export ATTEMPT="$attempt"
        if [ -n "${WORK_CMD:-}" ]; then sh -c "$WORK_CMD"; else demo_work; fi \
            < "$TMP/request" > "$TMP/out" 2> "$TMP/err"
        echo $? > "$TMP/rc"
    ) &
    WORK_PID=$!
    elapsed=0
    hb=0
    heartbeat "$id" "$tok" 0
    case $? in 1) stop_work; return ;; 2) stop_work; report "$id" "$tok" cancelled '{}'; return ;; esac
    while [ ! -s "$TMP/rc" ]; do
        sleep 1
        elapsed=$((elapsed + 1))
        hb=$((hb + 1))
        if [ -s "$TMP/rc" ] || [ "$hb" -lt "$HEARTBEAT_SECONDS" ]; then
            continue
        fi
        hb=0
        heartbeat "$id" "$tok" "$elapsed"
        case $? in
        1) stop_work; return ;;
        2) stop_work; report "$id" "$tok" cancelled '{}'; return ;;
        esac
    done
    wait "$WORK_PID" 2>/dev/null
    WORK_PID=
    rc=$(cat "$TMP/rc")
    msg=$(head -c 1000 "$TMP/err")
    if [ "$rc" -eq 0 ] && jq -e . "$TMP/out" >/dev/null 2>&1; then
        report "$id" "$tok" complete "$(jq -c '{result: .}' "$TMP/out")"
    elif [ "$rc" -eq 75 ]; then
        report "$id" "$tok" fail "$(jq -cn --arg m "$msg" --argjson r "$RETRY_AFTER_SECONDS" \
            '{error: {message: $m}, retryAfterSeconds: $r}')"
    else
        report "$id" "$tok" fail "$(jq -cn --arg m "${msg:-exit status $rc}" \
            '{error: {message: $m}}')"
    fi
}

iter=0
while [ "$MAX_ITERATIONS" -eq 0 ] || [ "$iter" -lt "$MAX_ITERATIONS" ]; do
    iter=$((iter + 1))
    call POST "/v1/backend/$ROUTE/claim" "{\"max\":1,\"leaseSeconds\":$LEASE_SECONDS}"
    case $STATUS in
    200) ;;
    *) log "claim: $STATUS $(head -c 300 "$TMP/body" 2>/dev/null)"; exit 2 ;;
    esac
    item=$(jq -c '.executions[0] // empty' "$TMP/body")
    if [ -z "$item" ]; then
        sleep "$IDLE_SECONDS"
        continue
    fi
    run "$item"
done
exit 0
