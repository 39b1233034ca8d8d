# shellcheck shell=bash
# scripts/lib/deploy_ct.sh - the helpers of the booted-container tests
# (scripts/test-deploy.sh, scripts/test-upgrade.sh, scripts/test-release-upgrade.sh): the
# counters and their messages, a Debian root booted with systemd-nspawn --boot (systemd as
# PID 1, the host's network), commands inside it through nsenter, HTTP through the system
# nginx on port 80, and the cleanup (an EXIT trap) that powers the container off and
# removes it whatever happened, then prints "N passed, N failed" and exits 0 only when
# nothing failed.
#
# Usage: set $repo (the tree), source scripts/lib/buildroot.sh (buildroot_init PREFIX),
# then this file; then `trap cleanup EXIT`. The caller sets $work (the run's directory,
# removed by the cleanup unless ASYNCEXEC_KEEP=1 after a failure) before ct_make; the
# helpers read $work, $ct, $nspawn_pid, $base and $nport, and count in $pass and $fail.

# Each package is built once per tree (scripts/package.sh, ASYNCEXEC_PACKAGE_CACHE), so the
# container tests of one CI run share their builds; set it empty to build afresh.
export ASYNCEXEC_PACKAGE_CACHE=${ASYNCEXEC_PACKAGE_CACHE-$repo/.local/package-cache}

# The state of the run, read by the helpers and the cleanup.
t0=$(date +%s)
pass=0
fail=0
work=
nspawn_pid=
ct=
# Background processes of the caller that the cleanup ends (by pid).
loaders=()
base=http://127.0.0.1
# asyncexec-notify's notify_listen (the default, 127.0.0.1:9466).
nport=9466

say() { printf '[%4ds] %s\n' "$(($(date +%s) - t0))" "$*"; }
ok() { pass=$((pass + 1)); say "ok   $*"; }
bad() { fail=$((fail + 1)); say "FAIL $*"; }
die() { say "fatal: $*"; fail=$((fail + 1)); exit 1; }
# check NAME CMD...: one check, passed when CMD succeeds.
check() { local n=$1; shift; if "$@"; then ok "$n"; else bad "$n"; fi; }
not() { ! "$@" >/dev/null 2>&1; }
quiet() { "$@" >/dev/null 2>&1; }

# has STATUS FILE TEXT...: STATUS is 200 and FILE contains every TEXT (fixed strings).
has() {
    local st=$1 f=$2; shift 2
    [ "$st" = 200 ] || { say "     status $st: $(head -c 300 "$f")"; return 1; }
    while [ $# -gt 0 ]; do
        grep -qF -- "$1" "$f" || { say "     missing $1 in $(head -c 300 "$f")"; return 1; }
        shift
    done
}
atleast() { [ "$(wc -l <"$1")" -ge "$2" ]; }

# The container's systemd (PID 1 inside): the child of systemd-nspawn whose comm is
# "systemd". nspawn may first show a transient child that exits; taking the first child
# alone made nsenter fail ("stat of /proc/N/ns/user failed") in 1 of 2 runs.
ct_find() {
    local p
    for p in $(pgrep -P "$nspawn_pid"); do
        if [ "$(cat "/proc/$p/comm" 2>/dev/null)" = systemd ]; then ct=$p; return 0; fi
    done
    return 1
}
# ct_alive: $ct is still that process (alive, comm systemd, a child of systemd-nspawn).
ct_alive() {
    [ -n "$ct" ] && [ "$(cat "/proc/$ct/comm" 2>/dev/null)" = systemd ] &&
        [ "$(ps -o ppid= -p "$ct" 2>/dev/null | tr -d ' ')" = "$nspawn_pid" ]
}

# Runs a command inside the container as root, with a clean environment; status 125 when
# the container's systemd is gone.
in_ct() {
    ct_alive || { echo "in_ct: the container's systemd ($ct) is gone" >&2; return 125; }
    nsenter -t "$ct" -a -- env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}

# wait_for SECONDS CMD...: polls CMD every 0.2 s until it succeeds; 1 after SECONDS.
wait_for() {
    local end=$(($(date +%s) + $1)); shift
    until "$@"; do
        [ "$(date +%s)" -lt "$end" ] || return 1
        sleep 0.2
    done
}

cleanup() {
    local p rc=$?
    for p in "${loaders[@]}"; do
        kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    # A build root's systemd-nspawn (buildroot_run) still running, if any.
    buildroot_stop || true
    if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
        ct_alive && in_ct systemctl poweroff >/dev/null 2>&1
        if ! wait_for 60 eval '! kill -0 "$nspawn_pid" 2>/dev/null'; then
            say "container did not power off; SIGTERM to systemd-nspawn $nspawn_pid"
            kill -TERM "$nspawn_pid" 2>/dev/null
            if ! wait_for 15 eval '! kill -0 "$nspawn_pid" 2>/dev/null'; then
                kill -KILL "$nspawn_pid" 2>/dev/null
                ct_alive && kill -KILL "$ct" 2>/dev/null
            fi
        fi
        wait "$nspawn_pid" 2>/dev/null
    fi
    if [ -n "$work" ] && [ -d "$work" ]; then
        if [ "${ASYNCEXEC_KEEP:-0}" = 1 ] && [ "$fail" -gt 0 ]; then
            say "kept $work (boot log: $work/boot.log)"
        else
            buildroot_remove "$work"
        fi
    fi
    say "total $(($(date +%s) - t0)) s"
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ] && [ "$rc" -eq 0 ] && exit 0
    exit 1
}

