#!/usr/bin/env python3
"""Process test: one fire's trace, end to end. A real scheduler-standalone (SQLite, loopback, JSON
logs at debug level) fires a job on the Python demo service and one on the C++ demo-client, both
logging JSON. For each fire, the trace id the W3C traceparent of its run carries (derived from
the fire: sched/protocol/trace_context.hpp) must appear as a `trace_id` member beside the fire's
id in the node's log (among them the line of the fire's result, which the SDK sent back with
the run's traceparent), in the service's log and in the fire's own log; and every line the node
wrote, on stdout and stderr, must be a JSON object.

    trace_process_test.py /path/to/scheduler-standalone /path/to/demo-client
"""

import hashlib
import json
import os
import secrets
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_demo_process_test import DEMO, Child, call, start_standalone  # noqa: E402


def expected_trace_id(fire):
    seed = "sched-fire/%d/%d/%d" % (fire["id"], fire["job_id"], fire["scheduled_time"])
    return hashlib.sha256(seed.encode()).hexdigest()[:32]


def json_lines(child):
    """Every line of the child's output as JSON; the lines that are not, separately."""
    with child.cv:
        lines = list(child.lines)
    records, other = [], []
    for line in lines:
        try:
            record = json.loads(line)
            (records if isinstance(record, dict) else other).append(record if isinstance(record, dict) else line)
        except ValueError:
            other.append(line)
    return records, other


def wait_success(base, admin, job_id, timeout=20):
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        status, page = call(base, "GET", "/api/v1/fires?job_id=%d&limit=20" % job_id, admin)
        assert status == 200, "GET /api/v1/fires: %s %s" % (status, page)
        seen = [(f.get("id"), f.get("status")) for f in page["items"]]
        for f in page["items"]:
            if f.get("status") == "succeeded":
                return f
        time.sleep(0.3)
    raise AssertionError("no fire of job %d succeeded within %d s: %s" % (job_id, timeout, seen))


def wait_record(child, fire_id, trace_id, timeout=10, msg=""):
    deadline = time.monotonic() + timeout
    while True:
        records, _ = json_lines(child)
        for r in records:
            if r.get("fire") == fire_id and r.get("trace_id") == trace_id and msg in r.get("msg", ""):
                return r
        if time.monotonic() > deadline:
            wrong = [r for r in records if r.get("fire") == fire_id]
            raise AssertionError("no JSON line with fire %d and trace_id %s; lines of that fire: %s\n%s" % (
                fire_id, trace_id, wrong, child.output()))
        time.sleep(0.2)


def check_fire(base, admin, job_id, node, service, name):
    fire = wait_success(base, admin, job_id)
    trace = expected_trace_id(fire)
    node_line = wait_record(node, fire["id"], trace)
    assert node_line.get("job") == job_id and node_line.get("app") == "demo", node_line
    assert node_line.get("node"), "the node's line names no node: %s" % node_line
    # The result came back with the run's traceparent (the node advertised result-traceparent)
    # and the node logged the fire's result with it.
    result_line = wait_record(node, fire["id"], trace, msg="ended succeeded (attempt %d, the result carried its trace)"
                              % fire.get("attempt", 0))
    assert result_line.get("job") == job_id, result_line
    service_line = wait_record(service, fire["id"], trace)
    assert service_line.get("job") == job_id, service_line
    status, log = call(base, "GET", "/api/v1/fires/%d/log" % fire["id"], admin)
    assert status == 200, "GET fire log: %s %s" % (status, log)
    assert any("trace " + trace in line for line in log.get("lines", [])), "fire log lacks the trace: %s" % log
    print("%s: fire %d carries trace %s in the node's log, the service's log and the fire log" % (
        name, fire["id"], trace))


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    standalone_bin, demo_client_bin = (os.path.abspath(a) for a in sys.argv[1:])
    work = tempfile.mkdtemp(prefix="sched-trace-")
    admin = secrets.token_hex(24)
    children = []
    ok = False
    try:
        standalone, base, executor_token = start_standalone(standalone_bin, work, admin,
                                                            "  level: debug\n  format: json\n", children)
        env = dict(os.environ, SCHED_TOKEN=executor_token)

        # The Python service alone first: both SDKs serve "echo", only the C++ one "count".
        python = Child([sys.executable, DEMO, "--web", base, "--app", "demo", "--heartbeat-interval", "0.5",
                        "--shutdown-grace", "5", "--log-level", "DEBUG", "--log-format", "json"], env, work)
        children.append(python)
        assert python.wait_line("serving", 10), "the Python demo service did not start:\n" + python.output()
        status, job = call(base, "POST", "/api/v1/jobs", admin, {
            "name": "trace-python", "app": "demo", "handler": "echo", "schedule_type": "fixed-rate",
            "schedule_expr": "1s"})
        assert status == 201, "POST /api/v1/jobs: %s %s" % (status, job)
        check_fire(base, admin, job["id"], standalone, python, "Python SDK")
        status, _ = call(base, "POST", "/api/v1/jobs/%d/pause" % job["id"], admin, {})
        assert status == 200, "pause: %s" % status
        _, other = json_lines(python)
        assert not other, "the Python service wrote lines that are not JSON: %s" % other[:3]

        client_config = os.path.join(work, "demo-client.yaml")
        with open(client_config, "w") as f:
            f.write('log:\n  level: debug\n  format: json\nexecutor:\n  app: demo\n  web-endpoints: ["%s"]\n'
                    '  heartbeat-interval: 1s\n  callback-flush-interval: 20ms\n  spool-dir: "%s/spool"\n'
                    '  http:\n    listen: "127.0.0.1:0"\ndemo:\n  ledger-dir: "%s/ledger"\n' % (base, work, work))
        cpp = Child([demo_client_bin, "--config", client_config], env, work)
        children.append(cpp)
        assert cpp.wait_line("serving", 10), "demo-client did not start:\n" + cpp.output()
        status, job = call(base, "POST", "/api/v1/jobs", admin, {
            "name": "trace-cpp", "app": "demo", "handler": "count", "schedule_type": "fixed-rate",
            "schedule_expr": "1s"})
        assert status == 201, "POST /api/v1/jobs: %s %s" % (status, job)
        check_fire(base, admin, job["id"], standalone, cpp, "C++ SDK")
        _, other = json_lines(cpp)
        assert not other, "demo-client wrote lines that are not JSON: %s" % other[:3]

        assert standalone.stop() == 0, "standalone did not stop cleanly:\n" + standalone.output()
        _, other = json_lines(standalone)
        assert not other, "the node wrote lines that are not JSON: %s" % other[:3]
        ok = True
    except AssertionError as e:
        print("FAIL: %s" % e)
    finally:
        for child in reversed(children):
            child.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("PASS" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
