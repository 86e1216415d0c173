#!/usr/bin/env python3
"""Executor protocol conformance kit (docs/protocol.md "Conformance kit"). Python 3 standard
library only.

It plays the cluster: serves POST /api/v1/registry/heartbeat, /registry/deregister and
/api/v1/callback on a loopback port (handing out a signing key as the real cluster does),
starts the executor under test from the command line given after `--`, drives it through each
clause of the protocol with signed calls, prints PASS/FAIL/SKIP per clause, stops the executor
by its PID and exits 1 when a required clause failed (0 otherwise, 2 for bad usage).

    sched_conformance.py [--app demo] [--template FILE] -- COMMAND [ARGS...]

In COMMAND, its ARGS and the template these are substituted: {url} the kit's base URL (the
executor's web endpoint), {token} the executor token it must send, {app}, {port} a free
loopback port the executor may listen on, {workdir} a scratch directory, {config} the path of
the rendered --template. The executor must register the conformance handler set:
conformance.echo, conformance.sleep, conformance.fail.
"""

import argparse
import collections
import hashlib
import hmac
import http.client
import http.server
import json
import os
import secrets
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time

KIT_VERSION = "1"
HANDLERS = ("conformance.echo", "conformance.sleep", "conformance.fail")


def now_ms():
    return int(time.time() * 1000)


def sign(secret, method, target, timestamp, key_id, body):
    canon = "\n".join(["v1", method, target, str(timestamp), key_id, hashlib.sha256(body).hexdigest()])
    return "v1=" + hmac.new(secret.encode(), canon.encode(), hashlib.sha256).hexdigest()


def addressed(target, instance):
    """`target` addressed to one instance, as nodes send every call (docs/protocol.md "Replays")."""
    safe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:"
    encoded = "".join(c if c in safe else "".join("%%%02X" % b for b in c.encode()) for c in instance)
    return target + ("&" if "?" in target else "?") + "instance=" + encoded


class Cluster:
    """The cluster's side: what the executor calls, and what it sent."""

    def __init__(self, app, token):
        self.app = app
        self.token = token
        self.key_id = "k-" + secrets.token_hex(8)
        self.secret = secrets.token_hex(32)
        self.mu = threading.Condition()
        self.heartbeats = []
        self.deregisters = []
        self.results = []  # every result item of every accepted callback
        self.callback_posts = collections.Counter()  # fire_id -> callback requests naming it
        self.fail_first_callback_of = set()  # fire ids whose first callback gets 503
        self.protocol_errors = []
        self.unauthorized = 0

    def wait_for(self, predicate, timeout):
        deadline = time.monotonic() + timeout
        with self.mu:
            while True:
                value = predicate()
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    return value
                self.mu.wait(min(left, 0.1))

    def results_for(self, fire_id, attempt=None):
        return [r for r in self.results if r.get("fire_id") == fire_id and (attempt is None or r.get("attempt") == attempt)]

    def handle(self, path, headers, body):
        if headers.get("Authorization") != "Bearer " + self.token:
            with self.mu:
                self.unauthorized += 1
            return 401, {"error": {"code": "unauthenticated", "message": "bad or missing executor token",
                                   "field": "Authorization"}}
        try:
            doc = json.loads(body)
        except ValueError:
            return 400, {"error": {"code": "invalid_argument", "message": "body: not JSON", "field": "body"}}
        with self.mu:
            try:
                if path == "/api/v1/registry/heartbeat":
                    self.heartbeats.append((time.monotonic(), doc))
                    return 200, {"registered": True,
                                 "signing": {"keys": [{"id": self.key_id, "secret": self.secret,
                                                       "active_from_ms": now_ms() - 1000}],
                                             "server_time_ms": now_ms()}}
                if path == "/api/v1/registry/deregister":
                    self.deregisters.append(doc)
                    return 200, {"deregistered": True}
                if path == "/api/v1/callback":
                    if not isinstance(doc, list):
                        self.protocol_errors.append("callback body is not an array")
                        return 400, {"error": {"code": "invalid_argument", "message": "expected an array",
                                               "field": "body"}}
                    ids = [r.get("fire_id") for r in doc if isinstance(r, dict)]
                    for fid in ids:
                        self.callback_posts[fid] += 1
                    if any(fid in self.fail_first_callback_of for fid in ids):
                        self.fail_first_callback_of.difference_update(ids)
                        return 503, {"error": {"code": "unavailable", "message": "kit: try again", "field": None}}
                    self.results.extend(r for r in doc if isinstance(r, dict))
                    return 200, {"results": [{"fire_id": fid, "outcome": "applied"} for fid in ids]}
                return 404, {"error": {"code": "not_found", "message": "no route", "field": None}}
            finally:
                self.mu.notify_all()


