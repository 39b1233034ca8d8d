#!/usr/bin/env bash
# test_examples_consumer.sh — scripts/examples/consumer.php against the local stack (through
# nginx, on MariaDB), so the example cannot rot. Needs php-cli and php-curl (Debian; in
# STACK_PACKAGES, so scripts/test.sh installs them) and the stack's variables
# (ASYNCEXEC_TEST_HTTP, ASYNCEXEC_TEST_CONFIG, ASYNCEXEC_ADMIN).
#
#   1. the happy path: the consumer submits (its own correlation id) and polls; this test
#      plays the backend with curl (claim, then complete once the consumer has had a 304);
#      the consumer prints the result unchanged, exits 0, and sent If-None-Match (304s);
#   2. 401 (a wrong key): exit 3; 404 unknown_route: exit 4; 404 not_found on submit (a
#      wrong base path in --url): exit 4, the reason names the URL; 409
#      correlation_id_conflict (its id with another body): exit 5; 413 (a body over
#      max_request_bytes): exit 6;
#   3. 429 quota_exceeded: a tenant with --max-open 1 and one waiting execution; the
#      consumer waits Retry-After and retries the same submit; this test cancels the
#      occupying execution; the retry is accepted and the consumer finishes with exit 0;
#   4. a scheduled submit (contract v3): --delay 4 --priority 7 sends X-Delay-Seconds and
#      X-Priority; its polls print priority=7 and its notBefore; a claim
#      right after the submit gets nothing, the backend claims it once due and the consumer
#      exits 0; --delay 1.5 is a 400 naming X-Delay-Seconds (exit 6).
# 503 (database down) and 415 are handled by the consumer but not produced here: the
# consumer always sends JSON, and stopping the shared database is http_ops' (RUN_SERIAL).
# Prints "N passed, N failed".
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CONSUMER=$HERE/../../scripts/examples/consumer.php
: "${ASYNCEXEC_TEST_HTTP:?}" "${ASYNCEXEC_TEST_CONFIG:?}" "${ASYNCEXEC_ADMIN:?}"
BASE=http://$ASYNCEXEC_TEST_HTTP
TMP=$(mktemp -d /tmp/test-consumer.XXXXXX)
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT

passed=0 failed=0
check() {   # check DESCRIPTION COMMAND...
    local what=$1; shift
    if "$@"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAILED: $what" >&2
    fi
}
done_() { echo "test_examples_consumer: $passed passed, $failed failed"; ((failed == 0)); }

command -v php >/dev/null || { echo "FATAL: php-cli is not installed" >&2; exit 1; }
php -r 'exit(function_exists("curl_init") ? 0 : 1);' ||
    { echo "FATAL: php-curl is not installed" >&2; exit 1; }

