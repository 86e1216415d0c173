"""Unit tests of the Python SDK: the signature's worked example (docs/protocol.md) and hostile
input against a live Executor. Run: python3 -m unittest discover -s sdk/python/tests"""

import hashlib
import http.client
import http.server
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from sched_client import (ApiError, Executor, Options, SpanExporter, addressed_target, check_tracestate,  # noqa: E402
                          parse_run, run_span, sign, verify, verify_addressee)

SECRET = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
KEY = "k-7f3a9c21"


class SignatureTest(unittest.TestCase):
    def test_worked_example_of_the_protocol_doc(self):
        body = b'{"attempt":0,"epoch":3,"fire_id":42,"handler":"echo","job_id":7}'
        self.assertEqual(sign(SECRET, "POST", "/v1/run", 1767225600000, KEY, body),
                         "v1=42e2e7af3cff2692d20b1515afba0c9ab3c5bf485a79ecef5bceeb65725b0c3d")
        self.assertEqual(sign(SECRET, "GET", "/v1/log?fire_id=42&from_line=0", 1767225600000, KEY, b""),
                         "v1=e990729a3423d7a205b92ccc41208f0f2647ccfb341eda5196b480169df82e10")
        # Addressed to the instance 10.0.0.7:9999, as nodes send it.
        self.assertEqual(addressed_target("/v1/run", "10.0.0.7:9999"), "/v1/run?instance=10.0.0.7:9999")
        self.assertEqual(sign(SECRET, "POST", "/v1/run?instance=10.0.0.7:9999", 1767225600000, KEY, body),
                         "v1=4eb4071b33fff37b8b4cc5f51cedf23933c74d5f87adb22920ebe5c391f6f87b")

    def test_addressing_binds_a_call_to_one_instance(self):
        self.assertEqual(addressed_target("/v1/log?fire_id=3", "[::1]:9999"), "/v1/log?fire_id=3&instance=%5B::1%5D:9999")
        self.assertIsNone(verify_addressee("/v1/log?fire_id=3&instance=%5B::1%5D:9999", "[::1]:9999"))
        self.assertIsNone(verify_addressee("/v1/run?instance=h:1", "h:1"))
        self.assertIsNone(verify_addressee("/v1/run", "h:1"))  # an older node's call: unaddressed
        self.assertIsNone(verify_addressee("/v1/log?fire_id=3&xinstance=h:2", "h:1"))
        self.assertIn("addressed to instance", verify_addressee("/v1/run?instance=h:2", "h:1"))
        self.assertIn("addressed to instance", verify_addressee("/v1/run?instance=H:1", "h:1"))
        self.assertIn("addressed to instance", verify_addressee("/v1/run?instance=", "h:1"))
        self.assertIn("more than once", verify_addressee("/v1/run?instance=h:1&instance=h:1", "h:1"))
        self.assertIn("malformed", verify_addressee("/v1/run?instance=h%3:1", "h:1"))
        self.assertIn("malformed", verify_addressee("/v1/run?instance=%ff:1", "h:1"))
        self.assertIn("malformed", verify_addressee("/v1/run?instance=" + "a" * 301, "a" * 301))
        self.assertIn("malformed", verify_addressee("/v1/run?instance=" + "%" * 100000, "h:1"))

    def test_verify_refuses_in_the_documented_order(self):
        keys = {KEY: SECRET}
        now = 1767225600000
        good = sign(SECRET, "POST", "/v1/run", now, KEY, b"{}")
        self.assertIsNone(verify("POST", "/v1/run", b"{}", KEY, str(now), good, keys, now))
        self.assertIn("no signing keys", verify("POST", "/v1/run", b"{}", KEY, str(now), good, {}, now))
        self.assertIn("missing", verify("POST", "/v1/run", b"{}", None, str(now), good, keys, now))
        self.assertIn("version", verify("POST", "/v1/run", b"{}", KEY, str(now), "v2=" + good[3:], keys, now))
        self.assertIn("decimal", verify("POST", "/v1/run", b"{}", KEY, "-5", good, keys, now))
        self.assertIn("window", verify("POST", "/v1/run", b"{}", KEY, str(now), good, keys, now + 30001))
        self.assertIn("unknown key", verify("POST", "/v1/run", b"{}", "k-other", str(now), good, keys, now))
        self.assertIn("bad signature", verify("POST", "/v1/run", b"{ }", KEY, str(now), good, keys, now))
        self.assertIn("bad signature", verify("POST", "/v1/runs", b"{}", KEY, str(now), good, keys, now))
        self.assertIn("bad signature", verify("POST", "/v1/run", b"{}", KEY, str(now), "v1=\u00e9", keys, now))


