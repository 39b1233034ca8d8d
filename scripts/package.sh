#!/usr/bin/env bash
# scripts/package.sh [OUTDIR] - build the Debian package asyncexec_<version>_<arch>.deb.
#
# A Release build with CMAKE_INSTALL_PREFIX=/usr and Debian's hardening flags
# (dpkg-buildflags), then `cpack -G DEB` (dependencies from dpkg-shlibdeps). The .deb goes
# to OUTDIR (default .local/package/); its path is printed on the last line.
# ASYNCEXEC_PACKAGE_BUILD_DIR overrides the build directory (default OUTDIR/build).
# Installs the build tools with apt-get when they are missing (run as root then).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
out=${1:-.local/package}
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=${ASYNCEXEC_PACKAGE_BUILD_DIR:-$out/build}

need=()
for t in cmake:cmake gcc:gcc make:make pkg-config:pkg-config gzip:gzip \
    dpkg-shlibdeps:dpkg-dev dpkg-buildflags:dpkg-dev; do
	command -v "${t%%:*}" >/dev/null 2>&1 || need+=("${t#*:}")
done
for p in libfcgi-dev libmariadb-dev libjson-c-dev libssl-dev uuid-dev; do
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
	-DBUILD_TESTING=OFF -DASYNCEXEC_WERROR=OFF \
	-DCMAKE_C_FLAGS="$cflags" -DCMAKE_EXE_LINKER_FLAGS="$ldflags" >/dev/null
cmake --build "$build" -j2 >/dev/null
rm -f "$build"/asyncexec_*.deb
(cd "$build" && cpack -G DEB >/dev/null)
deb=$(ls "$build"/asyncexec_*.deb)
cp "$deb" "$out/"
echo "$out/$(basename "$deb")"
