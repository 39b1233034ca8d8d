#!/bin/sh
# scripts/examples/worker.sh — an example asyncexec backend worker in POSIX sh + curl + jq.
#
#   ASYNCEXEC_URL=http://127.0.0.1:8080 ASYNCEXEC_BACKEND_KEY=bk_... \
#       scripts/examples/worker.sh ENV/SERVICE/OPERATION
#
# It claims one execution at a time, runs the work in the background, in a session and
# process group of its own (setsid), while it heartbeats (every HEARTBEAT_SECONDS, with
# a progress value), and reports the outcome:
#   work exits 0   complete with the work's standard output (one JSON value, null and
#                  false included) as the result
#   work exits 75  fail retryably ("retryAfterSeconds": RETRY_AFTER_SECONDS) while the
#                  server has attempts left; the last attempt becomes failed
#   other exit     fail for good with the work's standard error as the message
# Stopping the work signals its whole process group (SIGTERM, SIGKILL after 5 s), so
# what the command started stops with it. A heartbeat that answers cancelRequested:
# true stops the work and acknowledges with the `cancelled` callback. A 409 means the
# claim is no longer ours (the lease lapsed and another claim took it, or it ended):
# the work is stopped, nothing is reported. A heartbeat's 404 or 401 (the key does not
# serve the route, or is revoked) stops the work likewise; the next claim's 404 or 401
# then ends the worker (exit 2). A 503 (or nginx's 429/502/504, or no answer at all) is
# retried after its Retry-After (1 s when the answer had none), at most RETRIES times.
# The outcome (complete/fail/cancelled) is sent again after that too, with a heartbeat
# between rounds of RETRIES tries, until an answer that is not temporary: a repeated
# complete/fail after a lost answer gets the same 200 again (the idempotent winner),
# so retrying a callback is safe. A complete refused for good (a 4xx other than 401,
# 404 and 409: 413 when the output is over max_result_bytes, 400) is followed by a fail
# for good naming the refusal, so the work is not run again. Every HTTP call is bounded
# (CONNECT_TIMEOUT, REQUEST_TIMEOUT); one that times out counts as no answer. Request
# bodies go to curl in a file, so a result may be as large as the server takes.
# Bytes: the work gets the request and the server gets the work's output as they are
# (19.90 stays 19.90, 12345678901234567890 keeps its digits); jq only reads values and
# checks that the output is one JSON value. The request is cut from the claim's answer
# (its member follows "request": up to ,"callbackToken":" in the server's answer); if
# that cut is not the request jq reads, the worker logs it and hands the work jq's
# encoding instead, where jq 1.6 (Debian 12) turns 19.90 into 19.9 and rounds integers
# beyond 2^53.
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
#   RETRIES                attempts of one HTTP call on 503/429/502/504 or no answer
#                          (default 5; an outcome then gets further rounds, see above)
#   CONNECT_TIMEOUT        seconds to connect (curl --connect-timeout, default 10)
#   REQUEST_TIMEOUT        seconds one HTTP call may take in all, upload of the result
#                          included (curl --max-time, default 120)
#
# Demo work (no WORK_CMD): the request may hold {"seconds":N} (work that long, reporting
# progress), {"failTimes":N} (fail retryably while ATTEMPT <= N), {"fatal":"message"}
# (fail for good); the result is {"echo":<request>,"attempt":ATTEMPT}, the request's
# bytes as they came.
#
# Exit status: 0 after MAX_ITERATIONS, 1 on a usage error, 2 when the server is
# unreachable or keeps refusing a claim (401, 404, 5xx after RETRIES).
set -u

