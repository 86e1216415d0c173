#!/usr/bin/env bash
# Installs the Debian bookworm packages this project needs, and only those that are missing.
#   scripts/deps.sh run    build dependencies (enough for scripts/run.sh)
#   scripts/deps.sh test   build + test dependencies (MariaDB server, GoogleTest, clang, ...)
# Idempotent: with everything present it runs no apt command at all.
set -euo pipefail

mode=${1:-test}
run_pkgs=(
    ca-certificates cmake ninja-build g++ pkg-config curl tzdata
    libboost-dev libsoci-dev libsqlite3-dev libmariadb-dev
    libyaml-cpp-dev libspdlog-dev libfmt-dev nlohmann-json3-dev libhowardhinnant-date-dev
    libgtest-dev libgmock-dev libhiredis-dev libssl-dev prometheus-cpp-dev
    libcli11-dev  # schedctl's command line
)
test_pkgs=(
    mariadb-server mariadb-client clang clang-format libbenchmark-dev procps iproute2 libfaketime
    clang-tidy  # scripts/tidy.sh: CI's lint step (.ci/run)
    chromium nodejs npm redis-server gnuplot-nox
    prometheus  # promtool: checks the alert rules and a live /metrics (tests/metrics)
    ccache      # scripts/test.sh compiles through it: a second run rebuilds only what changed
    lld         # links the suite's ~50 executables several times faster than GNU ld (CMakeLists.txt)
    python3     # the conformance kit and the Python SDK's tests (tests/conformance)
    python3-cryptography  # the test OpenID provider's RS256/ES256 keys (tests/oidc/test_idp.py)
    openssl     # the openssl command: certificates for tests/tls and the Python SDK's TLS tests
    mypy        # python_sdk_typecheck: the Python SDK's type hints, mypy --strict (tests/conformance)
    galera-4 rsync  # scripts/galera.sh: the three-node Galera cluster of the Galera tests
    kubernetes-client  # kubectl kustomize: renders deploy/k8s for its schema test (tests/deploy/k8s-schema)
)
pkgs=("${run_pkgs[@]}")
[ "$mode" = test ] && pkgs+=("${test_pkgs[@]}")

missing=()
for p in "${pkgs[@]}"; do
    # Node.js and Python may come from outside Debian (an image's own node/npm, pyenv); a
    # working command counts.
    case "$p" in
        nodejs) command -v node >/dev/null 2>&1 && continue ;;
        npm) command -v npm >/dev/null 2>&1 && continue ;;
        # Any kubectl counts (a newer one from Kubernetes' own package, kubectl, owns the same
        # /usr/bin/kubectl, so Debian's would not install beside it). deploy/k8s needs
        # kustomize v4.2+ (kubectl 1.22+): Debian bookworm's 1.20 renders only older syntax.
        kubernetes-client) command -v kubectl >/dev/null 2>&1 && continue ;;
        python3) python3 -c 'import sys; sys.exit(sys.version_info < (3, 8))' >/dev/null 2>&1 && continue ;;
    esac
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "deps.sh: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# Keep package scripts from starting a system MariaDB: tests run their own private server.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
    "${sudo[@]}" chmod +x "$policy"
    created_policy=1
fi
cleanup() { [ "$created_policy" = 1 ] && "${sudo[@]}" rm -f "$policy"; return 0; }
trap cleanup EXIT
"${sudo[@]}" apt-get update -q >/dev/null
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
echo "deps.sh: done" >&2
