#!/usr/bin/env bash
# scripts/package.sh [--suite bookworm|trixie] [--lintian] [OUTDIR] - build the Debian
# package asyncexec_<version>-1~debNN_<arch>.deb.
#
# A Release build with CMAKE_INSTALL_PREFIX=/usr and Debian's hardening flags
# (dpkg-buildflags), then `cpack -G DEB` (dependencies from dpkg-shlibdeps). The .deb goes
# to OUTDIR (default .local/package/); its path is printed on the last line. The version is
# CMake's project(VERSION); the Debian revision is 1~debNN after the Debian release it is
# built on (Debian's usual suffix: 1~deb12 on bookworm, 1~deb13 on trixie; 1 elsewhere).
#
#   (no --suite)  builds on this host, for this host's release (as before).
#   --suite S     builds inside a fresh build root of S (scripts/lib/buildroot.sh: a copy of
#                 the working tree, systemd-nspawn --pipe), so that the Depends come from
#                 S's libraries (dpkg-shlibdeps there). Runs as root.
#   --lintian     then runs lintian of that release on the package (inside the root with
#                 --suite, else on this host): its output in OUTDIR/lintian-SUITE.log and on
#                 stderr; an error fails (exit 1), warnings are shown.
# ASYNCEXEC_PACKAGE_CACHE=DIR (with --suite; the container tests set it to
# .local/package-cache): a package built from the same tree is not built again. DIR/SUITE/
# keeps the last .deb of SUITE, its key (a SHA-256 of the suite, the Debian revision, the
# build root's tarball and the path, mode and content of every file the build root gets)
# and, once lintian ran, lintian's log and status; a build whose key differs replaces it.
# A reused package says so on stderr ("reusing ... built from the same tree").
# ASYNCEXEC_PACKAGE_BUILD_DIR overrides the build directory (default OUTDIR/build).
# ASYNCEXEC_DEB_RELEASE overrides the Debian revision.
# Installs the build tools with apt-get when they are missing (run as root then; cpack
# needs file(1) for dpkg-shlibdeps, which a minimal Debian lacks).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
suite=
lint=0
out=
while [ $# -gt 0 ]; do
    case $1 in
    --suite) [ $# -ge 2 ] || { echo "package.sh: --suite needs a value" >&2; exit 2; }
        suite=$2; shift ;;
    --suite=*) suite=${1#--suite=} ;;
    --lintian) lint=1 ;;
    -*) echo "usage: scripts/package.sh [--suite bookworm|trixie] [--lintian] [OUTDIR]" >&2; exit 2 ;;
    *) out=$1 ;;
    esac
    shift
done
out=${out:-.local/package}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# lintian_run SUITE DEB CMD...: CMD (lintian, here or in a root) on DEB; its output in
# OUTDIR/lintian-SUITE.log and its status in $lint_rc, shown by lintian_show.
lintian_run() {
    local s=$1 deb=$2
    shift 2
    lint_rc=0
    "$@" >"$out/lintian-$s.log" 2>&1 || lint_rc=$?
    lintian_show "$s" "$deb" "$lint_rc"
}

# lintian_show SUITE DEB RC: OUTDIR/lintian-SUITE.log (without the root warning) and
# lintian's exit RC on stderr; status 1 when RC is not 0 (an error).
lintian_show() {
    # Not lintian's: systemd-nspawn's complaint that /run is no tmpfs on this host.
    grep -v -e '^running with root privileges' -e '^Attempted to remove disk file system under' \
        "$out/lintian-$1.log" | sed "s/^/package.sh: lintian ($1): /" >&2 || true
    echo "package.sh: lintian ($1) on $(basename "$2"): exit $3" >&2
    [ "$3" = 0 ]
}

# package_key TARBALL: the cache key of this tree's package of $suite (see the top).
package_key() {
    local list
    list=$(mktemp) || return 1
    git -C "$root" ls-files -z --cached --others --exclude-standard | sort -z >"$list"
    {
        printf 'suite %s release %s root %s\n' "$suite" "${ASYNCEXEC_DEB_RELEASE:-}" \
            "$(stat -c '%s %Y' "$1")"
        # A file listed but deleted is not copied either (buildroot_copy_tree).
        (cd "$root" && xargs -0 -r stat -c '%a %n' -- <"$list" 2>/dev/null
            xargs -0 -r sha256sum -- <"$list" 2>/dev/null) || true
    } | sha256sum | cut -d' ' -f1
    rm -f "$list"
}

