#!/usr/bin/env bash
# scripts/test-upgrade.sh - the upgrade test: the released 0.2.0 package upgraded to this
# tree's, on Debian 12 (bookworm) only, the way asyncexec-ops(7), UPGRADES, tells an
# operator to ("An upgrade in a window": 0.2.0's schema 9 serves no 0.3.0 binary).
#
#  1. builds two .debs in bookworm build roots (scripts/lib/buildroot.sh): 0.2.0's from
#     `git archive 361690b` by its own scripts/package.sh (file(1), which its cpack needs
#     and which it does not install, installed first), and this tree's with
#     scripts/package.sh --suite bookworm. Without the commit (a shallow clone) it fails
#     and says to run git fetch --unshallow;
#  2. boots a fresh bookworm root (systemd-nspawn --boot, scripts/lib/deploy_ct.sh),
#     installs the 0.2.0 .deb with nginx, mariadb-server and curl (but for --edited-site:
#     0.2.0's README installs no curl), runs 0.2.0's README deployment blocks (the ```sh
#     blocks after a line <!-- deploy-block -->) literally,
#     and, through nginx on port 80, leaves three executions: A submitted, claimed and
#     completed (raw UTF-8 in its result); B submitted and claimed (its callback token
#     kept: work in flight across the upgrade); C submitted, not claimed;
#  3. upgrades by the window procedure, each command checked to be in the UPGRADES section
#     of scripts/man/asyncexec-ops.7 before it runs (page and test cannot drift): stop the
#     socket, service, expiry timer and service (nginx answers 502 problem+json); apt-get
#     install of the new .deb (stdin /dev/null, noninteractive); migrate --status (the
#     pending migrations), migrate (schema 15); the packaged site (unedited under 0.2.0,
#     so replaced: it has ASYNCEXEC_OPERATOR_PAGES; no postinst warning), nginx -t and
#     reload; start; systemctl enable --now asyncexec-notify once webhook.key is right;
#     with --edited-site, the operator edited 0.2.0's site (its limit_req_zone rate, 200r/s
#     to 500r/s) and asyncexec.conf (db_connect_timeout = 3) before the upgrade: the plain
#     apt-get install, without a terminal, asks to install libcurl4 and aborts (exit 1,
#     0.2.0 still installed); the page's unattended command (apt-get -y -o
#     Dpkg::Options::=--force-confold install) keeps both files and writes the packaged
#     ones beside them as .dpkg-dist (the rest runs on the kept configuration), and
#     postinst warns with the diff as its hint; once started, what the page
#     says of a site not merged yet holds (/readyz/detail and /dashboard/ 404 on port 80,
#     /readyz/detail 404 and /metrics 200 on the loopback server, the worker's warning in
#     the journal); then the merge as the page says (diff -u, the edit carried into the
#     packaged site, moved into place, nginx -t and reload): the packaged site plus the edit;
#  4. checks: the stopped units stay stopped through the install; /readyz 200;
#     /readyz/detail on the loopback server (127.0.0.1:9180) 200 with buildSchemaVersion
#     15; A polls completed with its 0.2.0 poll token and the same result bytes; C polls
#     waiting_callback, and the 0.2.0 backend key claims and completes it; B's 0.2.0
#     callback token completes B; the 0.2.0 consumer key submits a new execution and its
#     life cycle runs; asyncexec-admin check; asyncexec-notify active with its /readyz on
#     127.0.0.1:9466; an expiry run logs result=complete; journalctl -p err of the
#     asyncexec units since the upgrade began: empty (any line shown);
#  5. powers the container off and removes it, whatever happened (trap; by pid).
#
#   scripts/test-upgrade.sh [--edited-site]
# Run as root on a Debian host (installs systemd-container, debootstrap and curl with
# apt-get when missing). Ports 80, 9180 and 9466 must be free on the host (the container
# shares its network): run no deployment test beside it. Ends with "N passed, N failed";
# exit 0 only when nothing failed.
#   ASYNCEXEC_UPGRADE_DIR    state directory (default .local/upgrade)
#   ASYNCEXEC_KEEP=1         keep the container's root file system after a failure
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD
state=${ASYNCEXEC_UPGRADE_DIR:-$repo/.local/upgrade}
# shellcheck source-path=SCRIPTDIR source=lib/buildroot.sh
. "$repo/scripts/lib/buildroot.sh"
# shellcheck source-path=SCRIPTDIR source=lib/deploy_ct.sh
. "$repo/scripts/lib/deploy_ct.sh"
# shellcheck source-path=SCRIPTDIR source=lib/deploy_site.sh
. "$repo/scripts/lib/deploy_site.sh"
# shellcheck source-path=SCRIPTDIR source=lib/deploy_work.sh
. "$repo/scripts/lib/deploy_work.sh"
buildroot_init test-upgrade

