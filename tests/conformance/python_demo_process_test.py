#!/usr/bin/env python3
"""Process test: a real scheduler-standalone (SQLite, loopback) schedules a job on the Python demo
service (sdk/python/examples/demo_service.py): the job's fires run there and succeed, and the
log the service sent with the result is served by the cluster.

    python_demo_process_test.py /path/to/scheduler-standalone
"""

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
DEMO = os.path.join(HERE, "..", "..", "sdk", "python", "examples", "demo_service.py")


class Child:
    def __init__(self, argv, env, cwd):
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=cwd)
        self.lines = []
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            with self.cv:
                self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                self.cv.notify_all()

    def wait_line(self, needle, timeout):
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                for line in self.lines:
                    if needle in line:
                        return line
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    return None
                self.cv.wait(min(left, 0.2))

    def output(self):
        with self.cv:
            return "\n".join(self.lines[-60:])

    def stop(self, timeout=15):
        """SIGTERM to its PID, SIGKILL after `timeout`; returns the exit code."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        return self.proc.returncode


def call(base, method, path, token, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    all_headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
    all_headers.update(headers or {})
    req = urllib.request.Request(base + path, data=data, method=method, headers=all_headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def start_standalone(standalone_bin, work, admin, log_yaml, children):
    """Starts scheduler-standalone --demo on SQLite in `work` with `log_yaml` (the `log:` section's
    lines) and waits for it; returns (child, base URL, the demo's executor token)."""
    config = os.path.join(work, "standalone.yaml")
    with open(config, "w") as f:
        f.write('http:\n  listen: "127.0.0.1:0"\ndatabase:\n  url: "sqlite://%s/data/s.db"\nlog:\n%s' % (work, log_yaml))
    standalone = Child([standalone_bin, "--config", config, "--demo"], dict(os.environ, SCHED_TOKEN=admin), work)
    children.append(standalone)
    line = standalone.wait_line("listening on http://127.0.0.1:", 20)
    assert line, "standalone did not start:\n" + standalone.output()
    if line.startswith("{"):  # log.format: json announces in a JSON record
        line = json.loads(line)["msg"]
    base = "http://127.0.0.1:" + line.rsplit(":", 1)[1].strip()
    token_file = os.path.join(work, "data", "executor-token")
    deadline = time.monotonic() + 10
    while not os.path.exists(token_file) and time.monotonic() < deadline:
        time.sleep(0.1)
    with open(token_file) as f:
        executor_token = f.read().strip()
    assert executor_token, "no executor token in " + token_file
    return standalone, base, executor_token


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    standalone_bin = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="sched-pydemo-")
    admin = secrets.token_hex(24)
    children = []
    ok = False
    try:
        standalone, base, executor_token = start_standalone(standalone_bin, work, admin, "  level: info\n", children)

        service = Child([sys.executable, DEMO, "--web", base, "--app", "demo", "--heartbeat-interval", "0.5",
                         "--shutdown-grace", "5"], dict(os.environ, SCHED_TOKEN=executor_token), work)
        children.append(service)
        assert service.wait_line("serving at", 10), "the Python demo service did not start:\n" + service.output()

        status, job = call(base, "POST", "/api/v1/jobs", admin, {
            "name": "python-conformance-echo", "app": "demo", "handler": "conformance.echo",
            "schedule_type": "fixed-rate", "schedule_expr": "1s", "params": {"from": "python-sdk"}})
        assert status == 201, "POST /api/v1/jobs: %s %s" % (status, job)
        job_id = job["id"]

        succeeded = None
        seen = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and succeeded is None:
            status, page = call(base, "GET", "/api/v1/fires?job_id=%d&limit=20" % job_id, admin)
            assert status == 200, "GET /api/v1/fires: %s %s" % (status, page)
            fires = page.get("items", page.get("fires", [])) if isinstance(page, dict) else page
            seen = [(f.get("id"), f.get("status")) for f in fires]
            succeeded = next((f for f in fires if f.get("status") == "succeeded"), None)
            if succeeded is None:
                time.sleep(0.3)
        assert succeeded, "no fire of job %d succeeded within 20 s: %s\n--- service ---\n%s\n--- standalone ---\n%s" % (
            job_id, seen, service.output(), standalone.output())
        failed = [f for f in seen if f[1] in ("failed", "timeout", "killed", "lost")]
        assert not failed, "fires that did not succeed: %s" % failed

        status, log = call(base, "GET", "/api/v1/fires/%d/log" % succeeded["id"], admin)
        assert status == 200, "GET fire log: %s %s" % (status, log)
        assert any("python-sdk" in line for line in log.get("lines", [])), "fire log lacks the echo: %s" % log
        print("fire %d of job %d succeeded on the Python demo service; log: %s" % (
            succeeded["id"], job_id, log.get("source")))
        assert service.stop() == 0, "the demo service did not stop cleanly:\n" + service.output()
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
