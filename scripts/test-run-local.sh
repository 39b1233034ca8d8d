#!/usr/bin/env bash
# scripts/test-run-local.sh — the README's first command as root on a fresh machine does
# it: a clone in a directory that nginx's workers cannot enter (mode 0700, as /root), then
# `scripts/run-local.sh`, the life cycle through its nginx with the demo keys it printed,
# `scripts/run-local.sh stop`, and nothing left running.
#
# Checks: start succeeds; the FastCGI socket is outside the clone, 0660, group www-data;
# submit -> claim -> complete -> poll through nginx; status; stop stops every process it
# started (by pid) and removes the socket's directory. Free ports are chosen for nginx
# and MariaDB (ASYNCEXEC_PORT, ASYNCEXEC_DB_PORT). Ends with "N passed, N failed".
#   ASYNCEXEC_KEEP=1   keep the clone after a failure
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/stack.sh
source "$ROOT/scripts/lib/stack.sh"
stack_init "$ROOT" "$ROOT/.local" test-run-local

pass=0
fail=0
home=
clone=
ok() { pass=$((pass + 1)); stack_log "ok   $*"; }
bad() { fail=$((fail + 1)); stack_log "FAIL $*"; }
# check NAME CMD... — CMD's status, counted as NAME passed or failed.
check() { local n=$1; shift; if "$@"; then ok "$n"; else bad "$n"; return 1; fi; }

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [[ -n $clone && -x $clone/scripts/run-local.sh ]]; then
        "$clone/scripts/run-local.sh" stop >/dev/null 2>&1 || true
    fi
    if [[ -n $home ]]; then
        if [[ ${ASYNCEXEC_KEEP:-0} == 1 ]] && ((fail > 0)); then
            stack_log "kept $home"
        else
            rm -rf "$home"
        fi
    fi
    printf '%d passed, %d failed\n' "$pass" "$fail"
    ((fail == 0 && rc == 0)) && exit 0
    exit 1
}
trap cleanup EXIT
trap 'exit 1' INT TERM

((EUID == 0)) || stack_die "run as root (the README's set-up command as root is what it tests)"

# The clone: the committed tree (HEAD), in a 0700 directory like root's home. In a build
# root (scripts/test-in-root.sh --run-local) the tree has no .git: a copy of it (there the
# committed tree in CI) stands for the clone.
home=$(mktemp -d /tmp/asyncexec-home.XXXXXX)
chmod 0700 "$home"
clone=$home/asyncexec
if [[ -d $ROOT/.git || -f $ROOT/.git ]]; then
    git clone -q --no-hardlinks "$ROOT" "$clone" || stack_die "git clone $ROOT"
else
    mkdir "$clone" && tar -C "$ROOT" --exclude=./.local -cf - . | tar -C "$clone" -xf - ||
        stack_die "copy of $ROOT"
fi

export ASYNCEXEC_PORT ASYNCEXEC_DB_PORT
ASYNCEXEC_PORT=$(stack_free_port)
ASYNCEXEC_DB_PORT=$(stack_free_port)
out=$home/start.log
t0=$EPOCHREALTIME
# (start's output to its log, the check's own line to the terminal)
start() { "$clone/scripts/run-local.sh" start >"$out" 2>&1; }
check "run-local.sh start from a 0700 clone" start ||
    { sed 's/^/    /' "$out" | tail -n 40; exit 1; }
stack_log "started in $(python3 -c "print(f'{$EPOCHREALTIME - $t0:.1f}')") s"

sock=$(sed -n 's/^listen = //p' "$clone/.local/asyncexec.conf")
check "socket outside the clone" test "${sock#"$home"}" = "$sock"
check "socket 0660 root:www-data" test "$(stat -c '%a %U:%G' "$sock")" = "660 root:www-data"

# The life cycle with the keys run-local.sh provisioned (python3 reads the JSON).
# shellcheck disable=SC1091
source "$clone/.local/keys.env"
base=http://127.0.0.1:$ASYNCEXEC_PORT
lifecycle() {
    python3 - "$base" "$ASYNCEXEC_CONSUMER_KEY" "$ASYNCEXEC_BACKEND_KEY" <<'EOF'
import json, sys, urllib.request
base, ak, bk = sys.argv[1:]
def call(method, path, key, body=None, headers=None):
    h = {"Authorization": "Bearer " + key, **(headers or {})}
    data = None
    if body is not None:
        data = json.dumps(body, ensure_ascii=False).encode()
        h["Content-Type"] = "application/json"
    req = urllib.request.Request(base + path, data=data, method=method, headers=h)
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, json.loads(r.read())
st, sub = call("POST", "/v1/executions/demo/echo/run", ak, {"hello": "Zürich"})
assert st == 202, st
st, cl = call("POST", "/v1/backend/demo/echo/run/claim", bk, {"max": 1})
ex = [e for e in cl["executions"] if e["correlationId"] == sub["correlationId"]]
assert st == 200 and ex, cl
st, _ = call("POST", f"/v1/callbacks/{ex[0]['id']}/complete", bk, {"result": {"echo": "Zürich"}},
             {"X-Callback-Token": ex[0]["callbackToken"]})
assert st == 200, st
st, p = call("GET", sub["statusUrl"], ak, headers={"X-Poll-Token": sub["pollToken"]})
assert st == 200 and p["status"] == "completed" and p["result"] == {"echo": "Zürich"}, p
EOF
}
check "submit, claim, complete, poll through its nginx" lifecycle
check "status names the three processes" bash -c \
    "'$clone/scripts/run-local.sh' status 2>&1 | grep -c ' running (pid' | grep -qx 3"

pids=$(cat "$clone/.local/mariadb/mysqld.pid" "$clone/.local/asyncexec.pid" \
    "$clone/.local/nginx/nginx.pid" 2>/dev/null)
check "run-local.sh stop" "$clone/scripts/run-local.sh" stop
# gone: no pid of $pids is alive (a zombie that init has yet to reap is gone).
gone() {
    local p st
    for p in $pids; do
        st=$(ps -o stat= -p "$p" 2>/dev/null) || continue
        [[ $st == Z* ]] && continue
        stack_log "     pid $p still runs: $(ps -o args= -p "$p")"
        return 1
    done
}
check "every process it started is gone" gone
check "the socket's directory is removed" test ! -e "$(dirname "$sock")"
