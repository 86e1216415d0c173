"""The Python process tests' shared harness: a child process whose output can be waited on, the
REST call, a standalone node on SQLite, the two demo services, and the `main()` every test ends
with (argument check, a work folder, PASS/FAILED, every child stopped by its PID).

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
    from process_harness import Child, call, run_test  # noqa: E402
"""

import hashlib
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


def expected_trace_id(fire):
    """The trace id a fire's runs carry (sched/protocol/trace_context.hpp)."""
    seed = "sched-fire/%d/%d/%d" % (fire["id"], fire["job_id"], fire["scheduled_time"])
    return hashlib.sha256(seed.encode()).hexdigest()[:32]


class Run:
    """One test run: its work folder, the admin token of its node and the children to stop."""

    def __init__(self, work):
        self.work = work
        self.admin = secrets.token_hex(24)
        self.children = []
        self.base = None
        self.executor_token = None

    def start(self, argv, env, started, what, timeout=10):
        """Starts a child in the work folder and waits for a line containing `started`."""
        child = Child(argv, env, self.work)
        self.children.append(child)
        assert child.wait_line(started, timeout), "%s did not start:\n%s" % (what, child.output())
        return child

    def start_standalone(self, standalone_bin, log_yaml):
        """Starts scheduler-standalone --demo on SQLite in the work folder with `log_yaml` (the
        `log:` section's lines) and waits for it; sets `base` and `executor_token` (the demo's)."""
        config = os.path.join(self.work, "standalone.yaml")
        with open(config, "w") as f:
            f.write('http:\n  listen: "127.0.0.1:0"\ndatabase:\n  url: "sqlite://%s/data/s.db"\nlog:\n%s'
                    % (self.work, log_yaml))
        standalone = Child([standalone_bin, "--config", config, "--demo"], dict(os.environ, SCHED_TOKEN=self.admin),
                           self.work)
        self.children.append(standalone)
        line = standalone.wait_line("listening on http://127.0.0.1:", 20)
        assert line, "standalone did not start:\n" + standalone.output()
        if line.startswith("{"):  # log.format: json announces in a JSON record
            line = json.loads(line)["msg"]
        self.base = "http://127.0.0.1:" + line.rsplit(":", 1)[1].strip()
        token_file = os.path.join(self.work, "data", "executor-token")
        deadline = time.monotonic() + 10
        while not os.path.exists(token_file) and time.monotonic() < deadline:
            time.sleep(0.1)
        with open(token_file) as f:
            self.executor_token = f.read().strip()
        assert self.executor_token, "no executor token in " + token_file
        return standalone

    def executor_env(self):
        return dict(os.environ, SCHED_TOKEN=self.executor_token)

    def start_python_demo(self, started, *args):
        """The Python SDK's demo service for app `demo` on the node, with `args` added."""
        return self.start([sys.executable, DEMO, "--web", self.base, "--app", "demo", "--heartbeat-interval", "0.5",
                           "--shutdown-grace", "5", *args], self.executor_env(), started,
                          "the Python demo service")

    def start_demo_client(self, demo_client_bin, head_yaml="", executor_yaml=""):
        """The C++ SDK's demo-client for app `demo` on the node; `head_yaml` goes before the
        `executor:` section, `executor_yaml` (indented by two) at its end."""
        config = os.path.join(self.work, "demo-client.yaml")
        with open(config, "w") as f:
            f.write('%sexecutor:\n  app: demo\n  web-endpoints: ["%s"]\n'
                    '  heartbeat-interval: 1s\n  callback-flush-interval: 20ms\n  spool-dir: "%s/spool"\n'
                    '  http:\n    listen: "127.0.0.1:0"\n%sdemo:\n  ledger-dir: "%s/ledger"\n'
                    % (head_yaml, self.base, self.work, executor_yaml, self.work))
        return self.start([demo_client_bin, "--config", config], self.executor_env(), "serving", "demo-client")

    def create_job(self, name, handler, schedule_type="fixed-rate", schedule_expr="1s", **fields):
        """POST /api/v1/jobs for app `demo`; returns the job."""
        status, job = call(self.base, "POST", "/api/v1/jobs", self.admin, dict(
            name=name, app="demo", handler=handler, schedule_type=schedule_type, schedule_expr=schedule_expr,
            **fields))
        assert status == 201, "POST /api/v1/jobs: %s %s" % (status, job)
        return job

    def pause_job(self, job_id):
        status, _ = call(self.base, "POST", "/api/v1/jobs/%d/pause" % job_id, self.admin, {})
        assert status == 200, "pause: %s" % status

    def fires(self, job_id):
        status, page = call(self.base, "GET", "/api/v1/fires?job_id=%d&limit=20" % job_id, self.admin)
        assert status == 200, "GET /api/v1/fires: %s %s" % (status, page)
        return page["items"]

    def wait_success(self, job_id, timeout=20):
        """The first succeeded fire of the job; fails naming the fires seen and the children's output."""
        deadline = time.monotonic() + timeout
        seen = []
        while time.monotonic() < deadline:
            fires = self.fires(job_id)
            seen = [(f.get("id"), f.get("status")) for f in fires]
            for f in fires:
                if f.get("status") == "succeeded":
                    return f
            time.sleep(0.3)
        raise AssertionError("no fire of job %d succeeded within %d s: %s\n%s" % (
            job_id, timeout, seen, "\n".join("--- child ---\n" + c.output() for c in self.children
                                             if isinstance(c, Child))))


def run_test(doc, binaries, prefix, test):
    """A process test's main(): expects `binaries` paths as arguments (else prints `doc`, returns 2),
    calls test(run, *paths) in a fresh work folder, prints PASS or FAILED (with the failed
    assertion) and returns the exit code. Whatever is in run.children (anything with stop()) is
    stopped in reverse order and the work folder removed, also on failure."""
    if len(sys.argv) != binaries + 1:
        print(doc, file=sys.stderr)
        return 2
    paths = [os.path.abspath(a) for a in sys.argv[1:]]
    run = Run(tempfile.mkdtemp(prefix=prefix))
    ok = False
    try:
        test(run, *paths)
        ok = True
    except AssertionError as e:
        print("FAIL: %s" % e)
    finally:
        for child in reversed(run.children):
            child.stop()
        shutil.rmtree(run.work, ignore_errors=True)
    print("PASS" if ok else "FAILED")
    return 0 if ok else 1
