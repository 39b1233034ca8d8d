#!/usr/bin/env bash
# scripts/test-deploy.sh [--suite bookworm|trixie] - the deployment test: the Debian
# package in a booted Debian 12 (bookworm) or 13 (trixie).
#
#  1. builds the .deb of that suite in a build root of it (scripts/package.sh --suite
#     SUITE --lintian) and runs that suite's lintian on it (no error allowed);
#  2. boots a fresh copy of the suite's minimal root file system (scripts/lib/buildroot.sh:
#     debootstrap, cached as a tarball with apt's downloaded packages in
#     ASYNCEXEC_CACHE_DIR, default /var/cache/asyncexec-ci) with systemd-nspawn --boot
#     (systemd as PID 1; the host's network);
#  3. inside, installs ./asyncexec_*.deb with nginx and mariadb-server (apt); checks that
#     the installed version (dpkg-query) is CMake's project(VERSION)-1~debNN;
#  4. runs the deployment guide's blocks (the .EX blocks after a line '.\" deploy-block'
#     in scripts/man/asyncexec-ops.7, "DEPLOYMENT ON DEBIAN"), literally, as root; then
#     migrate with a migrate.conf whose user lacks migrate's privileges (its hint);
#  5. checks through the system nginx on port 80 (127.0.0.1:80 on the host too): the life
#     cycle, raw UTF-8 text in a submit and a complete read back byte for byte, /metrics
#     (with asyncexec_build_info of the version) and the dashboard's Health page on the
#     site's loopback server (404 on port 80), the expiry timer, restart and reload
#     under load, a killed worker, the socket's permissions, journalctl -p err; the
#     webhook sender asyncexec-notify under systemd (enabled by the guide): the package's
#     PHP example receiver (php -S, php-cli installed for it) on 127.0.0.1 in the
#     container, an endpoint of the demo tenant, systemctl reload, one signed delivery for
#     an execution completed through nginx, a clean systemctl stop, no secret in the
#     journal; an upgrade (reinstall); postinst's warning about an nginx site without
#     the loopback server's ASYNCEXEC_OPERATOR_PAGES line (scripts/lib/deploy_site.sh:
#     none for the packaged site, its hint with and without a .dpkg-dist, the pages 404
#     without the line, dpkg's conffile question without a terminal and dpkg
#     --force-confold --configure after it, the packaged site restored); apt remove and
#     apt purge;
#  6. powers the container off and removes it, whatever happened (trap; by pid).
# The helpers it shares with scripts/test-upgrade.sh are scripts/lib/deploy_ct.sh's.
#
# --suite defaults to this host's release when it is bookworm or trixie, else trixie.
# Run as root on a Debian host; installs systemd-container, debootstrap and curl with
# apt-get when missing. Ports 80, 9180 (the site's metrics), 9466 (asyncexec-notify's
# notify_listen) and 9470 (the test's webhook receiver) must be free on the host (the
# container shares its network), so two runs (of two suites) go one after the other.
# Ends with "N passed, N failed"; exit 0 only when nothing failed.
#   ASYNCEXEC_DEPLOY_DIR     state directory (default .local/deploy)
#   ASYNCEXEC_KEEP=1         keep the container's root file system after a failure
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD
state=${ASYNCEXEC_DEPLOY_DIR:-$repo/.local/deploy}
# shellcheck source-path=SCRIPTDIR source=lib/buildroot.sh
. "$repo/scripts/lib/buildroot.sh"
# shellcheck source-path=SCRIPTDIR source=lib/deploy_site.sh
. "$repo/scripts/lib/deploy_site.sh"
# shellcheck source-path=SCRIPTDIR source=lib/deploy_ct.sh
. "$repo/scripts/lib/deploy_ct.sh"
buildroot_init test-deploy

route=demo/echo/run
# The test's webhook receiver (asyncexec-notify's notify_listen, $nport, is deploy_ct.sh's).
hport=9470
hpath=/hooks/asyncexec

# ---- helpers (the shared ones are scripts/lib/deploy_ct.sh's) --------------------------

verify() {
    in_ct systemd-analyze verify --man=no asyncexec-fcgi.socket asyncexec-fcgi.service \
        asyncexec-expire.service asyncexec-expire.timer asyncexec-notify.service >"$work/verify" 2>&1
    local rc=$?
    sed 's/^/    /' "$work/verify"
    [ "$rc" -eq 0 ] && [ ! -s "$work/verify" ]
}

grants() {
    in_ct mariadb -N -e "SHOW GRANTS FOR 'asyncexec'@'localhost'" >"$work/grants" 2>&1 || return 1
    sed 's/^/    /' "$work/grants"
    # USAGE (the login) plus the four run-time privileges on the database, nothing else.
    [ "$(grep -c . "$work/grants")" -eq 2 ] &&
        grep -q '^GRANT SELECT, INSERT, UPDATE, DELETE ON `asyncexec`\.\* TO' "$work/grants"
}

summary() { in_ct journalctl -u asyncexec-expire --no-pager -o cat | grep 'asyncexec-expire: result=complete' | tail -n 1 | sed 's/^/    /' | grep .; }

cron_run() { in_ct runuser -u asyncexec -- env -i PATH="$cron_path" bash -c "$1"; }
cron_log() { in_ct journalctl -t asyncexec-expire --no-pager -o cat "$@" 2>/dev/null; }
cron_ok() { cron_log -p info..info | grep -q 'asyncexec-expire: result=complete'; }
cron_err() { [ "$(cron_log -p err | grep -c 'nonexistent.conf\|exited with status 2')" -ge 2 ]; }
cron_debug() { cron_log -p debug..debug | grep -q '^level=debug .*msg="expire: '; }

