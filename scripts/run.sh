#!/usr/bin/env bash
# Runs the system on this machine: installs what is missing, builds, and starts
# scheduler-standalone (embedded SQLite under ./data, HTTP on 127.0.0.1:8080) in the foreground.
# Ctrl-C stops it; running it again reuses the build and the data.
#   SCHED_CONFIG=path/to.yaml scripts/run.sh   to use another configuration
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh run
cmake --preset dev >/dev/null
cmake --build --preset dev --target scheduler-standalone
exec build/dev/apps/scheduler-standalone/scheduler-standalone --config "${SCHED_CONFIG:-config/standalone.yaml}"
