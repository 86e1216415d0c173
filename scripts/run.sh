#!/usr/bin/env bash
# Runs the system on this machine: installs what is missing, builds, then starts
#   - scheduler-standalone (embedded SQLite under ./data, HTTP on 127.0.0.1:8080) with the demo
#     job "hello" (every 10 s), in the foreground, and
#   - demo-client (a business service with handlers echo, sleep, fail, count) in the background.
# Ctrl-C stops both. Running it again reuses the build, the data and the tokens (data/token, the
# admin token; data/executor-token, the demo client's executor token).
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

scheduler_pid=
client_pid=
# Background jobs of a script ignore Ctrl-C, so the trap stops both by PID.
cleanup() {
    [ -n "$scheduler_pid" ] && kill -TERM "$scheduler_pid" 2>/dev/null
    [ -n "$client_pid" ] && kill -TERM "$client_pid" 2>/dev/null
    wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --demo (re)writes data/executor-token: the demo client's executor token, kept while valid. The
# demo client gets that token, never the cluster token (docs/protocol.md "Security").
touch data/.run-started
build/dev/apps/scheduler-standalone/scheduler-standalone --config "${SCHED_CONFIG:-config/standalone.yaml}" --demo &
scheduler_pid=$!
for _ in $(seq 1 300); do
    [ data/executor-token -nt data/.run-started ] && break
    kill -0 "$scheduler_pid" 2>/dev/null || { wait "$scheduler_pid"; exit $?; }
    sleep 0.1
done
[ data/executor-token -nt data/.run-started ] || { echo "run.sh: no data/executor-token from the scheduler" >&2; exit 1; }
SCHED_TOKEN=$(cat data/executor-token) \
    build/dev/apps/demo-client/demo-client --config config/demo-client.yaml >data/demo-client.log 2>&1 &
client_pid=$!

cat <<MSG
scheduler: http://127.0.0.1:8080  (admin token in data/token; the demo client's executor token
  in data/executor-token; e.g.
  curl http://127.0.0.1:8080/status
  sqlite3 data/scheduler.db 'select id, scheduled_time, status, result_message from job_fire order by id desc limit 5')
demo-client log: data/demo-client.log
MSG
wait "$scheduler_pid"
