#!/usr/bin/env bash
# scripts/test-release-upgrade.sh - the release upgrade test: a Debian 12 (bookworm) host
# running this tree's bookworm package upgraded to Debian 13 (trixie) the way Debian's
# release notes say, then to this tree's trixie package, as asyncexec-ops(7), UPGRADES,
# "Debian 12 to 13", says.
#
#  1. builds this tree's two .debs, each in a build root of its release
#     (scripts/package.sh --suite bookworm, then --suite trixie);
#  2. boots a fresh bookworm root (systemd-nspawn --boot, scripts/lib/deploy_ct.sh),
#     installs the bookworm .deb with nginx, mariadb-server and curl, runs the deployment
#     blocks of asyncexec-ops(7) literally, and, through nginx on port 80, leaves three
#     executions (scripts/lib/deploy_work.sh): A completed, B claimed (its callback token
#     kept), C waiting;
#  3. the release upgrade as Debian's release notes give it (their commands, not this
#     project's: not checked against the page): bookworm -> trixie in
#     /etc/apt/sources.list, apt-get update, apt-get upgrade --without-new-pkgs, apt-get
#     full-upgrade (-y, --force-confold, stdin /dev/null); checks what the page says of
#     it: the bookworm package stays installed, MariaDB and nginx are trixie's, the
#     service answers again (/readyz 200) without anyone touching it;
#  4. the trixie package as the page says (each command checked to be in the page, as
#     scripts/test-upgrade.sh does): apt-get install of the ~deb13 .deb, migrate --status
#     (up to date: the same schema); checks: ~deb13 installed, the units under
#     /usr/lib/systemd/system, enabled and active as before, no postinst warning;
#  5. a reboot (the container powered off and the same root booted again): the service,
#     the timer and the sender start by themselves; then A polls its result, C is claimed
#     and completed, B's callback token completes B, a new life cycle D; asyncexec-admin
#     check; asyncexec-notify active; an expiry run; journalctl -p err of the asyncexec
#     units since the trixie package was installed: empty;
#  6. powers the container off and removes it, whatever happened (trap; by pid).
#
#   scripts/test-release-upgrade.sh
# Run as root on a Debian host (installs systemd-container, debootstrap and curl with
# apt-get when missing); downloads trixie's packages for the upgrade (cached with the
# bookworm root's, scripts/lib/buildroot.sh). Ports 80, 9180 and 9466 must be free on the
# host (the container shares its network): run no other deployment test beside it. Ends
# with "N passed, N failed"; exit 0 only when nothing failed.
#   ASYNCEXEC_RELEASE_DIR    state directory (default .local/release-upgrade)
#   ASYNCEXEC_KEEP=1         keep the container's root file system after a failure
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD
state=${ASYNCEXEC_RELEASE_DIR:-$repo/.local/release-upgrade}
# shellcheck source-path=SCRIPTDIR source=lib/buildroot.sh
. "$repo/scripts/lib/buildroot.sh"
# shellcheck source-path=SCRIPTDIR source=lib/deploy_ct.sh
. "$repo/scripts/lib/deploy_ct.sh"
# shellcheck source-path=SCRIPTDIR source=lib/deploy_site.sh
. "$repo/scripts/lib/deploy_site.sh"
# shellcheck source-path=SCRIPTDIR source=lib/deploy_work.sh
. "$repo/scripts/lib/deploy_work.sh"
buildroot_init test-release-upgrade

from=bookworm
to=trixie
route=demo/echo/run
mport=9180
page=scripts/man/asyncexec-ops.7
# The units the deployment guide enabled, and where each release's package puts them.
units="asyncexec-fcgi.socket asyncexec-expire.timer asyncexec-notify.service"
unitdir_to=/usr/lib/systemd/system
# Debian's release upgrade, unattended: its answers are dpkg's (keep every edited
# conffile) and apt's (-y); nobody at a terminal (stdin /dev/null).
apt_opts="-y -o Dpkg::Options::=--force-confold"
# Seconds the service may stay unready once MariaDB has started again: its workers
# reconnect on their next request.
max_gap=10

# ---- helpers (the shared ones are scripts/lib/deploy_ct.sh's and deploy_work.sh's) -----

# version_of PACKAGE: its installed version in the container.
version_of() { in_ct dpkg-query -W -f '${Version}' "$1" 2>/dev/null; }
# release: the container's VERSION_CODENAME.
release() { in_ct sh -c '. /etc/os-release && echo "$VERSION_CODENAME"'; }
# active: the enabled units and asyncexec-fcgi.service all active.
active() {
    local s
    s=$(in_ct systemctl is-active $units asyncexec-fcgi.service | tr '\n' ' ')
    [ "$s" = "active active active active " ] || { say "     is-active $units asyncexec-fcgi.service: $s"; return 1; }
}
# enabled: the units the guide enabled are still enabled.
enabled() {
    local s
    s=$(in_ct systemctl is-enabled $units | tr '\n' ' ')
    [ "$s" = "enabled enabled enabled " ] || { say "     is-enabled $units: $s"; return 1; }
}
# unit_paths: each of the package's units is a file under $unitdir_to (FragmentPath).
unit_paths() {
    local u p
    for u in $units asyncexec-fcgi.service asyncexec-expire.service; do
        p=$(in_ct systemctl show -P FragmentPath "$u")
        [ "$p" = "$unitdir_to/$u" ] || { say "     $u: FragmentPath $p"; return 1; }
    done
}