class LogBookTest(unittest.TestCase):
    def test_only_a_log_the_handler_wrote_in_has_a_tail(self):
        from sched_client.executor import _LogBook
        book = _LogBook(10, 100)
        book.open(1)
        book.append(1, "accepted: handler h")
        book.append(1, "finished: succeeded")
        self.assertEqual(book.read(1, 0, 10)["lines"], ["accepted: handler h", "finished: succeeded"])
        self.assertIsNone(book.tail(1, 1000))  # the fire's row says the same: nothing stored
        book.open(2)
        book.append(2, "started: shard 0/1")
        book.append(2, "copied 3 files", by_handler=True)
        self.assertEqual(book.tail(2, 1000), ("started: shard 0/1\ncopied 3 files", 0))

    def test_running_fires_are_kept_over_the_bound_and_the_first_finished_go_first(self):
        from sched_client.executor import _LogBook
        book = _LogBook(2, 100)
        for fire in (1, 2, 3):
            book.open(fire)
        # Three running fires, two retained: none is forgotten while it runs.
        self.assertTrue(all(book.read(f, 0, 10) is not None for f in (1, 2, 3)))
        book.close(3)  # the first to finish goes first, though it opened last
        self.assertIsNone(book.read(3, 0, 10))
        self.assertIsNotNone(book.read(1, 0, 10))
        book.close(1)
        book.close(2)  # two left, both finished: within the bound
        self.assertTrue(book.read(1, 0, 10)["finished"])
        book.open(4)
        self.assertIsNone(book.read(1, 0, 10))  # finished before 2
        self.assertIsNotNone(book.read(2, 0, 10))
        book.open(2)  # a new attempt of a remembered fire runs again: kept
        book.open(5)
        self.assertIsNotNone(book.read(2, 0, 10))
        self.assertIsNotNone(book.read(4, 0, 10))


class ParseRunTest(unittest.TestCase):
    BASE = {"fire_id": 1, "job_id": 2, "attempt": 0, "epoch": 1, "handler": "h"}

    def field_of(self, change, prefix=""):
        body = dict(self.BASE, **change)
        with self.assertRaises(ApiError) as ctx:
            parse_run(body, prefix)
        self.assertEqual(ctx.exception.status, 400)
        return ctx.exception.field

    def test_every_field_is_bounded_and_named(self):
        self.assertEqual(parse_run(dict(self.BASE))["block_strategy"], "serial")
        self.assertEqual(self.field_of({"fire_id": "1"}), "fire_id")
        self.assertEqual(self.field_of({"fire_id": True}), "fire_id")
        self.assertEqual(self.field_of({"job_id": -1}), "job_id")
        self.assertEqual(self.field_of({"attempt": 2**63}), "attempt")
        self.assertEqual(self.field_of({"epoch": 1.0}), "epoch")
        self.assertEqual(self.field_of({"handler": "x" * 129}), "handler")
        self.assertEqual(self.field_of({"timeout_ms": 8 * 24 * 3600 * 1000}), "timeout_ms")
        self.assertEqual(self.field_of({"shard_total": 0}), "shard_total")
        self.assertEqual(self.field_of({"shard_index": 3, "shard_total": 3}), "shard_index")
        self.assertEqual(self.field_of({"block_strategy": "later"}), "block_strategy")
        self.assertEqual(self.field_of({"callback_url": "file:///etc/passwd"}), "callback_url")
        self.assertEqual(self.field_of({"fire_id": None}, "runs[4]"), "runs[4].fire_id")
        self.assertEqual(self.field_of({"start_in_ms": -1}), "start_in_ms")
        self.assertEqual(self.field_of({"start_in_ms": 10001}, "runs[0]"), "runs[0].start_in_ms")
        self.assertEqual(parse_run(dict(self.BASE))["start_in_ms"], 0)
        with self.assertRaises(ApiError) as ctx:
            parse_run([1, 2], "runs[0]")
        self.assertEqual(ctx.exception.field, "runs[0]")

    def test_traceparent_is_read_as_the_w3c_specification_says(self):
        example = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        self.assertEqual(parse_run(dict(self.BASE, traceparent=example))["traceparent"], example)
        self.assertEqual(parse_run(dict(self.BASE))["traceparent"], "")
        later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more"
        self.assertEqual(parse_run(dict(self.BASE, traceparent=later))["traceparent"], later)
        for bad in ("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                    "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                    "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                    "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                    example + "-x", example[:-1], 7):
            self.assertEqual(self.field_of({"traceparent": bad}, "runs[1]"), "runs[1].traceparent", bad)


    def test_tracestate_is_forwarded_unchanged_only_with_its_traceparent(self):
        parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        state = "congo=t61rcWkgMzE, rojo=00f067aa0ba902b7"
        run = parse_run(dict(self.BASE, traceparent=parent, tracestate=state))
        self.assertEqual(run["tracestate"], state)
        self.assertEqual(parse_run(dict(self.BASE, traceparent=parent))["tracestate"], "")  # a node before it
        self.assertEqual(parse_run(dict(self.BASE, tracestate=state))["tracestate"], "")  # without its traceparent
        for bad in ("Upper=x", "k=" + "v" * 512, "novalue", "k=a=b", ",".join("k%d=v" % i for i in range(33)), 7):
            self.assertEqual(self.field_of({"traceparent": parent, "tracestate": bad}, "runs[1]"),
                             "runs[1].tracestate", bad)
        self.assertIsNone(check_tracestate(state))
        self.assertIsNone(check_tracestate("a@b=1,,x_y-z*/=2 "))


