# Sourced by run.sh and openapi_lint.sh: `npm ci` of package-lock.json (playwright-core and
# @redocly/cli) into WORK_DIR (the build folder, not the source tree) when the lock changed.
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
