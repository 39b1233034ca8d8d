# shellcheck shell=bash
# scripts/lib/deploy_work.sh - sourced by the upgrade tests (scripts/test-upgrade.sh,
# scripts/test-release-upgrade.sh; uses the helpers of scripts/lib/deploy_ct.sh: in_ct,
# check, has, say, http, json_str, json_num; and $work, $route, $ak, $bk, $page): the
# commands of asyncexec-ops(7), UPGRADES, checked against the page before they run, and
# the executions an upgrade must carry: A completed, B claimed (work in flight), C
# waiting, left before it (work_leave) and checked after it (work_check), with a new
# life cycle D.

# upgrades_text: the section UPGRADES of $page as it reads (roff escapes and font changes
# undone), one line per source line.
upgrades_text() {
    awk '/^\.SH UPGRADES$/ { on = 1; next } on && /^\.SH / { exit } on { print }' "$page" |
        sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' -e 's/\\&//g' -e 's/\\e/\\/g' \
            -e "s/\\\\(aq/'/g" -e 's/\\(em/-/g'
}

# documented CMD: CMD appears, as a fixed string, in the section UPGRADES.
documented() {
    [ -s "$work/upgrades.txt" ] || upgrades_text >"$work/upgrades.txt"
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

# work_leave WHO: the executions A (completed), B (claimed), C (waiting), submitted through
# nginx under WHO (the version or release the checks name); their tokens kept.
work_leave() {
    local who=$1 st1 st2 st3
    ares='{"echo":"A","name":"Müller Zürich 日本語"}'
    st1=$(post asub "/v1/executions/$route" "$ak" -H "X-Correlation-Id: upgrade-A-$$" --data '{"n":"A"}')
    atok=$(json_str pollToken "$work/asub")
    st2=$(claim acl)
    aid=$(json_num id "$work/acl")
    st3=$(complete aco "$aid" "$(json_str callbackToken "$work/acl")" "{\"result\":$ares}")
    check "$who: A submitted, claimed, completed: 202, 200, 200" \
        eval '[ "$st1 $st3" = "202 200" ] && has "$st2" "$work/acl" "\"request\":{\"n\":\"A\"}"'
    check "$who: A polls completed with its result" \
        has "$(poll ap upgrade-A-$$ "$atok")" "$work/ap" '"status":"completed"' "\"result\":$ares"

    st1=$(post bsub "/v1/executions/$route" "$ak" -H "X-Correlation-Id: upgrade-B-$$" --data '{"n":"B"}')
    btok=$(json_str pollToken "$work/bsub")
    st2=$(claim bcl)
    bid=$(json_num id "$work/bcl")
    bcbt=$(json_str callbackToken "$work/bcl")
    check "$who: B submitted and claimed (its callback token kept): 202, 200" \
        eval '[ "$st1" = 202 ] && [ -n "$bcbt" ] && has "$st2" "$work/bcl" "\"request\":{\"n\":\"B\"}"'

    st1=$(post csub "/v1/executions/$route" "$ak" -H "X-Correlation-Id: upgrade-C-$$" --data '{"n":"C"}')
    ctok=$(json_str pollToken "$work/csub")
    check "$who: C submitted (202), polls waiting_callback" eval '[ "$st1" = 202 ] &&
        has "$(poll cp0 upgrade-C-$$ "$ctok")" "$work/cp0" "\"status\":\"waiting_callback\""'
}

# work_check WHO: what work_leave left works now: A polls its result with its token; C
# is claimed and completed with WHO's keys; B's callback token completes B; a new life
# cycle D (submit, claim, heartbeat, complete, poll).
work_check() {
    local who=$1 st st2 st3 cid cbt tok
    check "A: its $who poll token polls completed, the same result bytes" \
        has "$(poll ap2 upgrade-A-$$ "$atok")" "$work/ap2" '"status":"completed"' "\"result\":$ares"

    check "C: its $who poll token polls waiting_callback" \
        has "$(poll cp1 upgrade-C-$$ "$ctok")" "$work/cp1" '"status":"waiting_callback"'
    st=$(claim ccl)
    cbt=$(json_str callbackToken "$work/ccl")
    check "C: the $who backend key claims it (200, its request)" \
        has "$st" "$work/ccl" '"request":{"n":"C"}'
    st=$(complete cco "$(json_num id "$work/ccl")" "$cbt" '{"result":{"echo":"C"}}')
    check "C: completed (200), polls completed with its result" eval '[ "$st" = 200 ] &&
        has "$(poll cp2 upgrade-C-$$ "$ctok")" "$work/cp2" "\"status\":\"completed\"" "\"result\":{\"echo\":\"C\"}"'

    st=$(complete bco "$bid" "$bcbt" '{"result":{"echo":"B"}}')
    check "B: its $who callback token completes it: 200" \
        eval '[ "$st" = 200 ] || { say "     status $st: $(head -c 300 "$work/bco")"; false; }'
    check "B: its $who poll token polls completed with its result" \
        has "$(poll bp upgrade-B-$$ "$btok")" "$work/bp" '"status":"completed"' '"result":{"echo":"B"}'

    cid=upgrade-D-$$
    st=$(post dsub "/v1/executions/$route" "$ak" -H "X-Correlation-Id: $cid" --data '{"n":"D"}')
    tok=$(json_str pollToken "$work/dsub")
    check "D: the $who consumer key submits: 202" test "$st" = 202
    st=$(claim dcl)
    st2=$(post dhb "/v1/callbacks/$(json_num id "$work/dcl")/heartbeat" "$bk" \
        -H "X-Callback-Token: $(json_str callbackToken "$work/dcl")" --data '{"leaseSeconds":60}')
    st3=$(complete dco "$(json_num id "$work/dcl")" "$(json_str callbackToken "$work/dcl")" \
        '{"result":{"echo":"D"}}')
    check "D: claim (its request), heartbeat, complete: 200, 200, 200" \
        eval 'has "$st" "$work/dcl" "\"request\":{\"n\":\"D\"}" && [ "$st2 $st3" = "200 200" ]'
    check "D: polls completed with its result" \
        has "$(poll dp "$cid" "$tok")" "$work/dp" '"status":"completed"' '"result":{"echo":"D"}'
}

# expired SINCE: the expiry's journal since SINCE ends with a summary line result=complete
# (the line in $work/expire.last).
expired() {
    in_ct journalctl -u asyncexec-expire --since "$1" --no-pager -o cat 2>/dev/null |
        grep 'asyncexec-expire: result=' | tail -n 1 >"$work/expire.last"
    grep -q 'asyncexec-expire: result=complete' "$work/expire.last"
}

# work_services SINCE: asyncexec-admin check; asyncexec-notify enabled and active with its
# /readyz; an expiry run; journalctl -p err of the asyncexec units since SINCE empty.
work_services() {
    local since=$1 st
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
        eval '[ $st -eq 0 ] && wait_for 10 expired "$since"'
    sed 's/^/    /' "$work/expire.last"

    in_ct journalctl -p err --since "$since" --no-pager -o cat -u 'asyncexec*' >"$work/err.log" 2>&1
    grep -v '^-- No entries --$' "$work/err.log" >"$work/err.other"
    say "journalctl -p err of the asyncexec units since $since: $(grep -c . "$work/err.other") line(s)"
    sed 's/^/    /' "$work/err.other"
    check "journalctl -p err of the asyncexec units since $since: empty" test ! -s "$work/err.other"
}
