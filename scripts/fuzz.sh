#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] — build the libFuzzer harnesses of tests/fuzz with clang
# (ASan + UBSan) and run each for SECONDS (default 60) over a copy of its seed corpus.
#
# Harnesses: json, request, config, polltoken (see tests/fuzz/fuzz_*.c). New corpus
# entries and crash files go to a scratch directory, never into the repository:
#   $ASYNCEXEC_FUZZ_DIR (default .local/fuzz)/build        the clang build
#   $ASYNCEXEC_FUZZ_DIR/run/NAME/{corpus,artifacts,fuzz.log} one harness's run
# Installs clang and libclang-rt-14-dev (libFuzzer) with apt-get when missing.
#
# Prints one line per harness (executions, exec/s, cov:, ft:, corpus size, result) and
# a closing "N passed, N failed". Exit status 1 when any harness found a crash, a leak,
# undefined behaviour or a timeout (the line names the file that reproduces it:
# run the harness binary with that file as its argument), 2 on a usage error.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=lib/stack.sh
source "$ROOT/scripts/lib/stack.sh"

SECS=${1:-60}
if [[ ! $SECS =~ ^[1-9][0-9]*$ ]] || (($# > 1)); then
    echo "usage: scripts/fuzz.sh [SECONDS]" >&2
    exit 2
fi
DIR=${ASYNCEXEC_FUZZ_DIR:-$ROOT/.local/fuzz}
BUILD=$DIR/build
HARNESSES=(json request config polltoken)

# max_len per harness: above every limit the harness can reach (the request
# harness's max_request_bytes 1024 and max_result_bytes 2048, config's 1024-byte lines).
declare -A MAXLEN=([json]=4096 [request]=4096 [config]=2048 [polltoken]=128)

# Packages to build the harnesses (the root CMakeLists.txt finds all the libraries).
STACK_PACKAGES=(cmake make clang libclang-rt-14-dev pkg-config libfcgi-dev libmariadb-dev
                libjson-c-dev libssl-dev uuid-dev libcurl4-openssl-dev)
stack_init "$ROOT" "$DIR" fuzz
stack_install_packages

mkdir -p "$DIR"
stack_log "building the harnesses (clang, ASan + UBSan, libFuzzer) in $BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DASYNCEXEC_FUZZ=ON -DBUILD_TESTING=OFF >"$DIR/cmake.log" 2>&1 ||
    { cat "$DIR/cmake.log" >&2; stack_die "cmake configure failed"; }
cmake --build "$BUILD" -j2 --target "${HARNESSES[@]/#/fuzz_}" >"$DIR/build.log" 2>&1 ||
    { tail -n 40 "$DIR/build.log" >&2; stack_die "build failed"; }

# last_stat LOG KEY — the value of libFuzzer's final "stat::KEY: N" line.
last_stat() { sed -n "s/^stat::$2: *//p" "$1" | tail -n 1; }

# cov_line LOG — "cov: N ft: N corp: N" of the last status line libFuzzer printed.
cov_line() {
    local l
    l=$(grep -E '^#[0-9]+.* cov: ' "$1" | tail -n 1)
    [[ -n $l ]] || { echo "cov: - ft: - corpus: -"; return; }
    sed -E 's/.*(cov: [0-9]+) (ft: [0-9]+) corp: ([0-9]+).*/\1 \2 corpus: \3/' <<<"$l"
}

# run_one NAME — fuzz one harness for SECS seconds; 0 clean, 1 a finding.
run_one() {
    local name=$1 run=$DIR/run/$1 bin=$BUILD/tests/fuzz/fuzz_$1 rc=0 dict=() crash res
    rm -rf "$run"
    mkdir -p "$run/corpus" "$run/artifacts"
    cp "$ROOT/tests/fuzz/corpus/$name/"* "$run/corpus/"
    # fuzz_config reads db_password_file names relative to its working directory
    printf 'fuzz-password\n' >"$run/db-password"
    [[ -f $ROOT/tests/fuzz/$name.dict ]] && dict=(-dict="$ROOT/tests/fuzz/$name.dict")
    (cd "$run" && timeout -s KILL $((SECS + 120)) "$bin" -max_total_time="$SECS" \
        -max_len="${MAXLEN[$name]}" -timeout=10 -rss_limit_mb=1024 -print_final_stats=1 \
        -artifact_prefix="$run/artifacts/" "${dict[@]}" "$run/corpus" \
        </dev/null >"$run/fuzz.log" 2>&1) || rc=$?
    crash=$(find "$run/artifacts" -type f | head -n 1)
    if ((rc == 0)) && [[ -z $crash ]]; then
        res=ok
    else
        res="FAILED (exit $rc) ${crash:-no crash file, see $run/fuzz.log}"
    fi
    printf 'fuzz_%s: %s executions, %s exec/s, %s, %s s: %s\n' "$name" \
        "$(last_stat "$run/fuzz.log" number_of_executed_units)" \
        "$(last_stat "$run/fuzz.log" average_exec_per_sec)" \
        "$(cov_line "$run/fuzz.log" || true)" "$SECS" "$res"
    if [[ $res != ok ]]; then
        # the harness's own message, the sanitizer's, and the first frame in our code
        grep -E '^(fuzz_|==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$run/fuzz.log" |
            head -n 5 >&2 || true
        grep -E '^ +#[0-9]+ .*/(src|tests/fuzz)/[^ /]+\.c:[0-9]+' "$run/fuzz.log" | head -n 1 >&2 || true
        return 1
    fi
}

passed=0 failed=0
for h in "${HARNESSES[@]}"; do
    if run_one "$h"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
((failed == 0))