admin() { "$ASYNCEXEC_ADMIN" --config "$ASYNCEXEC_TEST_CONFIG" "$@"; }
conf() { sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*\([0-9]*\).*/\1/p" "$ASYNCEXEC_TEST_CONFIG"; }
json() { python3 -c 'import json,sys; d=json.load(sys.stdin); exec(sys.argv[1])' "$1"; }

SUF=$$-$(date +%s)
ROUTE=exphp-$SUF/shop/order
TENANT=exphp-$SUF
admin route add "$ROUTE" >/dev/null || exit 1
CKEY=$(admin key create --tenant "$TENANT") || exit 1
BKEY=$(admin backend-key create --route "$ROUTE") || exit 1
TTL=$(conf cache_ttl_seconds); TTL=${TTL:-5}

# consumer OUT [ARGS...] — runs consumer.php in the background; its pid in CPID.
consumer() {
    local out=$1; shift
    php "$CONSUMER" --url "$BASE" "$@" >"$out" 2>"$out.err" &
    CPID=$!
    PIDS+=("$CPID")
}

# wait_for SECONDS FILE REGEX — until FILE has a line matching REGEX; 0, or 1 at the bound.
wait_for() {
    local until=$((SECONDS + $1))
    while ((SECONDS <= until)); do
        grep -Eq "$3" "$2" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "  no '$3' in $2 within $1 s:" >&2; cat "$2" "$2.err" >&2
    return 1
}

# wait_exit PID SECONDS — the exit status of background PID, or 124 at the bound.
wait_exit() {
    local until=$((SECONDS + $2))
    while kill -0 "$1" 2>/dev/null && ((SECONDS <= until)); do sleep 0.1; done
    kill -0 "$1" 2>/dev/null && { kill "$1"; return 124; }
    wait "$1"
}

# backend_complete RESULT — claims the one execution of ROUTE (bounded) and completes it.
backend_complete() {
    local until=$((SECONDS + 20)) body id tok
    while ((SECONDS <= until)); do
        body=$(curl -s -X POST -H "Authorization: Bearer $BKEY" \
            -H 'Content-Type: application/json' -d '{"max":1}' \
            "$BASE/v1/backend/$ROUTE/claim")
        id=$(json 'e=d.get("executions") or []; print(e[0]["id"] if e else "")' <<<"$body")
        [[ -n $id ]] && break
        sleep 0.2
    done
    [[ -n $id ]] || { echo "  nothing to claim: $body" >&2; return 1; }
    tok=$(json 'print(d["executions"][0]["callbackToken"])' <<<"$body")
    [[ $(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $BKEY" \
        -H "X-Callback-Token: $tok" -H 'Content-Type: application/json' \
        -d "{\"result\":$1}" "$BASE/v1/callbacks/$id/complete") == 200 ]]
}

# ---- 1. submit, poll with If-None-Match, completed -----------------------------------
CID=order-$SUF
consumer "$TMP/happy" --key "$CKEY" --cid "$CID" --timeout 60 "$ROUTE" '{"order":42}'
check "consumer submitted" wait_for 20 "$TMP/happy" "^submit 202 correlationId=$CID status=waiting_callback$"
check "consumer polled with If-None-Match and got a 304" \
    wait_for 20 "$TMP/happy" '^poll 304 not modified etag=".+"$'
RESULT='{"shipped":true,"parcels":[1,2],"note":"caf\u00e9 {}","empty":{}}'
check "backend claimed and completed" backend_complete "$RESULT"
wait_exit "$CPID" 30; rc=$?
check "consumer exit 0 (got $rc)" test "$rc" -eq 0
check "consumer printed the result" \
    grep -qFx 'completed result={"shipped":true,"parcels":[1,2],"note":"café {}","empty":{}}' "$TMP/happy"
n304=$(grep -c '^poll 304 ' "$TMP/happy")
check "at least one 304 ($n304)" test "$n304" -ge 1
check "the last poll said completed" grep -q '^poll 200 status=completed etag=' "$TMP/happy"
check "polls before the first 304 carried an ETag" grep -q '^poll 200 status=waiting_callback etag="' "$TMP/happy"

# ---- 2. problem codes that end the consumer --------------------------------------------
# run_rc WANT NAME ARGS... — runs the consumer to its end; checks its exit status.
run_rc() {
    local want=$1 name=$2 rc; shift 2
    consumer "$TMP/$name" "$@"
    wait_exit "$CPID" 30; rc=$?
    check "$name: exit $want (got $rc: $(tr '\n' ' ' <"$TMP/$name.err"))" test "$rc" -eq "$want"
}
run_rc 3 unauthorized --key ak_nosuchkey --timeout 10 "$ROUTE" '{}'
check "401 printed" grep -q '^submit 401 unauthorized$' "$TMP/unauthorized"
run_rc 4 unknown_route --key "$CKEY" --timeout 10 "nosuch-$SUF/x/y" '{}'
check "404 unknown_route printed" grep -q '^submit 404 unknown_route$' "$TMP/unknown_route"
run_rc 4 bad_base --url "$BASE/nosuch" --key "$CKEY" --timeout 10 "$ROUTE" '{}'
check "bad base path: 404 printed" grep -q '^submit 404 not_found$' "$TMP/bad_base"
check "bad base path: the reason is the URL, not a poll token" \
    grep -q "the submit's URL is not the API's (404 not_found): check --url" "$TMP/bad_base.err"
run_rc 5 conflict --key "$CKEY" --cid "$CID" --timeout 10 "$ROUTE" '{"order":43}'
check "409 printed" grep -q '^submit 409 correlation_id_conflict$' "$TMP/conflict"
MAXB=$(conf max_request_bytes); MAXB=${MAXB:-1048576}
python3 -c 'import sys; n=int(sys.argv[1]); print("\"" + "x" * (n + 16) + "\"")' "$MAXB" >"$TMP/big.json"
run_rc 6 too_large --key "$CKEY" --timeout 10 "$ROUTE" "@$TMP/big.json"
check "413 printed" grep -q '^submit 413 payload_too_large$' "$TMP/too_large"

# ---- 3. 429 quota_exceeded: retried after Retry-After until a slot is free ------------
admin tenant set "$TENANT" --max-open 1 >/dev/null || exit 1
# the happy path's execution is completed; one waiting execution fills the quota
occ=$(curl -s -X POST -H "Authorization: Bearer $CKEY" -H 'Content-Type: application/json' \
    -H "X-Correlation-Id: occupy-$SUF" -d '{"occupy":1}' "$BASE/v1/executions/$ROUTE")
occ_tok=$(json 'print(d["pollToken"])' <<<"$occ")
check "the occupying execution was accepted" test -n "$occ_tok"
sleep_until=$((SECONDS + TTL + 1))   # the documented lag: every worker's count is current
while ((SECONDS < sleep_until)); do sleep 0.1; done
consumer "$TMP/quota" --key "$CKEY" --cid "quota-$SUF" --timeout 60 "$ROUTE" '{"order":44}'
check "consumer got 429 quota_exceeded" wait_for 20 "$TMP/quota" '^submit 429 quota_exceeded$'
check "cancelled the occupying execution" test "$(curl -s -o /dev/null -w '%{http_code}' \
    -X POST -H "Authorization: Bearer $CKEY" -H "X-Poll-Token: $occ_tok" \
    "$BASE/v1/executions/$ROUTE/occupy-$SUF/cancel")" = 200
check "the retried submit was accepted" \
    wait_for $((TTL + 20)) "$TMP/quota" "^submit 202 correlationId=quota-$SUF "
check "backend completed the retried one" backend_complete '"done"'
wait_exit "$CPID" 30; rc=$?
check "quota consumer exit 0 (got $rc)" test "$rc" -eq 0
check "quota consumer printed the result" grep -qFx 'completed result="done"' "$TMP/quota"
admin tenant set "$TENANT" --max-open 0 >/dev/null

# ---- 4. a delayed submit with a priority -------------------------------------------------
# claim_count — how many executions one claim of ROUTE handed out (claimed ones stay claimed)
claim_count() {
    curl -s -X POST -H "Authorization: Bearer $BKEY" -H 'Content-Type: application/json' \
        -d '{"max":10}' "$BASE/v1/backend/$ROUTE/claim" |
        json 'print(len(d.get("executions") or []))'
}
consumer "$TMP/delayed" --key "$CKEY" --cid "delayed-$SUF" --delay 4 --priority 7 \
    --timeout 60 "$ROUTE" '{"order":45}'
check "delayed consumer submitted" \
    wait_for 20 "$TMP/delayed" "^submit 202 correlationId=delayed-$SUF status=waiting_callback$"
check "not claimable before its delay" test "$(claim_count)" = 0
check "its poll shows priority 7 and notBefore" wait_for 20 "$TMP/delayed" \
    '^poll 200 status=waiting_callback etag=".+" priority=7 notBefore=[0-9T:.-]+Z$'
check "backend claimed it once due and completed" backend_complete '"later"'
wait_exit "$CPID" 30; rc=$?
check "delayed consumer exit 0 (got $rc)" test "$rc" -eq 0
check "delayed consumer printed the result" grep -qFx 'completed result="later"' "$TMP/delayed"
run_rc 6 bad_delay --key "$CKEY" --delay 1.5 --timeout 10 "$ROUTE" '{}'
check "400 printed" grep -q '^submit 400 invalid_request$' "$TMP/bad_delay"
check "the detail names X-Delay-Seconds" grep -q 'X-Delay-Seconds' "$TMP/bad_delay.err"
done_
