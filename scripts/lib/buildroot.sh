# shellcheck shell=bash
# scripts/lib/buildroot.sh — Debian root file systems for the build roots
# (scripts/test-in-root.sh, scripts/package.sh --suite) and the booted deployment test
# (scripts/test-deploy.sh). The one copy of the debootstrap and cache code.
#
#   CACHE/SUITE-minbase.tar      debootstrap --variant=minbase --include=systemd,systemd-sysv,
#                                dbus SUITE, made once, rebuilt when older than
#                                BUILDROOT_MAX_AGE_DAYS (its packages are upgraded by the
#                                apt-get update + install every user runs anyway)
#   CACHE/SUITE-apt-archives/    apt's downloaded .debs, bound to /var/cache/apt/archives
#                                of every root of that suite
#   CACHE/SUITE.lock             flock: one debootstrap per suite at a time
#
# Two roots of one suite running apt at the same moment share the archive directory; apt's
# own lock there makes the second apt-get fail rather than corrupt it (CI runs one at a time).
#
# CACHE is ASYNCEXEC_CACHE_DIR, default /var/cache/asyncexec-ci: outside the clone, so that
# CI, which starts from a fresh clone each time, reuses it (a cold debootstrap plus the
# first downloads cost minutes; a cached root is unpacked in seconds). One tarball per suite
# serves both uses: systemd in a build root costs some megabytes, a second debootstrap more.
#
# A root is a fresh copy of the tarball per run (buildroot_make); buildroot_run runs a
# command in it with systemd-nspawn --pipe (no boot; the host's network; a stub init as
# PID 1 reaps what the command leaves). Every systemd-nspawn started here is recorded in
# BUILDROOT_PIDS; buildroot_stop (for EXIT traps; never exits) kills what is left, by pid,
# and buildroot_remove deletes a root. buildroot_cache_get and _put read and write an entry
# of scripts/package.sh's package cache (ASYNCEXEC_PACKAGE_CACHE). Needs root, debootstrap
# and systemd-container (buildroot_host_tools installs them).
#
# Usage: source this file; buildroot_init PREFIX; then the functions below. Messages go to
# stderr as "PREFIX: ...".

BUILDROOT_SUITES=(bookworm trixie)
BUILDROOT_CACHE=${ASYNCEXEC_CACHE_DIR:-/var/cache/asyncexec-ci}
BUILDROOT_INCLUDE=systemd,systemd-sysv,dbus
BUILDROOT_MAX_AGE_DAYS=${ASYNCEXEC_BUILDROOT_MAX_AGE_DAYS:-30}
# Bounds (seconds): waiting for another run's debootstrap, a stopped systemd-nspawn.
BUILDROOT_LOCK_TIMEOUT=900
BUILDROOT_STOP_TIMEOUT=15
BUILDROOT_PIDS=()
BUILDROOT_PREFIX=buildroot

buildroot_init() { BUILDROOT_PREFIX=$1; }
buildroot_log() { printf '%s: %s\n' "$BUILDROOT_PREFIX" "$*" >&2; }
buildroot_die() { printf '%s: error: %s\n' "$BUILDROOT_PREFIX" "$*" >&2; exit 1; }

# buildroot_check_suite SUITE — dies unless SUITE is one of BUILDROOT_SUITES.
buildroot_check_suite() {
    local s
    for s in "${BUILDROOT_SUITES[@]}"; do [[ $1 == "$s" ]] && return 0; done
    buildroot_die "unknown suite '$1' (one of: ${BUILDROOT_SUITES[*]})"
}

# buildroot_debian_tag SUITE — Debian's version suffix of SUITE's backports and stable
# updates: deb12 (bookworm), deb13 (trixie).
buildroot_debian_tag() {
    case $1 in
        bookworm) printf 'deb12\n' ;;
        trixie) printf 'deb13\n' ;;
        *) buildroot_die "no Debian release number for suite '$1'" ;;
    esac
}

# buildroot_host_suite — the codename of this host's Debian (/etc/os-release), if any.
buildroot_host_suite() {
    # shellcheck source=/dev/null
    (. /etc/os-release 2>/dev/null && [[ ${ID:-} == debian ]] && printf '%s\n' "${VERSION_CODENAME:-}")
}

