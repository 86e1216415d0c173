#!/usr/bin/env bash
# usage: scripts/bench/workflows.sh STANDALONE SINK DIR PORT N
# One run of N small workflows: the standalone (STANDALONE) on SQLite in DIR (a new
# directory) and one sink executor (SINK, build/ci/tests/sched-sink-executor). Creates 3N manual
# jobs and N workflows `a -> b -> c`, measures the master's scan time while idle for 10 s, then
# triggers the N workflows at once and waits until every run ended. Prints the wall time, the
# runs by status, run durations (p50/p99), and the master's scan seconds spent meanwhile (from
# /metrics: sched_master_scan_seconds) minus the idle rate, per run and per step. Stops both
# processes by their PIDs. docs/benchmarks.md has a run. Needs python3 and sqlite3.
set -u
# shellcheck source-path=SCRIPTDIR source=standalone.sh
source "$(dirname "$0")/standalone.sh"
bin=${1:-} sink=${2:-} dir=${3:-} port=${4:-} n=${5:-}
[[ $# -eq 5 ]] || { sed -n 2,9p "$0"; exit 2; }
sink=$(realpath "$sink")
tok=tok-workflows-bench-0123456789abcdef
start_standalone "$bin" "$dir" "$port" "$tok"
etok=$(curl -sf -X POST -H "Authorization: Bearer $tok" 127.0.0.1:$port/api/v1/tokens \
  -d '{"name":"sink","role":"executor","apps":["sink"]}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
"$sink" --app sink --endpoint "http://127.0.0.1:$port" --token "$etok" --log "$dir/sink.log" --instance a \
  --spool "$dir/spool" --heartbeat 1000 > sink.out 2>&1 &
spid=$!
python3 - "$port" "$tok" "$n" "$dir/s.db" <<'PY'
import http.client, json, sqlite3, sys, time
port, tok, n, db = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
h = {"Authorization": "Bearer " + tok, "Content-Type": "application/json"}
def call(method, path, body=None, want=(200, 201)):
    c.request(method, path, json.dumps(body) if body is not None else None, h)
    r = c.getresponse(); text = r.read()
    if r.status not in want: raise SystemExit(f"{method} {path}: {r.status} {text[:300]}")
    return json.loads(text) if text else None
def scan_seconds():
    c.request("GET", "/metrics", headers=h); text = c.getresponse().read().decode()
    total = count = 0.0
    for line in text.splitlines():
        if line.startswith("sched_master_scan_seconds_sum"): total = float(line.split()[-1])
        if line.startswith("sched_master_scan_seconds_count"): count = float(line.split()[-1])
    return total, count
t0 = time.time()
wfs = []
for i in range(n):
    ids = [call("POST", "/api/v1/jobs", {"name": f"wf{i}-{s}", "app": "sink", "handler": "sink",
                                        "schedule_type": "manual"})["id"] for s in "abc"]
    wf = call("POST", "/api/v1/workflows", {"name": f"wf{i}", "steps": [{"name": s, "job_id": j} for s, j in zip("abc", ids)],
                                           "edges": [{"parent": "a", "child": "b"}, {"parent": "b", "child": "c"}]})
    wfs.append(wf["id"])
print(f"created {3*n} jobs and {n} workflows in {time.time()-t0:.1f} s", flush=True)
idle0, idle_scans0 = scan_seconds(); time.sleep(10); idle1, idle_scans1 = scan_seconds()
idle_rate = (idle1 - idle0) / 10
print(f"idle: {idle_scans1-idle_scans0:.0f} scans in 10 s, {idle1-idle0:.3f} s scanning ({idle_rate*1000:.1f} ms/s)")
s0, scans0 = scan_seconds()
t1 = time.time()
for w in wfs: call("POST", f"/api/v1/workflows/{w}/trigger", {})
t_trig = time.time() - t1
con = sqlite3.connect(db, timeout=30)
while True:
    rows = dict(con.execute("SELECT status, COUNT(*) FROM workflow_run GROUP BY status").fetchall())
    if rows.get("running", 0) == 0 and sum(rows.values()) >= n: break
    if time.time() - t1 > 600: print("not done after 600 s:", rows); break
    time.sleep(0.2)
wall = time.time() - t1
s1, scans1 = scan_seconds()
durations = sorted(r[0] for r in con.execute("SELECT ended_at - started_at FROM workflow_run WHERE ended_at IS NOT NULL"))
q = lambda p: durations[min(len(durations) - 1, int(p * len(durations)))] if durations else -1
spent = (s1 - s0) - idle_rate * wall
steps = con.execute("SELECT COUNT(*) FROM job_fire WHERE workflow_run_id IS NOT NULL").fetchone()[0]
print(f"triggered {n} runs in {t_trig:.2f} s; all ended {wall:.2f} s after the first trigger: {rows}")
print(f"run duration (ended_at - started_at) p50 {q(0.5)} ms, p99 {q(0.99)} ms, max {durations[-1] if durations else -1} ms")
print(f"master: {scans1-scans0:.0f} scans, {s1-s0:.3f} s scanning; minus idle {spent:.3f} s = "
      f"{spent/n*1000:.2f} ms per run, {spent/max(steps,1)*1000:.3f} ms per step fire ({steps} step fires)")
PY
kill -TERM $spid $pid; wait $spid $pid
echo "exit=$?"