if [ -n "$suite" ]; then
    # shellcheck source-path=SCRIPTDIR source=lib/buildroot.sh
    . "$root/scripts/lib/buildroot.sh"
    buildroot_init package.sh
    buildroot_check_suite "$suite"
    buildroot_host_tools
    work=
    done_() {
        local rc=$?
        trap - EXIT INT TERM HUP
        buildroot_stop || true
        [ -z "$work" ] || buildroot_remove "$work"
        exit "$rc"
    }
    trap done_ EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    trap 'exit 129' HUP
    work=$(mktemp -d "${TMPDIR:-/tmp}/asyncexec-package-$suite.XXXXXX")
    tarball=$(buildroot_tarball "$suite") || exit 1
    entry='' deb=''
    if [ -n "${ASYNCEXEC_PACKAGE_CACHE:-}" ]; then
        entry=$ASYNCEXEC_PACKAGE_CACHE/$suite
        key=$(package_key "$tarball") || buildroot_die "the package cache's key"
        if deb=$(buildroot_cache_get "$entry" "$key" "$out"); then
            buildroot_log "reusing $(basename "$deb") built from the same tree ($entry, key ${key:0:16})"
        else
            deb=''
        fi
    fi
    if [ -z "$deb" ]; then
        buildroot_make "$suite" "$work/root"
        buildroot_copy_tree "$root" "$work/root/src/asyncexec"
        # The root's build tree and output stay inside it (not in /tmp: nspawn mounts a
        # tmpfs there); only the .deb comes out.
        buildroot_run "$suite" "$work/root" --chdir=/src/asyncexec -- \
            ASYNCEXEC_PACKAGE_BUILD_DIR=/var/tmp/package-build ${ASYNCEXEC_DEB_RELEASE:+ASYNCEXEC_DEB_RELEASE=$ASYNCEXEC_DEB_RELEASE} \
            scripts/package.sh /var/tmp/package-out >"$work/package.log" 2>&1 ||
            { tail -n 30 "$work/package.log" >&2; buildroot_die "the build in the $suite root failed"; }
        # The path is the build's last line of its own (systemd-nspawn may write after it).
        deb=$(grep -x '/var/tmp/package-out/asyncexec_[^/]*\.deb' "$work/package.log" | tail -n 1) ||
            { tail -n 30 "$work/package.log" >&2; buildroot_die "no package path in the build's output"; }
        cp "$work/root$deb" "$out/" || buildroot_die "copy $deb"
        deb=$out/$(basename "$deb")
        [ -z "$entry" ] || buildroot_cache_put "$entry" "$key" "$deb"
    fi
    if [ "$lint" = 1 ] && [ -n "$entry" ] && [ -f "$entry/lintian.rc" ]; then
        cp "$entry/lintian-$suite.log" "$out/" || buildroot_die "copy the cached lintian log"
        buildroot_log "lintian's result of that package, from the cache"
        lintian_show "$suite" "$deb" "$(cat "$entry/lintian.rc")" || exit 1
    elif [ "$lint" = 1 ]; then
        [ -d "$work/root" ] || buildroot_make "$suite" "$work/root"
        buildroot_log "installing lintian in the $suite root"
        buildroot_run "$suite" "$work/root" -- sh -c 'apt-get update -qq &&
            apt-get install -y -qq --no-install-recommends lintian' >"$work/lintian-apt.log" 2>&1 ||
            { tail -n 20 "$work/lintian-apt.log" >&2; buildroot_die "apt-get install lintian ($suite)"; }
        lintian_run "$suite" "$deb" buildroot_run "$suite" "$work/root" \
            "--bind-ro=$deb:/var/tmp/$(basename "$deb")" -- lintian --fail-on error "/var/tmp/$(basename "$deb")" ||
            true
        if [ -n "$entry" ]; then
            cp "$out/lintian-$suite.log" "$entry/" && printf '%s\n' "$lint_rc" >"$entry/lintian.rc" ||
                buildroot_die "the package cache entry $entry"
        fi
        [ "$lint_rc" = 0 ] || exit 1
    fi
    echo "$deb"
    exit 0
fi

build=${ASYNCEXEC_PACKAGE_BUILD_DIR:-$out/build}
# The Debian revision: 1~debNN on Debian NN (os-release's VERSION_ID), else 1.
release=${ASYNCEXEC_DEB_RELEASE:-$(. /etc/os-release 2>/dev/null
    case ${ID:-}:${VERSION_ID:-} in debian:[0-9]*) echo "1~deb$VERSION_ID" ;; *) echo 1 ;; esac)}

need=()
for t in cmake:cmake gcc:gcc make:make pkg-config:pkg-config gzip:gzip \
    dpkg-shlibdeps:dpkg-dev dpkg-buildflags:dpkg-dev file:file; do
    command -v "${t%%:*}" >/dev/null 2>&1 || need+=("${t#*:}")
done
for p in libfcgi-dev libmariadb-dev libjson-c-dev libssl-dev uuid-dev libcurl4-openssl-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "package.sh: installing ${need[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# Debian's hardening (fortify, stack protector, relro, bindnow); -ffile-prefix-map keeps
# the build path out of the binaries.
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
cflags="$(dpkg-buildflags --get CFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
cflags="$cflags -ffile-prefix-map=$root=."
ldflags=$(dpkg-buildflags --get LDFLAGS)

# A build directory of another source tree (another clone) is started afresh.
if [ -f "$build/CMakeCache.txt" ] &&
    ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$root" "$build/CMakeCache.txt"; then
    rm -rf "$build"
fi
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
    -DBUILD_TESTING=OFF -DASYNCEXEC_WERROR=OFF -DASYNCEXEC_DEB_RELEASE="$release" \
    -DCMAKE_C_FLAGS="$cflags" -DCMAKE_EXE_LINKER_FLAGS="$ldflags" >/dev/null
cmake --build "$build" -j2 >/dev/null
rm -f "$build"/asyncexec_*.deb
(cd "$build" && cpack -G DEB >/dev/null)
deb=$(ls "$build"/asyncexec_*.deb)
cp "$deb" "$out/"
deb=$out/$(basename "$deb")
if [ "$lint" = 1 ]; then
    host=$(. /etc/os-release 2>/dev/null; echo "${VERSION_CODENAME:-host}")
    lintian_run "$host" "$deb" lintian --fail-on error "$deb" || exit 1
fi
echo "$deb"
