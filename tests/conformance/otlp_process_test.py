#!/usr/bin/env python3
"""Process test: a fire's spans over OTLP. A local OTLP/HTTP receiver (http.server on a free
loopback port) records every JSON body POSTed to /v1/traces. A real scheduler-standalone, the
Python demo service (`--otlp-endpoint`) and then the C++ demo-client (`executor.telemetry`)
export their spans to it. After a fire of a job on each service succeeds, the receiver must hold the fire's spans in one trace (the trace id
derived from the fire, sched/protocol/trace_context.hpp): the root `fire` (span id = the
traceparent's span the run carried, no parent) with the children planned, claimed, sent and
ended from the node and run from the SDK, each span id derived as
sched/protocol/fire_spans.hpp says, each carrying sched.fire_id, sched.job_id, sched.app,
sched.attempt and sched.node. Then a manual trigger with a `traceparent` header: its run
(the fire log) and its spans carry the caller's trace id, the root a child of the caller's span,
and the caller's `tracestate` reaches the SDK (its `run` span's traceState).

    otlp_process_test.py /path/to/scheduler-standalone /path/to/demo-client
"""

import hashlib
import http.server
import json
import os
import secrets
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_demo_process_test import DEMO, Child, call, start_standalone  # noqa: E402
from trace_process_test import expected_trace_id, wait_success  # noqa: E402


def sha_id(seed, digits):
    return hashlib.sha256(seed.encode()).hexdigest()[:digits]


class Receiver:
    """An OTLP/HTTP (JSON) receiver: keeps each span with its resource's service.name."""

    def __init__(self):
        self.lock = threading.Lock()
        self.spans = []
        self.posts = 0
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                ok = self.path == "/v1/traces"
                if ok:
                    try:
                        receiver.record(json.loads(body))
                    except (ValueError, KeyError, TypeError):
                        ok = False
                self.send_response(200 if ok else 400)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = "http://127.0.0.1:%d/v1/traces" % self.server.server_address[1]

    def record(self, body):
        found = []
        for rs in body["resourceSpans"]:
            service = None
            for a in rs.get("resource", {}).get("attributes", []):
                if a["key"] == "service.name":
                    service = a["value"]["stringValue"]
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    found.append(dict(span, service=service))
        with self.lock:
            self.posts += 1
            self.spans.extend(found)

    def trace(self, trace_id):
        with self.lock:
            return [s for s in self.spans if s["traceId"] == trace_id]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def attributes(span):
    out = {}
    for a in span.get("attributes", []):
        value = a["value"]
        out[a["key"]] = value.get("stringValue", value.get("intValue"))
    return out


def wait_spans(receiver, trace_id, names, timeout=15):
    deadline = time.monotonic() + timeout
    while True:
        spans = receiver.trace(trace_id)
        if names <= {s["name"] for s in spans}:
            return spans
        if time.monotonic() > deadline:
            raise AssertionError("trace %s: expected spans %s, got %s (all spans received: %d)" % (
                trace_id, sorted(names), sorted(s["name"] for s in spans), len(receiver.spans)))
        time.sleep(0.2)