# Load: 4 clients, each polling the execution with one curl after another; every status
# on its own line. load_stop ends each loop after its current request (--max-time).
load_start() {
    local out=$1 i
    : >"$out"
    rm -f "$out.stop"
    cur=()
    for i in 1 2 3 4; do
        (
            while [ ! -e "$out.stop" ]; do
                curl -s -o /dev/null --max-time 10 -w '%{http_code}\n' \
                    -H "Authorization: Bearer $ak" -H "X-Poll-Token: $tok" \
                    "$base/v1/executions/$route/$cid"
            done >>"$out"
        ) &
        cur+=($!)
        loaders+=($!)
    done
    loader_out=$out
}
load_stop() { local p; touch "$loader_out.stop"; for p in "${cur[@]}"; do wait "$p" 2>/dev/null; done; }
lines() { wc -l <"$1"; }
mainpid() { in_ct systemctl show -P MainPID asyncexec-fcgi.service; }
workers() { in_ct sh -c 'cat /proc/$(systemctl show -P MainPID asyncexec-fcgi.service)/task/*/children' 2>/dev/null | tr ' ' '\n' | grep . | sort -n; }

replaced() {
    local w new
    new=$(workers)
    [ "$(echo "$new" | grep -c .)" -eq "$(echo "$old" | wc -w)" ] || return 1
    for w in $old; do echo "$new" | grep -qx "$w" && return 1; done
    return 0
}

repl() {
    local now; now=$(workers)
    [ "$(echo "$now" | grep -c .)" -eq "$nw" ] && ! echo "$now" | grep -qx "$victim"
}

fired() { [ "$(in_ct journalctl -u asyncexec-expire --no-pager -o cat | grep -c 'asyncexec-expire: result=')" -ge 2 ]; }

# No file is left to the removed user's UID (a later user would get it).
orphans() {
    local f
    f=$(in_ct find / -xdev \( -nouser -o -nogroup \) -print 2>/dev/null | head -n 5)
    [ -z "$f" ] || { say "     owned by no user: $f"; return 1; }
}

# exposure UNIT: systemd-analyze security's overall exposure level of UNIT ("1.9 OK ...").
exposure() { in_ct systemd-analyze security "$1" 2>/dev/null | sed -n 's/.*Overall exposure level for [^:]*: //p'; }
# not_above A B: the number A is at most the number B.
not_above() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }'; }

