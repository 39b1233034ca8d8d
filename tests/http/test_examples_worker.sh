#!/bin/sh
# tests/http/test_examples_worker.sh WORKER — scripts/examples/worker.sh against the local
# stack (nginx, asyncexec-fcgi, MariaDB of scripts/test.sh), so the example cannot rot.
#
# Six executions on a fresh route: plain (completed at attempt 1), failing once retryably
# (completed at attempt 2), fatal (failed with its message), slow and cancelled by the
# consumer while the worker heartbeats (cancelled, with its progress), slow and failed by
# the operator meanwhile (the worker's heartbeat gets 409 and drops it), failing
# retryably every time (failed at attempt = max_attempts with its last message). The
# worker runs a bounded number of claims; the outcomes are checked by polling. Then a
# WORK_CMD run: slow work cancelled and dropped while it runs (its processes stopped,
# its file never written), results of 300,000 bytes, null and false (completed). Then
# bytes kept: a request and a result with 19.90 and integers beyond 2^53 (unchanged),
# and an output over max_result_bytes (413: failed at once, attempt 1). Then the worker
# against a stub of the API: Retry-After of a 503 and not of a stale header dump, a
# claim that hangs (given up after REQUEST_TIMEOUT), a heartbeat's 404/401 (work
# stopped), a complete answered 503 past RETRIES (sent again with heartbeats between
# until its 200).
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
max_result=$(sed -n \
    's/^[[:space:]]*max_result_bytes[[:space:]]*=[[:space:]]*\([0-9]*\).*/\1/p' \
    "$ASYNCEXEC_TEST_CONFIG")
max_result=${max_result:-4194304}

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

