# shellcheck shell=bash
# scripts/lib/deploy_site.sh - sourced by scripts/test-deploy.sh, scripts/test-upgrade.sh
# and scripts/test-release-upgrade.sh (uses the helpers of scripts/lib/deploy_ct.sh: in_ct,
# check, ok, bad, say, wait_for; and $root, $work, $deb, $mport): the postinst warning
# about an nginx site without the loopback server's fastcgi_param
# ASYNCEXEC_OPERATOR_PAGES 1; (scripts/debian/postinst.in, site_check; asyncexec-ops(7),
# UPGRADES).
#
# What dpkg does with the site (a conffile) on a reinstall with --force-confold, checked
# with dpkg 1.21 (bookworm): an edited site is kept; the packaged one is written beside it
# as SITE.dpkg-dist only when it differs from the one dpkg recorded at the last
# installation (an upgrade from a version whose site differed), so a reinstall of the same
# .deb writes none, and a .dpkg-dist already there is left as it is (it may be an older
# version's). The dist is in place when postinst configure runs.

site=/etc/nginx/sites-available/asyncexec
# The line as the packaged site has it, and the regular expression (sed -E) of every
# fastcgi_param line that sets the parameter.
site_line='fastcgi_param ASYNCEXEC_OPERATOR_PAGES 1;'
site_re='^[[:space:]]*fastcgi_param[[:space:]]+ASYNCEXEC_OPERATOR_PAGES[[:space:]]'
site_warn="asyncexec: WARNING: $site lacks the line"
site_add='add the line to its loopback server (listen 127.0.0.1:9180)'
site_diff="merge the packaged site: diff -u $site $site.dpkg-dist"