# The webhook sender: its main pid, its journal, its /readyz, its reload lines.
nmainpid() { in_ct systemctl show -P MainPID asyncexec-notify.service; }
njournal() { in_ct journalctl -u asyncexec-notify.service --no-pager -o cat 2>/dev/null; }
nreloaded() { [ "$(njournal | grep -c 'notify: configuration reloaded')" -gt "$nrel0" ]; }
nstopped() { njournal | grep -q 'notify: stopped, 0 transfers left'; }
# The receiver (the package's PHP example under php -S, unit asyncexec-test-receiver):
# every request its router recorded ("METHOD URI STATUS", php -S logs none when a
# router answers) and the events the example stored after it verified them (one JSON
# line each).
rx_log() { in_ct journalctl -u asyncexec-test-receiver.service --no-pager -o cat 2>/dev/null; }
rx_posts() { in_ct cat /run/asyncexec-test-receiver/requests.log 2>/dev/null | grep "^POST $hpath "; }
rx_events() { in_ct cat /run/asyncexec-test-receiver/events.log 2>/dev/null; }
rx_up() { [ "$(curl -s -o /dev/null --max-time 5 -w '%{http_code}' "http://127.0.0.1:$hport$hpath")" = 405 ]; }
rx_got() { [ "$(rx_events | grep -c .)" -ge 1 ]; }
# The endpoint's deliveries (asyncexec-admin webhook deliveries ID --json).
deliveries() { in_ct asyncexec-admin webhook deliveries "$whid" --json >"$work/deliveries" 2>&1; }
delivered() { deliveries && grep -qF '"state":"delivered"' "$work/deliveries"; }

# ---- phases ----------------------------------------------------------------------------

# preflight: checks before anything starts: root, the version, the host's tools, port 80 free.
preflight() {
    [ "$(id -u)" -eq 0 ] || die "run as root (debootstrap, systemd-nspawn)"
    [ -n "$version" ] || die "no project(asyncexec VERSION X.Y.Z ...) in CMakeLists.txt"
    say "suite $suite, package version $debver"

    # Host tools; port 80 and the metrics port must be free.
    buildroot_host_tools curl:curl nsenter:util-linux pgrep:procps ss:iproute2
    # The site's loopback-only metrics port, if it has one.
    mport=$(sed -n 's/^ *listen 127\.0\.0\.1:\([0-9][0-9]*\);.*/\1/p' nginx/asyncexec.conf | head -n 1)
    ports_free 80 $mport $nport $hport
    # An address of this host other than loopback (for the "not from outside" checks).
    ext=$(ip -4 -o addr show scope global 2>/dev/null | awk '{ sub("/.*", "", $4); print $4; exit }')
}

# phase_package: 1. the package of the suite, built in a build root of it, with lintian.
phase_package() {
    say "the $suite package, built in a $suite build root (with lintian)"
    pkgout=$state/package-$suite
    mkdir -p "$state" || die "mkdir $state"
    rm -f "$pkgout"/asyncexec_*.deb
    scripts/package.sh --suite "$suite" --lintian "$pkgout" >"$state/package-$suite.out"
    rc_pkg=$?
    deb=$(ls "$pkgout"/asyncexec_*.deb 2>/dev/null | head -n 1)
    [ -n "$deb" ] && [ -f "$deb" ] || die "scripts/package.sh --suite $suite (exit $rc_pkg)"
    say "package: $deb"
    say "Depends: $(dpkg-deb -f "$deb" Depends)"
    check "package file name asyncexec_${debver}_amd64.deb" test "$(basename "$deb")" = "asyncexec_${debver}_amd64.deb"
    check "lintian ($suite): no errors" test "$rc_pkg" -eq 0
}

# phase_boot: 2. a fresh root file system of the suite, the .deb and the deployment blocks in it, booted.
phase_boot() {
    mkdir -p "$state"
    work=$(mktemp -d "$state/run.XXXXXX") || die mktemp
    ct_make "$suite"
    cp "$deb" "$root/root/" || die "copy the .deb"
    deploy_blocks scripts/man/asyncexec-ops.7 >"$root/root/deploy-block.sh" ||
        die "the deploy-blocks of scripts/man/asyncexec-ops.7"
    [ -s "$root/root/deploy-block.sh" ] || die "no deploy-block in scripts/man/asyncexec-ops.7"
    ct_boot "$suite"
}

# phase_install: 3. apt installs the package with nginx and mariadb-server; what installing did.
phase_install() {
    say "apt install ./$(basename "$deb") nginx mariadb-server curl"
    if in_ct sh -c 'apt-get update -qq && cd /root && apt-get install -y -qq --no-install-recommends \
        ./'"$(basename "$deb")"' nginx mariadb-server curl' >"$work/apt.log" 2>&1; then
        ok "apt installed the package with nginx and mariadb-server"
    else
        tail -n 20 "$work/apt.log"
        die "apt install"
    fi
    dv=$(in_ct dpkg-query -W -f '${Version}' asyncexec)
    check "dpkg-query: the installed version $dv is $debver (CMake's $version)" \
        test "$dv" = "$debver" -a "${dv#"$version"-}" != "$dv"
    check "asyncexec-fcgi, -admin, -expire, -notify --version: $version" test "$(in_ct sh -c 'for b in fcgi admin expire notify; do \
        asyncexec-$b --version; done' | tr '\n' ' ')" = "asyncexec-fcgi $version asyncexec-admin $version asyncexec-expire $version asyncexec-notify $version "
    check "installing enabled nothing: asyncexec-fcgi.socket/.service, timer, asyncexec-notify.service disabled" \
        test "$(in_ct systemctl is-enabled asyncexec-fcgi.socket asyncexec-fcgi.service \
        asyncexec-expire.timer asyncexec-notify.service 2>/dev/null | sort -u)" = disabled
    check "system user asyncexec, group asyncexec, not in www-data" \
        test "$(in_ct id -Gn asyncexec)" = asyncexec
    check "/etc/asyncexec/asyncexec.conf is 0640 root:asyncexec" \
        test "$(in_ct stat -c '%a %U:%G' /etc/asyncexec/asyncexec.conf)" = "640 root:asyncexec"
    check "/etc/asyncexec/webhook.key (postinst) is 0640 root:asyncexec, base64 of 32 bytes" \
        eval '[ "$(in_ct stat -c "%a %U:%G" /etc/asyncexec/webhook.key)" = "640 root:asyncexec" ] &&
        [ "$(in_ct sh -c "base64 -d /etc/asyncexec/webhook.key | wc -c")" = 32 ]'
    check "systemd-analyze verify of the five units: clean" verify
    ex_fcgi=$(exposure asyncexec-fcgi.service)
    ex_notify=$(exposure asyncexec-notify.service)
    say "systemd-analyze security: asyncexec-fcgi.service $ex_fcgi, \
asyncexec-expire.service $(exposure asyncexec-expire.service), asyncexec-notify.service $ex_notify"
    check "systemd-analyze security: asyncexec-notify.service (${ex_notify%% *}) not above asyncexec-fcgi.service (${ex_fcgi%% *})" \
        not_above "${ex_notify%% *}" "${ex_fcgi%% *}"
}

# phase_deploy: 4. the deployment blocks, literally, as root; the keys and grants they left.
phase_deploy() {
    say "running the deployment blocks of asyncexec-ops(7)"
    ct_run_blocks "asyncexec-ops(7) deployment blocks"
    check "password file is 0640 root:asyncexec" \
        test "$(in_ct stat -c '%a %U:%G' /etc/asyncexec/db-password)" = "640 root:asyncexec"
    check "the database user has SELECT, INSERT, UPDATE, DELETE on asyncexec.* only" grants
    # The guide's last block enabled the webhook sender.
    check "asyncexec-notify.service enabled and active (the guide's systemctl enable --now)" \
        test "$(in_ct systemctl is-enabled asyncexec-notify.service) $(in_ct systemctl is-active asyncexec-notify.service)" = "enabled active"
    check "asyncexec-notify: /readyz on 127.0.0.1:$nport 200 (its database answers)" wait_for 15 nready
    migrate_denied
}

# migrate_denied: migrate run with /etc/asyncexec/migrate.conf itself whose user lacks
# migrate's privileges (the service's user on an empty database) says to GRANT them to
# that user, not to run it with that file (asyncexec-admin(8), migrate); the file and the
# grants are put back.
migrate_denied() {
    local rc
    in_ct cp -p /etc/asyncexec/migrate.conf /root/migrate.conf.saved &&
        in_ct mariadb -e "CREATE DATABASE asyncexec_denied; GRANT SELECT, INSERT, UPDATE, DELETE
            ON asyncexec_denied.* TO 'asyncexec'@'localhost'" &&
        in_ct sh -c 'printf "db_socket = /run/mysqld/mysqld.sock\ndb_user = asyncexec\ndb_password_file = /etc/asyncexec/db-password\ndb_name = asyncexec_denied\n" >/etc/asyncexec/migrate.conf' ||
        die "the denied migrate's set-up"
    in_ct asyncexec-admin --config /etc/asyncexec/migrate.conf migrate >"$work/denied" 2>&1
    rc=$?
    sed 's/^/    /' "$work/denied"
    in_ct cp -p /root/migrate.conf.saved /etc/asyncexec/migrate.conf &&
        in_ct mariadb -e "REVOKE ALL PRIVILEGES ON asyncexec_denied.* FROM 'asyncexec'@'localhost';
            DROP DATABASE asyncexec_denied" || die "the denied migrate's clean-up"
    check "migrate as migrate.conf's own user without CREATE: exit 1, GRANT them to that user" \
        eval '[ $rc -eq 1 ] && grep -qF "asyncexec lacks a privilege migrate needs: CREATE, ALTER, INDEX, REFERENCES on asyncexec_denied" "$work/denied" &&
        grep -qF "GRANT them to asyncexec, the user of /etc/asyncexec/migrate.conf" "$work/denied"'
    check "the grants are the deployment's again" grants
}

# phase_lifecycle: 5. the life cycle through the system nginx on port 80, raw UTF-8 included.
phase_lifecycle() {
    # Ready within 15 s of the deployment (workers connect to the database after the fork).
    wait_for 15 ready
    check "GET /readyz through nginx on port 80: 200 ready" has "$(http "$work/b" GET /readyz)" "$work/b" '"status":"ready"'

    cid=deploy-$$
    st=$(http "$work/sub" POST "/v1/executions/$route" -H "Authorization: Bearer $ak" \
        -H 'Content-Type: application/json' -H "X-Correlation-Id: $cid" --data '{"n":1}')
    check "submit: 202" test "$st" = 202
    tok=$(json_str pollToken "$work/sub")
    st=$(http "$work/p1" GET "/v1/executions/$route/$cid" -H "Authorization: Bearer $ak" \
        -H "X-Poll-Token: $tok")
    check "poll: 200 waiting_callback" has "$st" "$work/p1" '"status":"waiting_callback"'
    st=$(http "$work/cl" POST "/v1/backend/$route/claim" -H "Authorization: Bearer $bk" \
        -H 'Content-Type: application/json' --data '{"max":1,"leaseSeconds":60}')
    id=$(json_num id "$work/cl")
    cbt=$(json_str callbackToken "$work/cl")
    check "claim: 200 with the execution and its request" \
        has "$st" "$work/cl" '"request":{"n":1}' "\"id\":$id," "\"callbackToken\":\"$cbt\""
    st=$(http "$work/hb" POST "/v1/callbacks/$id/heartbeat" -H "Authorization: Bearer $bk" \
        -H "X-Callback-Token: $cbt" -H 'Content-Type: application/json' --data '{"leaseSeconds":60}')
    check "heartbeat: 200" test "$st" = 200
    st=$(http "$work/co" POST "/v1/callbacks/$id/complete" -H "Authorization: Bearer $bk" \
        -H "X-Callback-Token: $cbt" -H 'Content-Type: application/json' --data '{"result":{"echo":1}}')
    check "complete: 200" test "$st" = 200
    st=$(http "$work/p2" GET "/v1/executions/$route/$cid" -H "Authorization: Bearer $ak" \
        -H "X-Poll-Token: $tok")
    check "poll: 200 completed with the result" \
        has "$st" "$work/p2" '"status":"completed"' '"result":{"echo":1}'

    # Raw UTF-8 (not \u escapes) through the system nginx, in a submit and in a complete, read
    # back byte for byte (grep -F compares bytes).
    utf8='Müller Zürich 日本語'
    ucid=deploy-utf8-$$
    st=$(http "$work/usub" POST "/v1/executions/$route" -H "Authorization: Bearer $ak" \
        -H 'Content-Type: application/json' -H "X-Correlation-Id: $ucid" \
        --data-binary "{\"name\":\"$utf8\"}")
    check "submit with raw UTF-8 '$utf8': 202" eval '[ "$st" = 202 ] || { say "     status $st: $(head -c 300 "$work/usub")"; false; }'
    utok=$(json_str pollToken "$work/usub")
    st=$(http "$work/ucl" POST "/v1/backend/$route/claim" -H "Authorization: Bearer $bk" \
        -H 'Content-Type: application/json' --data '{"max":1,"leaseSeconds":60}')
    uid=$(json_num id "$work/ucl")
    ucbt=$(json_str callbackToken "$work/ucl")
    check "claim: the request's UTF-8 byte for byte" has "$st" "$work/ucl" "\"request\":{\"name\":\"$utf8\"}"
    st=$(http "$work/uco" POST "/v1/callbacks/$uid/complete" -H "Authorization: Bearer $bk" \
        -H "X-Callback-Token: $ucbt" -H 'Content-Type: application/json' \
        --data-binary "{\"result\":{\"name\":\"$utf8\",\"city\":\"Zürich\"}}")
    check "complete with raw UTF-8: 200" eval '[ "$st" = 200 ] || { say "     status $st: $(head -c 300 "$work/uco")"; false; }'
    st=$(http "$work/up" GET "/v1/executions/$route/$ucid" -H "Authorization: Bearer $ak" \
        -H "X-Poll-Token: $utok")
    check "poll: the result's UTF-8 byte for byte" \
        has "$st" "$work/up" '"status":"completed"' "\"result\":{\"name\":\"$utf8\",\"city\":\"Zürich\"}"
}

# phase_metrics: /metrics on the loopback-only server (or loopback on port 80), not from outside.
phase_metrics() {
    # /metrics: on the site's loopback-only server when it has one, else loopback on port 80.
    if [ -n "$mport" ]; then
        st=$(curl -sS -o "$work/m" -w '%{http_code}' "http://127.0.0.1:$mport/metrics")
        check "/metrics on 127.0.0.1:$mport: 200 with asyncexec_requests_total and the build's version" \
            has "$st" "$work/m" 'asyncexec_requests_total{' "asyncexec_build_info{version=\"$version\"} 1"
        check "/metrics on port 80: 404" test "$(http /dev/null GET /metrics)" = 404
        # the dashboard's Health page (issue 21) on the same loopback server, not on port 80
        st=$(curl -sS -o "$work/dh" -w '%{http_code}' "http://127.0.0.1:$mport/dashboard/health")
        check "/dashboard/health on 127.0.0.1:$mport: 200, the version, ready, the database reachable" \
            has "$st" "$work/dh" '<h1>Health</h1>' "<th>Version</th><td>$version</td>" \
            '<td class="ok">ready</td>' '<th>Reachable</th><td class="ok">yes</td>'
        check "/dashboard/health on port 80: 404" test "$(http /dev/null GET /dashboard/health)" = 404
        if [ -n "$ext" ]; then
            curl -s -o /dev/null --max-time 5 "http://$ext:$mport/metrics"
            check "/metrics port $mport from $ext (not loopback): connection refused" test $? -eq 7
        fi
    else
        st=$(http "$work/m" GET /metrics)
        check "/metrics from loopback: 200 with asyncexec_requests_total and the build's version" \
            has "$st" "$work/m" 'asyncexec_requests_total{' "asyncexec_build_info{version=\"$version\"} 1"
        if [ -n "$ext" ]; then
            st=$(curl -sS -o /dev/null -w '%{http_code}' "http://$ext/metrics")
            check "/metrics from $ext (not loopback): 404" test "$st" = 404
        fi
    fi
}

# phase_expiry: the expiry: a run now, the timer, the cron variant.
phase_expiry() {
    # The expiry: a run now, and the timer's own.
    check "timer asyncexec-expire.timer active" test "$(in_ct systemctl is-active asyncexec-expire.timer)" = active
    check "systemctl start asyncexec-expire.service: success" in_ct systemctl start asyncexec-expire.service
    check "journalctl -u asyncexec-expire shows the summary line" summary
    t_timer=$(date +%s)

    # The cron variant (hosts without systemd): the example line, run as cron would (as
    # asyncexec, bash, the file's PATH). Success: the summary reaches syslog as daemon.info,
    # exit 0. A failure (here: the --config path replaced by a missing file) reaches it as
    # daemon.err with "exited with status N", and the job exits with the run's status.
    cronf=/usr/share/doc/asyncexec/examples/asyncexec-expire
    cron_cmd=$(sed -n 's/^\* \* \* \* \* asyncexec //p' "$root$cronf")
    cron_path=$(sed -n 's/^PATH=//p' "$root$cronf")
    cron_run "$cron_cmd"
    rc_cron=$?
    check "cron line: exit 0, the summary in syslog as info (tag asyncexec-expire)" \
        eval '[ $rc_cron -eq 0 ] && wait_for 5 cron_ok'
    cron_run "${cron_cmd/--config \/etc\/asyncexec\/asyncexec.conf/--config /nonexistent.conf}"
    rc_cron=$?
    check "cron line, failing run: exit 2, the error and 'exited with status 2' in syslog as err" \
        eval '[ $rc_cron -eq 2 ] && wait_for 5 cron_err'
    cron_log -p err | sed 's/^/    /'
    # Its log lines (stderr, "<N>level=..." when not a terminal) at their own level, the
    # prefix taken off by logger --prio-prefix: a run with log_level = debug.
    in_ct sh -c 'grep -v "^log_level" /etc/asyncexec/asyncexec.conf >/etc/asyncexec/debug.conf &&
        echo "log_level = debug" >>/etc/asyncexec/debug.conf &&
        chown --reference=/etc/asyncexec/asyncexec.conf /etc/asyncexec/debug.conf &&
        chmod --reference=/etc/asyncexec/asyncexec.conf /etc/asyncexec/debug.conf'
    cron_run "${cron_cmd/asyncexec.conf/debug.conf}"
    rc_cron=$?
    check "cron line, log_level = debug: exit 0, its debug lines in syslog as debug, no '<N>' left" \
        eval '[ $rc_cron -eq 0 ] && wait_for 5 cron_debug && ! cron_log | grep -q "^<[0-9]"'
    cron_log | grep -m 3 'level=debug\|^<' | sed 's/^/    /'
    in_ct rm -f /etc/asyncexec/debug.conf
}

# phase_restart_reload: restart and reload under load: no failed request.
phase_restart_reload() {
    # Restart under load: the socket stays open, nginx's connections queue: no 502.
    m1=$(mainpid)
    s1=$(in_ct systemctl show -P ActiveEnterTimestampMonotonic asyncexec-fcgi.socket)
    load_start "$work/codes.restart"
    wait_for 10 atleast "$work/codes.restart" 40
    n0=$(lines "$work/codes.restart")
    in_ct systemctl restart asyncexec-fcgi.service
    n1=$(lines "$work/codes.restart")
    wait_for 10 atleast "$work/codes.restart" $((n1 + 100))
    load_stop
    m2=$(mainpid)
    say "restart: $((n1 - n0)) requests answered while systemctl restart ran"
    check "restart: the socket unit stayed up (same activation)" \
        test "$(in_ct systemctl show -P ActiveEnterTimestampMonotonic asyncexec-fcgi.socket)" = "$s1"
    n502=$(grep -c '^502$' "$work/codes.restart")
    nbad=$(grep -vc '^2' "$work/codes.restart")
    say "restart under load: $(lines "$work/codes.restart") requests, $n502 answered 502, $nbad not 2xx"
    check "restart: a new master ($m1 -> $m2)" test -n "$m2" -a "$m2" != 0 -a "$m2" != "$m1"
    check "restart under load: no 502" test "$n502" -eq 0
    check "restart under load: every request 2xx" test "$nbad" -eq 0

    # Reload under load: the master re-reads its configuration and replaces every worker;
    # no request fails meanwhile.
    old=$(workers | tr '\n' ' ')
    m1=$(mainpid)
    load_start "$work/codes.reload"
    wait_for 10 atleast "$work/codes.reload" 40
    n0=$(lines "$work/codes.reload")
    in_ct systemctl reload asyncexec-fcgi.service
    wait_for 30 replaced
    rc_repl=$?
    wait_for 10 atleast "$work/codes.reload" $((n0 + 100))
    load_stop
    nbad=$(grep -vc '^2' "$work/codes.reload")
    say "reload under load: $(lines "$work/codes.reload") requests, $nbad not 2xx"
    check "reload: same master, every worker replaced" \
        test "$rc_repl" -eq 0 -a "$(mainpid)" = "$m1"
    check "reload under load: no failed request" test "$nbad" -eq 0
}

# phase_worker_socket: a killed worker is replaced; only nginx's group may connect to the socket.
phase_worker_socket() {
    # A killed worker is replaced.
    before=$(workers)
    nw=$(echo "$before" | grep -c .)
    victim=$(echo "$before" | head -n 1)
    in_ct kill -KILL "$victim"
    check "worker $victim SIGKILLed: replaced ($nw workers again)" wait_for 10 repl

    # Only nginx's group may connect to the socket.
    sock=/run/asyncexec/asyncexec.sock
    check "socket $sock is srw-rw---- asyncexec:www-data" \
        test "$(in_ct stat -c '%A %U:%G' "$sock")" = "srw-rw---- asyncexec:www-data"
    in_ct runuser -u nobody -- curl -s -o /dev/null --max-time 5 --unix-socket "$sock" http://x/ 2>/dev/null
    rc_nobody=$?
    in_ct runuser -u www-data -- curl -s -o /dev/null --max-time 5 --unix-socket "$sock" http://x/ 2>/dev/null
    rc_www=$?
    say "connect to the socket: nobody curl rc=$rc_nobody, www-data curl rc=$rc_www (7: cannot connect)"
    check "user nobody cannot connect to the socket" test "$rc_nobody" -eq 7
    check "user www-data can connect to the socket (control)" test "$rc_www" -ne 7
}

# phase_journal: the timer's own run; no error in the units' journal.
phase_journal() {
    # The timer's own run (enabled at deployment, fires every minute).
    check "asyncexec-expire.timer fired by itself (waited at most 90 s)" \
        wait_for $((90 - ($(date +%s) - t_timer))) fired

    # No error in the asyncexec units' journal, except the line of the worker killed above.
    in_ct journalctl -p err --no-pager -o cat -u asyncexec-fcgi.service -u asyncexec-fcgi.socket \
        -u asyncexec-expire.service -u asyncexec-expire.timer >"$work/err.log" 2>&1
    grep -v "worker $victim killed by signal 9" "$work/err.log" | grep -v '^-- No entries --$' >"$work/err.other"
    say "journalctl -p err: $(grep -c "worker $victim killed by signal 9" "$work/err.log") line(s) for the killed worker, $(grep -c . "$work/err.other") other"
    [ -s "$work/err.other" ] && sed 's/^/    /' "$work/err.other"
    check "journalctl -p err of the asyncexec units: empty (but the killed worker)" test ! -s "$work/err.other"
}

# phase_notify: the webhook sender under systemd: a receiver in the container, an endpoint,
# a reload, one signed delivery of an execution completed through nginx, a clean stop.
phase_notify() {
    local conf=/etc/asyncexec/asyncexec.conf ex=/usr/share/doc/asyncexec/examples/webhook-receiver.php
    local st1 st2 st3 t1 t2 ms rc_reload rc_stop rc_add res ev sb64 key ts

    # The receiver (test harness, the consumer's side): the package's PHP example under
    # php -S on 127.0.0.1:$hport, as nobody, its secret as a systemd credential, its events
    # and seen ids in its runtime directory; a router records each request and its answer,
    # then runs the example unchanged. php-cli is not in the minimal system: installed for
    # it (--no-install-recommends).
    check "the package ships the example receiver $ex" in_ct test -f "$ex"
    if ! in_ct sh -c 'apt-get install -y -qq --no-install-recommends php-cli' </dev/null >"$work/php.log" 2>&1; then
        tail -n 20 "$work/php.log"
        bad "apt-get install php-cli (the receiver)"
        return
    fi
    say "receiver: $(in_ct php -r 'echo "PHP ", PHP_VERSION;') -S 127.0.0.1:$hport $ex"
    mkdir -p "$root/usr/local/bin"
    cat >"$root/usr/local/bin/asyncexec-test-receiver" <<EOF
#!/bin/sh
# scripts/test-deploy.sh's webhook receiver: $ex under php -S.
set -eu
ASYNCEXEC_WEBHOOK_SECRET=\$(cat "\$CREDENTIALS_DIRECTORY/secret")
ASYNCEXEC_WEBHOOK_LOG=\$RUNTIME_DIRECTORY/events.log
ASYNCEXEC_WEBHOOK_SEEN_DIR=\$RUNTIME_DIRECTORY/seen
ASYNCEXEC_TEST_REQUESTS=\$RUNTIME_DIRECTORY/requests.log
export ASYNCEXEC_WEBHOOK_SECRET ASYNCEXEC_WEBHOOK_LOG ASYNCEXEC_WEBHOOK_SEEN_DIR ASYNCEXEC_TEST_REQUESTS
cd "\$RUNTIME_DIRECTORY"
exec php -S 127.0.0.1:$hport /usr/local/bin/asyncexec-test-receiver.php
EOF
    cat >"$root/usr/local/bin/asyncexec-test-receiver.php" <<EOF
<?php
// scripts/test-deploy.sh's router: records "METHOD URI STATUS" of each request, then
// runs $ex, which ends the request with exit.
register_shutdown_function(function () {
	file_put_contents(getenv('ASYNCEXEC_TEST_REQUESTS'), \$_SERVER['REQUEST_METHOD'] . ' ' .
	    \$_SERVER['REQUEST_URI'] . ' ' . http_response_code() . "\\n", FILE_APPEND | LOCK_EX);
});
require '$ex';
EOF
    chmod 0755 "$root/usr/local/bin/asyncexec-test-receiver"

    # The operator: plain HTTP to 127.0.0.1 allowed (asyncexec.conf(5)), the sender
    # reloaded (SIGHUP under systemd: the same process, the new configuration).
    in_ct sh -c "printf 'webhook_allow_http = 1\nwebhook_allow_networks = 127.0.0.1/32\n' >>$conf"
    nm1=$(nmainpid)
    nrel0=$(njournal | grep -c 'notify: configuration reloaded')
    in_ct systemctl reload asyncexec-notify
    rc_reload=$?
    check "systemctl reload asyncexec-notify: exit 0, the same process, 'configuration reloaded' logged" \
        eval '[ $rc_reload -eq 0 ] && wait_for 10 nreloaded && [ "$(nmainpid)" = "$nm1" ] && [ "$nm1" != 0 ]'

    # The operator: an endpoint of tenant demo; its id and secret, printed once.
    in_ct sh -c "umask 077 && asyncexec-admin webhook add --tenant demo --url http://127.0.0.1:$hport$hpath \
        --json >/root/asyncexec-demo.webhook" 2>"$work/webhook-add.err"
    rc_add=$?
    sed 's/^/    /' "$work/webhook-add.err"
    whid=$(json_num id "$root/root/asyncexec-demo.webhook")
    secret=$(json_str secret "$root/root/asyncexec-demo.webhook")
    check "asyncexec-admin webhook add --json: exit 0, an id and a whsec_ secret" \
        eval '[ $rc_add -eq 0 ] && [ -n "$whid" ] && [ "${secret#whsec_}" != "$secret" ] && [ -n "${secret#whsec_}" ]'
    sb64=${secret#whsec_}
    (umask 077 && printf '%s\n' "$secret" >"$root/root/asyncexec-demo.whsec")

    in_ct systemd-run --quiet --unit=asyncexec-test-receiver -p User=nobody -p Group=nogroup \
        -p RuntimeDirectory=asyncexec-test-receiver -p LoadCredential=secret:/root/asyncexec-demo.whsec \
        /usr/local/bin/asyncexec-test-receiver
    if ! wait_for 15 rx_up; then
        rx_log | tail -n 20 | sed 's/^/    /'
        bad "the receiver answers GET $hpath with 405 on 127.0.0.1:$hport"
        return
    fi
    ok "the receiver answers GET $hpath with 405 on 127.0.0.1:$hport"

    # An execution submitted, claimed and completed through nginx.
    hcid=deploy-hook-$$
    st1=$(http "$work/hsub" POST "/v1/executions/$route" -H "Authorization: Bearer $ak" \
        -H 'Content-Type: application/json' -H "X-Correlation-Id: $hcid" --data '{"n":2}')
    st2=$(http "$work/hcl" POST "/v1/backend/$route/claim" -H "Authorization: Bearer $bk" \
        -H 'Content-Type: application/json' --data '{"max":1,"leaseSeconds":60}')
    hid=$(json_num id "$work/hcl")
    hcbt=$(json_str callbackToken "$work/hcl")
    st3=$(http "$work/hco" POST "/v1/callbacks/$hid/complete" -H "Authorization: Bearer $bk" \
        -H "X-Callback-Token: $hcbt" -H 'Content-Type: application/json' --data '{"result":{"echo":2}}')
    t1=$(date +%s%N)
    check "submit $hcid, claim, complete through nginx: 202, 200 with its request, 200" \
        eval '[ "$st1 $st3" = "202 200" ] && has "$st2" "$work/hcl" "\"request\":{\"n\":2}"'

    # Exactly one delivery, signed (the example answers 204 and stores the event only when
    # webhook-signature verifies with the secret and webhook-timestamp is within 5 minutes).
    wait_for 20 rx_got
    t2=$(date +%s%N)
    say "receiver: the event stored $(((t2 - t1) / 1000000)) ms after the complete's answer (a new endpoint: the sender reads endpoints every 2 s)"
    wait_for 15 delivered
    sleep 2   # time for a second request, were one sent
    rx_posts | sed 's/^/    /'
    rx_events >"$work/events"
    sed 's/^/    /' "$work/events"
    sed 's/^/    /' "$work/deliveries"
    check "receiver: exactly one POST $hpath, answered 204" \
        eval '[ "$(rx_posts | grep -c .)" -eq 1 ] && rx_posts | grep -qx "POST $hpath 204"'
    check "receiver: one event, its signature verified by the PHP example" test "$(grep -c . "$work/events")" -eq 1
    ev=$(head -n 1 "$work/events")
    check "the event: execution.completed, correlationId $hcid, status completed" \
        eval 'for w in "\"type\":\"execution.completed\"" "\"correlationId\":\"$hcid\"" "\"status\":\"completed\""; do
            case $ev in *"$w"*) ;; *) say "     missing $w"; false ;; esac || break; done'
    check "webhook deliveries $whid: one, delivered at the first attempt (204), the receiver's webhook-id" \
        eval '[ "$(grep -o "\"webhook_id\":" "$work/deliveries" | wc -l)" -eq 1 ] &&
        grep -qF "\"correlation_id\":\"$hcid\"" "$work/deliveries" &&
        grep -qF "\"state\":\"delivered\",\"attempts\":1,\"last_status\":204" "$work/deliveries" &&
        wid=$(sed -n "s/.*\"webhook_id\":\"\([^\"]*\)\".*/\1/p" "$work/deliveries") && [ -n "$wid" ] &&
        case $ev in *"\"webhookId\":\"$wid\""*) true ;; *) false ;; esac'
    st1=$(curl -sS -o "$work/nm" -w '%{http_code}' "http://127.0.0.1:$nport/metrics")
    check "asyncexec-notify /metrics: 1 created, 1 delivered" has "$st1" "$work/nm" \
        'asyncexec_webhook_created_total 1' 'asyncexec_webhook_attempts_total{result="delivered"} 1'
    # Control: the receiver refuses what is not signed with the secret.
    ts=$(date +%s)
    st1=$(curl -sS -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
        -H 'webhook-id: msg_forged' -H "webhook-timestamp: $ts" \
        -H 'webhook-signature: v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=' \
        --data '{"type":"execution.completed"}' "http://127.0.0.1:$hport$hpath")
    check "control: the receiver answers a forged signature with 401" test "$st1" = 401

    # A clean stop: SIGTERM, exit 0 well within TimeoutStopSec.
    t1=$(date +%s%N)
    in_ct systemctl stop asyncexec-notify
    rc_stop=$?
    t2=$(date +%s%N)
    ms=$(((t2 - t1) / 1000000))
    res="$(in_ct systemctl show -P Result asyncexec-notify) $(in_ct systemctl show -P ExecMainCode asyncexec-notify) $(in_ct systemctl show -P ExecMainStatus asyncexec-notify)"
    say "systemctl stop asyncexec-notify: exit $rc_stop in $ms ms; Result, ExecMainCode, ExecMainStatus: $res; TimeoutStopSec $(in_ct systemctl show -P TimeoutStopUSec asyncexec-notify)"
    check "systemctl stop asyncexec-notify: exit 0 in $ms ms (< 60 s), the process exited 0 (Result=success)" \
        eval '[ $rc_stop -eq 0 ] && [ "$res" = "success 1 0" ] && [ $ms -lt 60000 ] &&
        [ "$(in_ct systemctl is-active asyncexec-notify)" = inactive ]'
    check "journalctl -u asyncexec-notify: 'notify: stopped, 0 transfers left'" wait_for 5 nstopped

    # Secrets: neither the endpoint's secret nor the key file in any journal line of the
    # sender (nor in the whole journal); the sender logs no endpoint URL.
    key=$(head -n 1 "$root/etc/asyncexec/webhook.key")
    njournal >"$work/notify.journal"
    in_ct journalctl -u asyncexec-notify.service --no-pager -o verbose >"$work/notify.verbose" 2>&1
    in_ct journalctl --no-pager -o verbose >"$work/all.verbose" 2>&1
    say "journalctl -u asyncexec-notify: $(grep -c . "$work/notify.journal") lines"
    sed 's/^/    /' "$work/notify.journal" | tail -n 12
    check "journalctl -u asyncexec-notify (every field): no secret, no key, no endpoint URL" \
        eval '[ -n "$sb64" ] && ! grep -qF -e "$sb64" -e "$key" -e "127.0.0.1:$hport" "$work/notify.verbose"'
    check "the whole journal (every field): neither the secret nor the key file" \
        eval '[ -n "$sb64" ] && ! grep -qF -e "$sb64" -e "$key" "$work/all.verbose"'
    in_ct journalctl -p err --no-pager -o cat -u asyncexec-notify.service 2>&1 | grep -v '^-- No entries --$' >"$work/notify.err"
    [ -s "$work/notify.err" ] && sed 's/^/    /' "$work/notify.err"
    check "journalctl -p err -u asyncexec-notify: empty" test ! -s "$work/notify.err"

    # The receiver goes; the sender runs again (for the upgrade's try-restart).
    in_ct systemctl stop asyncexec-test-receiver.service
    rm -f "$root/usr/local/bin/asyncexec-test-receiver" "$root/usr/local/bin/asyncexec-test-receiver.php" \
        "$root/root/asyncexec-demo.whsec"
    in_ct systemctl start asyncexec-notify
    check "systemctl start asyncexec-notify: active again" \
        eval '[ "$(in_ct systemctl is-active asyncexec-notify)" = active ] && wait_for 15 nready'
}

