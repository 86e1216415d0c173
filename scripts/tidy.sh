#!/usr/bin/env bash
# clang-tidy (the curated .clang-tidy, every finding an error) on the code the latest day of
# commits changed: CI's lint step (.ci/run), also runnable by hand. docs/development.md "CI".
#
# Which files, deterministically from the clone (no wall clock, no remote):
#   1. the day: every commit reachable from HEAD whose committer date is at most 24 h before
#      HEAD's (git log --since=@<HEAD's time - 86400>); in a shallow clone, only what is there;
#   2. the components those commits touched: libs/<name> or apps/<name>;
#   3. the .cpp files under libs/<name>/src and apps/<name> (not tests, not generated files)
#      that still exist: first those the day changed itself, newest commit first (the code
#      least likely to have been checked yet), then the other .cpp files of those components,
#      sorted by path (a changed header is checked through them); the list is cut at
#      SCHED_TIDY_MAX_FILES (default 30: about 11 s per file on one core, so about 3 minutes
#      on CI's 2 cores).
# Headers are checked through the .cpp files that include them (HeaderFilterRegex).
#
#   scripts/tidy.sh               the rule above
#   scripts/tidy.sh FILE...       those files (paths from the repository root), no cap
#   SCHED_TIDY_LIST=1 scripts/tidy.sh   print the selection and exit
# Uses build/ci/compile_commands.json (configures the ci preset when it is missing; no build
# is needed: no checked file includes a generated header). Exits 1 on any finding.
set -euo pipefail
cd "$(dirname "$0")/.."

max_files=${SCHED_TIDY_MAX_FILES:-30}
jobs=${SCHED_TIDY_JOBS:-2}

select_files() {
    local head_ts since changed
    head_ts=$(git log -1 --format=%ct HEAD)
    since=$((head_ts - 86400))
    # Newest commit first, each path at its first (newest) appearance.
    changed=$(git log --since="@$since" --format= --name-only HEAD | awk 'NF && !seen[$0]++')
    local components direct=() rest=() f c dir
    components=$(grep -oE '^(libs|apps)/[^/]+/' <<<"$changed" | sort -u || true)
    while read -r f; do
        [[ "$f" =~ ^libs/[^/]+/src/.*\.cpp$ || ("$f" =~ ^apps/[^/]+/.*\.cpp$ && ! "$f" =~ /test/) ]] || continue
        [ -f "$f" ] && direct+=("$f")
    done <<<"$changed"
    for c in $components; do
        dir="${c}src"
        [[ "$c" == apps/* ]] && dir="$c"
        [ -d "$dir" ] || continue
        while read -r f; do
            [[ " ${direct[*]} " == *" $f "* ]] || rest+=("$f")
        done < <(find "$dir" -name '*.cpp' -not -path '*/test/*' | sort)
    done
    printf '%s\n' "${direct[@]}" "${rest[@]}" | sed '/^$/d' | head -n "$max_files"
}

if [ $# -gt 0 ]; then
    files=("$@")
else
    mapfile -t files < <(select_files)
fi
if [ "${SCHED_TIDY_LIST:-0}" = 1 ]; then
    printf '%s\n' "${files[@]}"
    exit 0
fi
if [ ${#files[@]} -eq 0 ]; then
    echo "tidy: no library or app .cpp file changed in HEAD's day of commits; nothing to check"
    exit 0
fi

scripts/deps.sh test  # installs clang-tidy when it is missing
tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
if [ -z "$tidy" ]; then
    echo "tidy: clang-tidy not found after scripts/deps.sh" >&2
    exit 1
fi
[ -f build/ci/compile_commands.json ] || cmake --preset ci >/dev/null

out=$(mktemp -d /tmp/sched-tidy.XXXXXX)
trap 'rm -rf "$out"' EXIT
start=$(date +%s)
echo "tidy: ${#files[@]} files, $jobs at a time ($tidy)"
# One output file per checked file, printed whole afterwards, so parallel runs do not interleave.
printf '%s\n' "${files[@]}" | xargs -P "$jobs" -I{} sh -c '
    f="$1"; log="$2/$(echo "$f" | tr / _).log"
    if "$3" -p build/ci --quiet --warnings-as-errors="*" "$f" >"$log" 2>&1; then rm -f "$log"; fi
' _ {} "$out" "$tidy" || true
failed=0
for log in "$out"/*.log; do
    [ -e "$log" ] || continue
    cat "$log"
    failed=$((failed + 1))
done
echo "tidy: ${#files[@]} files in $(($(date +%s) - start)) s, $failed with findings"
[ "$failed" -eq 0 ]