# site_reinstall LOG [ask]: the same .deb again, as an upgrade that keeps an edited
# conffile (apt, dpkg --force-confold; with "ask", without it: dpkg asks about an edited
# site whose packaged one changed, and nobody answers, stdin /dev/null); apt's status;
# LOG gets apt's and postinst's output.
# Each reinstall restarts the services (postinst try-restart): this phase's four, after
# the upgrade phase's, come within seconds, past systemd's start limit (5 starts in 10 s;
# the trixie run hit it: asyncexec-notify "failed", so apt remove's "units stopped"
# check failed), so the units' start counters are reset first (systemctl reset-failed).
# Test harness only: no operator reinstalls five times in ten seconds.
site_reinstall() {
    in_ct systemctl reset-failed asyncexec-fcgi.socket asyncexec-fcgi.service \
        asyncexec-notify.service >/dev/null 2>&1
    local opt=-o\ Dpkg::Options::=--force-confold
    [ "${2:-}" != ask ] || opt=
    in_ct sh -c "cd /root && apt-get install -y -qq --reinstall $opt ./$(basename "$deb")" \
        </dev/null >"$1" 2>&1
}
# site_status: dpkg's status of the package.
site_status() { in_ct dpkg-query -W -f '${Status}' asyncexec; }
# site_show LOG: what LOG holds from dpkg's configure of asyncexec on.
site_show() { sed -n '/^Setting up asyncexec /,$p' "$1" | sed 's/^/    /'; }
# site_nowarn LOG: LOG holds no site warning.
site_nowarn() {
    ! grep -qF "$site_warn" "$1" || { site_show "$1"; return 1; }
}
# site_warned LOG HINT: LOG holds the warning once, with HINT and without the other hint.
site_warned() {
    local other=$site_diff
    [ "$2" = "$site_diff" ] && other=$site_add
    site_show "$1"
    [ "$(grep -cF "$site_warn" "$1")" -eq 1 ] && grep -qF -- "  $2" "$1" &&
        ! grep -qF -- "$other" "$1"
}
# site_lines: how many lines of the installed site set the parameter.
site_lines() { in_ct grep -cE "$site_re" "$site"; }
# detail_is STATUS: /readyz/detail on the loopback server answers STATUS.
detail_is() {
    [ "$(curl -s -o /dev/null --max-time 5 -w '%{http_code}' \
        "http://127.0.0.1:$mport/readyz/detail")" = "$1" ]
}
# nginx_reload: nginx -t, then systemctl reload nginx.
nginx_reload() { in_ct nginx -q -t && in_ct systemctl reload nginx; }
# site_sum FILE: the md5 of a file in the container.
site_sum() { in_ct md5sum "$1" | cut -d' ' -f1; }
# site_forget: dpkg's record of the packaged site (its md5 in the Conffiles of the
# status file) made another one, as after installing a version whose site differed
# (0.2.0's): the next installation finds the packaged site changed. Test harness only.
site_forget() {
    local sum; sum=$(site_sum /root/site.packaged)
    in_ct sed -i "s|^ $site $sum| $site 00000000000000000000000000000000|" \
        /var/lib/dpkg/status &&
        in_ct grep -q "^ $site 0\{32\}" /var/lib/dpkg/status
}

# phase_site: the warning, none for the packaged site; the hints; the pages' 404 without
# the line, 200 with it; the packaged site restored at the end.
phase_site() {
    local lg=$work/site rc
    [ -n "$mport" ] || { bad "the site has a loopback server (listen 127.0.0.1:PORT)"; return; }
    # A normal install and a reinstall (the packaged site) printed no warning.
    check "install and reinstall (the packaged site): no site warning from postinst" \
        eval 'site_nowarn "$work/apt.log" && site_nowarn "$work/reinstall.log"'
    in_ct cp -p "$site" /root/site.packaged

    # The operator's site without the line: kept by the reinstall, which writes no
    # .dpkg-dist (the packaged site did not change); the hint is to add the line.
    in_ct sed -Ei "/$site_re/d" "$site"
    check "site edited: no line sets ASYNCEXEC_OPERATOR_PAGES" test "$(site_lines)" = 0
    site_reinstall "$lg.1"
    rc=$?
    check "reinstall --force-confold, the edited site: exit 0, kept, no .dpkg-dist" \
        eval '[ $rc -eq 0 ] && [ "$(site_lines)" = 0 ] && in_ct test ! -e "$site.dpkg-dist"'
    check "reinstall, the edited site, no .dpkg-dist: the warning, hint '$site_add'" \
        site_warned "$lg.1" "$site_add"
    check "nginx reloaded with the edited site: /readyz/detail on 127.0.0.1:$mport 404" \
        eval 'nginx_reload && wait_for 10 detail_is 404'

    # An upgrade from a version whose packaged site differed: dpkg keeps the edited site
    # and writes the packaged one beside it; the hint is the diff.
    check "dpkg's record of the packaged site changed (as from 0.2.0)" site_forget
    site_reinstall "$lg.2"
    rc=$?
    check "reinstall --force-confold, the packaged site changed: exit 0, kept, .dpkg-dist the packaged" \
        eval '[ $rc -eq 0 ] && [ "$(site_lines)" = 0 ] &&
        [ "$(site_sum "$site.dpkg-dist")" = "$(site_sum /root/site.packaged)" ]'
    check "reinstall, a .dpkg-dist with the line: the warning, hint '$site_diff'" \
        site_warned "$lg.2" "$site_diff"

    # The same without --force-confold and without a terminal: dpkg's question meets end
    # of file, the package stays unpacked (postinst not run); dpkg --force-confold
    # --configure finishes it (asyncexec-ops(7), UPGRADES, The nginx site).
    in_ct rm -f "$site.dpkg-dist"
    check "dpkg's record of the packaged site changed again" site_forget
    site_reinstall "$lg.5" ask
    rc=$?
    check "reinstall without --force-confold, no terminal: exit 100, end of file at dpkg's conffile prompt, unpacked" \
        eval '[ $rc -eq 100 ] && grep -qF "end of file on stdin at conffile prompt" "$lg.5" &&
        [ "$(site_status)" = "install ok unpacked" ]'
    in_ct dpkg --force-confold --configure asyncexec </dev/null >"$lg.6" 2>&1
    rc=$?
    check "dpkg --force-confold --configure asyncexec: exit 0, configured, the site kept, .dpkg-dist the packaged" \
        eval '[ $rc -eq 0 ] && [ "$(site_status)" = "install ok installed" ] && [ "$(site_lines)" = 0 ] &&
        [ "$(site_sum "$site.dpkg-dist")" = "$(site_sum /root/site.packaged)" ]'
    check "dpkg --force-confold --configure: the warning, hint '$site_diff'" site_warned "$lg.6" "$site_diff"

    # A .dpkg-dist left from an older upgrade, without the line: the diff would not bring
    # it, so the hint is to add the line.
    in_ct cp -p "$site" "$site.dpkg-dist"
    site_reinstall "$lg.3"
    rc=$?
    check "reinstall, a stale .dpkg-dist without the line: kept, the warning, hint '$site_add'" \
        eval '[ $rc -eq 0 ] && [ "$(site_sum "$site.dpkg-dist")" = "$(site_sum "$site")" ] &&
        site_warned "$lg.3" "$site_add"'
    in_ct rm -f "$site.dpkg-dist"

    # The line with its value quoted (nginx passes 1): the pages are served, no warning.
    in_ct cp -p /root/site.packaged "$site"
    in_ct sed -i "s|$site_line|fastcgi_param  ASYNCEXEC_OPERATOR_PAGES \"1\";|" "$site"
    check "nginx reloaded, the site's line with \"1\": /readyz/detail 200" \
        eval '[ "$(site_lines)" = 1 ] && nginx_reload && wait_for 10 detail_is 200'
    site_reinstall "$lg.4"
    rc=$?
    check "reinstall, the site's line with \"1\": exit 0, no site warning" \
        eval '[ $rc -eq 0 ] && site_nowarn "$lg.4"'

    # The packaged site again, so the rest runs as before.
    in_ct cp -p /root/site.packaged "$site"
    in_ct rm -f /root/site.packaged
    check "the packaged site restored, nginx reloaded: /readyz/detail 200" \
        eval '[ "$(site_lines)" = 1 ] && nginx_reload && wait_for 10 detail_is 200'
    check "after the site's reinstalls: asyncexec-fcgi and asyncexec-notify active, ready" \
        eval '[ "$(in_ct systemctl is-active asyncexec-fcgi.service asyncexec-notify.service |
        sort -u)" = active ] && wait_for 15 ready && wait_for 15 nready'
}