suite=bookworm
# The release upgraded from: CHANGELOG.md's "## 0.2.0" (063a984 bumped to 0.3.0).
old_commit=361690b
old_version=0.2.0
route=demo/echo/run
mport=9180
page=scripts/man/asyncexec-ops.7
# --edited-site: the operator's edit of 0.2.0's site, a line that both versions' sites have.
edit_from='rate=200r/s;'
edit_to='rate=500r/s;'
# and of its configuration, a key both versions list commented with its default.
conf=/etc/asyncexec/asyncexec.conf
conf_from='#db_connect_timeout = 2'
conf_to='db_connect_timeout = 3'
# The units the window stops (asyncexec-ops(7), UPGRADES, "An upgrade in a window", 1).
units="asyncexec-fcgi.socket asyncexec-fcgi.service asyncexec-expire.timer asyncexec-expire.service"

# ---- helpers (the shared ones are scripts/lib/deploy_ct.sh's) --------------------------

# old_deploy_blocks: 0.2.0's README deployment blocks, in order (its test-deploy.sh's awk).
old_deploy_blocks() {
    git -C "$repo" show "$old_commit:README.md" |
        awk '/^<!-- deploy-block -->$/ { want = 1; next }
             want == 1 && /^```sh$/ { want = 2; next }
             want == 2 && /^```$/ { want = 0; print ""; next }
             want == 2 { print }
             want == 1 { want = 0 }'
}

# stopped: every unit the window stopped is inactive.
stopped() {
    local s
    s=$(in_ct systemctl is-active $units | tr '\n' ' ')
    say "     is-active $units: $s"
    [ "$s" = "inactive inactive inactive inactive " ]
}

# site_edit FILE: the operator's edit (--edited-site) made in FILE in the container.
site_edit() { in_ct sed -i "s|$edit_from|$edit_to|" "$1" && in_ct grep -qF "$edit_to" "$1"; }

# is404 STATUS: STATUS is 404 (else the body of $work/u is shown).
is404() { [ "$1" = 404 ] || { say "     status $1: $(head -c 300 "$work/u")"; return 1; }; }
# at PORT PATH: the status of a GET on 127.0.0.1:PORT; the body in $work/u.
at() { curl -s -o "$work/u" --max-time 5 -w '%{http_code}' "http://127.0.0.1:$1$2"; }

# ---- phases ----------------------------------------------------------------------------

# preflight: root, the commit of 0.2.0, the host's tools, the ports free.
preflight() {
    [ "$(id -u)" -eq 0 ] || die "run as root (debootstrap, systemd-nspawn)"
    edited=0
    case "$*" in
        "") ;;
        --edited-site) edited=1 ;;
        *) echo "usage: scripts/test-upgrade.sh [--edited-site] (bookworm only)" >&2; exit 2 ;;
    esac
    version=$(sed -n 's/^project(asyncexec VERSION \([0-9][0-9.]*\) .*/\1/p' CMakeLists.txt)
    [ -n "$version" ] || die "no project(asyncexec VERSION X.Y.Z ...) in CMakeLists.txt"
    debver=$version-1~$(buildroot_debian_tag "$suite")
    git -C "$repo" cat-file -e "$old_commit^{commit}" 2>/dev/null ||
        die "commit $old_commit ($old_version) is not in this clone (a shallow clone?): run git fetch --unshallow"
    say "upgrade $old_version ($old_commit) -> $debver on $suite"
    ct_state 80 "$mport" "$nport"
    upgrades_text >"$work/upgrades.txt"
    [ -s "$work/upgrades.txt" ] || die "no section UPGRADES in $page"
}

# phase_packages: 1. the 0.2.0 .deb built by its own package.sh in a bookworm build root,
# and this tree's by scripts/package.sh --suite bookworm.
phase_packages() {
    old_package
    say "package: $olddeb"
    check "the $old_version package is asyncexec_${old_version}-1_amd64.deb" \
        test "$(basename "$olddeb")" = "asyncexec_${old_version}-1_amd64.deb"

    ct_package "$suite"
    deb=$pkg
    check "this tree's package is asyncexec_${debver}_amd64.deb" \
        test "$(basename "$deb")" = "asyncexec_${debver}_amd64.deb"
}

