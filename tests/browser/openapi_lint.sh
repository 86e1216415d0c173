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

# shellcheck source=npm_ci.sh
. "$here/npm_ci.sh"
missing=()
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
sched_require_tools "the OpenAPI lint" "${missing[@]}"
sched_npm_ci "$here" "$work"
exec node "$work/node_modules/@redocly/cli/bin/cli.js" lint --config "$here/redocly.yaml" "$spec"