# phase_upgrade: an upgrade (the same package again) keeps the operator's conffile.
phase_upgrade() {
    # An upgrade (the same package again): the operator's edit of the conffile, its mode and
    # group stay; the running service is restarted (postinst try-restart) and serves again.
    in_ct sh -c 'echo "# local edit" >>/etc/asyncexec/asyncexec.conf'
    wk=$(in_ct sha256sum /etc/asyncexec/webhook.key)
    m1=$(mainpid)
    nm1=$(nmainpid)
    in_ct sh -c "cd /root && apt-get install -y -qq --reinstall ./$(basename "$deb")" \
        </dev/null >"$work/reinstall.log" 2>&1
    check "reinstall: exit 0" test $? -eq 0
    check "reinstall: conffile keeps the local edit and 0640 root:asyncexec" \
        eval 'in_ct grep -qx "# local edit" /etc/asyncexec/asyncexec.conf &&
        [ "$(in_ct stat -c "%a %U:%G" /etc/asyncexec/asyncexec.conf)" = "640 root:asyncexec" ]'
    check "reinstall: the service was restarted and is ready" \
        eval '[ "$(mainpid)" != "$m1" ] && wait_for 15 ready'
    check "reinstall: asyncexec-notify was restarted (postinst try-restart) and is ready" \
        eval '[ "$(nmainpid)" != "$nm1" ] && [ "$(in_ct systemctl is-active asyncexec-notify)" = active ] &&
        wait_for 15 nready'
    check "reinstall: webhook.key kept as it was (never replaced)" \
        test "$(in_ct sha256sum /etc/asyncexec/webhook.key)" = "$wk"
}

