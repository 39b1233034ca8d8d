#!/usr/bin/env bash
# scripts/test-backup.sh [--suite bookworm|trixie] - the backup test: asyncexec-ops(7),
# OPERATIONS, "Backup and restore", run literally on a deployed host, and what a restore
# means for the executions and their webhooks.
#
#  1. builds this tree's .deb of the suite in a build root of it (scripts/package.sh
#     --suite SUITE), boots a fresh root of the suite (systemd-nspawn --boot,
#     scripts/lib/deploy_ct.sh), installs the .deb with nginx, mariadb-server and curl and
#     runs the deployment blocks of asyncexec-ops(7);
#  2. the consumer's webhook: a receiver on the host (scripts/lib/webhook_sink.py on
#     127.0.0.1:9470, which checks each signature), an endpoint of tenant demo, plain HTTP
#     to 127.0.0.1 allowed and the sender reloaded; a second route, demo/echo/lapse, and
#     its backend key;
#  3. before the backup, through nginx on port 80 (scripts/lib/deploy_work.sh): A
#     completed (raw UTF-8 in its result; its notice received and its delivery recorded as
#     made), B claimed (its callback token kept), C waiting; F on demo/echo/lapse claimed
#     for 5 s (its callback token kept);
#  4. the backup block (the .EX block after '.\" backup-block', roff escapes undone, as
#     root, sh -eux): a gzip'd dump that gzip -t accepts;
#  5. after the backup: B and F completed (both notices received), C claimed (that
#     callback token kept), E submitted;
#  6. the restore block ('.\" restore-block'): the database is the dump's again;
#  7. checks: /readyz; A polls completed with the same bytes; B polls waiting_callback
#     again (its complete came after the dump) and its callback token completes it again;
#     C polls waiting_callback, the callback token of its claim after the dump is refused
#     (409, the claim is not in the dump), a new claim hands it out and completes it; F,
#     its lease lapsed, is handed out again by a claim (attempt 2), its first callback
#     token is then refused (409) and the new one completes it; E polls 404 and its
#     identical resubmit is accepted again (202, a new execution); a new life cycle D; B
#     and F notified again, under new webhook-ids, A not again; asyncexec-admin check (in
#     the block), the sender, an expiry run; journalctl -p err of the asyncexec units
#     since the restore: empty;
#  8. powers the container off and removes it, and ends the receiver, whatever happened
#     (trap; by pid).
#
# --suite defaults to this host's release when it is bookworm or trixie, else trixie. Run
# as root on a Debian host; installs systemd-container, debootstrap and curl with apt-get
# when missing (python3 runs the receiver). Ports 80, 9180, 9466 and 9470 must be free on
# the host (the container shares its network): run no other deployment test beside it.
# Ends with "N passed, N failed"; exit 0 only when nothing failed.
#   ASYNCEXEC_BACKUP_DIR     state directory (default .local/backup)
#   ASYNCEXEC_KEEP=1         keep the container's root file system after a failure
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD
state=${ASYNCEXEC_BACKUP_DIR:-$repo/.local/backup}
# shellcheck source-path=SCRIPTDIR source=lib/buildroot.sh
. "$repo/scripts/lib/buildroot.sh"
# shellcheck source-path=SCRIPTDIR source=lib/deploy_ct.sh
. "$repo/scripts/lib/deploy_ct.sh"
# shellcheck source-path=SCRIPTDIR source=lib/deploy_work.sh
. "$repo/scripts/lib/deploy_work.sh"
buildroot_init test-backup

route=demo/echo/run
# The route whose claim lapses (F), and the webhook receiver's port.
lroute=demo/echo/lapse
hport=9470
mport=9180
page=scripts/man/asyncexec-ops.7
# The dump the backup block writes.
dump=/var/backups/asyncexec/asyncexec.sql.gz
who=pre-dump

# blocks MARK FILE: the page's blocks marked MARK into FILE in the container's /root.
blocks() {
    deploy_blocks "$page" "$1" >"$root/root/$2" || die "the $1 blocks of $page"
    [ -s "$root/root/$2" ] || die "no $1 in $page"
}
# run_blocks FILE WHAT: /root/FILE run in the container (sh -eux); its output in
# $work/FILE.log (shown); its status.
run_blocks() {
    in_ct sh -eux "/root/$1" </dev/null >"$work/$1.log" 2>&1
    local rc=$?
    sed 's/^/    /' "$work/$1.log"
    return "$rc"
}