# old_package: the 0.2.0 .deb into $work, its path in $olddeb: built, or the one built
# before from the same commit in a root of the same tarball (ASYNCEXEC_PACKAGE_CACHE,
# entry old-COMMIT-SUITE: --edited-site reuses the plain run's).
old_package() {
    local b=$work/build log=$work/package-old.log d entry='' key
    if [ -n "${ASYNCEXEC_PACKAGE_CACHE:-}" ]; then
        entry=$ASYNCEXEC_PACKAGE_CACHE/old-$old_commit-$suite
        key="$old_commit $(stat -c '%s %Y' "$(buildroot_tarball "$suite")")" || die "the $suite build root"
        if olddeb=$(buildroot_cache_get "$entry" "$key" "$work"); then
            say "reusing the $old_version package built from $old_commit before ($entry)"
            return 0
        fi
    fi
    say "building the $old_version package ($old_commit) in a $suite build root"
    buildroot_make "$suite" "$b"
    buildroot_copy_tree "$repo" "$b/src/asyncexec" "$old_commit"
    # 0.2.0's package.sh installs no file(1), which cpack's dpkg-shlibdeps needs and a
    # minimal Debian lacks (its package was built on a full host; this tree's installs it).
    buildroot_run "$suite" "$b" -- sh -c 'apt-get update -qq &&
        apt-get install -y -qq --no-install-recommends file' >"$log" 2>&1 &&
        buildroot_run "$suite" "$b" --chdir=/src/asyncexec -- \
            ASYNCEXEC_PACKAGE_BUILD_DIR=/var/tmp/package-build \
            scripts/package.sh /var/tmp/package-out >>"$log" 2>&1 ||
        { tail -n 30 "$log"; die "the $old_version build in the $suite root"; }
    d=$(grep -x '/var/tmp/package-out/asyncexec_[^/]*\.deb' "$log" | tail -n 1)
    [ -n "$d" ] && cp "$b$d" "$work/" || { tail -n 30 "$log"; die "no $old_version package"; }
    olddeb=$work/$(basename "$d")
    buildroot_remove "$b"
    [ -z "$entry" ] || buildroot_cache_put "$entry" "$key" "$olddeb"
}

# phase_old: 2. 0.2.0 installed and deployed by its README's blocks in a booted container.
phase_old() {
    ct_make "$suite"
    cp "$olddeb" "$root/root/" || die "copy the $old_version .deb"
    old_deploy_blocks >"$root/root/deploy-block.sh"
    [ -s "$root/root/deploy-block.sh" ] || die "no deploy-block in $old_version's README.md"
    ct_boot "$suite"
    # As 0.2.0's README installs it; the plain run adds curl, which brings libcurl4, the
    # new dependency, so that its apt-get asks nothing (--edited-site: apt-get asks).
    extra=curl
    [ "$edited" = 0 ] || extra=
    say "apt install ./$(basename "$olddeb") nginx mariadb-server $extra"
    if in_ct sh -c 'apt-get update -qq && cd /root && apt-get install -y -qq \
        --no-install-recommends ./'"$(basename "$olddeb")"' nginx mariadb-server '"$extra" \
        </dev/null >"$work/apt-old.log" 2>&1; then
        ok "apt installed the $old_version package with nginx and mariadb-server"
    else
        tail -n 20 "$work/apt-old.log"
        die "apt install of $old_version"
    fi
    check "dpkg-query: $old_version-1 installed" \
        test "$(in_ct dpkg-query -W -f '${Version}' asyncexec)" = "$old_version-1"
    # The operator keeps no other package in the directory (0.3.0's will come there).
    rm -f "$root/root/$(basename "$olddeb")"
    ct_run_blocks "$old_version's README deployment blocks"
    check "$old_version: /readyz through nginx on port 80: 200" wait_for 15 ready
    [ "$edited" = 1 ] || return 0
    check "the operator's edit of the $old_version site ($edit_from -> $edit_to), nginx reloaded" \
        eval 'site_edit "$site" && nginx_reload && wait_for 15 ready'
    check "the operator's edit of $conf ($conf_from -> $conf_to)" eval \
        'in_ct sed -i "s|^$conf_from\$|$conf_to|" $conf && in_ct grep -qx "$conf_to" $conf'
}

