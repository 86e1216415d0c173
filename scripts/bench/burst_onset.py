# usage: python3 scripts/bench/burst_onset.py RUN_DIR/lag-RATE.csv [...]
# Where the lag of a burst (scheduler-bench precision --schedule cron: every job due at once)
# comes from. A node sends the runs it claimed for one due time to the executor in one request
# ahead of time; the executor holds them and starts them at the due time. Per due second and
# node, the batch's *onset* is the lag of its first run (when the executor's hold ended and the
# first handler ran) and its *spread* the lag of its last run minus its first; per due second,
# its *last* is the lag of the second's last run, whichever node sent it. Prints, per CSV, the
# lag's p50/p99, the p50/p90/max of onsets and spreads over every (second, node) batch, and of
# the seconds' lasts (a p99 within X ms needs almost every second's last within X). With the
# run's result.json beside the CSV, it also prints each second of the window with its last and
# the CPU time the hypervisor stole in it (machine_cpu.steal_ms_by_second).
# docs/benchmarks.md "1,000 jobs due at once: where the lag is" has runs.
import collections
import csv
import json
import os
import sys


def quantile(values, q):
    return values[min(len(values) - 1, int(len(values) * q))]


for path in sys.argv[1:]:
    rows = list(csv.DictReader(open(path)))
    batches = collections.defaultdict(list)
    seconds = collections.defaultdict(list)
    for row in rows:
        batches[(int(row["scheduled_ms"]) // 1000, row["node"])].append(float(row["lag_ms"]))
        seconds[int(row["scheduled_ms"]) // 1000].append(float(row["lag_ms"]))
    onsets = sorted(min(lags) for lags in batches.values())
    spreads = sorted(max(lags) - min(lags) for lags in batches.values())
    lasts = sorted(max(lags) for lags in seconds.values())
    lags = sorted(float(row["lag_ms"]) for row in rows)
    print(
        f"{path}: lag p50 {quantile(lags, 0.5):.1f} p99 {quantile(lags, 0.99):.1f} ms;"
        f" {len(batches)} batches: onset p50 {quantile(onsets, 0.5):.1f} p90 {quantile(onsets, 0.9):.1f}"
        f" max {onsets[-1]:.1f} ms; spread p50 {quantile(spreads, 0.5):.1f} p90 {quantile(spreads, 0.9):.1f}"
        f" max {spreads[-1]:.1f} ms; {len(seconds)} seconds: last p50 {quantile(lasts, 0.5):.1f}"
        f" p90 {quantile(lasts, 0.9):.1f} max {lasts[-1]:.1f} ms"
    )
    result_path = os.path.join(os.path.dirname(path), "result.json")
    if not os.path.exists(result_path):
        continue
    for run in json.load(open(result_path))["result"]["runs"]:
        steal = (run.get("machine_cpu") or {}).get("steal_ms_by_second")
        if steal is None or not path.endswith(f"lag-{run['rate']}.csv"):
            continue
        first = run["window"]["scheduled_from_ms"] // 1000
        print("  second: last ms / stolen ms: " + ", ".join(
            f"+{k}: {max(seconds.get(first + k, [0.0])):.1f} / {stolen:.0f}" for k, stolen in enumerate(steal)))
