#!/usr/bin/env bash
# Runs the browser test (ui_test.mjs): checks for node, npm and Debian's chromium, installs
# playwright-core from package-lock.json into WORK_DIR (the build folder, not the source tree)
# when the lock changed, then runs the test. Missing tools fail the test when
# SCHED_REQUIRE_BROWSER=1 (scripts/test.sh, CI) and skip it (exit 77) otherwise.
#   run.sh WORK_DIR    with SCHED_STANDALONE_BIN and SCHED_DEMO_CLIENT_BIN set
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:?usage: run.sh WORK_DIR}
chromium=${SCHED_CHROMIUM:-/usr/bin/chromium}

# shellcheck source=npm_ci.sh
. "$here/npm_ci.sh"
missing=()
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
[ -x "$chromium" ] || missing+=(chromium)
sched_require_tools "the browser test" "${missing[@]}"
sched_npm_ci "$here" "$work"
export SCHED_BROWSER_WORKDIR="$work"
export SCHED_SCREENSHOT_DIR="${SCHED_SCREENSHOT_DIR:-$work/screenshots}"
export SCHED_CHROMIUM="$chromium"
exec node "$here/ui_test.mjs"