# phase_window: 3. the upgrade in a window, each command as the page has it.
phase_window() {
    local st rc newdeb
    since=$(in_ct date '+%Y-%m-%d %H:%M:%S')
    # 1. Stop everything that writes to the database (0.2.0 has no asyncexec-notify).
    step "systemctl stop $units"
    rc=$?
    check "window: systemctl stop: exit 0, the four inactive" eval '[ $rc -eq 0 ] && stopped'
    st=$(curl -sS -D "$work/w.h" -o "$work/w.b" -w '%{http_code}' "$base/readyz")
    check "window: nginx answers 502 problem+json with Retry-After: 1" eval '[ "$st" = 502 ] &&
        grep -qi "^Retry-After: 1" "$work/w.h" && grep -qF "\"status\":502" "$work/w.b"'

    # 2. The new package on the host (the service stopped: its restart does nothing), then
    # migrate. The plain run: its new dependency (libcurl4) came with curl, so apt asks
    # nothing. --edited-site: apt asks for libcurl4, dpkg for the two conffiles; nobody
    # answers (stdin /dev/null), so the page's command for that.
    newdeb=$(basename "$deb")
    cp "$deb" "$root/root/" || die "copy the .deb"
    step "apt-get install ./$newdeb"
    rc=$?
    cp "$work/step.log" "$work/apt-new.log"
    if [ "$edited" = 1 ]; then
        check "apt-get install ./$newdeb (stdin /dev/null), libcurl4 to install: exit 1, Abort., $old_version-1 still installed" \
            eval '[ $rc -eq 1 ] && grep -qF "Do you want to continue? [Y/n] Abort." "$work/apt-new.log" &&
            [ "$(in_ct dpkg-query -W -f "\${Version}" asyncexec) $(site_status)" = "$old_version-1 install ok installed" ]'
        step "apt-get -y -o Dpkg::Options::=--force-confold install ./$newdeb" \
            "apt-get -y -o Dpkg::Options::=--force-confold install ./asyncexec_....deb"
        rc=$?
        cp "$work/step.log" "$work/apt-new.log"
        check "apt-get -y -o Dpkg::Options::=--force-confold install ./$newdeb: exit 0, libcurl4 installed" \
            eval '[ $rc -eq 0 ] && in_ct dpkg-query -W libcurl4 >/dev/null'
        check "$conf kept ($conf_to), the packaged one its .dpkg-dist (the rest runs on the kept one)" \
            eval 'in_ct grep -qx "$conf_to" $conf && cmp -s "$root$conf.dpkg-dist" scripts/examples/asyncexec.conf'
    else
        check "apt-get install ./$newdeb (stdin /dev/null, noninteractive): exit 0" test "$rc" -eq 0
    fi
    check "dpkg-query: $debver installed" \
        test "$(in_ct dpkg-query -W -f '${Version}' asyncexec)" = "$debver"
    check "the install left the stopped units stopped" stopped
    check "asyncexec-notify.service installed, not enabled, not active" test \
        "$(in_ct systemctl is-enabled asyncexec-notify.service) $(in_ct systemctl is-active asyncexec-notify.service)" = "disabled inactive"
    if [ "$edited" = 1 ]; then
        check "postinst: the site warning, once, hint '$site_diff'" site_warned "$work/apt-new.log" "$site_diff"
    else
        check "postinst: no warning about the nginx site" not grep -q 'asyncexec: WARNING' "$work/apt-new.log"
    fi

    step "asyncexec-admin --config /etc/asyncexec/migrate.conf migrate --status"
    rc=$?
    check "migrate --status: exit 0, database 9, build 15, migrations 10 to 15 pending" \
        eval '[ $rc -eq 0 ] && grep -qx "database.9" "$work/step.log" && grep -qx "build.15" "$work/step.log" &&
        [ "$(grep "^pending" "$work/step.log" | cut -f2 | tr "\n" " ")" = "10 11 12 13 14 15 " ]'
    step "asyncexec-admin --config /etc/asyncexec/migrate.conf migrate"
    check "migrate: exit 0" test $? -eq 0
    in_ct asyncexec-admin --config /etc/asyncexec/migrate.conf migrate --status >"$work/status" 2>&1
    sed 's/^/    /' "$work/status"
    check "migrate --status after it: database 15, up to date" \
        eval 'grep -qx "database.15" "$work/status" && grep -qx "up to date" "$work/status"'

    # 3. The site: unedited under 0.2.0, so dpkg put the packaged one in place (no .dpkg-dist
    # to merge); edited, dpkg kept it and wrote the packaged one beside it (merged below,
    # once started); then nginx -t and reload as the page says.
    if [ "$edited" = 1 ]; then
        check "the edited site kept (the edit, no ASYNCEXEC_OPERATOR_PAGES), the packaged one its .dpkg-dist" eval \
            'in_ct grep -qF "$edit_to" $site && [ "$(site_lines)" = 0 ] &&
            cmp -s "$root$site.dpkg-dist" nginx/asyncexec.conf'
    else
        check "the nginx site is the packaged one (ASYNCEXEC_OPERATOR_PAGES), no .dpkg-dist" eval \
            'in_ct grep -q "$site_line" $site && not in_ct test -e $site.dpkg-dist &&
            cmp -s "$root$site" nginx/asyncexec.conf'
    fi
    step "nginx -t && systemctl reload nginx"
    check "nginx -t && systemctl reload nginx: exit 0" test $? -eq 0

    # 4. Start again; the sender once webhook.key is right.
    step "systemctl start asyncexec-fcgi.socket asyncexec-fcgi.service asyncexec-expire.timer"
    check "systemctl start: exit 0" test $? -eq 0
    check "/etc/asyncexec/webhook.key (made by the new postinst): 640 root:asyncexec" \
        test "$(in_ct stat -c '%a %U:%G' /etc/asyncexec/webhook.key)" = "640 root:asyncexec"
    step "systemctl enable --now asyncexec-notify"
    check "systemctl enable --now asyncexec-notify: exit 0" test $? -eq 0
}