# phase_remove: apt remove keeps the configuration and the user; purge removes them.
phase_remove() {
    # apt remove keeps the configuration and the user; purge removes them.
    in_ct apt-get remove -y -qq asyncexec >"$work/remove.log" 2>&1
    check "apt remove: binaries gone" not in_ct test -e /usr/sbin/asyncexec-fcgi
    check "apt remove: units stopped (asyncexec-notify too)" \
        test "$(in_ct systemctl is-active asyncexec-fcgi.socket asyncexec-fcgi.service \
        asyncexec-notify.service | sort -u)" = inactive
    check "apt remove: /etc/asyncexec kept (config and password file)" \
        in_ct test -f /etc/asyncexec/asyncexec.conf -a -f /etc/asyncexec/db-password
    check "apt remove: user asyncexec kept" quiet in_ct getent passwd asyncexec
    check "apt remove: /var/lib/asyncexec kept" in_ct test -d /var/lib/asyncexec
    in_ct apt-get purge -y -qq asyncexec >"$work/purge.log" 2>&1
    check "apt purge: /etc/asyncexec gone" not in_ct test -e /etc/asyncexec
    check "apt purge: user asyncexec gone" not in_ct getent passwd asyncexec
    check "apt purge: group asyncexec gone" not in_ct getent group asyncexec
    check "apt purge: /var/lib/asyncexec gone" not in_ct test -e /var/lib/asyncexec
    check "apt purge: no file owned by the removed user or group" orphans
    check "apt purge: nginx site and its enabled link gone" \
        not in_ct sh -c 'test -e /etc/nginx/sites-available/asyncexec || test -L /etc/nginx/sites-enabled/asyncexec'
    check "apt purge: nginx -t still passes" in_ct nginx -q -t
    check "apt purge: no enable links left" test -z "$(in_ct find /etc/systemd/system -name 'asyncexec-*')"
    check "apt purge: no statoverride left" not in_ct sh -c 'dpkg-statoverride --list | grep -q asyncexec'
    check "apt purge: dpkg has no record of asyncexec" not in_ct dpkg -s asyncexec
}

main() {
    ct_suite_args test-deploy "$@"
    buildroot_check_suite "$suite"
    # The one version (CMake's project(VERSION)) and this suite's Debian revision.
    version=$(sed -n 's/^project(asyncexec VERSION \([0-9][0-9.]*\) .*/\1/p' CMakeLists.txt)
    debver=$version-1~$(buildroot_debian_tag "$suite")
    trap cleanup EXIT
    trap 'exit 1' INT TERM HUP
    preflight
    phase_package
    phase_boot
    phase_install
    phase_deploy
    phase_lifecycle
    phase_metrics
    phase_expiry
    phase_restart_reload
    phase_worker_socket
    phase_journal
    phase_notify
    phase_upgrade
    phase_site
    phase_remove
    exit 0
}

main "$@"