def check_fire_spans(receiver, fire, trace_id, root_span_id, root_parent=None):
    names = {"fire", "planned", "claimed", "sent", "run", "ended"}
    spans = wait_spans(receiver, trace_id, names)
    by_name = {}
    for s in spans:
        by_name.setdefault(s["name"], s)
    root = by_name["fire"]
    assert root["spanId"] == root_span_id, "root span %s, expected the run's %s" % (root["spanId"], root_span_id)
    assert root.get("parentSpanId") == root_parent, "root's parent: %s" % root.get("parentSpanId")
    for name in names - {"fire"}:
        span = by_name[name]
        assert span["parentSpanId"] == root_span_id, "%s's parent %s, expected %s" % (
            name, span.get("parentSpanId"), root_span_id)
        assert span["spanId"] == sha_id("sched-step/%s/%s/%s" % (trace_id, root_span_id, name), 16), (
            "%s's span id is not the derived one: %s" % (name, span))
        assert int(span["endTimeUnixNano"]) >= int(span["startTimeUnixNano"]) > 0, span
    for name in names:
        attrs = attributes(by_name[name])
        assert attrs.get("sched.fire_id") == str(fire["id"]), (name, attrs)
        assert attrs.get("sched.job_id") == str(fire["job_id"]), (name, attrs)
        assert attrs.get("sched.app") == "demo", (name, attrs)
        assert attrs.get("sched.attempt") == "0", (name, attrs)
        assert attrs.get("sched.node"), (name, attrs)
    assert by_name["run"]["service"] == "demo", "the run's service: %s" % by_name["run"]["service"]
    assert by_name["claimed"]["service"] == "scheduler-standalone", by_name["claimed"]["service"]
    assert attributes(by_name["ended"]).get("sched.status") == "succeeded", by_name["ended"]
    assert "status" not in root, "a succeeded fire's root has an error status: %s" % root


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    standalone_bin, demo_client_bin = (os.path.abspath(a) for a in sys.argv[1:])
    work = tempfile.mkdtemp(prefix="sched-otlp-")
    admin = secrets.token_hex(24)
    children = []
    receiver = Receiver()
    ok = False
    try:
        telemetry = "telemetry:\n  otlp-endpoint: \"%s\"\n  flush-interval: 100ms\n" % receiver.url
        standalone, base, executor_token = start_standalone(standalone_bin, work, admin,
                                                            "  level: info\n" + telemetry, children)
        env = dict(os.environ, SCHED_TOKEN=executor_token)

        # The Python demo service alone first: both SDKs serve "echo", only the C++ one "count".
        python = Child([sys.executable, DEMO, "--web", base, "--app", "demo", "--heartbeat-interval", "0.5",
                        "--shutdown-grace", "5", "--otlp-endpoint", receiver.url, "--otlp-flush-interval", "0.1"],
                       env, work)
        children.append(python)
        assert python.wait_line("serving", 10), "the Python demo service did not start:\n" + python.output()
        status, job = call(base, "POST", "/api/v1/jobs", admin, {
            "name": "otlp-python", "app": "demo", "handler": "echo", "schedule_type": "fixed-rate",
            "schedule_expr": "1s"})
        assert status == 201, "POST /api/v1/jobs: %s %s" % (status, job)
        fire = wait_success(base, admin, job["id"])
        trace_id = expected_trace_id(fire)
        check_fire_spans(receiver, fire, trace_id, sha_id("sched-run/%s/%d" % (trace_id, fire.get("attempt", 0)), 16))
        print("Python SDK: fire %d: spans fire, planned, claimed, sent, run, ended in trace %s" % (fire["id"], trace_id))
        status, _ = call(base, "POST", "/api/v1/jobs/%d/pause" % job["id"], admin, {})
        assert status == 200, "pause: %s" % status
        python.stop()

        client_config = os.path.join(work, "demo-client.yaml")
        with open(client_config, "w") as f:
            f.write('executor:\n  app: demo\n  web-endpoints: ["%s"]\n'
                    '  heartbeat-interval: 1s\n  callback-flush-interval: 20ms\n  spool-dir: "%s/spool"\n'
                    '  http:\n    listen: "127.0.0.1:0"\n'
                    '  telemetry:\n    otlp-endpoint: "%s"\n    flush-interval: 100ms\n'
                    'demo:\n  ledger-dir: "%s/ledger"\n' % (base, work, receiver.url, work))
        cpp = Child([demo_client_bin, "--config", client_config], env, work)
        children.append(cpp)
        assert cpp.wait_line("serving", 10), "demo-client did not start:\n" + cpp.output()

        status, job = call(base, "POST", "/api/v1/jobs", admin, {
            "name": "otlp-cpp", "app": "demo", "handler": "count", "schedule_type": "fixed-rate",
            "schedule_expr": "1s"})
        assert status == 201, "POST /api/v1/jobs: %s %s" % (status, job)
        fire = wait_success(base, admin, job["id"])
        trace_id = expected_trace_id(fire)
        root_span_id = sha_id("sched-run/%s/%d" % (trace_id, fire.get("attempt", 0)), 16)
        check_fire_spans(receiver, fire, trace_id, root_span_id)
        print("C++ SDK: fire %d: spans fire, planned, claimed, sent, run, ended in trace %s" % (fire["id"], trace_id))

        status, _ = call(base, "POST", "/api/v1/jobs/%d/pause" % job["id"], admin, {})
        assert status == 200, "pause: %s" % status

        # A manual trigger under the caller's trace: the run and the spans carry its trace id.
        status, manual = call(base, "POST", "/api/v1/jobs", admin, {
            "name": "otlp-manual", "app": "demo", "handler": "count", "schedule_type": "manual",
            "schedule_expr": ""})
        assert status == 201, "POST /api/v1/jobs: %s %s" % (status, manual)
        caller_trace, caller_span = secrets.token_hex(16), secrets.token_hex(8)
        status, bad = call(base, "POST", "/api/v1/jobs/%d/trigger" % manual["id"], admin, None,
                           {"traceparent": "00-%s-%s-01" % (caller_trace.upper(), caller_span)})
        assert status == 400 and json.loads(bad)["error"]["field"] == "traceparent", (
            "upper-case traceparent: %s %s" % (status, bad))
        status, triggered = call(base, "POST", "/api/v1/jobs/%d/trigger" % manual["id"], admin, None,
                                 {"traceparent": "00-%s-%s-01" % (caller_trace, caller_span),
                                  "tracestate": "vendor=opaque"})
        assert status == 202, "trigger: %s %s" % (status, triggered)
        fire = wait_success(base, admin, manual["id"])
        assert fire["id"] == triggered["items"][0]["id"], (fire, triggered)
        root_span_id = sha_id("sched-run/%s/%s/%d/%d" % (caller_trace, caller_span, fire["id"],
                                                          fire.get("attempt", 0)), 16)
        check_fire_spans(receiver, fire, caller_trace, root_span_id, root_parent=caller_span)
        assert not receiver.trace(expected_trace_id(fire)), "spans of the manual fire under its derived trace"
        runs = [s for s in receiver.trace(caller_trace) if s["name"] == "run"]
        assert runs and all(s.get("traceState") == "vendor=opaque" for s in runs), (
            "the caller's tracestate did not reach the SDK's run span: %s" % runs)
        status, log = call(base, "GET", "/api/v1/fires/%d/log" % fire["id"], admin)
        assert status == 200 and any("trace " + caller_trace in line for line in log.get("lines", [])), (
            "the fire log lacks the caller's trace: %s" % log)
        print("manual fire %d: run and spans under the caller's trace %s" % (fire["id"], caller_trace))

        assert standalone.stop() == 0, "standalone did not stop cleanly:\n" + standalone.output()
        ok = True
    except AssertionError as e:
        print("FAIL: %s" % e)
    finally:
        for child in reversed(children):
            child.stop()
        receiver.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("PASS" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
