#!/usr/bin/env bash
# scripts/test-in-root.sh — the whole suite inside a fresh Debian build root, so that what
# another Debian release ships (its GCC, json-c, MariaDB, nginx, PHP, Python) is tested on
# this host: a root of SUITE from the cache (scripts/lib/buildroot.sh), the working tree
# copied into it, and scripts/test.sh (or scripts/test-cluster.sh) run there with
# systemd-nspawn --pipe (no boot; the host's network and kernel). test.sh installs the
# packages it needs with apt-get inside the root.
#
# Usage: scripts/test-in-root.sh [--suite bookworm|trixie] [--cluster|--run-local] [--head]
#        [--] [ARGS...]
#   --suite     the Debian release of the root (default trixie, Debian 13)
#   --cluster   run scripts/test-cluster.sh (the label cluster) instead of scripts/test.sh
#   --run-local run scripts/test-run-local.sh (the README's first command, run-local.sh, as
#               root on that release) instead of scripts/test.sh
#   --head      copy the last commit (git archive HEAD) instead of the working tree
#   ARGS        given to that script (e.g. -R json, --sanitize)
#
# What is copied: the working tree as `git ls-files --cached --others --exclude-standard`
# lists it — tracked files with their uncommitted changes and new files that are not
# ignored, never .git, .local or build directories — so that it tests what scripts/test.sh
# on this host would. CI runs on a clean clone, where that is exactly HEAD (--head makes it
# HEAD anywhere).
#
# Runs as root (debootstrap, systemd-nspawn; installs them with apt-get when missing). The
# root lives in a temporary directory that is removed at the end, whatever happens (trap;
# the systemd-nspawn process is stopped by its pid). Output is the script's own, ctest's
# closing line included; the exit status is the script's (1 if the set-up fails).
# Environment: ASYNCEXEC_CACHE_DIR (buildroot.sh's cache, default /var/cache/asyncexec-ci),
# ASYNCEXEC_KEEP=1 (keep the root after a failure), ASYNCEXEC_BUILD_TYPE (passed on).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/buildroot.sh
source "$ROOT/scripts/lib/buildroot.sh"
buildroot_init test-in-root

SUITE=trixie
SCRIPT=scripts/test.sh
COMMIT=
ARGS=()
while (($#)); do
    case $1 in
        --suite) (($# >= 2)) || buildroot_die "--suite needs a value"; SUITE=$2; shift ;;
        --suite=*) SUITE=${1#--suite=} ;;
        --cluster) SCRIPT=scripts/test-cluster.sh ;;
        --run-local) SCRIPT=scripts/test-run-local.sh ;;
        --head) COMMIT=HEAD ;;
        --) shift; ARGS+=("$@"); break ;;
        *) ARGS+=("$1") ;;
    esac
    shift
done
buildroot_check_suite "$SUITE"
buildroot_host_tools

WORK=
T0=$SECONDS
cleanup() {
    local rc=$?
    trap - EXIT INT TERM HUP
    buildroot_stop || true
    if [[ -n $WORK ]]; then
        if ((rc != 0)) && [[ ${ASYNCEXEC_KEEP:-0} == 1 ]]; then
            buildroot_log "kept $WORK"
        else
            buildroot_remove "$WORK"
        fi
    fi
    buildroot_log "$SUITE: $SCRIPT exit $rc after $((SECONDS - T0)) s"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

WORK=$(mktemp -d "${TMPDIR:-/tmp}/asyncexec-root-$SUITE.XXXXXX")
buildroot_make "$SUITE" "$WORK/root"
buildroot_copy_tree "$ROOT" "$WORK/root/src/asyncexec" $COMMIT
buildroot_log "$SUITE root ready after $((SECONDS - T0)) s; running $SCRIPT ${ARGS[*]}"
env=()
for v in ASYNCEXEC_BUILD_TYPE CI; do
    [[ -z ${!v:-} ]] || env+=("$v=${!v}")
done
# The host's CA bundle, read-only, for the tests that fetch the pinned npm packages over
# HTTPS: a host behind a TLS-inspecting proxy trusts that proxy's CA in its own bundle,
# and a fresh root's bundle does not (npm ci: SELF_SIGNED_CERT_IN_CHAIN).
opts=()
ca=${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}
if [[ -r $ca ]]; then
    opts+=("--bind-ro=$ca:/usr/local/share/asyncexec-host-ca.crt")
    env+=("NODE_EXTRA_CA_CERTS=/usr/local/share/asyncexec-host-ca.crt"
          "npm_config_cafile=/usr/local/share/asyncexec-host-ca.crt")
fi
rc=0
buildroot_run "$SUITE" "$WORK/root" --chdir=/src/asyncexec "${opts[@]}" -- "${env[@]}" "$SCRIPT" \
    "${ARGS[@]}" || rc=$?
exit "$rc"
