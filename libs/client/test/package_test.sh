#!/usr/bin/env bash
# client_package_test (ctest label install): the SDK as a service's build sees it.
#   package_test.sh SOURCE_DIR WORK_DIR INITIAL_CACHE SDK_BUILD_DIR
# Configures this repository with -DSCHED_BUILD=client (INITIAL_CACHE: the outer build's compiler,
# flags and ccache, so that the build mostly hits the cache) in SDK_BUILD_DIR, builds and installs the SDK into
# WORK_DIR/prefix, and checks: no scheduler-only dependency was looked for; only the public
# headers are installed, each compiling on its own; a consumer builds with find_package and with
# pkg-config; the SDK links into a shared library that a host dlopen()s and runs; the same
# again (without the plugin) with SCHED_SDK_SHARED=ON in SDK_BUILD_DIR-shared; the docs'
# example fails cleanly on a bad config and finds its config next to the executable.
set -euo pipefail
src=$1 work=$2 cache=$3 sdk=$4
consumer_src=$src/libs/client/test/package_consumer
rm -rf "$work" "$sdk" "$sdk-shared"
mkdir -p "$work"
unset SCHED_TOKEN BILLING_CONFIG
pid=""
cleanup() { if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; fi; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $* ($(($(date +%s) - t0)) s)"; }
t0=$(date +%s)

# The docs show billing.cpp from its first #include on: the two stay identical.
awk '/^## A complete service/{f=1} f&&/^```cpp$/{p=1;next} p&&/^```$/{exit} p' "$src/docs/client-sdk.md" >"$work/docs-example.cpp"
sed -n '/^#include <csignal>/,$p' "$consumer_src/billing.cpp" | diff -u - "$work/docs-example.cpp" ||
    fail "docs/client-sdk.md \"A complete service\" differs from package_consumer/billing.cpp"

step "configure -DSCHED_BUILD=client"
cmake -C "$cache" -S "$src" -B "$sdk" -G Ninja -DSCHED_BUILD=client >"$work/configure.log" 2>&1 ||
    { cat "$work/configure.log"; fail "client-only configure"; }
[ -f "$sdk/CMakeCache.txt" ] || fail "no CMakeCache.txt in $sdk"
for dep in SOCI date GTest hiredis HIREDIS; do
    if grep -q "^${dep}_\(DIR\|INCLUDE_DIR\|FOUND\)" "$sdk/CMakeCache.txt"; then
        fail "a client-only configure looked for $dep"
    fi
done
step "build the SDK"
nice -n 10 cmake --build "$sdk" -j2 >"$work/build.log" 2>&1 || { tail -50 "$work/build.log"; fail "SDK build"; }
step "install"
cmake --install "$sdk" --component sched_client --prefix "$work/prefix" >/dev/null
prefix=$work/prefix

# Exactly the public headers (sched/client and what it includes); nothing internal.
(cd "$prefix/include" && find . -type f | sort) >"$work/headers.txt"
cat >"$work/headers.expected" <<'LIST'
./sched/client/executor.hpp
./sched/client/job_context.hpp
./sched/client/lock.hpp
./sched/common/config.hpp
./sched/common/duration.hpp
./sched/common/job_vocabulary.hpp
./sched/common/logging.hpp
./sched/common/metrics.hpp
./sched/common/name_table.hpp
./sched/common/status.hpp
./sched/http/server_options.hpp
./sched/http/tls_options.hpp
./sched/protocol/span_exporter_options.hpp
LIST
diff -u "$work/headers.expected" "$work/headers.txt" || fail "installed headers differ from the public set"
for lib in sched_client sched_http sched_protocol sched_common; do
    [ -f "$prefix/lib/lib$lib.a" ] || fail "lib/lib$lib.a not installed"
done
[ -f "$prefix/lib/cmake/sched_client/sched_clientConfig.cmake" ] || fail "no CMake package config"
[ -f "$prefix/lib/pkgconfig/sched_client.pc" ] || fail "no pkg-config file"

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
pc_flags=$(pkg-config --cflags --libs sched_client) || fail "pkg-config --cflags --libs sched_client"
cxx=(g++)
if command -v ccache >/dev/null; then cxx=(ccache g++); fi

step "each installed header compiles on its own"
for header in $(sed 's|^\./||' "$work/headers.txt"); do
    echo "#include <$header>" | "${cxx[@]}" -x c++ -fsyntax-only -Wall -Wextra -Wpedantic -Werror \
        $(pkg-config --cflags sched_client) - || fail "$header does not compile on its own"
done

step "consumer with find_package(sched_client)"
cmake -S "$consumer_src" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER_LAUNCHER="$(command -v ccache || true)" >/dev/null ||
    fail "consumer configure"
nice -n 10 cmake --build "$work/consumer" -j2 >"$work/consumer-build.log" 2>&1 ||
    { cat "$work/consumer-build.log"; fail "consumer build"; }
out=$("$work/consumer/consumer") || fail "consumer exited $?"
[ "$out" = "consumer ok (1 line)" ] || fail "consumer printed '$out'"
out=$("$work/consumer/plugin_host" "$work/consumer/libbilling_plugin.so") || fail "plugin host exited $?"
[ "$out" = "plugin returned 42" ] || fail "plugin host printed '$out'"

step "consumer with pkg-config"
# shellcheck disable=SC2086 # pc_flags is a list of flags
"${cxx[@]}" -std=c++20 -O1 "$consumer_src/main.cpp" -o "$work/consumer_pc" $pc_flags || fail "pkg-config consumer build"
out=$("$work/consumer_pc") || fail "pkg-config consumer exited $?"
[ "$out" = "consumer ok (1 line)" ] || fail "pkg-config consumer printed '$out'"
# shellcheck disable=SC2086
"${cxx[@]}" -std=c++20 -O1 -shared -fPIC "$consumer_src/plugin.cpp" -o "$work/libplugin_pc.so" $pc_flags ||
    fail "the SDK does not link into a shared library"
out=$("$work/consumer/plugin_host" "$work/libplugin_pc.so") || fail "plugin host (pkg-config plugin) exited $?"
[ "$out" = "plugin returned 42" ] || fail "plugin host printed '$out'"

step "shared SDK (-DSCHED_SDK_SHARED=ON, in $sdk-shared)"
cmake -C "$cache" -S "$src" -B "$sdk-shared" -G Ninja -DSCHED_BUILD=client -DSCHED_SDK_SHARED=ON \
    >"$work/configure-shared.log" 2>&1 || { cat "$work/configure-shared.log"; fail "shared configure"; }
nice -n 10 cmake --build "$sdk-shared" -j2 >"$work/build-shared.log" 2>&1 ||
    { tail -50 "$work/build-shared.log"; fail "shared SDK build"; }
cmake --install "$sdk-shared" --component sched_client --prefix "$work/prefix-shared" >/dev/null
for lib in sched_client sched_http sched_protocol sched_common; do
    [ -f "$work/prefix-shared/lib/lib$lib.so.0.1" ] || fail "lib/lib$lib.so.0.1 not installed"
    [ ! -e "$work/prefix-shared/lib/lib$lib.a" ] || fail "lib/lib$lib.a installed by a shared build"
done
# shellcheck disable=SC2046 # a list of flags
"${cxx[@]}" -std=c++20 -O1 "$consumer_src/main.cpp" -o "$work/consumer_pc_shared" \
    $(PKG_CONFIG_PATH=$work/prefix-shared/lib/pkgconfig pkg-config --cflags --libs sched_client) \
    -Wl,-rpath,"$work/prefix-shared/lib" || fail "pkg-config consumer build (shared SDK)"
readelf -d "$work/consumer_pc_shared" | grep -q 'NEEDED.*libsched_client.so.0.1' ||
    fail "the consumer does not load libsched_client.so.0.1"
out=$("$work/consumer_pc_shared") || fail "pkg-config consumer (shared SDK) exited $?"
[ "$out" = "consumer ok (1 line)" ] || fail "pkg-config consumer (shared SDK) printed '$out'"
cmake -S "$consumer_src" -B "$work/consumer-shared" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix-shared" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER_LAUNCHER="$(command -v ccache || true)" >/dev/null ||
    fail "consumer configure (shared SDK)"
nice -n 10 cmake --build "$work/consumer-shared" -j2 --target consumer >"$work/consumer-shared-build.log" 2>&1 ||
    { cat "$work/consumer-shared-build.log"; fail "consumer build (shared SDK)"; }
out=$("$work/consumer-shared/consumer") || fail "consumer (shared SDK) exited $?"
[ "$out" = "consumer ok (1 line)" ] || fail "consumer (shared SDK) printed '$out'"

step "the docs' example"
billing=$work/consumer/billing
mkdir -p "$work/elsewhere"
cd "$work/elsewhere"
# No argument, no BILLING_CONFIG, no billing.yaml beside the executable: exit 2, one message
# naming the path it tried (next to the executable, not the working directory).
set +e
"$billing" >"$work/billing-1.out" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] || fail "billing without a config exited $rc, not 2: $(cat "$work/billing-1.out")"
grep -q "cannot read config file $work/consumer/billing.yaml" "$work/billing-1.out" ||
    fail "billing did not name its config path: $(cat "$work/billing-1.out")"
