#!/usr/bin/env bash
# Runs the system on this machine: installs what is missing, builds, then starts
#   - scheduler-standalone (embedded SQLite under ./data, HTTP on 127.0.0.1:8080) with the demo
#     job "hello" (every 10 s), in the foreground, and
#   - demo-client (a business service with handlers echo, sleep, fail, count) in the background.
# Ctrl-C stops both. Running it again reuses the build, the data and the token (data/token).
#   SCHED_CONFIG=path/to.yaml scripts/run.sh   to use another scheduler configuration
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/deps.sh run
cmake --preset dev >/dev/null
cmake --build --preset dev --target scheduler-standalone demo-client

# The data directory holds the token and the database: private to this user (0700, files 0600).
(umask 077 && mkdir -p data)
if [ ! -s data/token ]; then
    (umask 077 && od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >data/token)
fi
SCHED_TOKEN=$(cat data/token)
export SCHED_TOKEN

build/dev/apps/demo-client/demo-client --config config/demo-client.yaml >data/demo-client.log 2>&1 &
client_pid=$!
scheduler_pid=
# Background jobs of a script ignore Ctrl-C, so the trap stops both by PID.
cleanup() {
    [ -n "$scheduler_pid" ] && kill -TERM "$scheduler_pid" 2>/dev/null
    kill -TERM "$client_pid" 2>/dev/null
    wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat <<MSG
scheduler: http://127.0.0.1:8080  (token in data/token; e.g.
  curl http://127.0.0.1:8080/status
  sqlite3 data/scheduler.db 'select id, scheduled_time, status, result_message from job_fire order by id desc limit 5')
demo-client log: data/demo-client.log
MSG
build/dev/apps/scheduler-standalone/scheduler-standalone --config "${SCHED_CONFIG:-config/standalone.yaml}" --demo &
scheduler_pid=$!
wait "$scheduler_pid"
