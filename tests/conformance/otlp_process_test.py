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
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from process_harness import call, expected_trace_id, run_test  # noqa: E402


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


def check_sdk_fire(run, receiver, job, name):
    fire = run.wait_success(job["id"])
    trace_id = expected_trace_id(fire)
    check_fire_spans(receiver, fire, trace_id, sha_id("sched-run/%s/%d" % (trace_id, fire.get("attempt", 0)), 16))
    print("%s: fire %d: spans fire, planned, claimed, sent, run, ended in trace %s" % (name, fire["id"], trace_id))
    run.pause_job(job["id"])


def test(run, standalone_bin, demo_client_bin):
    receiver = Receiver()
    run.children.append(receiver)  # stopped last
    telemetry = "telemetry:\n  otlp-endpoint: \"%s\"\n  flush-interval: 100ms\n" % receiver.url
    standalone = run.start_standalone(standalone_bin, "  level: info\n" + telemetry)

    # The Python demo service alone first: both SDKs serve "echo", only the C++ one "count".
    python = run.start_python_demo("serving", "--otlp-endpoint", receiver.url, "--otlp-flush-interval", "0.1")
    check_sdk_fire(run, receiver, run.create_job("otlp-python", "echo"), "Python SDK")
    python.stop()

    run.start_demo_client(demo_client_bin, executor_yaml='  telemetry:\n    otlp-endpoint: "%s"\n'
                                                         '    flush-interval: 100ms\n' % receiver.url)
    check_sdk_fire(run, receiver, run.create_job("otlp-cpp", "count"), "C++ SDK")

    # A manual trigger under the caller's trace: the run and the spans carry its trace id.
    manual = run.create_job("otlp-manual", "count", schedule_type="manual", schedule_expr="")
    caller_trace, caller_span = secrets.token_hex(16), secrets.token_hex(8)
    status, bad = call(run.base, "POST", "/api/v1/jobs/%d/trigger" % manual["id"], run.admin, None,
                       {"traceparent": "00-%s-%s-01" % (caller_trace.upper(), caller_span)})
    assert status == 400 and json.loads(bad)["error"]["field"] == "traceparent", (
        "upper-case traceparent: %s %s" % (status, bad))
    status, triggered = call(run.base, "POST", "/api/v1/jobs/%d/trigger" % manual["id"], run.admin, None,
                             {"traceparent": "00-%s-%s-01" % (caller_trace, caller_span),
                              "tracestate": "vendor=opaque"})
    assert status == 202, "trigger: %s %s" % (status, triggered)
    fire = run.wait_success(manual["id"])
    assert fire["id"] == triggered["items"][0]["id"], (fire, triggered)
    root_span_id = sha_id("sched-run/%s/%s/%d/%d" % (caller_trace, caller_span, fire["id"],
                                                      fire.get("attempt", 0)), 16)
    check_fire_spans(receiver, fire, caller_trace, root_span_id, root_parent=caller_span)
    assert not receiver.trace(expected_trace_id(fire)), "spans of the manual fire under its derived trace"
    runs = [s for s in receiver.trace(caller_trace) if s["name"] == "run"]
    assert runs and all(s.get("traceState") == "vendor=opaque" for s in runs), (
        "the caller's tracestate did not reach the SDK's run span: %s" % runs)
    status, log = call(run.base, "GET", "/api/v1/fires/%d/log" % fire["id"], run.admin)
    assert status == 200 and any("trace " + caller_trace in line for line in log.get("lines", [])), (
        "the fire log lacks the caller's trace: %s" % log)
    print("manual fire %d: run and spans under the caller's trace %s" % (fire["id"], caller_trace))

    assert standalone.stop() == 0, "standalone did not stop cleanly:\n" + standalone.output()


if __name__ == "__main__":
    sys.exit(run_test(__doc__, 2, "sched-otlp-", test))
