#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what is missing, builds, starts a private
# MariaDB on a free loopback port, runs ctest against it and SQLite, and always stops that
# MariaDB by its PID and removes its data, also on failure or Ctrl-C.
# Then, for the whole suite, a second stage: the in-process tests (labels unit and mysql, not
# process/chaos/browser/install) once more under ASan + UBSan (preset asan), and a third: the
# in-process tests of the libraries that run on thread pools and coroutines (label tsan, SQLite
# and MariaDB) under ThreadSanitizer (preset tsan). Any finding fails the run.
#   scripts/test.sh                 all tests, then the ASan and TSan stages (what CI runs)
#   scripts/test.sh -L mysql        only the MariaDB ones (any ctest arguments pass through; no
#                                   sanitizer stage unless SCHED_ASAN=1 / SCHED_TSAN=1)
#   SCHED_ASAN=0 SCHED_TSAN=0 scripts/test.sh   all tests, without the sanitizer stages
#   SCHED_PRESET=asan scripts/test.sh   the whole suite under ASan+UBSan
# Exits non-zero when any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."

preset=${SCHED_PRESET:-ci}
if [ $# -eq 0 ] && [ "$preset" != asan ] && [ "$preset" != tsan ]; then
    asan=${SCHED_ASAN:-1}
    tsan=${SCHED_TSAN:-1}
else
    asan=${SCHED_ASAN:-0}
    tsan=${SCHED_TSAN:-0}
fi
scripts/deps.sh test
# Two full builds (the suite and its ASan stage) are most of a run on 2 cores; through ccache a
# later run, also from a fresh clone at another path (base dir = this checkout), recompiles
# only what changed. A launcher set by the caller wins; an existing build dir keeps its own.
if command -v ccache >/dev/null; then
    export CMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}
    export CMAKE_C_COMPILER_LAUNCHER=${CMAKE_C_COMPILER_LAUNCHER:-ccache}
    export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
fi
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
# The browser test and the OpenAPI lint need chromium, node and npm (scripts/deps.sh installs
# them): fail rather than skip.
export SCHED_REQUIRE_BROWSER=1
ctest --preset "$preset" "$@"

if [ "$asan" = 1 ]; then
    # The ASan stage builds only the in-process test binaries (target in_process_tests, see
    # cmake/SchedHelpers.cmake): the apps and process tests would double its build time for
    # tests that mostly exercise the same code through real processes. The asan preset compiles
    # with -g1 (function names and line tables: all an ASan/UBSan stack trace prints): against -g
    # it compiles executor_api_test.cpp in 27 s instead of 37 s and slave.cpp in 65 s instead of
    # 75 s, with objects a fifth smaller to link (measured 2026-11-26 with other builds running).
    start=$(date +%s)
    cmake --preset asan >/dev/null
    cmake --build --preset asan --target in_process_tests
    echo "asan stage: in_process_tests built in $(($(date +%s) - start)) s"
    # halt_on_error: a UBSan finding aborts the test (it only prints by default); leaks fail
    # too.
    export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
    ctest --preset asan -L 'unit|mysql' -LE 'process|chaos|browser|install'
fi

[ "$tsan" = 1 ] || exit 0
# The TSan stage builds only the target tsan_tests: the in-process tests of libs/common, db,
# lock, http, client and trigger (SCHED_TSAN_TESTS in CMakeLists.txt; libs/dispatch runs in
# trigger's), the code that runs on thread pools and coroutines, on SQLite and MariaDB. The
# web module's tests would about double its build time. The tsan preset compiles with -O1 (TSan
# slows unoptimised code down most) and -g1 (all its reports print). Cold, it built in 2,305 s
# and ran in 95 s (both halves, MariaDB included), measured 2026-11-28 on 2 cores with two
# other builds running (load average 5-7); with ccache warm only what changed recompiles.
start=$(date +%s)
cmake --preset tsan >/dev/null
cmake --build --preset tsan --target tsan_tests
echo "tsan stage: tsan_tests built in $(($(date +%s) - start)) s"
# halt_on_error: the first race fails the test; second_deadlock_stack: a lock-order report shows
# both acquisitions. No suppressions: nothing in these tests needs one (a race in our code is
# fixed, never suppressed).
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
ctest --preset tsan -L tsan