# The receiver's notices of one execution, "WEBHOOK-ID verified|unverified TYPE" a line
# (webhook_sink.py --events); noticed CID N: N of them or more, all verified.
notices() { python3 scripts/lib/webhook_sink.py --events "$work/events" "$1" 2>/dev/null; }
noticed() {
    local n
    n=$(notices "$1" | grep -c ' verified ')
    [ "$n" -ge "$2" ] && [ "$(notices "$1" | grep -c .)" -eq "$n" ]
}
sink_up() { [ "$(curl -s -o /dev/null --max-time 5 -w '%{http_code}' "http://127.0.0.1:$hport/hook")" = 405 ]; }
# The endpoint's deliveries made (asyncexec-admin webhook deliveries ID --json): N or more.
made() {
    in_ct asyncexec-admin webhook deliveries "$whid" --json >"$work/deliveries" 2>&1 &&
        [ "$(grep -o '"state":"delivered"' "$work/deliveries" | grep -c .)" -ge "$1" ]
}
# The sender's reload lines.
reloads() {
    in_ct journalctl -u asyncexec-notify.service --no-pager -o cat 2>/dev/null |
        grep -c 'notify: configuration reloaded'
}
# lclaim NAME: the backend claims one execution of $lroute for 600 s.
lclaim() { post "$1" "/v1/backend/$lroute/claim" "$lbk" --data '{"max":1,"leaseSeconds":600}'; }
# lcomplete NAME TOKEN BODY: $lroute's backend completes F with TOKEN.
lcomplete() { post "$1" "/v1/callbacks/$fid/complete" "$lbk" -H "X-Callback-Token: $2" --data-binary "$3"; }
# lpoll NAME: the consumer's poll of F.
lpoll() {
    http "$work/$1" GET "/v1/executions/$lroute/backup-F-$$" -H "Authorization: Bearer $ak" \
        -H "X-Poll-Token: $ftok"
}
# f_again: a claim of $lroute hands out F again (its lease lapsed).
f_again() { [ "$(lclaim fcl1)" = 200 ] && grep -qF '"request":{"n":"F"}' "$work/fcl1"; }

# ---- phases ----------------------------------------------------------------------------

# preflight: root, the host's tools, the ports free.
preflight() {
    [ "$(id -u)" -eq 0 ] || die "run as root (debootstrap, systemd-nspawn)"
    say "suite $suite"
    command -v python3 >/dev/null || die "python3 is needed for the receiver (apt-get install python3)"
    ct_state 80 "$mport" "$nport" "$hport"
}

# phase_deploy: 1. the package, a booted root, the deployment blocks.
phase_deploy() {
    ct_package "$suite"
    deb=$pkg
    ct_make "$suite"
    cp "$deb" "$root/root/" || die "copy the .deb"
    blocks deploy-block deploy-block.sh
    blocks backup-block backup-block.sh
    blocks restore-block restore-block.sh
    ct_boot "$suite"
    say "apt install ./$(basename "$deb") nginx mariadb-server curl"
    in_ct sh -c 'apt-get update -qq && cd /root && apt-get install -y -qq \
        --no-install-recommends ./'"$(basename "$deb")"' nginx mariadb-server curl' \
        </dev/null >"$work/apt.log" 2>&1 || { tail -n 20 "$work/apt.log"; die "apt install"; }
    ct_run_blocks "asyncexec-ops(7) deployment blocks"
    check "/readyz through nginx on port 80: 200" wait_for 15 ready
}

# phase_prepare: 2. the webhook (the receiver, an endpoint, the sender reloaded) and the
# route $lroute with its backend key.
phase_prepare() {
    local conf=/etc/asyncexec/asyncexec.conf r0 rc secret
    in_ct sh -c "printf 'webhook_allow_http = 1\nwebhook_allow_networks = 127.0.0.1/32\n' >>$conf"
    r0=$(reloads)
    in_ct systemctl reload asyncexec-notify
    rc=$?
    check "plain HTTP to 127.0.0.1 allowed, systemctl reload asyncexec-notify: exit 0, reloaded" \
        eval '[ $rc -eq 0 ] && wait_for 10 eval "[ \"\$(reloads)\" -gt $r0 ]"'
    in_ct sh -c "umask 077 && asyncexec-admin webhook add --tenant demo \
        --url http://127.0.0.1:$hport/hook --json >/root/asyncexec-demo.webhook"
    rc=$?
    whid=$(json_num id "$root/root/asyncexec-demo.webhook")
    secret=$(json_str secret "$root/root/asyncexec-demo.webhook")
    (umask 077 && printf '%s\n' "$secret" >"$work/whsec")
    python3 scripts/lib/webhook_sink.py "$hport" "$work/whsec" "$work/events" &
    loaders+=($!)
    check "asyncexec-admin webhook add (exit 0), a receiver on 127.0.0.1:$hport" \
        eval '[ $rc -eq 0 ] && [ -n "$whid" ] && [ -n "$secret" ] && wait_for 10 sink_up'
    in_ct asyncexec-admin route add "$lroute" >"$work/route.log" 2>&1 &&
        lbk=$(in_ct asyncexec-admin backend-key create --route "$lroute" --label backup-lapse 2>>"$work/route.log")
    rc=$?
    sed 's/^/    /' "$work/route.log"
    check "asyncexec-admin route add $lroute, backend-key create: exit 0" \
        eval '[ $rc -eq 0 ] && [ -n "$lbk" ]'
}

# phase_leave: 3. after work_leave: A's notice received and its delivery recorded as made;
# F submitted on $lroute and claimed for 5 s.
phase_leave() {
    local st1 st2
    check "A: notified (a verified POST), its delivery made" \
        eval 'wait_for 15 noticed "upgrade-A-$$" 1 && wait_for 15 made 1'
    st1=$(post fsub "/v1/executions/$lroute" "$ak" -H "X-Correlation-Id: backup-F-$$" --data '{"n":"F"}')
    ftok=$(json_str pollToken "$work/fsub")
    st2=$(post fcl0 "/v1/backend/$lroute/claim" "$lbk" --data '{"max":1,"leaseSeconds":5}')
    fid=$(json_num id "$work/fcl0")
    fcbt=$(json_str callbackToken "$work/fcl0")
    check "$who: F submitted on $lroute and claimed for 5 s (its callback token kept): 202, 200" \
        eval '[ "$st1" = 202 ] && [ -n "$fcbt" ] && has "$st2" "$work/fcl0" "\"request\":{\"n\":\"F\"}" "\"attempt\":1"'
}

# phase_backup: 4. the backup block; 5. what happens after the dump.
phase_backup() {
    local st
    run_blocks backup-block.sh
    check "the backup block of asyncexec-ops(7): exit 0" test $? -eq 0
    check "$dump: 0600 root, gzip -t accepts it" eval \
        '[ "$(in_ct stat -c "%a %U" "$dump")" = "600 root" ] && in_ct gzip -t "$dump"'

    st=$(complete bco0 "$bid" "$bcbt" '{"result":{"echo":"B after the dump"}}')
    check "after the dump: B completed (200)" test "$st" = 200
    st=$(lcomplete fco0 "$fcbt" '{"result":{"echo":"F after the dump"}}')
    check "after the dump: F completed with its callback token (200)" test "$st" = 200
    check "after the dump: B and F notified (verified POSTs)" \
        eval 'wait_for 15 noticed "upgrade-B-$$" 1 && wait_for 15 noticed "backup-F-$$" 1'
    st=$(claim ccl0)
    cid_c=$(json_num id "$work/ccl0")
    ccbt=$(json_str callbackToken "$work/ccl0")
    check "after the dump: C claimed (200, its request)" has "$st" "$work/ccl0" '"request":{"n":"C"}'
    st=$(post esub0 "/v1/executions/$route" "$ak" -H "X-Correlation-Id: backup-E-$$" --data '{"n":"E"}')
    etok=$(json_str pollToken "$work/esub0")
    check "after the dump: E submitted (202), polls waiting_callback" eval '[ "$st" = 202 ] &&
        has "$(poll ep0 backup-E-$$ "$etok")" "$work/ep0" "\"status\":\"waiting_callback\""'
}

# phase_restore: 6. the restore block; 7. what the executions are now.
phase_restore() {
    local st
    since=$(in_ct date '+%Y-%m-%d %H:%M:%S')
    run_blocks restore-block.sh
    check "the restore block of asyncexec-ops(7) (ends with asyncexec-admin check): exit 0" test $? -eq 0
    check "/readyz through nginx on port 80: 200" wait_for 15 ready

    check "E (submitted after the dump): its poll 404 not_found" eval \
        '[ "$(poll ep1 backup-E-$$ "$etok")" = 404 ] && grep -qF "\"code\":\"not_found\"" "$work/ep1"'
    check "B (completed after the dump): polls waiting_callback again" \
        has "$(poll bp1 upgrade-B-$$ "$btok")" "$work/bp1" '"status":"waiting_callback"'
    check "F (completed after the dump): polls waiting_callback again" \
        has "$(lpoll fp1)" "$work/fp1" '"status":"waiting_callback"'
    st=$(complete cco0 "$cid_c" "$ccbt" '{"result":{"echo":"C"}}')
    check "C: the callback token of its claim after the dump is refused: 409 conflict" \
        eval '{ [ "$st" = 409 ] && grep -qF "\"code\":\"conflict\"" "$work/cco0"; } ||
        { say "     status $st: $(head -c 300 "$work/cco0")"; false; }'
    say "     $(head -c 300 "$work/cco0")"
}

# phase_lapse: 7. F's lease (5 s) lapsed: a claim hands it out again (attempt 2); then its
# first callback token is refused and the new one completes it.
phase_lapse() {
    local st
    check "F, its lease lapsed: a claim of $lroute hands it out again (attempt 2)" \
        eval 'wait_for 30 f_again && grep -qF "\"attempt\":2" "$work/fcl1"'
    st=$(lcomplete fco1 "$fcbt" '{"result":{"echo":"F"}}')
    check "F: its first callback token is refused now: 409 conflict" \
        eval '{ [ "$st" = 409 ] && grep -qF "\"code\":\"conflict\"" "$work/fco1"; } ||
        { say "     status $st: $(head -c 300 "$work/fco1")"; false; }'
    st=$(lcomplete fco2 "$(json_str callbackToken "$work/fcl1")" '{"result":{"echo":"F"}}')
    check "F: the new claim's callback token completes it (200), polls completed with its result" \
        eval '[ "$st" = 200 ] && has "$(lpoll fp2)" "$work/fp2" "\"status\":\"completed\"" "\"result\":{\"echo\":\"F\"}"'
}

# phase_notices: 7. B and F, which ended again, notified again under new webhook-ids; A,
# whose delivery the dump holds as made, not again.
phase_notices() {
    local x
    for x in "upgrade-B-$$" "backup-F-$$"; do
        check "${x%%-[0-9]*}: notified again after the restore, under a new webhook-id (2 verified POSTs, 2 ids)" \
            eval 'wait_for 15 noticed "$x" 2 && [ "$(notices "$x" | cut -d " " -f 1 | sort -u | grep -c .)" -eq 2 ]'
        notices "$x" | sed 's/^/    /'
    done
    check "A (notified before the dump): not again (1 POST)" eval '[ "$(notices "upgrade-A-$$" | grep -c .)" -eq 1 ]'
}

# phase_resubmit: 7. E, which the restore lost, submitted again by its consumer (after
# work_check, whose claims must find C and D first).
phase_resubmit() {
    local st
    st=$(post esub1 "/v1/executions/$route" "$ak" -H "X-Correlation-Id: backup-E-$$" --data '{"n":"E"}')
    check "E: the identical resubmit is accepted again (202), its new token polls waiting_callback" eval \
        '[ "$st" = 202 ] && has "$(poll ep2 backup-E-$$ "$(json_str pollToken "$work/esub1")")" "$work/ep2" "\"status\":\"waiting_callback\""'
}

main() {
    trap cleanup EXIT
    trap 'exit 1' INT TERM HUP
    ct_suite_args test-backup "$@"
    preflight
    phase_deploy
    phase_prepare
    work_leave "$who"
    phase_leave
    phase_backup
    phase_restore
    # B's claim and token are in the dump: its callback token completes it; C is handed
    # out again and completed; a new life cycle (deploy_work.sh).
    work_check "$who"
    phase_resubmit
    phase_lapse
    phase_notices
    work_services "$since"
    exit 0
}

main "$@"