class HostileInputTest(unittest.TestCase):
    """A live Executor with a key set by hand (no cluster: its heartbeats fail, harmlessly)."""

    @classmethod
    def setUpClass(cls):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            dead = s.getsockname()[1]
        cls.ex = Executor(Options(app="t", web_endpoints=["http://127.0.0.1:%d" % dead], token="t" * 32,
                                  heartbeat_interval=60, body_limit=65536, json_max_depth=16, request_timeout=2,
                                  shutdown_grace=1, web_timeout=0.5))
        cls.ex.handle("h", lambda ctx: "ok")
        cls.ex.start()
        cls.ex._keys = {KEY: SECRET}

    @classmethod
    def tearDownClass(cls):
        cls.ex.stop()

    def call(self, method, target, body=b"", headers=None, signed=True):
        h = dict(headers or {})
        if signed:
            ts = int(time.time() * 1000)
            h.update({"X-Sched-Key-Id": KEY, "X-Sched-Timestamp": str(ts),
                      "X-Sched-Signature": sign(SECRET, method, target, ts, KEY, body)})
        conn = http.client.HTTPConnection("127.0.0.1", self.ex.port, timeout=5)
        try:
            conn.request(method, target, body if method == "POST" else None, h)
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        return resp.status, json.loads(data) if data else None

    def test_unsigned_is_401_before_anything_else(self):
        self.assertEqual(self.call("POST", "/v1/run", b"not json", signed=False)[0], 401)
        self.assertEqual(self.call("GET", "/nope", signed=False)[0], 401)

    def test_oversized_body_is_413_naming_body(self):
        status, body = self.call("POST", "/v1/run", b" " * 70000)
        self.assertEqual(status, 413)
        self.assertEqual(body["error"]["field"], "body")

    def test_deep_nesting_is_400_without_recursion(self):
        status, body = self.call("POST", "/v1/run", b"[" * 5000 + b"]" * 5000)
        self.assertEqual((status, body["error"]["field"]), (400, "body"))
        status, body = self.call("POST", "/v1/run", b'{"fire_id":1,"params":' + b"[" * 17 + b"]" * 17 + b"}")
        self.assertEqual(status, 400)

    def test_bad_utf8_and_not_json_are_400(self):
        self.assertEqual(self.call("POST", "/v1/run", b'{"handler":"\xff"}')[0], 400)
        self.assertEqual(self.call("POST", "/v1/kill", b"[]")[1]["error"]["field"], "body")
        self.assertEqual(self.call("POST", "/v1/idle-beat", b'{"job_id":-3}')[1]["error"]["field"], "job_id")

    def test_batch_envelope_bounds(self):
        run = {"fire_id": 1, "job_id": 1, "attempt": 0, "epoch": 0, "handler": "nope"}
        status, body = self.call("POST", "/v1/runs", json.dumps({"runs": [{}] * 1001}).encode())
        self.assertEqual((status, body["error"]["field"]), (400, "runs"))
        status, body = self.call("POST", "/v1/runs", json.dumps({"runs": [run], "extra": 1}).encode())
        self.assertEqual((status, body["error"]["field"]), (400, "extra"))
        status, body = self.call("POST", "/v1/runs", json.dumps({"runs": [run, 5]}).encode())
        self.assertEqual(status, 200)
        self.assertEqual([r["error"]["field"] for r in body["results"]], ["runs[0].handler", "runs[1]"])

    def test_a_run_sent_ahead_starts_when_its_time_comes_and_not_before(self):
        started = {}
        self.ex._handlers["h"] = lambda ctx: started.setdefault(ctx.fire_id, time.monotonic())
        try:
            runs = [{"fire_id": 901, "job_id": 901, "attempt": 0, "epoch": 0, "handler": "h", "start_in_ms": 300},
                    {"fire_id": 902, "job_id": 902, "attempt": 0, "epoch": 0, "handler": "h"}]
            before = time.monotonic()
            status, body = self.call("POST", "/v1/runs-ahead", json.dumps({"runs": runs}).encode())
            answered = time.monotonic()
            self.assertEqual(status, 200)
            self.assertEqual([r["status"] for r in body["results"]], [202, 202])
            deadline = time.monotonic() + 5
            while len(started) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            self.assertEqual(sorted(started), [901, 902])
            self.assertLess(started[902], before + 0.3)
            self.assertGreaterEqual(started[901], before + 0.3)
            self.assertLess(started[901], answered + 0.3 + 0.5)
        finally:
            self.ex._handlers["h"] = lambda ctx: "ok"

    def test_held_first_attempts_of_one_scheduled_time_start_together_at_the_earliest_hold(self):
        # Each node's hold ends at the due time plus its own request's transit: the first
        # attempts of one scheduled time start at the earliest hold within 25 ms. A retry of
        # that time, or another time, keeps its own hold.
        started = {}
        self.ex._handlers["h"] = lambda ctx: started.setdefault(ctx.fire_id, time.monotonic())
        due = 1800000000000
        try:
            def run(fire_id, start_in_ms, scheduled_ms, attempt):
                return {"fire_id": fire_id, "job_id": fire_id, "attempt": attempt, "epoch": 0, "handler": "h",
                        "start_in_ms": start_in_ms, "scheduled_ms": scheduled_ms}
            runs = [run(911, 300, due, 0),
                    run(912, 324, due, 0),          # due at the same time: starts with fire 911
                    run(913, 324, due, 1),          # a retry: its own hold
                    run(914, 324, due + 1000, 0)]   # another due time: its own hold
            before = time.monotonic()
            status, body = self.call("POST", "/v1/runs-ahead", json.dumps({"runs": runs}).encode())
            self.assertEqual(status, 200)
            self.assertEqual([r["status"] for r in body["results"]], [202] * 4)
            deadline = time.monotonic() + 5
            while len(started) < 4 and time.monotonic() < deadline:
                time.sleep(0.01)
            self.assertEqual(sorted(started), [911, 912, 913, 914])
            self.assertGreaterEqual(started[911], before + 0.3)
            # Apart, 24 ms.
            self.assertLess(abs(started[912] - started[911]), 0.015, "fire 912 kept its own hold")
            self.assertGreaterEqual(started[913], before + 0.324, "a retry joined the first attempts' hold")
            self.assertGreaterEqual(started[914], before + 0.324, "another due time joined the hold")
        finally:
            self.ex._handlers["h"] = lambda ctx: "ok"

    def test_a_call_addressed_to_another_instance_is_401(self):
        own = self.ex.address
        self.assertEqual(self.call("GET", addressed_target("/v1/beat", own))[0], 200)
        self.assertEqual(self.call("GET", "/v1/beat")[0], 200)  # an older node addresses nobody
        for method, target in (("GET", "/v1/beat"), ("POST", "/v1/run"), ("POST", "/v1/kill"),
                               ("GET", "/v1/log?fire_id=1")):
            status, body = self.call(method, addressed_target(target, "127.0.0.1:1"), b"{}")
            self.assertEqual(status, 401, target)

    def test_a_kill_reason_is_read_leniently_but_bounded(self):
        for reason in (5, "t" * 65, ["timeout"]):
            status, body = self.call("POST", "/v1/kill", json.dumps({"fire_id": 1, "reason": reason}).encode())
            self.assertEqual((status, body["error"]["field"]), (400, "reason"))
        # An unknown reason (a newer node's) is a kill: here of a fire that is not here.
        self.assertEqual(self.call("POST", "/v1/kill", json.dumps({"fire_id": 1, "reason": "drain"}).encode())[0],
                         404)

    def test_a_timeout_kill_waits_for_the_runs_own_timeout_counted_from_its_start(self):
        import threading
        release = threading.Event()
        self.ex._handlers["block"] = lambda ctx: release.wait(10) and "released"
        try:
            before = dict(self.ex.stats)
            runs = [{"fire_id": 1101, "job_id": 77, "attempt": 0, "epoch": 0, "handler": "block"},
                    {"fire_id": 1102, "job_id": 77, "attempt": 0, "epoch": 0, "handler": "h", "timeout_ms": 10000}]
            status, body = self.call("POST", "/v1/runs", json.dumps({"runs": runs}).encode())
            self.assertEqual([r.get("state") for r in body["results"]], ["running", "queued"])
            # Queued behind the job's running fire: its timeout has not begun.
            kill = json.dumps({"fire_id": 1102, "reason": "timeout"}).encode()
            self.assertEqual(self.call("POST", "/v1/kill", kill),
                             (200, {"fire_id": 1102, "state": "queued", "timeout_in_ms": 10000}))
            # Running without a timeout of its own: the node's watch is its only clock.
            status, body = self.call("POST", "/v1/kill", json.dumps({"fire_id": 1101, "reason": "timeout"}).encode())
            self.assertEqual((status, body), (200, {"fire_id": 1101, "state": "running"}))
            release.set()
            deadline = time.monotonic() + 5
            while self.ex.stats["succeeded"] < before.get("succeeded", 0) + 1 and time.monotonic() < deadline:
                time.sleep(0.01)
            self.assertEqual(self.ex.stats["timeout"], before.get("timeout", 0) + 1)
            self.assertEqual(self.ex.stats["succeeded"], before.get("succeeded", 0) + 1)
            self.assertEqual(self.ex.stats["killed"], before.get("killed", 0))
        finally:
            release.set()
            del self.ex._handlers["block"]

    def test_log_query_is_validated(self):
        self.assertEqual(self.call("GET", "/v1/log")[1]["error"]["field"], "fire_id")
        self.assertEqual(self.call("GET", "/v1/log?fire_id=1&from_line=-1")[1]["error"]["field"], "from_line")
        self.assertEqual(self.call("GET", "/v1/log?fire_id=" + "9" * 40)[1]["error"]["field"], "fire_id")
        self.assertEqual(self.call("GET", "/v1/log?fire_id=123456")[0], 404)

    def test_chunked_and_bad_content_length_are_refused(self):
        self.assertEqual(self.call("POST", "/v1/run", b"{}", {"Transfer-Encoding": "chunked"}, signed=False)[0], 400)
        with socket.create_connection(("127.0.0.1", self.ex.port), timeout=5) as s:
            s.sendall(b"POST /v1/run HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999\r\n\r\n")
            self.assertIn(b" 400 ", s.recv(4096))

    def test_a_silent_connection_is_closed(self):
        with socket.create_connection(("127.0.0.1", self.ex.port), timeout=5) as s:
            s.sendall(b"POST /v1/run HTTP/1.1\r\n")
            start = time.monotonic()
            self.assertEqual(s.recv(4096), b"")  # closed after request_timeout, no answer
            self.assertLess(time.monotonic() - start, 4.5)


