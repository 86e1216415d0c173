#!/bin/bash
# usage: scripts/bench/ab.sh BEFORE_BENCH AFTER_BENCH OUT_DIR ROUNDS SCENARIO-ARGS...
# Runs the same scheduler-bench scenario with two builds, alternating (before, after, before,
# after, ...) ROUNDS times, so that the machine's load drifts across both alike; prints one line
# per run: the load when it started, p50/p99/max lag, misses, doubles, MariaDB statements,
# commits and row writes per fire, job_fire's rows changed per fire, the master's mean scan, the
# CPU per fire of the nodes, MariaDB and the bench process (SDK and sink), and the machine's busy
# share and stolen CPU time. Each run's result.json and log stay
# in OUT_DIR. Example (docs/benchmarks.md "How to reproduce"):
#   scripts/bench/ab.sh /tmp/before/build/ci/apps/scheduler-bench/scheduler-bench \
#       build/ci/apps/scheduler-bench/scheduler-bench /tmp/ab 2 \
#       precision --schedule cron --nodes 3 --rate 1000 --seconds 10 --warmup 3
set -euo pipefail
if [ $# -lt 5 ]; then
    sed -n '2,3p' "$0" >&2
    exit 2
fi
before=$1 after=$2 out_dir=$3 rounds=$4
shift 4
mkdir -p "$out_dir"
for round in $(seq 1 "$rounds"); do
    for build in before after; do
        if [ "$build" = before ]; then bench=$before; else bench=$after; fi
        load=$(cut -d' ' -f1 /proc/loadavg)
        out="$out_dir/$build$round"
        "$bench" "$@" --out "$out" >"$out.log" 2>&1
        python3 - "$out/result.json" "$build" "$load" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
for run in result["result"]["runs"]:
    w = run["window"]
    per_fire = run.get("db_statements_per_received_fire") or {}
    print(sys.argv[2], "load", sys.argv[3], "rate", run["rate"],
          "recv %d/%d" % (w["received"], w["expected"]),
          "p50 %.1f p99 %.1f max %.1f" % (w["lag_ms"]["p50"], w["lag_ms"]["p99"], w["lag_ms"]["max"]),
          "miss", w["misses"], "dbl", w["doubles"],
          "stmt %.2f commit %.2f" % (per_fire.get("Questions", -1), per_fire.get("Com_commit", -1)),
          "rows ins %.2f upd %.2f del %.2f" % (per_fire.get("Handler_write", -1),
                                               per_fire.get("Handler_update", -1),
                                               per_fire.get("Handler_delete", -1)),
          "job_fire rows %s" % (run.get("rows_changed_per_received_fire") or {}).get("job_fire", "-"),
          "scan %.1f" % run["master_scans"]["mean_ms"],
          "cpu ms/fire " + " ".join("%s %s" % (k, v) for k, v in (run.get("cpu_ms_per_received_fire") or {}).items()),
          "machine busy %s steal %s ms" % ((run.get("machine_cpu") or {}).get("busy_share", "-"),
                                          (run.get("machine_cpu") or {}).get("steal_ms", "-")),
          flush=True)
PY
    done
done