def serve_cluster(cluster):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if 0 <= n <= 8 * 1024 * 1024 else b""
            status, answer = cluster.handle(self.path, self.headers, body)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Executor:
    """Signed calls to the executor under test."""

    def __init__(self, address, cluster):
        host, _, port = address.rpartition(":")
        self.address = address
        self.host = host.strip("[]") or "127.0.0.1"
        self.port = int(port)
        self.cluster = cluster

    def call(self, method, target, body=None, sign_as="good", timeout=10.0, to=None):
        """Returns (status, parsed JSON or raw text). `sign_as`: good, none, bad-signature,
        unknown-key, old-timestamp, v2. The call is addressed to `to` (default: this instance's
        registered address, as a node addresses it; "" for none, as a node older than that)."""
        to = self.address if to is None else to
        if to:
            target = addressed(target, to)
        raw = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        headers = {"Content-Type": "application/json"} if body is not None else {}
        ts = now_ms() - (300_000 if sign_as == "old-timestamp" else 0)
        key_id = "k-" + "0" * 16 if sign_as == "unknown-key" else self.cluster.key_id
        sig = sign(self.cluster.secret, method, target, ts, key_id, raw)
        if sign_as == "bad-signature":
            sig = sig[:-4] + ("0000" if not sig.endswith("0000") else "1111")
        if sign_as == "v2":
            sig = "v2=" + sig[3:]
        if sign_as != "none":
            headers.update({"X-Sched-Key-Id": key_id, "X-Sched-Timestamp": str(ts), "X-Sched-Signature": sig})
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, target, raw if body is not None else None, headers)
            resp = conn.getresponse()
            text = resp.read()
        finally:
            conn.close()
        try:
            return resp.status, json.loads(text) if text else None
        except ValueError:
            return resp.status, text.decode("utf-8", "replace")