# load_start: one client polling A through nginx, one request after another (20 a second
# at most), each answer a line "EPOCH STATUS RETRY-AFTER CONTENT-TYPE" in $work/load
# (EPOCH: when it was sent; 000: no answer, nginx not listening); load_stop ends it after
# its current request.
load_start() {
    rm -f "$work/load.stop"
    (
        while [ ! -e "$work/load.stop" ]; do
            printf '%s ' "$EPOCHREALTIME"
            curl -s -o /dev/null --max-time 10 \
                -w '%{http_code} %header{retry-after} %{content_type}\n' \
                -H "Authorization: Bearer $ak" -H "X-Poll-Token: $atok" \
                "$base/v1/executions/$route/upgrade-A-$$"
            sleep 0.05
        done >"$work/load"
    ) &
    loader=$!
    loaders+=("$loader")
}
load_stop() { touch "$work/load.stop"; wait "$loader" 2>/dev/null; }
# load_clean: every answer was 200, or 503 problem+json with Retry-After, or none (000).
load_clean() {
    awk '!($2 == 200 || $2 == "000" ||
           ($2 == 503 && $3 != "" && $4 ~ /^application\/problem\+json/)) { bad++; print "     " $0 }
         END { exit bad > 0 }' "$work/load"
}
# load_recovered: the polls against MariaDB's stop and start in the container's journal
# (scripts/lib/release_load.py: its line shown); a 200 within $max_gap s of its last start.
load_recovered() {
    in_ct journalctl -u mariadb --since "$since_release" -o short-unix --no-pager >"$work/mariadb.journal" 2>&1
    python3 scripts/lib/release_load.py "$work/load" "$work/mariadb.journal" "$max_gap" >"$work/load.summary"
    local rc=$?
    say "     $(cat "$work/load.summary")"
    return "$rc"
}

# ---- phases ----------------------------------------------------------------------------