def make_pki(directory, name):
    """A CA and a certificate for 127.0.0.1 signed by it, made with the openssl command."""
    def run(*args):
        subprocess.run(["openssl"] + list(args), cwd=directory, check=True, capture_output=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    run("req", "-x509", *ec, "-keyout", name + "-ca.key", "-out", name + "-ca.crt", "-days", "2",
        "-subj", "/CN=%s test CA" % name)
    with open(os.path.join(directory, name + ".ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n")
    run("req", *ec, "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=127.0.0.1")
    run("x509", "-req", "-in", name + ".csr", "-CA", name + "-ca.crt", "-CAkey", name + "-ca.key",
        "-CAcreateserial", "-days", "2", "-out", name + ".crt", "-extfile", name + ".ext")
    return {k: os.path.join(directory, name + suffix)
            for k, suffix in (("ca", "-ca.crt"), ("cert", ".crt"), ("key", ".key"))}


def _answer_json(handler, status, answer):
    """Answers the request `handler` serves with `status` and `answer` as JSON."""
    data = json.dumps(answer).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


class _FakeWeb(http.server.BaseHTTPRequestHandler):
    """Records the paths POSTed to it and answers {} (enough to see the executor's calls arrive)."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.paths.append(self.path)
        _answer_json(self, 200, {})

    def log_message(self, *args):
        pass


@unittest.skipUnless(shutil.which("openssl"), "needs the openssl command")
class TlsTest(unittest.TestCase):
    """The executor serving HTTPS and calling an https web endpoint, verified against a CA."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="sched-py-tls-")
        cls.pki = make_pki(cls.dir, "cluster")
        cls.other = make_pki(cls.dir, "stranger")
        server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server_ctx.load_cert_chain(cls.pki["cert"], cls.pki["key"])
        cls.web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _FakeWeb)
        cls.web.paths = []
        cls.web.socket = server_ctx.wrap_socket(cls.web.socket, server_side=True)
        threading.Thread(target=cls.web.serve_forever, daemon=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.web.shutdown()
        cls.web.server_close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def executor(self, **tls):
        ex = Executor(Options(app="t", web_endpoints=["https://127.0.0.1:%d" % self.web.server_address[1]],
                              token="t" * 32, heartbeat_interval=0.2, request_timeout=2, shutdown_grace=1,
                              web_timeout=1, tls_cert_file=self.pki["cert"], tls_key_file=self.pki["key"], **tls))
        ex.handle("h", lambda ctx: "ok")
        ex.start()
        self.addCleanup(ex.stop)
        return ex

    def get(self, port, context):
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=5, context=context)
        try:
            conn.request("GET", "/v1/log?fire_id=1")
            return conn.getresponse().status
        finally:
            conn.close()

    def test_serves_https_and_calls_an_https_web_endpoint_verified_against_the_ca(self):
        before = len(self.web.paths)
        ex = self.executor(ca_file=self.pki["ca"])
        # An unsigned call over TLS reaches the executor's checks (401): the TLS layer works.
        self.assertEqual(self.get(ex.port, ssl.create_default_context(cafile=self.pki["ca"])), 401)
        # A client trusting another CA refuses the executor's certificate.
        with self.assertRaises(ssl.SSLCertVerificationError) as refused:
            self.get(ex.port, ssl.create_default_context(cafile=self.other["ca"]))
        self.assertIn("unable to get local issuer certificate", str(refused.exception))
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and len(self.web.paths) == before:
            time.sleep(0.05)
        self.assertGreater(len(self.web.paths), before, "no heartbeat reached the https web endpoint")

    def test_a_web_endpoint_signed_by_another_ca_gets_no_call(self):
        before = len(self.web.paths)
        with self.assertLogs("sched_client", level="WARNING") as logs:
            self.executor(ca_file=self.other["ca"])
            time.sleep(1.0)
        self.assertEqual(len(self.web.paths), before)
        self.assertTrue(any("certificate verify failed" in line for line in logs.output), logs.output)

    def test_client_certificates_are_required_when_a_client_ca_is_set(self):
        ex = self.executor(ca_file=self.pki["ca"], tls_client_ca_file=self.pki["ca"])
        anonymous = ssl.create_default_context(cafile=self.pki["ca"])
        with self.assertRaises((ssl.SSLError, ConnectionError, http.client.HTTPException)):
            self.get(ex.port, anonymous)
        member = ssl.create_default_context(cafile=self.pki["ca"])
        member.load_cert_chain(self.pki["cert"], self.pki["key"])
        self.assertEqual(self.get(ex.port, member), 401)

    def test_reload_serves_new_files_to_new_connections_and_keeps_the_old_on_a_bad_file(self):
        # The executor's files are copies, so the test can replace them.
        files = {k: os.path.join(self.dir, "reload-" + k) for k in ("cert", "key")}
        for k, path in files.items():
            shutil.copyfile(self.pki[k], path)
        ex = Executor(Options(app="t", web_endpoints=["https://127.0.0.1:%d" % self.web.server_address[1]],
                              token="t" * 32, heartbeat_interval=0.2, request_timeout=2, shutdown_grace=1,
                              web_timeout=1, ca_file=self.pki["ca"], tls_cert_file=files["cert"],
                              tls_key_file=files["key"]))
        ex.handle("h", lambda ctx: "ok")
        ex.start()
        self.addCleanup(ex.stop)
        cluster_ca = ssl.create_default_context(cafile=self.pki["ca"])
        stranger_ca = ssl.create_default_context(cafile=self.other["ca"])
        self.assertEqual(self.get(ex.port, cluster_ca), 401)
        # A half-written certificate is refused and the old one stays in use.
        with open(files["cert"], "w") as f:
            f.write("-----BEGIN CERTIFICATE-----\n")
        with self.assertLogs("sched_client", level="ERROR"):
            self.assertFalse(ex.reload_tls())
        self.assertEqual(self.get(ex.port, cluster_ca), 401)
        # The stranger's certificate: new connections get it at once after reload_tls().
        for k, path in files.items():
            shutil.copyfile(self.other[k], path)
        self.assertTrue(ex.reload_tls())
        self.assertEqual(self.get(ex.port, stranger_ca), 401)
        with self.assertRaises(ssl.SSLCertVerificationError):
            self.get(ex.port, cluster_ca)
        # Back to the cluster's files, picked up by the heartbeat loop from their new mtimes.
        for k, path in files.items():
            shutil.copyfile(self.pki[k], path)
            os.utime(path, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                if self.get(ex.port, cluster_ca) == 401:
                    break
            except ssl.SSLCertVerificationError:
                time.sleep(0.1)
        self.assertEqual(self.get(ex.port, cluster_ca), 401)

    def test_half_configured_tls_is_refused(self):
        with self.assertRaises(ValueError):
            Options(app="t", web_endpoints=["https://w"], token="t", tls_cert_file="c.pem")

class _Collector(http.server.BaseHTTPRequestHandler):
    status = 200
    bodies: list = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).bodies.append(json.loads(body))
        self.send_response(type(self).status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


class _RegistryWeb(http.server.BaseHTTPRequestHandler):
    """A web module's registry and callback routes: heartbeats answered with KEY and the class's
    `capabilities`; without result-traceparent a result carrying `traceparent` is refused 400,
    as a web module before the field refuses an unknown field."""
    capabilities = []
    results = []
    heartbeats = 0

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        cls = type(self)
        status, answer = 200, {}
        if self.path == "/api/v1/registry/heartbeat":
            cls.heartbeats += 1
            answer = {"registered": True, "signing": {"keys": [{"id": KEY, "secret": SECRET, "active_from_ms": 0}],
                                                      "server_time_ms": int(time.time() * 1000)}}
            if cls.capabilities:
                answer["capabilities"] = cls.capabilities
        elif self.path == "/api/v1/callback":
            if "result-traceparent" not in cls.capabilities and any("traceparent" in r for r in body):
                status, answer = 400, {"error": {"code": "invalid_argument", "message": "unknown field",
                                                 "field": "[0].traceparent"}}
            else:
                cls.results.extend(body)
        _answer_json(self, status, answer)

    def log_message(self, *args):
        pass


class ResultTraceparentTest(unittest.TestCase):
    """A result carries its run's traceparent only when every web endpoint advertised it."""

    PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    def web(self, capabilities):
        handler = type("Web", (_RegistryWeb,), {"capabilities": capabilities, "results": [], "heartbeats": 0})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        return handler, "http://127.0.0.1:%d" % server.server_address[1]

    def result_of(self, webs):
        (first, first_url), (second, second_url) = webs
        ex = Executor(Options(app="t", web_endpoints=[first_url, second_url], token="t" * 32,
                              heartbeat_interval=0.1, shutdown_grace=1, web_timeout=2))
        ex.handle("h", lambda ctx: "ok")
        ex.start()
        self.addCleanup(ex.stop)
        deadline = time.time() + 10
        while time.time() < deadline and (not ex._keys or second.heartbeats == 0):
            time.sleep(0.02)
        self.assertGreater(second.heartbeats, 0, "the second endpoint was never asked")
        body = json.dumps({"fire_id": 7, "job_id": 1, "attempt": 0, "epoch": 1, "handler": "h",
                           "traceparent": self.PARENT}).encode()
        ts = int(time.time() * 1000)
        conn = http.client.HTTPConnection("127.0.0.1", ex.port, timeout=5)
        conn.request("POST", "/v1/run", body, {"X-Sched-Key-Id": KEY, "X-Sched-Timestamp": str(ts),
                                               "X-Sched-Signature": sign(SECRET, "POST", "/v1/run", ts, KEY, body)})
        self.assertEqual(conn.getresponse().status, 202)
        conn.close()
        while time.time() < deadline and not first.results:
            time.sleep(0.02)
        self.assertEqual(len(first.results), 1, "the result did not arrive")
        return first.results[0]

    def test_an_older_endpoint_gets_results_without_it(self):
        result = self.result_of([self.web(["result-traceparent"]), self.web([])])
        self.assertEqual(result["status"], "succeeded")
        self.assertNotIn("traceparent", result)

    def test_every_endpoint_advertising_it_gets_it(self):
        result = self.result_of([self.web(["result-traceparent"]), self.web(["result-traceparent", "later"])])
        self.assertEqual(result["traceparent"], self.PARENT)


class SpanExporterTest(unittest.TestCase):
    """The run's span over OTLP/HTTP against a real loopback collector."""

    def collector(self, status):
        handler = type("Collector%d" % status, (_Collector,), {"status": status, "bodies": []})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        return handler, "http://127.0.0.1:%d/v1/traces" % server.server_address[1]

    def test_run_span_is_a_child_of_the_traceparent_with_the_derived_id(self):
        parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        run = parse_run({"fire_id": 42, "job_id": 7, "attempt": 1, "epoch": 3, "handler": "echo",
                         "traceparent": parent})
        span = run_span(run, {"started_ms": 1000, "finished_ms": 1500, "status": "failed", "message": "boom"},
                        "billing", "h:1")
        self.assertEqual(span["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736")
        self.assertEqual(span["parentSpanId"], "00f067aa0ba902b7")
        expected = hashlib.sha256(b"sched-step/4bf92f3577b34da6a3ce929d0e0e4736/00f067aa0ba902b7/run").hexdigest()
        self.assertEqual(span["spanId"], expected[:16])
        self.assertEqual(span["startTimeUnixNano"], "1000000000")
        self.assertEqual(span["status"], {"code": 2, "message": "boom"})
        attrs = {a["key"]: a["value"] for a in span["attributes"]}
        self.assertEqual(attrs["sched.fire_id"], {"intValue": "42"})
        self.assertEqual(attrs["sched.app"], {"stringValue": "billing"})
        self.assertNotIn("traceState", span)
        run["tracestate"] = "vendor=opaque"
        self.assertEqual(run_span(run, {"started_ms": 1, "finished_ms": 1, "status": "succeeded"}, "a", "h:1")
                         ["traceState"], "vendor=opaque")
        self.assertIsNone(run_span(parse_run({"fire_id": 1, "job_id": 1, "attempt": 0, "epoch": 1, "handler": "x"}),
                                   {"started_ms": 1, "finished_ms": 1, "status": "succeeded"}, "a", "h:1"))

    def test_posts_batches_and_a_full_queue_drops(self):
        handler, url = self.collector(200)
        exporter = SpanExporter(url, "svc", batch_size=2, flush_interval=0.05, queue_limit=3)
        self.assertTrue(all(exporter.push({"name": "s%d" % i}) for i in range(3)))
        self.assertFalse(exporter.push({"name": "dropped"}))  # not started: the queue is full
        self.assertEqual(exporter.dropped_queue_full, 1)
        exporter.start()
        deadline = time.monotonic() + 5
        while exporter.exported < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        exporter.stop()
        self.assertEqual(exporter.exported, 3)
        spans = [s for b in handler.bodies for s in b["resourceSpans"][0]["scopeSpans"][0]["spans"]]
        self.assertEqual(sorted(s["name"] for s in spans), ["s0", "s1", "s2"])
        self.assertEqual(handler.bodies[0]["resourceSpans"][0]["resource"]["attributes"][0]["value"],
                         {"stringValue": "svc"})

    def test_retries_a_503_then_drops_the_batch(self):
        handler, url = self.collector(503)
        exporter = SpanExporter(url, "svc", batch_size=1, flush_interval=0.05, retries=2)
        exporter.start()
        exporter.push({"name": "s"})
        deadline = time.monotonic() + 5
        while exporter.dropped_export_failed < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        exporter.stop()
        self.assertEqual(exporter.dropped_export_failed, 1)
        self.assertEqual(len(handler.bodies), 3)  # the first attempt and two retries
        self.assertEqual(exporter.exported, 0)



if __name__ == "__main__":
    unittest.main()
