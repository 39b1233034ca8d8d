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

# upgrades_text: the section UPGRADES of the page as it reads (roff escapes and font
# changes undone), one line per source line.
upgrades_text() {
    awk '/^\.SH UPGRADES$/ { on = 1; next } on && /^\.SH / { exit } on { print }' "$page" |
        sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' -e 's/\\&//g' -e 's/\\e/\\/g' \
            -e "s/\\\\(aq/'/g" -e 's/\\(em/-/g'
}

# documented CMD: CMD appears, as a fixed string, in the section UPGRADES.
documented() {
    grep -qF -- "$1" "$work/upgrades.txt" || { say "     not in $page, UPGRADES: $1"; return 1; }
}

# step CMD [AS]: one command of the procedure: checked to be in the page (as AS, where the
# page names the package asyncexec_....deb), then run in the container as root in /root,
# where the .deb is (sh -c, stdin /dev/null); its output in $work/step.log; its status.
step() {
    check "asyncexec-ops(7), UPGRADES, has: ${2:-$1}" documented "${2:-$1}"
    say "run: $1"
    in_ct sh -c "cd /root && $1" </dev/null >"$work/step.log" 2>&1
    local rc=$?
    sed 's/^/    /' "$work/step.log"
    return "$rc"
}

# post NAME PATH KEY [curl args]: POST through nginx with a bearer key and a JSON body.
post() {
    local n=$1 p=$2 k=$3; shift 3
    http "$work/$n" POST "$p" -H "Authorization: Bearer $k" -H 'Content-Type: application/json' "$@"
}
# poll NAME CID TOKEN: the consumer's poll of CID with its poll token.
poll() { http "$work/$1" GET "/v1/executions/$route/$2" -H "Authorization: Bearer $ak" -H "X-Poll-Token: $3"; }
# claim NAME: the backend claims one execution for 600 s.
claim() { post "$1" "/v1/backend/$route/claim" "$bk" --data '{"max":1,"leaseSeconds":600}'; }
# complete NAME ID TOKEN BODY: the backend completes ID with its callback token.
complete() { post "$1" "/v1/callbacks/$2/complete" "$bk" -H "X-Callback-Token: $3" --data-binary "$4"; }

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

# expired: the expiry's journal since the upgrade began ends with a summary line.
expired() {
    in_ct journalctl -u asyncexec-expire --since "$since" --no-pager -o cat 2>/dev/null |
        grep 'asyncexec-expire: result=' | tail -n 1 >"$work/expire.last"
    grep -q 'asyncexec-expire: result=complete' "$work/expire.last"
}

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
    buildroot_host_tools curl:curl nsenter:util-linux pgrep:procps ss:iproute2
    ports_free 80 "$mport" "$nport"
    mkdir -p "$state" || die "mkdir $state"
    work=$(mktemp -d "$state/run.XXXXXX") || die mktemp
    upgrades_text >"$work/upgrades.txt"
    [ -s "$work/upgrades.txt" ] || die "no section UPGRADES in $page"
}

