#!/bin/sh
# tests/http/test_examples_worker.sh WORKER — scripts/examples/worker.sh against the local
# stack (nginx, asyncexec-fcgi, MariaDB of scripts/test.sh), so the example cannot rot.
#
# Six executions on a fresh route: plain (completed at attempt 1), failing once retryably
# (completed at attempt 2), fatal (failed with its message), slow and cancelled by the
# consumer while the worker heartbeats (cancelled, with its progress), slow and failed by
# the operator meanwhile (the worker's heartbeat gets 409 and drops it), failing
# retryably every time (failed at attempt = max_attempts with its last message). The
# worker runs a bounded number of claims; the outcomes are checked by polling. Then the
# worker against a stub that answers 503 with Retry-After: it waits and retries.
# Every wait is bounded. Prints "N passed, N failed".
set -u
WORKER=${1:?usage: $0 WORKER}
: "${ASYNCEXEC_ADMIN:?}" "${ASYNCEXEC_TEST_CONFIG:?}" "${ASYNCEXEC_TEST_HTTP:?}"
URL=http://$ASYNCEXEC_TEST_HTTP
TMP=$(mktemp -d "${TMPDIR:-/tmp}/test-worker.XXXXXX")
WPID=
SPID=
trap '[ -z "$WPID" ] || kill "$WPID" 2>/dev/null; [ -z "$SPID" ] || kill "$SPID" 2>/dev/null; rm -rf "$TMP"' EXIT
pass=0
failed=0

check() { # check DESCRIPTION COMMAND...
    what=$1
    shift
    if "$@"; then pass=$((pass + 1)); else failed=$((failed + 1)); echo "FAIL: $what" >&2; fi
}
admin() { "$ASYNCEXEC_ADMIN" --config "$ASYNCEXEC_TEST_CONFIG" "$@"; }
max_attempts=$(sed -n 's/^[[:space:]]*max_attempts[[:space:]]*=[[:space:]]*\([0-9]*\).*/\1/p' \
    "$ASYNCEXEC_TEST_CONFIG")
max_attempts=${max_attempts:-5}

sfx=$$$(date +%s)
route=it/w$sfx/worker
tenant=t-worker-$sfx
admin route add "$route" >/dev/null || exit 1
ckey=$(admin key create --tenant "$tenant") || exit 1
bkey=$(admin backend-key create --route "$route") || exit 1

# submit NAME BODY — stores the poll token in $TMP/NAME.token
submit() {
    code=$(curl -sS -o "$TMP/$1.json" -w '%{http_code}' -X POST \
        -H "Authorization: Bearer $ckey" -H 'Content-Type: application/json' \
        -H "X-Correlation-Id: $1-$sfx" --data-binary "$2" "$URL/v1/executions/$route")
    check "submit $1: 202" [ "$code" = 202 ]
    jq -r .pollToken "$TMP/$1.json" > "$TMP/$1.token"
}
# poll NAME — the poll body into $TMP/NAME.poll
poll() {
    curl -sS -o "$TMP/$1.poll" -H "Authorization: Bearer $ckey" \
        -H "X-Poll-Token: $(cat "$TMP/$1.token")" "$URL/v1/executions/$route/$1-$sfx"
}
# jq_is NAME FILTER — whether FILTER is true of NAME's poll body
jq_is() { jq -e "$2" "$TMP/$1.poll" >/dev/null 2>&1; }
# wait_progress NAME — until NAME's poll shows a progress value (bounded: 60 s)
wait_progress() {
    n=0
    while [ "$n" -lt 600 ]; do
        poll "$1"
        jq_is "$1" 'has("progress")' && return 0
        sleep 0.1
        n=$((n + 1))
    done
    return 1
}

submit plain '{"n":1}'
submit retried '{"failTimes":1}'
submit fatal '{"fatal":"boom"}'
submit cancelled '{"seconds":60}'
submit dropped '{"seconds":60}'
submit exhausted '{"failTimes":99}'