class Failed(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Failed(message)


def names_field(answer, field):
    """True when an error answer names `field` (its `error.field`, or the message)."""
    if isinstance(answer, dict) and isinstance(answer.get("error"), dict):
        e = answer["error"]
        return (isinstance(e.get("field"), str) and e["field"].endswith(field)) or field in str(e.get("message", ""))
    return field in str(answer)


class Kit:
    def __init__(self, cluster, app, timeout):
        self.cluster = cluster
        self.app = app
        self.timeout = timeout
        self.ex = None
        self.epoch = 3
        self.next_fire = 1000 + secrets.randbelow(1000) * 1000
        self.outcomes = []  # (name, verdict, detail, required)

    def fire(self):
        self.next_fire += 1
        return self.next_fire

    def run_body(self, fire_id, handler, params=None, job_id=None, attempt=0, epoch=None, **extra):
        body = {"fire_id": fire_id, "job_id": job_id if job_id is not None else fire_id, "attempt": attempt,
                "epoch": self.epoch if epoch is None else epoch, "handler": handler,
                "params": params if params is not None else {}, "scheduled_ms": now_ms(), "timeout_ms": 60000,
                "shard_index": 0, "shard_total": 1, "block_strategy": "serial"}
        body.update(extra)
        return body

    def kill_then_queued_runs(self, running, name, killed_name, queued, queued_failure):
        """Kills the run `running` by request: it is reported killed and the run `queued` behind
        it then runs and succeeds (`queued_failure` % its status, when not)."""
        status, body = self.ex.call("POST", "/v1/kill", {"fire_id": running})
        check(status == 200, "kill of %s: %s %s" % (name, status, body))
        check(self.result(running).get("status") == "killed", "%s was not reported killed" % killed_name)
        r = self.result(queued)
        check(r.get("status") == "succeeded", queued_failure % r.get("status"))

    def result(self, fire_id, attempt=None, timeout=None):
        got = self.cluster.wait_for(lambda: self.cluster.results_for(fire_id, attempt), timeout or self.timeout)
        check(got, "no callback result for fire %d within %.0f s" % (fire_id, timeout or self.timeout))
        return got[0]

    def clause(self, name, fn, required=True):
        try:
            detail = fn()
            verdict = "SKIP" if isinstance(detail, str) and detail.startswith("skip:") else "PASS"
        except Failed as e:
            verdict, detail = "FAIL", str(e)
        except (OSError, http.client.HTTPException) as e:
            verdict, detail = "FAIL", "call failed: %s" % e
        except Exception as e:  # an answer of an unexpected shape, say
            verdict, detail = "FAIL", "unexpected answer (%s: %s)" % (type(e).__name__, e)
        if verdict == "SKIP":
            detail = detail[len("skip:"):].strip()
        self.outcomes.append((name, verdict, detail or "", required))
        print("%-4s  %-16s %s" % (verdict, name, detail or ""), flush=True)
        return verdict == "PASS"

    # ---- clauses ----

    def register(self):
        got = self.cluster.wait_for(lambda: self.cluster.heartbeats or self.proc.poll() is not None, 20.0)
        check(self.cluster.heartbeats or self.proc.poll() is None,
              "the executor exited with code %s before its first heartbeat" % self.proc.poll())
        got = self.cluster.heartbeats
        check(got, "no authorized heartbeat within 20 s (%d refused for a bad token)" % self.cluster.unauthorized)
        hb = got[0][1]
        check(isinstance(hb, dict), "heartbeat body is not an object")
        check(hb.get("app") == self.app, "heartbeat app %r, expected %r" % (hb.get("app"), self.app))
        check(isinstance(hb.get("address"), str) and ":" in hb["address"], "heartbeat address %r" % hb.get("address"))
        handlers = hb.get("handlers")
        check(isinstance(handlers, list), "heartbeat handlers is not a list")
        missing = [h for h in HANDLERS if h not in handlers]
        check(not missing, "conformance handlers missing from the heartbeat: %s" % ", ".join(missing))
        for f in ("capacity", "running"):
            check(isinstance(hb.get(f), int), "heartbeat %s is not an integer" % f)
        self.address = hb["address"]
        self.ex = Executor(hb["address"], self.cluster)
        # The executor holds the key once it has read the answer: poll until it verifies us.
        deadline = time.monotonic() + 10
        status = None
        while time.monotonic() < deadline:
            try:
                status, _ = self.ex.call("GET", "/v1/beat")
            except OSError:
                status = None
            if status == 200:
                break
            time.sleep(0.1)
        check(status == 200, "signed GET /v1/beat never answered 200 after the heartbeat (last %s)" % status)
        return "app %s at %s" % (self.app, hb["address"])

    def beat(self):
        status, body = self.ex.call("GET", "/v1/beat")
        check(status == 200, "GET /v1/beat: %s %s" % (status, body))
        check(isinstance(body, dict) and body.get("app") == self.app, "beat app: %s" % body)
        check(all(h in (body.get("handlers") or []) for h in HANDLERS), "beat handlers: %s" % body.get("handlers"))
        for f in ("capacity", "running", "epoch"):
            check(isinstance(body.get(f), int), "beat %s is not an integer: %s" % (f, body))
        check(isinstance(body.get("address"), str), "beat address missing")

    def run_result(self):
        self.marker = "m-" + secrets.token_hex(6)
        self.echo_fire = self.fire()
        status, body = self.ex.call("POST", "/v1/run", self.run_body(self.echo_fire, "conformance.echo",
                                                                      {"marker": self.marker}, attempt=2))
        check(status == 202, "POST /v1/run: %s %s" % (status, body))
        r = self.result(self.echo_fire)
        check(r.get("attempt") == 2, "result attempt %r, expected 2" % r.get("attempt"))
        check(r.get("epoch") == self.epoch, "result epoch %r, expected %d" % (r.get("epoch"), self.epoch))
        check(r.get("status") == "succeeded", "result status %r: %s" % (r.get("status"), r.get("message")))
        for f in ("started_ms", "finished_ms"):
            check(isinstance(r.get(f), int), "result %s is not an integer" % f)
        check(r["finished_ms"] >= r["started_ms"], "finished_ms before started_ms")
        # The cluster applies a result of a scoped executor token only with the address it was sent to.
        check(r.get("address") == self.address, "result address %r, expected the registered %r"
              % (r.get("address"), self.address))
        if "log" in r:
            check(isinstance(r["log"], str) and self.marker in r["log"], "result log tail lacks the echo's line")
        fail_fire = self.fire()
        status, body = self.ex.call("POST", "/v1/run", self.run_body(fail_fire, "conformance.fail",
                                                                      {"message": "kit says no"}))
        check(status == 202, "POST /v1/run (fail): %s %s" % (status, body))
        r = self.result(fail_fire)
        check(r.get("status") == "failed", "conformance.fail result status %r" % r.get("status"))
        return "fire %d succeeded (attempt 2, epoch %d); fire %d failed" % (self.echo_fire, self.epoch, fail_fire)

    def log(self):
        status, body = self.ex.call("GET", "/v1/log?fire_id=%d&from_line=0" % self.echo_fire)
        check(status == 200, "GET /v1/log: %s %s" % (status, body))
        lines = body.get("lines") if isinstance(body, dict) else None
        check(isinstance(lines, list) and any(self.marker in str(x) for x in lines),
              "the echo's log lacks its params: %s" % lines)
        check(body.get("fire_id") == self.echo_fire and body.get("finished") is True, "log page: %s" % body)
        check(isinstance(body.get("from_line"), int) and isinstance(body.get("to_line"), int), "log page lines range")
        status, body = self.ex.call("GET", "/v1/log?fire_id=%d&from_line=1" % self.echo_fire)
        check(status == 200 and body.get("from_line") == 1, "GET /v1/log from_line=1: %s %s" % (status, body))
        status, body = self.ex.call("GET", "/v1/log?fire_id=%d" % (self.next_fire + 999_999))
        check(status == 404, "log of an unknown fire: %s, expected 404" % status)
        status, body = self.ex.call("GET", "/v1/log?fire_id=abc")
        check(status == 400 and names_field(body, "fire_id"), "fire_id=abc: %s %s, expected 400 naming fire_id"
              % (status, body))

    def duplicate(self):
        # The same (fire_id, attempt) again after it finished, and twice while it runs.
        status, body = self.ex.call("POST", "/v1/run", self.run_body(self.echo_fire, "conformance.echo",
                                                                      {"marker": self.marker}, attempt=2))
        check(status == 202, "duplicate of a finished run: %s %s, expected 202" % (status, body))
        fid = self.fire()
        run = self.run_body(fid, "conformance.sleep", {"ms": 300})
        first = self.ex.call("POST", "/v1/run", run)
        second = self.ex.call("POST", "/v1/run", run)
        check(first[0] == 202 and second[0] == 202, "run then duplicate: %s, %s" % (first, second))
        if isinstance(second[1], dict) and "duplicate" in second[1]:
            check(second[1]["duplicate"] is True, "second answer duplicate=%r" % second[1]["duplicate"])
        self.result(fid)
        time.sleep(1.0)  # a second execution would report by now
        with self.cluster.mu:
            n_echo = len(self.cluster.results_for(self.echo_fire, 2))
            n_sleep = len(self.cluster.results_for(fid))
        check(n_echo == 1, "fire %d attempt 2 executed %d times" % (self.echo_fire, n_echo))
        check(n_sleep == 1, "fire %d executed %d times" % (fid, n_sleep))
        # A new attempt of the same fire is not a duplicate.
        status, body = self.ex.call("POST", "/v1/run", self.run_body(fid, "conformance.echo", attempt=1))
        check(status == 202 and not (isinstance(body, dict) and body.get("duplicate")),
              "attempt 1 of fire %d: %s %s, expected a new run" % (fid, status, body))
        r = self.result(fid, attempt=1)
        check(r.get("status") == "succeeded", "attempt 1 result %s" % r.get("status"))

    def stale_epoch(self):
        newer = self.epoch + 1
        fid = self.fire()
        status, body = self.ex.call("POST", "/v1/run", self.run_body(fid, "conformance.echo", epoch=newer))
        check(status == 202, "run at epoch %d: %s %s" % (newer, status, body))
        self.epoch = newer
        self.result(fid)
        stale = self.fire()
        status, body = self.ex.call("POST", "/v1/run", self.run_body(stale, "conformance.echo", epoch=newer - 1))
        check(status == 409, "run at the older epoch %d: %s %s, expected 409" % (newer - 1, status, body))
        check(names_field(body, "epoch"), "409 does not name epoch: %s" % body)
        time.sleep(0.3)
        with self.cluster.mu:
            check(not self.cluster.results_for(stale), "the refused run of epoch %d ran" % (newer - 1))
        status, body = self.ex.call("GET", "/v1/beat")
        check(status == 200 and body.get("epoch") == newer, "beat epoch %s, expected %d" % (body.get("epoch"), newer))

    def duplicate_across_epochs(self):
        # A repeat of a run the service holds is a duplicate whatever its epoch (the node's first
        # answer was lost and a newer master took over meanwhile); refused with 409 the node would
        # re-stamp the fire, and the run's result, under the older epoch, would leave it running.
        # A repeat with the newer epoch while the run is held moves its result to that epoch.
        older = self.epoch
        fid = self.fire()
        run = self.run_body(fid, "conformance.sleep", {"ms": 800}, epoch=older)
        status, body = self.ex.call("POST", "/v1/run", run)
        check(status == 202, "run at epoch %d: %s %s" % (older, status, body))
        newer = older + 1
        status, body = self.ex.call("POST", "/v1/run", self.run_body(self.fire(), "conformance.echo", epoch=newer))
        check(status == 202, "run at epoch %d: %s %s" % (newer, status, body))
        self.epoch = newer
        status, body = self.ex.call("POST", "/v1/run", run)
        check(status == 202 and isinstance(body, dict) and body.get("duplicate") is True,
              "repeat of fire %d at the older epoch %d while it runs: %s %s, expected 202 duplicate"
              % (fid, older, status, body))
        status, body = self.ex.call("POST", "/v1/run", dict(run, epoch=newer))
        check(status == 202 and isinstance(body, dict) and body.get("duplicate") is True,
              "repeat of fire %d at epoch %d: %s %s, expected 202 duplicate" % (fid, newer, status, body))
        r = self.result(fid)
        check(r.get("epoch") == newer, "fire %d's result carries epoch %s, expected %d (the newest it was sent with)"
              % (fid, r.get("epoch"), newer))
        time.sleep(0.5)
        with self.cluster.mu:
            n = len(self.cluster.results_for(fid))
        check(n == 1, "fire %d executed %d times" % (fid, n))

    def unknown_handler(self):
        status, body = self.ex.call("POST", "/v1/run", self.run_body(self.fire(), "conformance.nope"))
        check(status == 404, "unknown handler: %s %s, expected 404" % (status, body))
        check(names_field(body, "handler"), "404 does not name handler: %s" % body)

    def bad_input(self):
        cases = [({"fire_id": "x"}, "fire_id"), ({"attempt": -1}, "attempt"), ({"epoch": 1.5}, "epoch"),
                 ({"handler": 7}, "handler"), ({"block_strategy": "whenever"}, "block_strategy")]
        for change, field in cases:
            body = self.run_body(self.fire(), "conformance.echo")
            body.update(change)
            status, answer = self.ex.call("POST", "/v1/run", body)
            check(400 <= status < 500 and status != 404, "%s: %s %s, expected 4xx" % (change, status, answer))
            check(names_field(answer, field), "%s: the answer does not name %s: %s" % (change, field, answer))
        status, answer = self.ex.call("POST", "/v1/run", b"{not json")
        check(status == 400, "a body that is not JSON: %s, expected 400" % status)
        status, answer = self.ex.call("POST", "/v1/run", b"[" * 10000 + b"]" * 10000)
        check(status in (400, 413), "10,000 nested arrays: %s, expected 400" % status)
        try:
            status, answer = self.ex.call("POST", "/v1/run", b" " * (2 * 1024 * 1024))
            check(status in (400, 413), "a 2 MiB body: %s, expected 413 (or 400)" % status)
        except (BrokenPipeError, ConnectionResetError):
            # A server may answer and close before the body is sent (RFC 9110 allows it for
            # 413); then it must still serve the next call.
            status, answer = self.ex.call("GET", "/v1/beat")
            check(status == 200, "after closing on a 2 MiB body the executor answers /v1/beat %s" % status)

    def start_sleeper(self):
        fid = self.fire()
        status, body = self.ex.call("POST", "/v1/run", self.run_body(fid, "conformance.sleep", {"ms": 30000}))
        check(status == 202, "conformance.sleep run: %s %s" % (status, body))
        return fid

    def idle_beat(self):
        fid = self.start_sleeper()
        deadline = time.monotonic() + 5
        while True:
            status, body = self.ex.call("POST", "/v1/idle-beat", {"job_id": fid})
            if status == 409 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        check(status == 409, "idle-beat of a job with a running fire: %s %s, expected 409" % (status, body))
        status, body = self.ex.call("POST", "/v1/idle-beat", {"job_id": fid + 999_999})
        check(status == 200, "idle-beat of an idle job: %s %s, expected 200" % (status, body))
        self.ex.call("POST", "/v1/kill", {"fire_id": fid})
        self.result(fid)
        check(self.cluster.wait_for(lambda: self.ex.call("POST", "/v1/idle-beat", {"job_id": fid})[0] == 200, 3),
              "idle-beat still 409 after the job's run reported its result")
        status, body = self.ex.call("POST", "/v1/idle-beat", {"job_id": "seven"})
        check(status == 400 and names_field(body, "job_id"), "job_id \"seven\": %s %s" % (status, body))
        return "busy 409, idle 200"

    def kill(self):
        fid = self.start_sleeper()
        time.sleep(0.2)
        status, body = self.ex.call("POST", "/v1/kill", {"fire_id": fid})
        check(status == 200, "POST /v1/kill: %s %s, expected 200" % (status, body))
        r = self.result(fid)
        check(r.get("status") == "killed", "killed run reported %r, expected killed" % r.get("status"))
        check(r.get("finished_ms", 0) - r.get("started_ms", 0) < 20000, "the killed run did not stop early")
        status, body = self.ex.call("POST", "/v1/kill", {"fire_id": fid})
        check(status == 404, "kill of a finished fire: %s, expected 404" % status)
        return "fire %d killed and reported killed; a second kill 404" % fid

    def timeout_clause(self):
        fid = self.fire()
        status, body = self.ex.call("POST", "/v1/run", self.run_body(fid, "conformance.sleep", {"ms": 30000},
                                                                      timeout_ms=300))
        check(status == 202, "sleep run with timeout_ms 300: %s %s" % (status, body))
        r = self.result(fid)
        check(r.get("status") == "timeout", "a run past its timeout_ms reported %r, expected timeout" % r.get("status"))
        return "timeout_ms 300 of a 30 s sleep: timeout after %s ms" % (r.get("finished_ms", 0) - r.get("started_ms", 0))

    def timeout_kill(self):
        # The node's watch of a job's timeout starts at its dispatch; the run's own timeout at its
        # handler's start. A timeout kill of a run whose own timeout has not passed leaves it.
        running = self.start_sleeper()
        time.sleep(0.1)
        status, body = self.ex.call("POST", "/v1/kill", {"fire_id": running, "reason": "timeout"})
        check(status == 200 and isinstance(body, dict), "timeout kill of a run 0.1 s into its 60 s timeout: %s %s"
              % (status, body))
        left = body.get("timeout_in_ms")
        check(isinstance(left, int) and 50000 <= left <= 60000,
              "timeout_in_ms %r, expected what its own 60 s timeout still gives it" % left)
        queued = self.fire()
        status, body = self.ex.call("POST", "/v1/run", self.run_body(queued, "conformance.echo", job_id=running,
                                                                      timeout_ms=5000))
        check(status == 202, "serial run behind the sleeper: %s %s" % (status, body))
        status, body = self.ex.call("POST", "/v1/kill", {"fire_id": queued, "reason": "timeout"})
        check(status == 200 and isinstance(body, dict) and body.get("state") == "queued",
              "timeout kill of a queued run: %s %s" % (status, body))
        check(isinstance(body.get("timeout_in_ms"), int) and body["timeout_in_ms"] >= 5000,
              "a queued run has its whole 5 s timeout ahead, the answer says %r" % body.get("timeout_in_ms"))
        self.kill_then_queued_runs(running, "the sleeper", "the sleeper killed by request", queued,
                                   "the queued run after a timeout kill reported %r, expected it to run")
        # Without a timeout of its own the node's watch is its clock: it ends `timeout`, not `killed`.
        bare = self.fire()
        status, body = self.ex.call("POST", "/v1/run", self.run_body(bare, "conformance.sleep", {"ms": 30000},
                                                                      timeout_ms=0))
        check(status == 202, "sleep run without a timeout: %s %s" % (status, body))
        time.sleep(0.2)
        status, body = self.ex.call("POST", "/v1/kill", {"fire_id": bare, "reason": "timeout"})
        check(status == 200 and "timeout_in_ms" not in (body or {}), "timeout kill of a run without a timeout: %s %s"
              % (status, body))
        r = self.result(bare)
        check(r.get("status") == "timeout", "a run ended by a timeout kill reported %r, expected timeout"
              % r.get("status"))
        status, body = self.ex.call("POST", "/v1/kill", {"fire_id": bare, "reason": 7})
        check(400 <= status < 500 and status != 404 and names_field(body, "reason"),
              "a kill with reason 7: %s %s, expected 400 naming reason" % (status, body))
        return "left alone until its own timeout (%d ms); queued run ran; no own timeout: reported timeout" % left

    def addressing(self):
        # A call signed for this app but addressed to another of its instances is a capture being
        # replayed: each instance remembers only the runs it received, so it would run again.
        elsewhere = "127.0.0.1:1" if self.ex.address != "127.0.0.1:1" else "127.0.0.1:2"
        fid = self.fire()
        run = self.run_body(fid, "conformance.echo")
        status, body = self.ex.call("POST", "/v1/run", run, to=elsewhere)
        check(status == 401, "POST /v1/run addressed to %s: %s %s, expected 401" % (elsewhere, status, body))
        status, body = self.ex.call("GET", "/v1/beat", to=elsewhere)
        check(status == 401, "GET /v1/beat addressed to %s: %s, expected 401" % (elsewhere, status))
        status, body = self.ex.call("POST", "/v1/run", run, to=self.ex.address + "0")
        check(status == 401, "addressed to %s0: %s, expected 401" % (self.ex.address, status))
        time.sleep(0.5)
        with self.cluster.mu:
            check(not self.cluster.results_for(fid), "a run addressed to another instance ran")
        status, body = self.ex.call("POST", "/v1/run", run)
        check(status == 202, "the same run addressed to this instance: %s %s" % (status, body))
        check(self.result(fid).get("status") == "succeeded", "the addressed run did not succeed")
        status, body = self.ex.call("GET", "/v1/beat", to="")
        check(status == 200, "an unaddressed call (a node older than addressing): %s, expected 200" % status)
        return "addressed to another instance: 401, never ran; to this one: ran; unaddressed: served"

    def block_strategy(self):
        running = self.start_sleeper()
        job = running
        time.sleep(0.1)
        refused = self.fire()
        status, body = self.ex.call("POST", "/v1/run", self.run_body(refused, "conformance.echo", job_id=job,
                                                                      block_strategy="discard-later"))
        check(status == 409 and names_field(body, "block_strategy"),
              "discard-later behind a running run of the job: %s %s, expected 409 naming block_strategy"
              % (status, body))
        queued = self.fire()
        status, body = self.ex.call("POST", "/v1/run", self.run_body(queued, "conformance.echo", job_id=job))
        check(status == 202, "serial behind a running run of the job: %s %s, expected 202" % (status, body))
        time.sleep(0.3)
        with self.cluster.mu:
            check(not self.cluster.results_for(queued), "a serial run ran beside its job's running run")
        self.kill_then_queued_runs(running, "the running run", "the running run", queued,
                                   "the queued serial run reported %r after its predecessor")
        with self.cluster.mu:
            check(not self.cluster.results_for(refused), "the refused discard-later run ran")
        return "discard-later 409; serial queued, ran after the running run ended"

    def callback_retry(self):
        fid = self.fire()
        with self.cluster.mu:
            self.cluster.fail_first_callback_of.add(fid)
        status, body = self.ex.call("POST", "/v1/run", self.run_body(fid, "conformance.echo"))
        check(status == 202, "run: %s %s" % (status, body))
        r = self.result(fid, timeout=20)
        with self.cluster.mu:
            posts = self.cluster.callback_posts[fid]
        check(posts >= 2, "result delivered after %d callback request(s)" % posts)
        check(r.get("status") == "succeeded", "retried result status %r" % r.get("status"))
        return "first callback answered 503, delivered on request %d" % posts

    def auth(self):
        cases = ["none", "bad-signature", "unknown-key", "old-timestamp", "v2"]
        ran = []
        for how in cases:
            fid = self.fire()
            status, body = self.ex.call("POST", "/v1/run", self.run_body(fid, "conformance.echo"), sign_as=how)
            check(status == 401, "POST /v1/run signed %s: %s, expected 401" % (how, status))
            ran.append(fid)
            status, body = self.ex.call("GET", "/v1/beat", sign_as=how)
            check(status == 401, "GET /v1/beat signed %s: %s, expected 401" % (how, status))
        # A signature over another target does not verify.
        fid = self.fire()
        raw = json.dumps(self.run_body(fid, "conformance.echo")).encode()
        ts = now_ms()
        sig = sign(self.cluster.secret, "POST", addressed("/v1/kill", self.ex.address), ts, self.cluster.key_id, raw)
        conn = http.client.HTTPConnection(self.ex.host, self.ex.port, timeout=10)
        try:
            conn.request("POST", addressed("/v1/run", self.ex.address), raw,
                         {"X-Sched-Key-Id": self.cluster.key_id, "X-Sched-Timestamp": str(ts),
                          "X-Sched-Signature": sig, "Content-Type": "application/json"})
            status = conn.getresponse().status
        finally:
            conn.close()
        check(status == 401, "a signature over /v1/kill used for /v1/run: %s, expected 401" % status)
        ran.append(fid)
        time.sleep(0.5)
        with self.cluster.mu:
            executed = [f for f in ran if self.cluster.results_for(f)]
        check(not executed, "refused runs executed anyway: %s" % executed)
        return "unsigned, bad signature, unknown key, old timestamp, v2, wrong target: 401"

    def runs_batch(self):
        a, b = self.fire(), self.fire()
        status, body = self.ex.call("POST", "/v1/runs", {"runs": [self.run_body(a, "conformance.echo"),
                                                                  self.run_body(b, "conformance.fail")]})
        if status == 404:
            return "skip: POST /v1/runs answers 404 (the batch route is optional)"
        check(status == 200, "POST /v1/runs: %s %s" % (status, body))
        results = body.get("results") if isinstance(body, dict) else None
        check(isinstance(results, list) and len(results) == 2, "results: %s" % body)
        check(all(isinstance(x, dict) and x.get("status") == 202 for x in results), "item statuses: %s" % results)
        check(self.result(a).get("status") == "succeeded", "batch run a did not succeed")
        check(self.result(b).get("status") == "failed", "batch run b did not fail")
        c = self.fire()
        status, body = self.ex.call("POST", "/v1/runs", {"runs": [self.run_body(a, "conformance.echo"),
                                                                  self.run_body(c, "conformance.nope"),
                                                                  self.run_body(c, "conformance.echo", epoch=0)]})
        check(status == 200, "second batch: %s %s" % (status, body))
        items = body.get("results") or []
        check(len(items) == 3, "second batch results: %s" % body)
        check(items[0].get("status") == 202, "a duplicate in a batch: %s" % items[0])
        check(items[1].get("status") == 404 and names_field(items[1], "runs[1].handler"),
              "unknown handler in a batch: %s" % items[1])
        check(items[2].get("status") == 409 and names_field(items[2], "runs[2].epoch"),
              "stale epoch in a batch: %s" % items[2])
        status, body = self.ex.call("POST", "/v1/runs", {"runs": []})
        check(status == 400 and names_field(body, "runs"), "an empty batch: %s %s" % (status, body))
        time.sleep(0.5)
        with self.cluster.mu:
            check(len(self.cluster.results_for(a)) == 1, "the duplicate in the batch ran again")
        return "2 runs placed; duplicate 202, unknown handler 404, stale epoch 409 item by item"

    def runs_ahead(self):
        a, b, c = self.fire(), self.fire(), self.fire()
        status, body = self.ex.call("POST", "/v1/runs-ahead",
                                    {"runs": [self.run_body(a, "conformance.echo", start_in_ms=400),
                                              self.run_body(b, "conformance.echo"),
                                              self.run_body(c, "conformance.echo", start_in_ms=10001)]})
        if status == 404:
            return "skip: POST /v1/runs-ahead answers 404 (the route is optional: runs then come at their due time)"
        check(status == 200, "POST /v1/runs-ahead: %s %s" % (status, body))
        items = body.get("results") if isinstance(body, dict) else None
        check(isinstance(items, list) and len(items) == 3, "results: %s" % body)
        check(items[0].get("status") == 202 and items[1].get("status") == 202, "item statuses: %s" % items)
        check(items[2].get("status") == 400 and names_field(items[2], "runs[2].start_in_ms"),
              "start_in_ms beyond 10000: %s" % items[2])
        held, at_once = self.result(a), self.result(b)
        check(held.get("status") == "succeeded", "the held run did not succeed: %s" % held)
        # Both times come from the service's own clock: no skew between it and the kit.
        gap = held.get("started_ms", 0) - at_once.get("started_ms", 0)
        check(350 <= gap <= 2400, "start_in_ms 400 started %s ms after the run without it (expected ~400)" % gap)
        return "held 400 ms: started %d ms after the run sent without start_in_ms" % gap


def render(text, subs):
    for k, v in subs.items():
        text = text.replace("{" + k + "}", v)
    return text


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(proc, timeout):
    """SIGTERM to the executor's PID, SIGKILL after `timeout`. Returns its exit code."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode


def main(argv=None):
    p = argparse.ArgumentParser(description="Executor protocol conformance kit (protocol v1).",
                                usage="%(prog)s [options] -- COMMAND [ARGS...]")
    p.add_argument("--app", default="demo", help="the app name the executor registers (default demo)")
    p.add_argument("--template", help="a config file rendered with the substitutions to {config}")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for each callback result")
    p.add_argument("--stop-timeout", type=float, default=15.0, help="seconds from SIGTERM to SIGKILL")
    p.add_argument("--keep", action="store_true", help="keep the work directory (the executor's output)")
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("the executor's command line is required after --")

    token = "sched_" + secrets.token_hex(32)
    cluster = Cluster(args.app, token)
    server = serve_cluster(cluster)
    workdir = tempfile.mkdtemp(prefix="sched-conformance-")
    subs = {"url": "http://127.0.0.1:%d" % server.server_address[1], "token": token, "app": args.app,
            "port": str(free_port()), "workdir": workdir, "config": os.path.join(workdir, "executor.conf")}
    if args.template:
        with open(args.template, encoding="utf-8") as f:
            rendered = render(f.read(), subs)
        with open(subs["config"], "w", encoding="utf-8") as f:
            f.write(rendered)
    # The executor runs in the work directory: a relative path the caller named (the program, a
    # script given to an interpreter, a config file) is made absolute so that it keeps working.
    argv_exec = [render(a, subs) for a in command]
    argv_exec = [os.path.abspath(a) if os.sep in a and not os.path.isabs(a) and os.path.exists(a) else a
                 for a in argv_exec]
    env = dict(os.environ, SCHED_TOKEN=token)
    out = open(os.path.join(workdir, "executor.log"), "wb")
    print("sched_conformance (protocol v%s): cluster at %s, executor: %s" % (KIT_VERSION, subs["url"],
                                                                             " ".join(argv_exec)), flush=True)
    try:
        proc = subprocess.Popen(argv_exec, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=workdir)
    except OSError as e:
        print("FAIL  start            cannot start the executor: %s" % e)
        return 1

    kit = Kit(cluster, args.app, args.timeout)
    kit.proc = proc
    try:
        if kit.clause("register", kit.register):
            kit.clause("beat", kit.beat)
            ran = kit.clause("run-result", kit.run_result)
            for name, fn in (("log", kit.log), ("duplicate-run", kit.duplicate)):
                kit.clause(name, fn if ran else lambda: "skip: needs run-result")
            kit.clause("stale-epoch", kit.stale_epoch)
            kit.clause("duplicate-epoch", kit.duplicate_across_epochs)
            kit.clause("unknown-handler", kit.unknown_handler)
            kit.clause("bad-input", kit.bad_input)
            kit.clause("kill", kit.kill)
            kit.clause("idle-beat", kit.idle_beat)
            kit.clause("timeout", kit.timeout_clause)
            kit.clause("timeout-kill", kit.timeout_kill)
            kit.clause("block-strategy", kit.block_strategy)
            kit.clause("callback-retry", kit.callback_retry)
            kit.clause("auth", kit.auth)
            kit.clause("addressed", kit.addressing)
            kit.clause("runs-batch", kit.runs_batch)
            kit.clause("runs-ahead", kit.runs_ahead)
    finally:
        code = stop_process(proc, args.stop_timeout)
        out.close()

    def deregistered():
        check(cluster.wait_for(lambda: cluster.deregisters, 1.0), "no POST /api/v1/registry/deregister on SIGTERM")
        return "deregistered on SIGTERM; exit code %s" % code

    if kit.ex is not None:
        kit.clause("deregister", deregistered)
    server.shutdown()
    failed = [name for name, verdict, _, required in kit.outcomes if verdict == "FAIL" and required]
    passed = sum(1 for o in kit.outcomes if o[1] == "PASS")
    if failed or cluster.protocol_errors:
        with open(os.path.join(workdir, "executor.log"), "rb") as f:
            tail = f.read()[-3000:].decode("utf-8", "replace")
        print("--- executor output (last 3000 bytes) ---\n%s\n---" % tail)
    for e in cluster.protocol_errors:
        print("protocol error: %s" % e)
    print("%s: %d passed, %d failed (%s)" % ("FAILED" if failed else "CONFORMS", passed, len(failed),
                                           ", ".join(failed) or "none"), flush=True)
    if args.keep:
        print("work directory: %s" % workdir)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
