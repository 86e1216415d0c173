# usage: python3 scripts/bench/create_jobs.py HOST PORT TOKEN N PID [SCHEDULE_EXPR]
# Creates N cron jobs (default "0 0 3 * * ?", i.e. not firing soon) through POST /api/v1/jobs on
# one keep-alive connection; prints the elapsed time and the RSS of the server PID every 500
# jobs, then the per-request p50/p99. docs/benchmarks.md has a run.
import http.client, json, sys, time
host, port, token, n, pid = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
def rss():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"): return line.split()[1] + " kB"
c = http.client.HTTPConnection(host, port, timeout=30)
h = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
t0 = time.time(); lat = []
print("start rss", rss(), flush=True)
for i in range(n):
    body = json.dumps({"name": f"bulk-{int(t0)}-{i}", "app": "demo", "handler": "echo",
                       "schedule_type": "cron", "schedule_expr": sys.argv[6] if len(sys.argv) > 6 else "0 0 3 * * ?", "time_zone": "UTC"})
    s = time.time()
    c.request("POST", "/api/v1/jobs", body, h)
    r = c.getresponse(); r.read()
    lat.append(time.time() - s)
    if r.status != 201: print("status", r.status, i); break
    if (i + 1) % 500 == 0: print(i + 1, f"{time.time()-t0:.1f}s", rss(), flush=True)
lat.sort()
print(f"total {time.time()-t0:.2f}s for {len(lat)}; p50 {lat[len(lat)//2]*1000:.1f} ms p99 {lat[int(len(lat)*0.99)]*1000:.1f} ms; rss {rss()}")
