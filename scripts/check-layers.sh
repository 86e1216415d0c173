#!/usr/bin/env bash
# The libraries' include arrows (docs/architecture/overview.md "Parts and dependencies"): each library
# may include only the libraries listed for it here, so that dependencies point one way. Prints
# every include that breaks the order and exits 1; exits 0 when there is none.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A allowed=(
    [common]=""
    [db]="common"
    [cron]="common"
    [model]="common"
    [http]="common"
    [protocol]="common http"
    [api]="common"
    [lock]="common db"
    [store]="common db model"
    [dispatch]="common db http model protocol store"
    [trigger]="common cron db dispatch http lock model protocol store"
    [web]="api common cron db dispatch http lock model protocol store"
    [client]="common http protocol"
)

status=0
for dir in libs/*/; do
    lib=$(basename "$dir")
    if [[ ! -v allowed[$lib] ]]; then
        echo "libs/$lib: not in scripts/check-layers.sh (add it with the libraries it may include)"
        status=1
        continue
    fi
    while IFS=: read -r file line text; do
        used=$(sed -E 's|.*#include "sched/([a-z_]+)/.*|\1|' <<<"$text")
        [ "$used" = "$lib" ] && continue
        if [[ " ${allowed[$lib]} " != *" $used "* ]]; then
            echo "$file:$line: $lib includes $used ($text); $lib may include: ${allowed[$lib]:-nothing}"
            status=1
        fi
    done < <(grep -rnE '^#include "sched/[a-z_]+/' "$dir"src "$dir"include 2>/dev/null || true)
done
[ $status = 0 ] && echo "layers ok: every library includes only the ones below it"
exit $status
