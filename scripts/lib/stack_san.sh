# shellcheck shell=bash
# scripts/lib/stack_san.sh - the sanitizer and valgrind checks of scripts/test.sh and
# scripts/valgrind-worker.sh, sourced after scripts/lib/stack.sh (whose stack_log they use).

# ---- sanitizers and valgrind ------------------------------------------------------------

# Sanitizer reports (ASan, LSan, UBSan) and valgrind errors that fail a run.
STACK_SAN_PATTERN='ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:'
STACK_VG_PATTERN='Invalid (read|write|free)|uninitialised|definitely lost|Mismatched free|overlap|unaddressable'

# stack_san_env DIR — export ASAN_OPTIONS and UBSAN_OPTIONS for everything started from
# now on: stop at the first error (UBSan is also built with -fno-sanitize-recover), exit
# status 1 rather than abort() (no core dump, the report is complete), leak check at
# normal exit; a malloc too big for ASan returns NULL as it would without it
# (allocator_may_return_null: the proc test's FastCGI record with a 0x7ffffffe params length
# makes libfcgi ask for ~16 EiB, and the worker must fail as in production, not with an
# ASan report). ASan and LeakSanitizer write each report to its own file DIR/asan.PID, so
# that processes whose stderr nobody keeps (the workers of a test's own master,
# asyncexec-admin run by a test) are checked too. UBSan ignores log_path when linked
# beside ASan by gcc: its reports go to stderr (the app log, the test programs' output).
# Forked workers leave through _exit() and a SIGKILLed process never reaches its exit:
# neither gets a leak check (valgrind checks the workers: --valgrind, valgrind-worker.sh).
stack_san_env() {
    mkdir -p "$1"
    export ASAN_OPTIONS="abort_on_error=0:halt_on_error=1:detect_leaks=1:exitcode=1:allocator_may_return_null=1:log_path=$1/asan"
    export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=0:print_stacktrace=1"
}

# stack_san_check FILE... — print the sanitizer reports found in FILEs (missing ones are
# skipped); true when there is none.
# The first three are shown in full (up to 5 reports of 30 lines each), then names only.
stack_san_check() {
    local f found=0
    for f in "$@"; do
        [[ -f $f ]] && grep -Eq "$STACK_SAN_PATTERN" "$f" || continue
        if ((++found > 3)); then
            stack_log "sanitizer report also in $f"
            continue
        fi
        printf '%s: ---- sanitizer report in %s ----\n' "$STACK_PREFIX" "$f" >&2
        grep -E -m 5 -A 30 "$STACK_SAN_PATTERN" "$f" >&2
        printf '%s: ---- end of %s ----\n' "$STACK_PREFIX" "$f" >&2
    done
    ((found == 0))
}

# stack_vg_wrapper DIR [VALGRIND_ARGS...] — run asyncexec-fcgi (the master and every worker
# it forks) under valgrind memcheck, one log per process in DIR/vg.PID, source paths
# relative to STACK_ROOT (so that our own frames show as "(src/...)").
stack_vg_wrapper() {
    local dir=$1 tool
    shift
    command -v valgrind >/dev/null || stack_die "valgrind is not installed"
    mkdir -p "$dir"
    STACK_APP_WRAPPER=(valgrind --tool=memcheck --track-origins=yes --leak-check=full
        --error-exitcode=99 --trace-children=yes --num-callers=30
        --fullpath-after="$STACK_ROOT/" --log-file="$dir/vg.%p" "$@")
    # The tool binary is memcheck-ARCH-linux, ARCH as Debian names it (amd64, arm64, ...).
    tool=memcheck-$(dpkg --print-architecture)-linux
    [[ -x /usr/libexec/valgrind/$tool || -x /usr/lib/valgrind/$tool ]] ||
        stack_die "valgrind's tool binary $tool not found"
    STACK_APP_COMM=${tool:0:15}     # the kernel keeps 15 bytes of a process name
}

# stack_vg_check FILE... — print every valgrind error or definite leak in FILEs whose
# stack has a frame in our code ("(src/" or "(tests/"; see stack_vg_wrapper); count the
# others as foreign. True when none of ours was found.
stack_vg_check() {
    local f ours=0 foreign=0 out n
    for f in "$@"; do
        [[ -f $f ]] || continue
        out=$(awk -v pat="$STACK_VG_PATTERN" '
            function flush() {
                if (blk != "" && head ~ pat) {
                    if (blk ~ /\((src|tests)\//) { printf "%s\n", blk; ours++ } else foreign++
                }
                blk = ""; head = ""
            }
            { line = $0; sub(/^==[0-9]+== ?/, "", line) }
            line == "" { flush(); next }
            { if (blk == "") head = line; blk = blk $0 "\n" }
            END { flush(); printf "#counts %d %d\n", ours, foreign }' "$f")
        n=${out##*#counts }
        foreign=$((foreign + ${n#* }))
        if ((${n% *} > 0)); then
            ours=$((ours + ${n% *}))
            printf '%s: ---- valgrind: %s error(s) in our code, %s ----\n' \
                "$STACK_PREFIX" "${n% *}" "$f" >&2
            printf '%s\n' "${out%#counts *}" | head -n 200 >&2
        fi
    done
    ((foreign == 0)) || stack_warn "valgrind: $foreign report(s) without a frame in our code (not counted)"
    ((ours == 0))
}

# stack_vg_summary FILE — "pid P (parent Q): E errors, definitely lost D, indirectly lost
# I, possibly lost L" of one log ("?" errors: the process has not exited, or was killed).
stack_vg_summary() {
    awk '/ERROR SUMMARY:/ { e = $4 } /definitely lost:/ { d = $4 " " $5 }
         /indirectly lost:/ { i = $4 " " $5 } /possibly lost:/ { p = $4 " " $5 }
         /Parent PID:/ { pp = $4 }
         END { f = FILENAME; sub(/.*vg\./, "", f)
               printf "pid %s (parent %s): %s errors, definitely lost %s, indirectly lost %s, possibly lost %s\n",
                   f, pp, (e == "" ? "?" : e), (d == "" ? "0 bytes" : d),
                   (i == "" ? "0 bytes" : i), (p == "" ? "0 bytes" : p) }' "$1"
}