# 1 + 2 + 1 + 1 + 1 + max_attempts claims, and two that come back empty
iterations=$((6 + max_attempts + 2))
ASYNCEXEC_URL=$URL ASYNCEXEC_BACKEND_KEY=$bkey LEASE_SECONDS=30 HEARTBEAT_SECONDS=1 \
    RETRY_AFTER_SECONDS=0 IDLE_SECONDS=0 MAX_ITERATIONS=$iterations \
    timeout 180 sh "$WORKER" "$route" 2> "$TMP/worker.log" &
WPID=$!

# the consumer cancels the first slow one once the worker reports progress on it
check "cancelled: progress while running" wait_progress cancelled
code=$(curl -sS -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $ckey" \
    -H "X-Poll-Token: $(cat "$TMP/cancelled.token")" \
    "$URL/v1/executions/$route/cancelled-$sfx/cancel")
check "cancel of a claimed execution: 202" [ "$code" = 202 ]
# the operator fails the second one: the worker's next heartbeat gets 409
check "dropped: progress while running" wait_progress dropped
check "operator fail" admin execution fail --tenant "$tenant" "$route" "dropped-$sfx" \
    --message "stopped by the operator"

wait "$WPID"
rc=$?
WPID=
check "worker exits 0 after MAX_ITERATIONS (got $rc)" [ "$rc" -eq 0 ]

poll plain
check "plain: completed at attempt 1" jq_is plain \
    '.status == "completed" and .attempt == 1 and .result.echo.n == 1 and .result.attempt == 1'
poll retried
check "retried: completed at attempt 2" jq_is retried \
    '.status == "completed" and .attempt == 2 and .result.attempt == 2 and (has("lastError") | not)'
poll fatal
check "fatal: failed with its message" jq_is fatal \
    '.status == "failed" and .error.message == "boom" and .attempt == 1'
poll cancelled
check "cancelled: cancelled, progress kept" jq_is cancelled \
    '.status == "cancelled" and .cancelRequested == true and (.progress | has("elapsedSeconds"))'
poll dropped
check "dropped: failed by the operator" jq_is dropped \
    '.status == "failed" and .error.message == "stopped by the operator"'
check "dropped: the worker saw 409 and dropped it" grep -q "no longer ours" "$TMP/worker.log"
poll exhausted
check "exhausted: failed at attempt = max_attempts" jq_is exhausted \
    ".status == \"failed\" and .attempt == $max_attempts and
     .error.message == \"try again (attempt $max_attempts)\""

# 503 with Retry-After: 1 once, then an empty claim: the worker waits, retries, goes on
cat > "$TMP/stub.py" <<'EOF'
import http.server, sys
n = [0]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        n[0] += 1
        if n[0] == 1:
            body, code = b'{"code":"service_unavailable"}', 503
        else:
            body, code = b'{"executions":[]}', 200
        self.send_response(code)
        if code == 503:
            self.send_header("Retry-After", "1")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
EOF
python3 "$TMP/stub.py" > "$TMP/stub.port" &
SPID=$!
n=0
while [ ! -s "$TMP/stub.port" ] && [ "$n" -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
t0=$(date +%s)
ASYNCEXEC_URL=http://127.0.0.1:$(cat "$TMP/stub.port") ASYNCEXEC_BACKEND_KEY=bk_x \
    IDLE_SECONDS=0 MAX_ITERATIONS=1 timeout 30 sh "$WORKER" "$route" 2> "$TMP/stub.log"
rc=$?
t1=$(date +%s)
kill "$SPID" 2>/dev/null
SPID=
check "503: the worker retried and exited 0 (got $rc)" [ "$rc" -eq 0 ]
check "503: it waited Retry-After" grep -q "503, again in 1 s" "$TMP/stub.log"
check "503: at least 1 s passed" [ $((t1 - t0)) -ge 1 ]

if [ "$failed" -gt 0 ]; then
    echo "--- worker log" >&2
    cat "$TMP/worker.log" >&2
fi
echo "http_examples_worker: $pass passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$pass" -gt 0 ]