# buildroot_host_tools [EXTRA_COMMAND:PACKAGE...] — apt-get install debootstrap,
# systemd-container (and the extra ones) when their commands are missing.
buildroot_host_tools() {
    local need=() t
    ((EUID == 0)) || buildroot_die "run as root (debootstrap, systemd-nspawn)"
    for t in debootstrap:debootstrap systemd-nspawn:systemd-container flock:util-linux "$@"; do
        command -v "${t%%:*}" >/dev/null 2>&1 || need+=("${t#*:}")
    done
    ((${#need[@]})) || return 0
    buildroot_log "installing ${need[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends "${need[@]}" </dev/null >/dev/null ||
        buildroot_die "apt-get install ${need[*]}"
}

# buildroot_tarball SUITE — print the cached tarball of SUITE, making it first when it is
# missing or stale (debootstrap from Debian's default mirror; a few minutes cold).
buildroot_tarball() {
    local suite=$1 tarball build log
    buildroot_check_suite "$suite"
    tarball=$BUILDROOT_CACHE/$suite-minbase.tar
    build=$BUILDROOT_CACHE/$suite-build
    log=$BUILDROOT_CACHE/$suite-debootstrap.log
    mkdir -p "$BUILDROOT_CACHE/$suite-apt-archives/partial" || buildroot_die "mkdir $BUILDROOT_CACHE"
    (
        flock -w "$BUILDROOT_LOCK_TIMEOUT" 9 ||
            buildroot_die "another run holds $BUILDROOT_CACHE/$suite.lock (waited ${BUILDROOT_LOCK_TIMEOUT} s)"
        if [[ -f $tarball && -z $(find "$tarball" -mtime "+$BUILDROOT_MAX_AGE_DAYS") ]]; then
            exit 0
        fi
        buildroot_log "debootstrap --variant=minbase $suite (cached in $tarball)"
        rm -rf --one-file-system "$build"
        debootstrap --variant=minbase --include="$BUILDROOT_INCLUDE" \
            --cache-dir="$BUILDROOT_CACHE/$suite-apt-archives" "$suite" "$build" \
            >"$log" 2>&1 </dev/null || { tail -n 20 "$log" >&2; buildroot_die "debootstrap $suite (log: $log)"; }
        # apt's lists and downloads do not belong in the tarball.
        rm -rf "$build"/var/lib/apt/lists/* "$build"/var/cache/apt/archives/*.deb
        tar --numeric-owner -C "$build" -cpf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball" ||
            buildroot_die "tar $tarball"
        rm -rf --one-file-system "$build"
    ) 9>"$BUILDROOT_CACHE/$suite.lock" || exit 1
    printf '%s\n' "$tarball"
}

# buildroot_make SUITE DIR [boot] — a fresh root of SUITE in DIR (which must not exist).
# A build root gets a policy-rc.d that lets no maintainer script start a service (no init
# runs there); with "boot" (a root to boot with systemd-nspawn --boot) it gets none.
buildroot_make() {
    local suite=$1 dir=$2 mode=${3:-build} tarball
    tarball=$(buildroot_tarball "$suite") || exit 1
    mkdir "$dir" || buildroot_die "mkdir $dir"
    tar --numeric-owner -C "$dir" -xpf "$tarball" || buildroot_die "unpack $tarball into $dir"
    if [[ $mode != boot ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d" &&
            chmod 0755 "$dir/usr/sbin/policy-rc.d" || buildroot_die "policy-rc.d in $dir"
    fi
}

# buildroot_cache_get ENTRY KEY DIR — when ENTRY (a directory of the package cache,
# scripts/package.sh's ASYNCEXEC_PACKAGE_CACHE) holds a .deb under KEY, copy it into DIR and
# print its new path; status 1 when it holds none (or another key's).
buildroot_cache_get() {
    local deb
    [[ $(cat "$1/key" 2>/dev/null) == "$2" ]] || return 1
    deb=$(ls "$1"/asyncexec_*.deb 2>/dev/null | head -n 1) || true
    [[ -n $deb ]] || return 1
    cp "$deb" "$3/" || buildroot_die "copy $deb"
    printf '%s\n' "$3/$(basename "$deb")"
}

# buildroot_cache_put ENTRY KEY DEB — ENTRY replaced whole by DEB under KEY: never a key
# beside another build's .deb.
buildroot_cache_put() {
    rm -rf "$1.new" && mkdir -p "$1.new" && cp "$3" "$1.new/" &&
        printf '%s\n' "$2" >"$1.new/key" && rm -rf "$1" && mv "$1.new" "$1" ||
        buildroot_die "the package cache entry $1"
}

# buildroot_nspawn_args SUITE — the systemd-nspawn options every use of a root shares
# (printed one per line): quiet, not registered with machined, in the caller's unit, apt's
# archives bound from the cache.
buildroot_nspawn_args() {
    printf '%s\n' -q --register=no --keep-unit \
        "--bind=$BUILDROOT_CACHE/$1-apt-archives:/var/cache/apt/archives"
}

# buildroot_run SUITE DIR [NSPAWN_OPTIONS...] -- [NAME=VALUE...] CMD... — run CMD in the
# root DIR (stdin /dev/null, stdout and stderr the caller's) with a clean environment plus
# the NAME=VALUE given; returns its status.
# systemd-nspawn runs in the background so that a signal's trap can stop it (buildroot_stop).
buildroot_run() {
    local suite=$1 dir=$2 opts=() base=() pid rc=0
    shift 2
    while (($#)) && [[ $1 != -- ]]; do opts+=("$1"); shift; done
    (($#)) && shift
    (($#)) || buildroot_die "buildroot_run: no command"
    mapfile -t base < <(buildroot_nspawn_args "$suite")
    systemd-nspawn "${base[@]}" -D "$dir" --pipe --as-pid2 "${opts[@]}" -- \
        env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive "$@" </dev/null &
    pid=$!
    BUILDROOT_PIDS+=("$pid")
    wait "$pid" || rc=$?
    return "$rc"
}

# buildroot_stop — SIGTERM (which makes systemd-nspawn SIGKILL the container), then
# SIGKILL, to every systemd-nspawn of BUILDROOT_PIDS still running; waits for each, bounded.
buildroot_stop() {
    local pid end rc=0
    for pid in "${BUILDROOT_PIDS[@]}"; do
        kill -0 "$pid" 2>/dev/null || continue
        buildroot_log "stopping systemd-nspawn $pid"
        kill -TERM "$pid" 2>/dev/null
        end=$((SECONDS + BUILDROOT_STOP_TIMEOUT))
        while kill -0 "$pid" 2>/dev/null && ((SECONDS < end)); do sleep 0.2; done
        if kill -0 "$pid" 2>/dev/null; then
            buildroot_log "systemd-nspawn $pid still running: SIGKILL"
            kill -KILL "$pid" 2>/dev/null
            rc=1
        fi
        wait "$pid" 2>/dev/null
    done
    BUILDROOT_PIDS=()
    return "$rc"
}

# buildroot_remove DIR — delete a root made by buildroot_make (never crossing into another
# file system, such as a bind mount a crashed nspawn might have left).
buildroot_remove() {
    [[ -n $1 && -d $1 ]] || return 0
    rm -rf --one-file-system "$1"
}

# buildroot_copy_tree REPO DEST [COMMIT] — the working tree of the git repository REPO as
# `git ls-files --cached --others --exclude-standard` lists it (tracked files with their
# uncommitted changes, new files not ignored; no .git, no .local or build directories),
# copied to DEST (made). A tracked file deleted in the working tree is left out. With
# COMMIT: that commit's tree instead (git archive), nothing uncommitted.
buildroot_copy_tree() {
    local repo=$1 dest=$2 commit=${3:-}
    mkdir -p "$dest" || buildroot_die "mkdir $dest"
    if [[ -n $commit ]]; then
        git -C "$repo" archive --format=tar "$commit" | tar -C "$dest" -xf - ||
            buildroot_die "git archive $commit of $repo into $dest"
    else
        git -C "$repo" ls-files -z --cached --others --exclude-standard |
            tar -C "$repo" --null -T - --ignore-failed-read -cf - |
            tar -C "$dest" -xf - || buildroot_die "copy of $repo into $dest"
    fi
    [[ -f $dest/CMakeLists.txt ]] || buildroot_die "copy of $repo into $dest has no CMakeLists.txt"
}