# phase_packages: 1. the 0.2.0 .deb built by its own package.sh in a bookworm build root,
# and this tree's by scripts/package.sh --suite bookworm.
phase_packages() {
    local b=$work/build log=$work/package-old.log d
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
    say "package: $olddeb"
    check "the $old_version package is asyncexec_${old_version}-1_amd64.deb" \
        test "$(basename "$olddeb")" = "asyncexec_${old_version}-1_amd64.deb"

    say "building this tree's package (scripts/package.sh --suite $suite)"
    rm -rf "$state/package-$suite"
    scripts/package.sh --suite "$suite" "$state/package-$suite" >"$work/package-new.out" ||
        die "scripts/package.sh --suite $suite"
    deb=$(ls "$state/package-$suite"/asyncexec_*.deb 2>/dev/null | head -n 1)
    [ -n "$deb" ] || die "scripts/package.sh --suite $suite made no package"
    say "package: $deb"
    check "this tree's package is asyncexec_${debver}_amd64.deb" \
        test "$(basename "$deb")" = "asyncexec_${debver}_amd64.deb"
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

# phase_work: 2. the executions A (completed), B (claimed), C (waiting) under 0.2.0.
phase_work() {
    local st1 st2 st3
    ares='{"echo":"A","name":"Müller Zürich 日本語"}'
    st1=$(post asub "/v1/executions/$route" "$ak" -H "X-Correlation-Id: upgrade-A-$$" --data '{"n":"A"}')
    atok=$(json_str pollToken "$work/asub")
    st2=$(claim acl)
    aid=$(json_num id "$work/acl")
    st3=$(complete aco "$aid" "$(json_str callbackToken "$work/acl")" "{\"result\":$ares}")
    check "$old_version: A submitted, claimed, completed: 202, 200, 200" \
        eval '[ "$st1 $st3" = "202 200" ] && has "$st2" "$work/acl" "\"request\":{\"n\":\"A\"}"'
    check "$old_version: A polls completed with its result" \
        has "$(poll ap upgrade-A-$$ "$atok")" "$work/ap" '"status":"completed"' "\"result\":$ares"

    st1=$(post bsub "/v1/executions/$route" "$ak" -H "X-Correlation-Id: upgrade-B-$$" --data '{"n":"B"}')
    btok=$(json_str pollToken "$work/bsub")
    st2=$(claim bcl)
    bid=$(json_num id "$work/bcl")
    bcbt=$(json_str callbackToken "$work/bcl")
    check "$old_version: B submitted and claimed (its callback token kept): 202, 200" \
        eval '[ "$st1" = 202 ] && [ -n "$bcbt" ] && has "$st2" "$work/bcl" "\"request\":{\"n\":\"B\"}"'

    st1=$(post csub "/v1/executions/$route" "$ak" -H "X-Correlation-Id: upgrade-C-$$" --data '{"n":"C"}')
    ctok=$(json_str pollToken "$work/csub")
    check "$old_version: C submitted (202), polls waiting_callback" eval '[ "$st1" = 202 ] &&
        has "$(poll cp0 upgrade-C-$$ "$ctok")" "$work/cp0" "\"status\":\"waiting_callback\""'
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
    local st st2 st3 cid cbt tok
    check "/readyz through nginx on port 80: 200" wait_for 15 ready
    st=$(curl -sS -o "$work/detail" -w '%{http_code}' "http://127.0.0.1:$mport/readyz/detail")
    check "/readyz/detail on 127.0.0.1:$mport: 200, buildSchemaVersion 15" \
        eval 'has "$st" "$work/detail" "\"status\":\"ready\"" && [ "$(json_num buildSchemaVersion "$work/detail")" = 15 ]'

    check "A: its $old_version poll token polls completed, the same result bytes" \
        has "$(poll ap2 upgrade-A-$$ "$atok")" "$work/ap2" '"status":"completed"' "\"result\":$ares"

    check "C: its $old_version poll token polls waiting_callback" \
        has "$(poll cp1 upgrade-C-$$ "$ctok")" "$work/cp1" '"status":"waiting_callback"'
    st=$(claim ccl)
    cbt=$(json_str callbackToken "$work/ccl")
    check "C: the $old_version backend key claims it (200, its request)" \
        has "$st" "$work/ccl" '"request":{"n":"C"}'
    st=$(complete cco "$(json_num id "$work/ccl")" "$cbt" '{"result":{"echo":"C"}}')
    check "C: completed (200), polls completed with its result" eval '[ "$st" = 200 ] &&
        has "$(poll cp2 upgrade-C-$$ "$ctok")" "$work/cp2" "\"status\":\"completed\"" "\"result\":{\"echo\":\"C\"}"'

    st=$(complete bco "$bid" "$bcbt" '{"result":{"echo":"B"}}')
    check "B: its $old_version callback token completes it: 200" \
        eval '[ "$st" = 200 ] || { say "     status $st: $(head -c 300 "$work/bco")"; false; }'
    check "B: its $old_version poll token polls completed with its result" \
        has "$(poll bp upgrade-B-$$ "$btok")" "$work/bp" '"status":"completed"' '"result":{"echo":"B"}'

    cid=upgrade-D-$$
    st=$(post dsub "/v1/executions/$route" "$ak" -H "X-Correlation-Id: $cid" --data '{"n":"D"}')
    tok=$(json_str pollToken "$work/dsub")
    check "D: the $old_version consumer key submits: 202" test "$st" = 202
    st=$(claim dcl)
    st2=$(post dhb "/v1/callbacks/$(json_num id "$work/dcl")/heartbeat" "$bk" \
        -H "X-Callback-Token: $(json_str callbackToken "$work/dcl")" --data '{"leaseSeconds":60}')
    st3=$(complete dco "$(json_num id "$work/dcl")" "$(json_str callbackToken "$work/dcl")" \
        '{"result":{"echo":"D"}}')
    check "D: claim (its request), heartbeat, complete: 200, 200, 200" \
        eval 'has "$st" "$work/dcl" "\"request\":{\"n\":\"D\"}" && [ "$st2 $st3" = "200 200" ]'
    check "D: polls completed with its result" \
        has "$(poll dp "$cid" "$tok")" "$work/dp" '"status":"completed"' '"result":{"echo":"D"}'

    in_ct asyncexec-admin check >"$work/check" 2>&1
    st=$?
    sed 's/^/    /' "$work/check"
    check "asyncexec-admin check: exit 0" test "$st" -eq 0

    check "asyncexec-notify: enabled, active, /readyz on 127.0.0.1:$nport 200" eval \
        '[ "$(in_ct systemctl is-enabled asyncexec-notify) $(in_ct systemctl is-active asyncexec-notify)" = "enabled active" ] &&
        wait_for 15 nready'

    in_ct systemctl start asyncexec-expire.service
    st=$?
    check "systemctl start asyncexec-expire.service: exit 0, logs result=complete" \
        eval '[ $st -eq 0 ] && wait_for 10 expired'
    sed 's/^/    /' "$work/expire.last"

    in_ct journalctl -p err --since "$since" --no-pager -o cat -u 'asyncexec*' >"$work/err.log" 2>&1
    grep -v '^-- No entries --$' "$work/err.log" >"$work/err.other"
    say "journalctl -p err of the asyncexec units since the upgrade began: $(grep -c . "$work/err.other") line(s)"
    sed 's/^/    /' "$work/err.other"
    check "journalctl -p err of the asyncexec units since the upgrade began: empty" test ! -s "$work/err.other"
}

main() {
    trap cleanup EXIT
    trap 'exit 1' INT TERM HUP
    preflight "$@"
    phase_packages
    phase_old
    phase_work
    phase_window
    [ "$edited" = 0 ] || phase_merge
    phase_after
    exit 0
}

main "$@"