: "${ASYNCEXEC_URL:?set ASYNCEXEC_URL}"
: "${ASYNCEXEC_BACKEND_KEY:?set ASYNCEXEC_BACKEND_KEY}"
LEASE_SECONDS=${LEASE_SECONDS:-30}
HEARTBEAT_SECONDS=${HEARTBEAT_SECONDS:-$((LEASE_SECONDS / 3))}
RETRY_AFTER_SECONDS=${RETRY_AFTER_SECONDS:-5}
IDLE_SECONDS=${IDLE_SECONDS:-2}
MAX_ITERATIONS=${MAX_ITERATIONS:-0}
RETRIES=${RETRIES:-5}
CONNECT_TIMEOUT=${CONNECT_TIMEOUT:-10}
REQUEST_TIMEOUT=${REQUEST_TIMEOUT:-120}
[ $# -eq 1 ] || { echo "usage: $0 ENV/SERVICE/OPERATION" >&2; exit 1; }
command -v setsid >/dev/null || { echo "$0: setsid (util-linux) is needed" >&2; exit 1; }
ROUTE=$1
TMP=$(mktemp -d "${TMPDIR:-/tmp}/asyncexec-worker.XXXXXX") || exit 2
WORK_PID=
trap 'stop_work; rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

log() { printf 'worker: %s\n' "$*" >&2; }

# call METHOD PATH FILE [TOKEN] — one API call with the body in FILE, retried on
# 503/429/502/504 or no answer (000: none in REQUEST_TIMEOUT s, or no connection in
# CONNECT_TIMEOUT s) after Retry-After, RETRIES tries in all. Sets
# STATUS, and RA (the last answer's Retry-After, 1 without one) when STATUS is
# temporary; the answer's body is in $TMP/body (absent when there was none).
call() {
    n=0
    while :; do
        # a curl that does not run at all (E2BIG, fork) leaves the last call's files
        rm -f "$TMP/body" "$TMP/headers"
        STATUS=$(curl -sS -o "$TMP/body" -D "$TMP/headers" -w '%{http_code}' \
            --connect-timeout "$CONNECT_TIMEOUT" --max-time "$REQUEST_TIMEOUT" \
            -X "$1" -H "Authorization: Bearer $ASYNCEXEC_BACKEND_KEY" \
            -H 'Content-Type: application/json' -H "X-Callback-Token: ${4:--}" \
            --data-binary "@$3" "$ASYNCEXEC_URL$2") || STATUS=000
        temporary "$STATUS" || return 0
        RA=$(sed -n 's/^[Rr]etry-[Aa]fter: *\([0-9][0-9]*\).*/\1/p' "$TMP/headers" \
            2>/dev/null)
        RA=${RA:-1}
        n=$((n + 1))
        [ "$n" -lt "$RETRIES" ] || return 0
        log "$1 $2: $STATUS, again in $RA s"
        sleep "$RA"
    done
}

# temporary STATUS — true when STATUS asks for the same call again later: 503, nginx's
# 429/502/504, or 000 (no answer).
temporary() {
    case $1 in
    503|429|502|504|000) return 0 ;;
    *) return 1 ;;
    esac
}

# The demo work, a script of its own so that it runs like a WORK_CMD: reads the request
# on standard input (see the header), writes its step to the file $1.
cat > "$TMP/demo" <<'EOF'
req=$(cat)
secs=$(printf '%s' "$req" | jq -r '.seconds // 0')
fail_times=$(printf '%s' "$req" | jq -r '.failTimes // 0')
fatal=$(printf '%s' "$req" | jq -r '.fatal // empty')
[ -z "$fatal" ] || { printf '%s' "$fatal" >&2; exit 1; }
[ "$ATTEMPT" -gt "$fail_times" ] || { printf 'try again (attempt %s)' "$ATTEMPT" >&2; exit 75; }
i=0
while [ "$i" -lt "$secs" ]; do
    sleep 1
    i=$((i + 1))
    printf '%s\n' "$i" > "$1"
done
# the request's bytes, not jq's encoding of them (jq 1.6 rounds big numbers)
printf '{"echo":%s,"attempt":%s}' "$req" "$ATTEMPT"
EOF

