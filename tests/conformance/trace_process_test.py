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

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from process_harness import call, expected_trace_id, run_test  # noqa: E402


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


def check_fire(run, job_id, node, service, name):
    fire = run.wait_success(job_id)
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
    status, log = call(run.base, "GET", "/api/v1/fires/%d/log" % fire["id"], run.admin)
    assert status == 200, "GET fire log: %s %s" % (status, log)
    assert any("trace " + trace in line for line in log.get("lines", [])), "fire log lacks the trace: %s" % log
    print("%s: fire %d carries trace %s in the node's log, the service's log and the fire log" % (
        name, fire["id"], trace))


def test(run, standalone_bin, demo_client_bin):
    standalone = run.start_standalone(standalone_bin, "  level: debug\n  format: json\n")

    # The Python service alone first: both SDKs serve "echo", only the C++ one "count".
    python = run.start_python_demo("serving", "--log-level", "DEBUG", "--log-format", "json")
    job = run.create_job("trace-python", "echo")
    check_fire(run, job["id"], standalone, python, "Python SDK")
    run.pause_job(job["id"])
    _, other = json_lines(python)
    assert not other, "the Python service wrote lines that are not JSON: %s" % other[:3]

    cpp = run.start_demo_client(demo_client_bin, head_yaml="log:\n  level: debug\n  format: json\n")
    job = run.create_job("trace-cpp", "count")
    check_fire(run, job["id"], standalone, cpp, "C++ SDK")
    _, other = json_lines(cpp)
    assert not other, "demo-client wrote lines that are not JSON: %s" % other[:3]

    assert standalone.stop() == 0, "standalone did not stop cleanly:\n" + standalone.output()
    _, other = json_lines(standalone)
    assert not other, "the node wrote lines that are not JSON: %s" % other[:3]


if __name__ == "__main__":
    sys.exit(run_test(__doc__, 2, "sched-trace-", test))