# preflight: root, the version, the host's tools, the ports free.
preflight() {
    [ "$(id -u)" -eq 0 ] || die "run as root (debootstrap, systemd-nspawn)"
    [ $# -eq 0 ] || { echo "usage: scripts/test-release-upgrade.sh" >&2; exit 2; }
    version=$(sed -n 's/^project(asyncexec VERSION \([0-9][0-9.]*\) .*/\1/p' CMakeLists.txt)
    [ -n "$version" ] || die "no project(asyncexec VERSION X.Y.Z ...) in CMakeLists.txt"
    ver_from=$version-1~$(buildroot_debian_tag "$from")
    ver_to=$version-1~$(buildroot_debian_tag "$to")
    say "$ver_from on $from -> $to -> $ver_to"
    ct_state 80 "$mport" "$nport"
}

# phase_packages: 1. this tree's package of each release.
phase_packages() {
    ct_package "$from"
    deb_from=$pkg
    ct_package "$to"
    deb_to=$pkg
    check "the packages are asyncexec_${ver_from}_amd64.deb and asyncexec_${ver_to}_amd64.deb" \
        test "$(basename "$deb_from") $(basename "$deb_to")" = \
        "asyncexec_${ver_from}_amd64.deb asyncexec_${ver_to}_amd64.deb"
}

# phase_from: 2. the bookworm package installed and deployed by the guide's blocks.
phase_from() {
    ct_make "$from"
    cp "$deb_from" "$root/root/" || die "copy the .deb"
    deploy_blocks "$page" >"$root/root/deploy-block.sh" || die "the deploy-blocks of $page"
    [ -s "$root/root/deploy-block.sh" ] || die "no deploy-block in $page"
    ct_boot "$from"
    say "apt install ./$(basename "$deb_from") nginx mariadb-server curl"
    if in_ct sh -c 'apt-get update -qq && cd /root && apt-get install -y -qq \
        --no-install-recommends ./'"$(basename "$deb_from")"' nginx mariadb-server curl' \
        </dev/null >"$work/apt-from.log" 2>&1; then
        ok "apt installed the $from package with nginx and mariadb-server"
    else
        tail -n 20 "$work/apt-from.log"
        die "apt install on $from"
    fi
    check "dpkg-query: $ver_from installed" test "$(version_of asyncexec)" = "$ver_from"
    rm -f "$root/root/$(basename "$deb_from")"
    ct_run_blocks "asyncexec-ops(7) deployment blocks on $from"
    check "$from: /readyz through nginx on port 80: 200" wait_for 15 ready
    check "$from: the units the guide enabled are enabled and active" eval 'enabled && active'
    maria_from=$(version_of mariadb-server)
    nginx_from=$(version_of nginx)
}

# phase_release: 3. Debian's release upgrade, unattended; what the page says of it.
phase_release() {
    local rc
    since_release=$(in_ct date '+%Y-%m-%d %H:%M:%S')
    check "sources.list: $from -> $to" eval \
        'in_ct sed -i "s/\b$from\b/$to/g" /etc/apt/sources.list && in_ct grep -qw "$to" /etc/apt/sources.list'
    say "apt-get update; apt-get $apt_opts upgrade --without-new-pkgs; apt-get $apt_opts full-upgrade"
    load_start
    in_ct sh -c "apt-get update -qq && apt-get $apt_opts upgrade --without-new-pkgs" \
        </dev/null >"$work/apt-upgrade.log" 2>&1
    rc=$?
    tail -n 5 "$work/apt-upgrade.log" | sed 's/^/    /'
    check "apt-get upgrade --without-new-pkgs: exit 0" test "$rc" -eq 0
    in_ct sh -c "apt-get $apt_opts full-upgrade" </dev/null >"$work/apt-full.log" 2>&1
    rc=$?
    grep -E '^(The following packages will be REMOVED|[0-9]+ upgraded)' -A 3 "$work/apt-full.log" | sed 's/^/    /'
    check "apt-get full-upgrade: exit 0" test "$rc" -eq 0
    load_stop
    check "polls of A through the upgrade: each 200, or 503 problem+json with Retry-After, or no answer (nginx restarting)" load_clean
    check "polls of A through the upgrade: a 200 within $max_gap s of MariaDB's start (the workers reconnect by themselves)" load_recovered
    check "the container runs $to" test "$(release)" = "$to"
    say "mariadb-server $maria_from -> $(version_of mariadb-server), nginx $nginx_from -> $(version_of nginx)"
    check "mariadb-server and nginx are $to's (upgraded)" eval \
        '[ "$(version_of mariadb-server)" != "$maria_from" ] && [ "$(version_of nginx)" != "$nginx_from" ]'
    check "the $from package stays installed through it: $ver_from, install ok installed" \
        test "$(version_of asyncexec) $(site_status)" = "$ver_from install ok installed"
    check "$to with the $from package: /readyz through nginx on port 80: 200 (nobody touched the service)" \
        wait_for 30 ready
    check "$to with the $from package: the units enabled and active" eval 'enabled && active'
    check "$to with the $from package: A polls completed with its result" \
        has "$(poll ap1 upgrade-A-$$ "$atok")" "$work/ap1" '"status":"completed"' "\"result\":$ares"
}

# phase_to: 4. this tree's trixie package, as the page says.
phase_to() {
    local rc name
    name=$(basename "$deb_to")
    cp "$deb_to" "$root/root/" || die "copy the .deb"
    since=$(in_ct date '+%Y-%m-%d %H:%M:%S')
    step "apt-get -y -o Dpkg::Options::=--force-confold install ./$name" \
        "apt-get -y -o Dpkg::Options::=--force-confold install ./asyncexec_....deb"
    rc=$?
    cp "$work/step.log" "$work/apt-to.log"
    check "apt-get install ./$name: exit 0" test "$rc" -eq 0
    check "dpkg-query: $ver_to installed" test "$(version_of asyncexec)" = "$ver_to"
    check "postinst: no warning about the nginx site" not grep -q 'asyncexec: WARNING' "$work/apt-to.log"
    check "the units are $to's files ($unitdir_to), still enabled, active" eval \
        'unit_paths && enabled && wait_for 15 active'
    step "asyncexec-admin --config /etc/asyncexec/migrate.conf migrate --status"
    rc=$?
    check "migrate --status: exit 0, up to date (the same schema)" eval \
        '[ $rc -eq 0 ] && grep -qx "up to date" "$work/step.log"'
    check "$ver_to: /readyz through nginx on port 80: 200" wait_for 15 ready
}

# phase_reboot: 5. the container powered off and booted again; the enabled units start.
phase_reboot() {
    say "reboot: power off, boot the same root"
    in_ct systemctl poweroff >/dev/null 2>&1
    wait_for 60 eval '! kill -0 "$nspawn_pid" 2>/dev/null' || die "the container did not power off"
    wait "$nspawn_pid" 2>/dev/null
    ct_boot "$to"
    # The service is socket-activated: /readyz starts it.
    check "after the reboot: /readyz through nginx on port 80: 200" wait_for 30 ready
    check "after the reboot: the units enabled and active" eval 'enabled && wait_for 15 active'
}

main() {
    trap cleanup EXIT
    trap 'exit 1' INT TERM HUP
    preflight "$@"
    phase_packages
    phase_from
    work_leave "$ver_from on $from"
    phase_release
    phase_to
    phase_reboot
    work_check "$ver_from on $from"
    work_services "$since"
    exit 0
}

main "$@"