# deploy_blocks MANPAGE [MARK]: the blocks of the page marked MARK (default deploy-block:
# the deployment guide's), in order, as literal shell: each .EX ... .EE block after a line
# '.\" MARK' in asyncexec-ops(7), with the roff escapes undone (\- \e \& \(aq \(ga; any
# other escape is an error, so the page cannot hold a block that runs differently from
# how it reads).
deploy_blocks() {
	MARK=$(printf '.\\" %s' "${2:-deploy-block}") awk '$0 == ENVIRON["MARK"] { want = 1; next }
	     want == 1 && /^\.EX$/ { want = 2; next }
	     want == 2 && /^\.EE$/ { want = 0; print ""; next }
	     want == 2 { print }' "$1" |
		perl -ne 'if (/\\(?!e|-|&|\(aq|\(ga)/) { print STDERR "unknown roff escape: $_"; exit 1 }
			s/\\(e|-|&|\(aq|\(ga)/{ "e" => "\\", "-" => "-", "&" => "", "(aq" => "\x27", "(ga" => "`" }->{$1}/ge;
			print'
}

booted() { case $(in_ct systemctl is-system-running 2>/dev/null) in running|degraded) return 0;; esac; return 1; }

# http OUT METHOD PATH [curl args]: prints the status, the body goes to OUT.
http() { local o=$1 m=$2 p=$3; shift 3; curl -sS -o "$o" -w '%{http_code}' -X "$m" "$base$p" "$@"; }
json_str() { sed -n 's/.*"'"$1"'":"\([^"]*\)".*/\1/p' "$2"; }
json_num() { sed -n 's/.*"'"$1"'":\([0-9][0-9]*\).*/\1/p' "$2"; }

ready() { [ "$(http "$work/b" GET /readyz 2>/dev/null)" = 200 ]; }
nready() { [ "$(curl -s -o /dev/null --max-time 5 -w '%{http_code}' "http://127.0.0.1:$nport/readyz")" = 200 ]; }

# ports_free PORT...: dies when something on this host listens on one of them (the
# container shares the host's network).
ports_free() {
    local port
    for port in "$@"; do
        if [ -n "$(ss -Hltn "sport = :$port")" ]; then
            die "something on this host listens on port $port (the container shares the network)"
        fi
    done
}

# ct_suite_args NAME ARGS...: the one option of scripts/NAME.sh, --suite bookworm|trixie,
# into $suite (default: this host's release when it is bookworm or trixie, else trixie);
# exit 2 with its usage on anything else.
ct_suite_args() {
    local name=$1; shift
    case $(buildroot_host_suite) in bookworm) suite=bookworm ;; *) suite=trixie ;; esac
    while [ $# -gt 0 ]; do
        case $1 in
        --suite) [ $# -ge 2 ] || { echo "$name: --suite needs a value" >&2; exit 2; }
            suite=$2; shift ;;
        --suite=*) suite=${1#--suite=} ;;
        *) echo "usage: scripts/$name.sh [--suite bookworm|trixie]" >&2; exit 2 ;;
        esac
        shift
    done
    buildroot_check_suite "$suite"
}

# ct_state PORT...: the host's tools (with curl, nsenter, pgrep and ss), the PORTs free,
# and this run's directory $work made under $state.
ct_state() {
    buildroot_host_tools curl:curl nsenter:util-linux pgrep:procps ss:iproute2
    ports_free "$@"
    mkdir -p "$state" || die "mkdir $state"
    work=$(mktemp -d "$state/run.XXXXXX") || die mktemp
}

# ct_package SUITE: this tree's .deb of SUITE by scripts/package.sh --suite SUITE (built,
# or the one built from the same tree before: ASYNCEXEC_PACKAGE_CACHE) into
# $state/package-SUITE (its output in $work/package-SUITE.out); its path in $pkg. Dies when
# the build fails or makes no package.
ct_package() {
    say "this tree's package (scripts/package.sh --suite $1)"
    rm -rf "$state/package-$1"
    scripts/package.sh --suite "$1" "$state/package-$1" >"$work/package-$1.out" 2>&1 ||
        { tail -n 20 "$work/package-$1.out"; die "scripts/package.sh --suite $1"; }
    pkg=$(ls "$state/package-$1"/asyncexec_*.deb 2>/dev/null | head -n 1)
    [ -n "$pkg" ] || die "scripts/package.sh --suite $1 made no package"
    say "package: $pkg"
    package_reused "$work/package-$1.out"
}

# package_reused OUT: scripts/package.sh's lines in its output OUT that say it reused a
# package (and lintian's result) built from the same tree, if it did.
package_reused() {
    local l
    while IFS= read -r l; do say "${l#package.sh: }"; done < <(grep -e '^package.sh: reusing ' \
        -e "^package.sh: lintian's result" "$1" 2>/dev/null)
}

# ct_make SUITE: a fresh root of SUITE to boot in $work/root (sets $root). Test harness
# only: the container's MariaDB must not take port 3306 of the shared network (the
# deployment uses its unix socket).
ct_make() {
    root=$work/root
    buildroot_make "$1" "$root" boot
    mkdir -p "$root/etc/mysql/mariadb.conf.d"
    printf '[mysqld]\nskip-networking\n' >"$root/etc/mysql/mariadb.conf.d/99-deploy-test.cnf"
}

# ct_boot SUITE: boots $root (systemd-nspawn --boot in the background, its pid in
# $nspawn_pid, its log in $work/boot.log) and waits for its systemd ($ct) to be up.
ct_boot() {
    say "booting the container"
    mapfile -t nspawn_args < <(buildroot_nspawn_args "$1")
    systemd-nspawn "${nspawn_args[@]}" -D "$root" --boot >"$work/boot.log" 2>&1 &
    nspawn_pid=$!
    wait_for 30 ct_find || die "no systemd process in the container (see $work/boot.log)"
    wait_for 60 booted || die "the container did not boot: $(in_ct systemctl is-system-running 2>&1)"
    ok "container booted: systemd is PID 1 ($(in_ct systemctl is-system-running))"
}

# ct_run_blocks WHAT: /root/deploy-block.sh run in the container as root (sh -eux, its
# output in $work/deploy.log; WHAT names the blocks in the check's line), then the demo
# keys the blocks left read into ak and bk; dies when either fails.
ct_run_blocks() {
    if in_ct sh -eux /root/deploy-block.sh >"$work/deploy.log" 2>&1; then
        ok "$1 ran (set -eu)"
    else
        tail -n 30 "$work/deploy.log"
        die "$1"
    fi
    ak=$(cat "$root/root/asyncexec-demo.ak" 2>/dev/null)
    bk=$(cat "$root/root/asyncexec-demo.bk" 2>/dev/null)
    [ -n "$ak" ] && [ -n "$bk" ] || die "the blocks left no keys in /root/asyncexec-demo.ak/.bk"
}
