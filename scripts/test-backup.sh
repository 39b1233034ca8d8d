#!/usr/bin/env bash
# scripts/test-backup.sh [--suite bookworm|trixie] - the backup test: asyncexec-ops(7),
# OPERATIONS, "Backup and restore", run literally on a deployed host, and what a restore
# means for the executions.
#
#  1. builds this tree's .deb of the suite in a build root of it (scripts/package.sh
#     --suite SUITE), boots a fresh root of the suite (systemd-nspawn --boot,
#     scripts/lib/deploy_ct.sh), installs the .deb with nginx, mariadb-server and curl and
#     runs the deployment blocks of asyncexec-ops(7);
#  2. before the backup, through nginx on port 80 (scripts/lib/deploy_work.sh): A
#     completed (raw UTF-8 in its result), B claimed (its callback token kept), C waiting;
#  3. the backup block (the .EX block after '.\" backup-block', roff escapes undone, as
#     root, sh -eux): a gzip'd dump that gzip -t accepts;
#  4. after the backup: B completed, C claimed (that callback token kept), E submitted;
#  5. the restore block ('.\" restore-block'): the database is the dump's again;
#  6. checks: /readyz; A polls completed with the same bytes; B polls waiting_callback
#     again (its complete came after the dump) and its callback token completes it again;
#     C polls waiting_callback, the callback token of its claim after the dump is refused
#     (409, the claim is not in the dump), a new claim hands it out and completes it; E
#     polls 404 and its identical resubmit is accepted again (202, a new execution); a new
#     life cycle D; asyncexec-admin check (in the block), the sender, an expiry run;
#     journalctl -p err of the asyncexec units since the restore: empty;
#  7. powers the container off and removes it, whatever happened (trap; by pid).
#
# --suite defaults to this host's release when it is bookworm or trixie, else trixie. Run
# as root on a Debian host; installs systemd-container, debootstrap and curl with apt-get
# when missing. Ports 80, 9180 and 9466 must be free on the host (the container shares its
# network): run no other deployment test beside it. Ends with "N passed, N failed"; exit 0
# only when nothing failed.
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

# ---- phases ----------------------------------------------------------------------------

# preflight: root, the host's tools, the ports free.
preflight() {
    [ "$(id -u)" -eq 0 ] || die "run as root (debootstrap, systemd-nspawn)"
    say "suite $suite"
    ct_state 80 "$mport" "$nport"
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

# phase_backup: 3. the backup block; 4. what happens after the dump.
phase_backup() {
    local st
    run_blocks backup-block.sh
    check "the backup block of asyncexec-ops(7): exit 0" test $? -eq 0
    check "$dump: 0600 root, gzip -t accepts it" eval \
        '[ "$(in_ct stat -c "%a %U" "$dump")" = "600 root" ] && in_ct gzip -t "$dump"'

    st=$(complete bco0 "$bid" "$bcbt" '{"result":{"echo":"B after the dump"}}')
    check "after the dump: B completed (200)" test "$st" = 200
    st=$(claim ccl0)
    cid_c=$(json_num id "$work/ccl0")
    ccbt=$(json_str callbackToken "$work/ccl0")
    check "after the dump: C claimed (200, its request)" has "$st" "$work/ccl0" '"request":{"n":"C"}'
    st=$(post esub0 "/v1/executions/$route" "$ak" -H "X-Correlation-Id: backup-E-$$" --data '{"n":"E"}')
    etok=$(json_str pollToken "$work/esub0")
    check "after the dump: E submitted (202), polls waiting_callback" eval '[ "$st" = 202 ] &&
        has "$(poll ep0 backup-E-$$ "$etok")" "$work/ep0" "\"status\":\"waiting_callback\""'
}

# phase_restore: 5. the restore block; 6. what the executions are now.
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
    st=$(complete cco0 "$cid_c" "$ccbt" '{"result":{"echo":"C"}}')
    check "C: the callback token of its claim after the dump is refused: 409 conflict" \
        eval '{ [ "$st" = 409 ] && grep -qF "\"code\":\"conflict\"" "$work/cco0"; } ||
        { say "     status $st: $(head -c 300 "$work/cco0")"; false; }'
    say "     $(head -c 300 "$work/cco0")"
}

# phase_resubmit: 6. E, which the restore lost, submitted again by its consumer (after
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
    work_leave "$who"
    phase_backup
    phase_restore
    # B's claim and token are in the dump: its callback token completes it; C is handed
    # out again and completed; a new life cycle (deploy_work.sh).
    work_check "$who"
    phase_resubmit
    work_services "$since"
    exit 0
}

main "$@"
