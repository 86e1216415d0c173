#!/usr/bin/env bash
# usage: scripts/bench/no_executor_burst.sh BINARY DIR PORT JOBS
# The standalone (BINARY) on SQLite in DIR (a new directory), JOBS jobs firing every second for
# an app no service serves; prints job_fire by status, the load and the node's RSS every 10 s for
# 60 s, then stops the node (SIGTERM) by its PID. docs/benchmarks.md has a run.
# Needs python3 and sqlite3.
set -u
# shellcheck source-path=SCRIPTDIR source=standalone.sh
source "$(dirname "$0")/standalone.sh"
bin=${1:-} dir=${2:-} port=${3:-} jobs=${4:-}
[[ $# -eq 4 ]] || { sed -n 2,6p "$0"; exit 2; }
tok=tok-nobody-burst-0123456789abcdef
start_standalone "$bin" "$dir" "$port" "$tok"
python3 - "$port" "$tok" "$jobs" <<'PY'
import http.client, json, sys, time
port, tok, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
h = {"Authorization": "Bearer " + tok, "Content-Type": "application/json"}
t0 = time.time()
for i in range(n):
    c.request("POST", "/api/v1/jobs", json.dumps({"name": f"nobody-{i}", "app": "nobody", "handler": "h",
              "schedule_type": "cron", "schedule_expr": "* * * * * ?", "time_zone": "UTC"}), h)
    r = c.getresponse(); r.read()
    if r.status != 201: print("create status", r.status, i); break
print(f"created {n} jobs in {time.time()-t0:.1f} s", flush=True)
PY
start=$(date +%s)
for t in 10 20 30 40 50 60; do
  sleep 10
  echo "t=${t}s load=$(cut -d' ' -f1 /proc/loadavg) rss=$(awk '/VmRSS/{print $2" kB"}' /proc/$pid/status) $(sqlite3 s.db "select group_concat(status||'='||n, ' ') from (select status, count(*) n from job_fire group by status)")"
done
kill -TERM $pid; wait $pid; echo "exit=$?"
grep -c "cannot record" out.log
