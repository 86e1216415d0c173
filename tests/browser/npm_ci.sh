# Sourced by run.sh and openapi_lint.sh.

# Exits when a tool the test needs is missing: fails it (exit 1) when SCHED_REQUIRE_BROWSER=1
# (scripts/test.sh, CI), skips it (exit 77, ctest's SKIP_RETURN_CODE) otherwise.
#   sched_require_tools WHAT PACKAGE...     (PACKAGE: the Debian package that is missing)
sched_require_tools() {
    local what=$1
    shift
    [ $# -eq 0 ] && return 0
    local message="$what needs: $* (apt-get install $*)"
    if [ "${SCHED_REQUIRE_BROWSER:-0}" = 1 ]; then
        echo "FAILED: $message" >&2
        exit 1
    fi
    echo "SKIPPED: $message (set SCHED_REQUIRE_BROWSER=1 to fail instead)"
    exit 77
}

# `npm ci` of package-lock.json (playwright-core and @redocly/cli) into WORK_DIR (the build
# folder, not the source tree) when the lock changed.
#   sched_npm_ci SOURCE_DIR WORK_DIR
sched_npm_ci() {
    local here=$1 work=$2
    mkdir -p "$work"
    if ! cmp -s "$here/package-lock.json" "$work/package-lock.json" || [ ! -d "$work/node_modules/playwright-core" ] ||
        [ ! -d "$work/node_modules/@redocly/cli" ]; then
        cp "$here/package.json" "$here/package-lock.json" "$work/"
        (cd "$work" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
    fi
}
