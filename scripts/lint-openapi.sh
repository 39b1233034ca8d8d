#!/usr/bin/env bash
# scripts/lint-openapi.sh — lint src/openapi.json with Redocly's OpenAPI linter, at the
# version pinned by tests/openapi/package.json and package-lock.json, under the rules of
# tests/openapi/redocly.yaml. Installs the linter (npm ci, into the git-ignored
# tests/openapi/node_modules) when it is missing or not the pinned version.
# Exit status: the linter's (non-zero on any error); prints "N passed, N failed" last.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=$ROOT/tests/openapi
DOC=${1:-$ROOT/src/openapi.json}

# The machine's Node.js and npm; Debian's packages when there are none.
if ! command -v npm >/dev/null; then
    apt-get install -y nodejs npm >/dev/null
fi
want=$(sed -n 's/.*"@redocly\/cli": *"\([^"]*\)".*/\1/p' "$DIR/package.json")
have=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' \
    "$DIR/node_modules/@redocly/cli/package.json" 2>/dev/null | head -n 1 || true)
if [[ $have != "$want" ]]; then
    printf 'lint-openapi: installing @redocly/cli %s (npm ci in %s)\n' "$want" "$DIR"
    (cd "$DIR" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
fi

rc=0
(cd "$DIR" && REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
    ./node_modules/.bin/redocly lint --config redocly.yaml --format=stylish "$DOC") || rc=$?
if ((rc == 0)); then
    printf 'lint-openapi: 1 passed, 0 failed\n'
else
    printf 'lint-openapi: 0 passed, 1 failed\n'
fi
exit "$rc"