# phase_merge: --edited-site: the new version behind the kept 0.2.0 site, as the page says
# of a site not merged yet; then the merge the page describes (The nginx site).
phase_merge() {
    local st
    check "not merged: /readyz through nginx on port 80: 200" wait_for 15 ready
    st=$(http "$work/u" GET /readyz/detail)
    check "not merged: /readyz/detail on port 80: 404 not_found" eval \
        'is404 "$st" && grep -qF "\"status\":404" "$work/u"'
    st=$(http "$work/u" GET /dashboard/)
    check "not merged: /dashboard/ on port 80: 404 not_found" eval \
        'is404 "$st" && grep -qF "\"status\":404" "$work/u"'
    check "not merged: /readyz/detail on 127.0.0.1:$mport: 404" is404 "$(at "$mport" /readyz/detail)"
    check "not merged: /metrics on 127.0.0.1:$mport: 200 (scraping goes on)" eval \
        '[ "$(at "$mport" /metrics)" = 200 ] && grep -q "^asyncexec_build_info" "$work/u"'
    check "not merged: the worker's warning about ASYNCEXEC_OPERATOR_PAGES in the journal" eval \
        'in_ct journalctl -u asyncexec-fcgi --since "$since" --no-pager -o cat |
        grep -F "refused as an unknown path (404): the request came without the FastCGI parameter ASYNCEXEC_OPERATOR_PAGES"'

    # Compare the two, carry the edit into the packaged site and move it into place (the
    # .dpkg-dist goes with it), then nginx -t and reload.
    step "diff -u $site $site.dpkg-dist"
    st=$?
    check "diff -u: exit 1, the edit and the ASYNCEXEC_OPERATOR_PAGES line among its lines" eval \
        '[ $st -eq 1 ] && grep -qF -- "-limit_req_zone \$asyncexec_limit_key zone=asyncexec:10m $edit_to" "$work/step.log" &&
        grep -qF -- "+    $site_line" "$work/step.log"'
    check "the edit carried into $site.dpkg-dist, moved into place" eval \
        'site_edit "$site.dpkg-dist" && in_ct mv "$site.dpkg-dist" "$site"'
    step "nginx -t && systemctl reload nginx"
    check "merged: nginx -t && systemctl reload nginx: exit 0" test $? -eq 0
    check "merged: the packaged site but for the edit, no .dpkg-dist" eval \
        'not in_ct test -e $site.dpkg-dist &&
        sed "s|$edit_to|$edit_from|" "$root$site" | cmp -s - nginx/asyncexec.conf &&
        [ "$(site_lines)" = 1 ]'
    # A reload hands over to new workers after systemctl returns; the old ones still answer.
    check "merged: /readyz/detail on 127.0.0.1:$mport: 200 once nginx's new workers answer" \
        wait_for 15 detail_is 200
}

# phase_after: 4. what 0.2.0 left works under the new version; a new life cycle.
phase_after() {
    local st
    check "/readyz through nginx on port 80: 200" wait_for 15 ready
    st=$(curl -sS -o "$work/detail" -w '%{http_code}' "http://127.0.0.1:$mport/readyz/detail")
    check "/readyz/detail on 127.0.0.1:$mport: 200, buildSchemaVersion 15" \
        eval 'has "$st" "$work/detail" "\"status\":\"ready\"" && [ "$(json_num buildSchemaVersion "$work/detail")" = 15 ]'

    work_check "$old_version"
    work_services "$since"
}

main() {
    trap cleanup EXIT
    trap 'exit 1' INT TERM HUP
    preflight "$@"
    phase_packages
    phase_old
    work_leave "$old_version"
    phase_window
    [ "$edited" = 0 ] || phase_merge
    phase_after
    exit 0
}

main "$@"