# The work of the runs below (WORK_CMD): {"kind":"slow","name":N} writes its pid to
# $TMP/N.pid, sleeps 5 s and touches $TMP/N.done; "big" prints a 300,000-byte JSON
# string; "null" and "false" print those values.
cat > "$TMP/work.sh" <<'EOF'
req=$(cat)
name=$(printf '%s' "$req" | jq -r '.name // empty')
case $(printf '%s' "$req" | jq -r .kind) in
slow) echo $$ > "$1/$name.pid"; sleep 5; touch "$1/$name.done"; echo '"slept"' ;;
big) head -c 300000 /dev/zero | tr '\0' x | jq -Rs . ;;
null) echo null ;;
false) echo false ;;
exact) echo '{"big":12345678901234567890,"price":19.90}' ;;
huge) printf '"'; head -c "$2" /dev/zero | tr '\0' x; printf '"' ;;
esac
EOF
work="sh $TMP/work.sh $TMP $((max_result + 16))"
# alive PID — whether PID runs (a zombie whose parent died does not)
alive() {
    st=$(sed 's/^.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null)
    [ -n "$st" ] && [ "$st" != Z ]
}
# gone NAME — whether the work of NAME has ended (bounded: 10 s)
gone() {
    [ -s "$TMP/$1.pid" ] || return 0
    n=0
    while alive "$(cat "$TMP/$1.pid")"; do
        [ "$n" -lt 100 ] || return 1
        sleep 0.1
        n=$((n + 1))
    done
}

# WORK_CMD against the stack: a cancel and an operator's fail (heartbeat 409) stop the
# work's processes (wcancel, wdrop); wdone, started after them, runs its 5 s to the end,
# so once it is completed their .done files would be there had they run on; results
# over 128 KiB, null and false complete.
submit wcancel '{"kind":"slow","name":"c"}'
submit wdrop '{"kind":"slow","name":"d"}'
submit wdone '{"kind":"slow","name":"k"}'
submit wbig '{"kind":"big"}'
submit wnull '{"kind":"null"}'
submit wfalse '{"kind":"false"}'
ASYNCEXEC_URL=$URL ASYNCEXEC_BACKEND_KEY=$bkey LEASE_SECONDS=30 HEARTBEAT_SECONDS=1 \
    IDLE_SECONDS=0 MAX_ITERATIONS=7 WORK_CMD=$work \
    timeout 120 sh "$WORKER" "$route" 2> "$TMP/work.log" &
WPID=$!
check "wcancel: progress while running" wait_progress wcancel
code=$(curl -sS -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $ckey" \
    -H "X-Poll-Token: $(cat "$TMP/wcancel.token")" \
    "$URL/v1/executions/$route/wcancel-$sfx/cancel")
check "wcancel: cancel 202" [ "$code" = 202 ]
check "wdrop: progress while running" wait_progress wdrop
check "wdrop: operator fail" admin execution fail --tenant "$tenant" "$route" \
    "wdrop-$sfx" --message "stopped by the operator"
wait "$WPID"
rc=$?
WPID=
check "WORK_CMD: worker exits 0 (got $rc)" [ "$rc" -eq 0 ]
poll wcancel
check "wcancel: cancelled" jq_is wcancel '.status == "cancelled"'
check "wcancel: its work was stopped" gone c
poll wdrop
check "wdrop: failed by the operator" jq_is wdrop '.status == "failed"'
check "wdrop: its work was stopped" gone d
poll wdone
check "wdone: completed after its 5 s" jq_is wdone \
    '.status == "completed" and .result == "slept"'
check "wdone: its work ran to the end" [ -e "$TMP/k.done" ]
check "wcancel: the cancelled work never finished" [ ! -e "$TMP/c.done" ]
check "wdrop: the dropped work never finished" [ ! -e "$TMP/d.done" ]
poll wbig
check "wbig: completed with the 300,000-byte string" jq_is wbig \
    '.status == "completed" and (.result | length) == 300000'
poll wnull
check "wnull: completed with result null" jq_is wnull \
    '.status == "completed" and has("result") and .result == null'
poll wfalse
check "wfalse: completed with result false" jq_is wfalse \
    '.status == "completed" and .result == false'

# Bytes as they are (jq 1.6 of Debian 12 rounds integers beyond 2^53 and spells 19.90
# 19.9): the demo work echoes a request with 9007199254740993 and 19.90, a WORK_CMD
# prints 12345678901234567890 and 19.90; the polled bodies carry those bytes. Then a
# WORK_CMD whose output is over max_result_bytes: the complete is refused (413), the
# worker fails it for good at once, so the work ran once (attempt 1).
submit dexact '{"n":9007199254740993,"p":19.90}'
ASYNCEXEC_URL=$URL ASYNCEXEC_BACKEND_KEY=$bkey IDLE_SECONDS=0 MAX_ITERATIONS=1 \
    timeout 60 sh "$WORKER" "$route" 2> "$TMP/exact.log"
rc=$?
check "dexact: the worker exits 0 (got $rc)" [ "$rc" -eq 0 ]
poll dexact
check "dexact: the demo got and echoed the request's bytes" grep -qF \
    '"result":{"echo":{"n":9007199254740993,"p":19.90},"attempt":1}' "$TMP/dexact.poll"
submit wexact '{"kind":"exact"}'
submit whuge '{"kind":"huge"}'
ASYNCEXEC_URL=$URL ASYNCEXEC_BACKEND_KEY=$bkey IDLE_SECONDS=0 MAX_ITERATIONS=2 \
    WORK_CMD=$work timeout 120 sh "$WORKER" "$route" 2> "$TMP/huge.log"
rc=$?
check "wexact, whuge: the worker exits 0 (got $rc)" [ "$rc" -eq 0 ]
poll wexact
check "wexact: the output's bytes are the result" grep -qF \
    '"result":{"big":12345678901234567890,"price":19.90}' "$TMP/wexact.poll"
poll whuge
check "whuge: failed at once, attempt 1, the refusal said" jq_is whuge \
    '.status == "failed" and .attempt == 1 and
     (.error.message | startswith("result refused: 413") and contains("too large"))'

# A stub of the API: each argument ENDPOINT=A,B,... answers the requests to that
# endpoint (the path's last part) with A, then B, ..., the last one from then on:
# 200, item (a claim of one slow execution), empty, 503:N (Retry-After: N), close
# (no answer at all), hang:N (no answer for N s, then close), 404, 401. Each request
# is logged as "ENDPOINT ANSWER". Threaded: a hanging answer holds no other.
cat > "$TMP/stub.py" <<'EOF'
import http.server, json, sys, time
log = open(sys.argv[1], "a")
plan = {a.split("=")[0]: a.split("=")[1].split(",") for a in sys.argv[2:]}
item = {"id": 7, "callbackToken": "t", "attempt": 1,
        "request": {"kind": "slow", "name": "s"}}
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        ep = self.path.rsplit("/", 1)[-1]
        acts = plan.get(ep, ["200"])
        act = acts.pop(0) if len(acts) > 1 else acts[0]
        log.write("%s %s\n" % (ep, act))
        log.flush()
        if act.startswith("hang:"):
            time.sleep(float(act.split(":")[1]))
            self.close_connection = True
            return
        if act == "close":
            self.close_connection = True
            return
        code, ra = int(act.split(":")[0]) if act[0].isdigit() else 200, None
        if act.startswith("503:"):
            ra = act.split(":")[1]
        body = {"executions": [item]} if act == "item" else \
            {"executions": []} if act == "empty" else \
            {"cancelRequested": False} if ep == "heartbeat" and code == 200 else \
            {"status": "completed"} if code == 200 else {"code": "refused"}
        body = json.dumps(body).encode()
        self.send_response(code)
        if ra is not None:
            self.send_header("Retry-After", ra)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
s.daemon_threads = True
print(s.server_address[1], flush=True)
s.serve_forever()
EOF
# stub_worker NAME ITERATIONS PLAN... — the worker (RETRIES=2 when NAME is report)
# against a fresh stub with PLAN; its exit status in $rc, its log in $TMP/NAME.log,
# the stub's in $TMP/NAME.stub
stub_worker() {
    nm=$1
    it=$2
    shift 2
    rm -f "$TMP/stub.port"
    python3 "$TMP/stub.py" "$TMP/$nm.stub" "$@" > "$TMP/stub.port" &
    SPID=$!
    n=0
    while [ ! -s "$TMP/stub.port" ] && [ "$n" -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
    retries=5
    [ "$nm" != report ] || retries=2
    PATH=${wpath:-$PATH} \
        ASYNCEXEC_URL=http://127.0.0.1:$(cat "$TMP/stub.port") ASYNCEXEC_BACKEND_KEY=bk_x \
        IDLE_SECONDS=0 HEARTBEAT_SECONDS=1 MAX_ITERATIONS=$it RETRIES=$retries \
        WORK_CMD=$work timeout 30 sh "$WORKER" "$route" 2> "$TMP/$nm.log"
    rc=$?
    kill "$SPID" 2>/dev/null
    wait "$SPID" 2>/dev/null
    SPID=
}

# 503 with Retry-After: 2, then a curl that does not run at all, then an empty claim:
# the worker waits 2 s, then 1 s, not the 2 s of the 503's header dump (curl truncates
# its -D file even when it connects nowhere, so only a curl that never ran, E2BIG or a
# failed fork, leaves the last dump; the shim in $TMP/bin fails its 2nd call so)
mkdir "$TMP/bin"
cat > "$TMP/bin/curl" <<EOF
#!/bin/sh
echo x >> "$TMP/curl.calls"
[ "\$(wc -l < "$TMP/curl.calls")" -ne 2 ] || exit 126
exec $(command -v curl) "\$@"
EOF
chmod +x "$TMP/bin/curl"
t0=$(date +%s)
wpath=$TMP/bin:$PATH
stub_worker retry 1 claim=503:2,empty
wpath=
t1=$(date +%s)
check "503: the worker retried and exited 0 (got $rc)" [ "$rc" -eq 0 ]
check "503: it waited Retry-After" grep -q "claim: 503, again in 2 s" "$TMP/retry.log"
check "curl not run: it waited 1 s, not the stale Retry-After" \
    grep -q "claim: 000, again in 1 s" "$TMP/retry.log"
check "503: at least 3 s passed" [ $((t1 - t0)) -ge 3 ]

# A claim that gets no answer for 20 s: with REQUEST_TIMEOUT=1 the worker gives up on
# it after 1 s, counts it as no answer and tries again (an empty claim), in well under
# the 20 s
t0=$(date +%s)
export REQUEST_TIMEOUT=1
stub_worker hang 1 claim=hang:20,empty
unset REQUEST_TIMEOUT
t1=$(date +%s)
check "no answer: the worker exits 0 (got $rc)" [ "$rc" -eq 0 ]
check "no answer: retried as 000" grep -q "claim: 000, again in 1 s" "$TMP/hang.log"
check "no answer: given up after REQUEST_TIMEOUT, not 20 s ($((t1 - t0)) s)" \
    [ $((t1 - t0)) -lt 10 ]

# A heartbeat answered 404 or 401: the worker stops the work, reports nothing, and
# exits 2 on the next claim's same answer
for code in 404 401; do
    rm -f "$TMP/s.pid" "$TMP/s.done"
    stub_worker "hb$code" 2 claim=item,$code heartbeat=200,$code
    check "heartbeat $code: the worker exits 2 (got $rc)" [ "$rc" -eq 2 ]
    check "heartbeat $code: its work was stopped" gone s
    check "heartbeat $code: the work never finished" [ ! -e "$TMP/s.done" ]
    check "heartbeat $code: nothing reported" \
        sh -c "! grep -q '^complete' '$TMP/hb$code.stub'"
done
check "the stub's request, laid out otherwise, is jq's encoding, said in the log" \
    grep -q "could not be cut from the claim's answer" "$TMP/hb404.log"

# A complete answered 503 more than RETRIES times: the worker heartbeats between
# rounds and sends it again until it is answered
rm -f "$TMP/s.pid" "$TMP/s.done"
stub_worker report 2 claim=item,empty heartbeat=200 \
    complete=503:0,503:0,503:0,503:0,503:0,200
check "report: the worker exits 0 (got $rc)" [ "$rc" -eq 0 ]
check "report: the complete got its 200" grep -q "^complete 200" "$TMP/report.stub"
check "report: heartbeats between the rounds" [ "$(sed -n '/^complete/,$p' \
    "$TMP/report.stub" | grep -c '^heartbeat')" -ge 2 ]

if [ "$failed" -gt 0 ]; then
    for f in "$TMP"/*.log; do
        echo "--- $f" >&2
        cat "$f" >&2
    done
fi
echo "http_examples_worker: $pass passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$pass" -gt 0 ]
