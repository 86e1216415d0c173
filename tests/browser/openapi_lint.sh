#!/usr/bin/env bash
# Lints the OpenAPI document with redocly (`@redocly/cli` from package-lock.json, installed into
# WORK_DIR like the browser test's playwright-core) under redocly.yaml: its recommended rules,
# with a missing or repeated operationId an error. Missing node or npm fails the test when
# SCHED_REQUIRE_BROWSER=1 (scripts/test.sh, CI) and skips it (exit 77) otherwise.
#   openapi_lint.sh WORK_DIR OPENAPI_JSON
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:?usage: openapi_lint.sh WORK_DIR OPENAPI_JSON}
spec=${2:?usage: openapi_lint.sh WORK_DIR OPENAPI_JSON}

missing=()
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
    message="the OpenAPI lint needs: ${missing[*]} (apt-get install ${missing[*]})"
    if [ "${SCHED_REQUIRE_BROWSER:-0}" = 1 ]; then
        echo "FAILED: $message" >&2
        exit 1
    fi
    echo "SKIPPED: $message (set SCHED_REQUIRE_BROWSER=1 to fail instead)"
    exit 77
fi
# shellcheck source=npm_ci.sh
. "$here/npm_ci.sh"
sched_npm_ci "$here" "$work"
exec node "$work/node_modules/@redocly/cli/bin/cli.js" lint --config "$here/redocly.yaml" "$spec"