# start_work — runs the work of $TMP/request in the background as the leader of a new
# session and process group (setsid), WORK_PID its pid and group id; its exit status
# goes to $TMP/rc when it ends.
start_work() {
    ATTEMPT=$attempt setsid sh -c 'if [ -n "$1" ]; then sh -c "$1"
        else sh "$2/demo" "$2/progress"; fi < "$2/request" > "$2/out" 2> "$2/err"
        echo $? > "$2/rc"' work "${WORK_CMD:-}" "$TMP" &
    WORK_PID=$!
}

# stop_work — stops the work's process group, if the work runs: SIGTERM, then SIGKILL
# to what is left of it after 5 s. Returns 0.
stop_work() {
    [ -n "$WORK_PID" ] || return 0
    # the pid too: a child that has not yet made its group gets it there
    kill -TERM "-$WORK_PID" 2>/dev/null
    kill -TERM "$WORK_PID" 2>/dev/null
    wait "$WORK_PID" 2>/dev/null
    i=0
    while kill -0 "-$WORK_PID" 2>/dev/null; do
        if [ "$i" -ge 5 ]; then
            kill -KILL "-$WORK_PID" 2>/dev/null
            break
        fi
        kill -TERM "-$WORK_PID" 2>/dev/null
        sleep 1
        i=$((i + 1))
    done
    WORK_PID=
    return 0
}

# heartbeat ID TOKEN ELAPSED — 0 to go on, 1 to drop the work (409: the claim is no
# longer ours; 404 or 401: the key no longer serves the route, which the next claim
# turns into exit 2), 2 when cancel was requested.
heartbeat() {
    step=$(cat "$TMP/progress" 2>/dev/null || echo 0)
    jq -cn --argjson l "$LEASE_SECONDS" --argjson e "$3" --argjson s "${step:-0}" \
        '{leaseSeconds: $l, progress: {elapsedSeconds: $e, step: $s}}' > "$TMP/beat"
    call POST "/v1/callbacks/$1/heartbeat" "$TMP/beat" "$2"
    case $STATUS in
    200) [ "$(jq -r .cancelRequested "$TMP/body")" = true ] && return 2; return 0 ;;
    409) log "execution $1: the claim is no longer ours ($(jq -r .currentStatus "$TMP/body"))"
         return 1 ;;
    404|401) log "execution $1: heartbeat $STATUS: the key does not serve it, stopping"
         return 1 ;;
    *)   log "execution $1: heartbeat $STATUS"; return 0 ;;
    esac
}

# report ID TOKEN VERB — the finalizing callback VERB with the body in $TMP/outcome,
# sent again after a temporary answer (rounds of RETRIES tries, Retry-After between
# them) with a heartbeat between rounds while the claim is ours, until an answer that
# is not temporary: once stored, the same callback gets its 200 again. A 409 is
# logged, not retried. A complete refused for good (4xx but 401, 404, 409) becomes a
# fail for good that says why, so the execution ends now and is not run again.
report() {
    beat=1
    while :; do
        call POST "/v1/callbacks/$1/$3" "$TMP/outcome" "$2"
        temporary "$STATUS" || break
        log "execution $1: $3 answered $STATUS, sending it again in $RA s"
        sleep "$RA"
        if [ "$beat" -eq 1 ]; then
            heartbeat "$1" "$2" "$elapsed"
            [ $? -ne 1 ] || beat=0
        fi
    done
    case $STATUS in
    200) log "execution $1: $3 -> $(jq -r .status "$TMP/body")" ;;
    409) log "execution $1: $3 lost (currentStatus $(jq -r .currentStatus "$TMP/body"))" ;;
    401|404) log "execution $1: $3 answered $STATUS" ;;
    4[0-9][0-9]) log "execution $1: $3 answered $STATUS"
         [ "$3" = complete ] || return 0
         refused "$STATUS" > "$TMP/outcome"
         report "$1" "$2" fail ;;
    *)   log "execution $1: $3 answered $STATUS" ;;
    esac
}