if grep -q terminate "$work/billing-1.out"; then fail "billing terminated: $(cat "$work/billing-1.out")"; fi
# A config without the token (BILLING_CONFIG): exit 2 naming the key.
cat >"$work/bad.yaml" <<'YAML'
executor:
  app: billing
  web-endpoints: ["http://127.0.0.1:1"]
YAML
set +e
BILLING_CONFIG=$work/bad.yaml "$billing" >"$work/billing-2.out" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] || fail "billing with a bad config exited $rc, not 2: $(cat "$work/billing-2.out")"
grep -q "^billing: .*executor.token" "$work/billing-2.out" || fail "no key named: $(cat "$work/billing-2.out")"
# A valid billing.yaml beside the executable: it serves, and stops cleanly on SIGTERM.
cat >"$work/consumer/billing.yaml" <<YAML
executor:
  app: billing
  web-endpoints: ["http://127.0.0.1:1"]
  token: "t"
  spool-dir: "$work/spool"
  shutdown-grace: 1s
  http: {listen: "127.0.0.1:0"}
YAML
"$billing" >"$work/billing-3.out" 2>&1 &
pid=$!
for _ in $(seq 100); do
    grep -q "serving 1 handler(s)" "$work/billing-3.out" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
grep -q "serving 1 handler(s)" "$work/billing-3.out" || fail "billing did not start: $(cat "$work/billing-3.out")"
kill -TERM "$pid"
set +e
wait "$pid"
rc=$?
set -e
pid=""
[ $rc -eq 0 ] || fail "billing exited $rc after SIGTERM: $(cat "$work/billing-3.out")"
grep -q "executor billing: stopped" "$work/billing-3.out" || fail "billing did not stop: $(cat "$work/billing-3.out")"

step "ok"
