#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what is missing, builds, starts a private
# MariaDB on a free loopback port, runs ctest against it and SQLite, and always stops that
# MariaDB by its PID and removes its data, also on failure or Ctrl-C.
#   scripts/test.sh                 all tests
#   scripts/test.sh -L mysql        only the MariaDB ones (any ctest arguments pass through)
#   SCHED_PRESET=asan scripts/test.sh   under ASan+UBSan
# Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."

preset=${SCHED_PRESET:-ci}
scripts/deps.sh test
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"

tmp=$(mktemp -d /tmp/sched-test.XXXXXX)
cleanup() {
    scripts/mariadb.sh stop "$tmp" || true
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

scripts/mariadb.sh start "$tmp"
SCHED_TEST_MYSQL_URL=$(cat "$tmp/url")
export SCHED_TEST_MYSQL_URL
# MariaDB cases fail instead of skipping if the server is somehow not reachable.
export SCHED_REQUIRE_MYSQL=1
# The chaos suite's partition case needs network namespaces (root): fail rather than skip.
export SCHED_REQUIRE_NETNS=1
ctest --preset "$preset" "$@"