# refused STATUS — the body of a fail for good after a complete answered STATUS (its
# problem code and detail from $TMP/body, when it has them).
refused() {
    code=$(jq -r '.code // empty' "$TMP/body" 2>/dev/null)
    detail=$(jq -r '.detail // empty' "$TMP/body" 2>/dev/null)
    m="result refused: $1${code:+ $code}${detail:+: $detail}"
    [ "$1" != 413 ] || m="$m: too large (over the server's max_result_bytes)"
    jq -cn --arg m "$m" '{error: {message: $m}}'
}

# cut_request — the request of the claim's answer in $TMP/body (one execution) into
# $TMP/request as its bytes: from the first "request": (the members before it are
# numbers and names without quotes) to the last ,"callbackToken":" (none of the members
# after it can hold that text), checked against jq's reading of .request; when that
# check fails, jq's encoding, and a line in the log.
cut_request() {
    b=$(cat "$TMP/body")
    r=${b#*'"request":'}
    r=${r%',"callbackToken":"'*}
    printf '%s' "$r" > "$TMP/request"
    jq -e --slurpfile r "$TMP/request" '($r | length) == 1 and
        .executions[0].request == $r[0]' "$TMP/body" >/dev/null 2>&1 && return 0
    log "the request could not be cut from the claim's answer: jq's encoding of it"
    jq -c '.executions[0].request' "$TMP/body" > "$TMP/request"
}

# run ITEM — does one claimed execution (ITEM: its JSON from the claim; its request's
# bytes in $TMP/request).
run() {
    id=$(printf '%s' "$1" | jq -r .id)
    tok=$(printf '%s' "$1" | jq -r .callbackToken)
    attempt=$(printf '%s' "$1" | jq -r .attempt)
    rm -f "$TMP/progress" "$TMP/out" "$TMP/err" "$TMP/rc"
    start_work
    elapsed=0
    hb=0
    echo '{}' > "$TMP/outcome"
    heartbeat "$id" "$tok" 0
    case $? in 1) stop_work; return ;; 2) stop_work; report "$id" "$tok" cancelled; return ;; esac
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
        2) stop_work; report "$id" "$tok" cancelled; return ;;
        esac
    done
    wait "$WORK_PID" 2>/dev/null
    WORK_PID=
    rc=$(cat "$TMP/rc")
    msg=$(head -c 1000 "$TMP/err")
    # one JSON value, null and false too; the body goes to curl as a file, whatever
    # its size
    if [ "$rc" -eq 0 ] && jq -e -s 'length == 1' "$TMP/out" >/dev/null 2>&1; then
        # the output's bytes, not jq's encoding of them (jq 1.6 rounds big numbers)
        { printf '{"result":'; cat "$TMP/out"; printf '}'; } > "$TMP/outcome"
        report "$id" "$tok" complete
        return
    fi
    [ "$rc" -ne 0 ] || msg=${msg:-the output is not one JSON value}
    if [ "$rc" -eq 75 ]; then
        jq -cn --arg m "$msg" --argjson r "$RETRY_AFTER_SECONDS" \
            '{error: {message: $m}, retryAfterSeconds: $r}' > "$TMP/outcome"
    else
        jq -cn --arg m "${msg:-exit status $rc}" '{error: {message: $m}}' > "$TMP/outcome"
    fi
    report "$id" "$tok" fail
}

printf '{"max":1,"leaseSeconds":%s}' "$LEASE_SECONDS" > "$TMP/claim"
iter=0
while [ "$MAX_ITERATIONS" -eq 0 ] || [ "$iter" -lt "$MAX_ITERATIONS" ]; do
    iter=$((iter + 1))
    call POST "/v1/backend/$ROUTE/claim" "$TMP/claim"
    case $STATUS in
    200) ;;
    *) log "claim: $STATUS $(head -c 300 "$TMP/body" 2>/dev/null)"; exit 2 ;;
    esac
    item=$(jq -c '.executions[0] // empty' "$TMP/body")
    if [ -z "$item" ]; then
        sleep "$IDLE_SECONDS"
        continue
    fi
    cut_request
    run "$item"
done
exit 0
