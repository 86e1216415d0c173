"""The executor side of the scheduler protocol (docs/protocol.md), standard library only.

An `Executor` serves the routes the cluster calls (/v1/run, /v1/runs, /v1/runs-ahead, /v1/kill,
/v1/beat, /v1/idle-beat, /v1/log), every one of them verified against the signing keys its heartbeat
learnt, runs handlers on worker threads, and reports results in batches to /api/v1/callback,
retrying with backoff. Admission mirrors the C++ SDK (libs/client/src/impl/run_registry.cpp):
duplicates by (fire_id, attempt), epoch fencing, block strategies serial, discard-later and
cover-early, a capacity bound. A run with `start_in_ms` (sent ahead of its due time) is admitted
on arrival and started that long after it; the first attempts of one scheduled time held from
several requests start together, at the earliest of their holds within 25 ms.
"""

from __future__ import annotations

import collections
import email.message
import hashlib
import heapq
import itertools
import os
import math
import http.client
import http.server
import io
import json
import logging
import re
import socketserver
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Counter, Deque, Dict, List, Mapping, Optional, Sequence, Set, Tuple, TypedDict, cast

from . import signature

log = logging.getLogger("sched_client")

MAX_INT64 = 2**63 - 1
MAX_RUNS_PER_BATCH = 1000
MAX_START_IN_MS = 10000  # the longest a run sent ahead may be held (libs/protocol run.hpp)
# First attempts of one scheduled time held from several requests start together, at the
# earliest of their holds within this many seconds of each other (docs/protocol.md).
ALIGN_HELD_S = 0.025
MAX_KILL_REASON = 64  # the longest reason a kill may carry (libs/protocol run.hpp)
LOG_PAGE_LINES = 1000
BLOCK_STRATEGIES = ("serial", "discard-later", "cover-early")
# The overlap policies a node may name in `overlap` (the job vocabulary's block strategies): when
# present the cluster enforced the job's policy and limit, and the run starts on arrival.
OVERLAP_POLICIES = BLOCK_STRATEGIES + ("skip", "buffer-one", "buffer-all", "cancel-other", "terminate-other",
                                       "allow-all")
_CODE_STATUS = {
    "invalid_argument": 400,
    "unauthenticated": 401,
    "not_found": 404,
    "aborted": 409,
    "failed_precondition": 409,
    "payload_too_large": 413,
    "resource_exhausted": 429,
    "unavailable": 503,
}



class RunRequest(TypedDict):
    """One run as parse_run() returns it: every field present, the protocol's defaults filled in."""

    fire_id: int
    job_id: int
    attempt: int
    epoch: int
    handler: str
    params: Any  # the job's JSON params, as sent (an object unless the job says otherwise)
    scheduled_ms: int
    timeout_ms: int
    shard_index: int
    shard_total: int
    block_strategy: str
    overlap: str
    callback_url: str
    start_in_ms: int
    traceparent: str  # the run's W3C trace context ("" from a node before the field)
    tracestate: str  # the W3C tracestate forwarded with it ("" when none; never without traceparent)


# A handler: called with the run's context; what it returns (str() of it, unless None) is the
# result message; raising fails the run.
Handler = Callable[["JobContext"], object]
# A route's answer: HTTP status and the JSON body.
Answer = Tuple[int, Dict[str, Any]]
# One result as POSTed to /api/v1/callback (docs/protocol.md): a JSON object built up field by field.
Result = Dict[str, Any]


class _FireLog(TypedDict):
    first: int  # the number of the oldest line kept
    lines: Deque[str]
    finished: bool
    handler_wrote: bool


def _wall_ms() -> int:
    return int(time.time() * 1000)


class Options:
    """Executor settings; the defaults are the C++ SDK's (config/demo-client.yaml)."""

    def __init__(self, app: str, web_endpoints: Sequence[str], token: str, listen_host: str = "127.0.0.1",
                 listen_port: int = 0, advertised_address: str = "", heartbeat_interval: float = 10.0,
                 worker_threads: int = 8, capacity: int = 64, callback_batch_size: int = 100,
                 callback_flush_interval: float = 0.1, callback_max_backoff: float = 10.0, web_timeout: float = 5.0,
                 shutdown_grace: float = 30.0, signature_window_ms: int = signature.DEFAULT_WINDOW_MS,
                 log_retained_fires: int = 1000, log_max_lines: int = 1000, log_tail_bytes: int = 65536,
                 dedupe_window: int = 100_000, body_limit: int = 1_048_576, json_max_depth: int = 64,
                 max_connections: int = 256, request_timeout: float = 10.0, tls_cert_file: str = "",
                 tls_key_file: str = "", tls_client_ca_file: str = "", ca_file: str = "", client_cert_file: str = "",
                 client_key_file: str = "", otlp_endpoint: str = "", otlp_service_name: str = "",
                 otlp_batch_size: int = 512, otlp_flush_interval: float = 1.0, otlp_queue_limit: int = 8192,
                 otlp_retries: int = 3, otlp_timeout: float = 5.0) -> None:
        if not app or not isinstance(app, str):
            raise ValueError("app: required")
        if not web_endpoints:
            raise ValueError("web_endpoints: at least one URL required")
        for url in web_endpoints:
            if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
                raise ValueError("web_endpoints: expected http(s):// URLs, got %r" % url)
        if not token:
            raise ValueError("token: required (an executor token)")
        if capacity < 1 or worker_threads < 1 or callback_batch_size < 1:
            raise ValueError("capacity, worker_threads and callback_batch_size must be >= 1")
        if not 0 <= log_tail_bytes <= 131072:
            raise ValueError("log_tail_bytes: expected 0..131072")
        if bool(tls_cert_file) != bool(tls_key_file):
            raise ValueError("tls_cert_file and tls_key_file: set both to serve HTTPS, or neither")
        if tls_client_ca_file and not tls_cert_file:
            raise ValueError("tls_client_ca_file: needs tls_cert_file and tls_key_file")
        if bool(client_cert_file) != bool(client_key_file):
            raise ValueError("client_cert_file and client_key_file: set both, or neither")
        if otlp_endpoint and urllib.parse.urlsplit(otlp_endpoint).scheme not in ("http", "https"):
            raise ValueError("otlp_endpoint: expected an http(s):// URL, got %r" % otlp_endpoint)
        if not 1 <= otlp_batch_size <= otlp_queue_limit:
            raise ValueError("otlp_batch_size: expected 1..otlp_queue_limit")
        self.app = app
        self.web_endpoints = [u.rstrip("/") for u in web_endpoints]
        self.token = token
        self.listen_host = listen_host
        self.listen_port = listen_port
        self.advertised_address = advertised_address
        self.heartbeat_interval = heartbeat_interval
        self.worker_threads = worker_threads
        self.capacity = capacity
        self.callback_batch_size = callback_batch_size
        self.callback_flush_interval = callback_flush_interval
        self.callback_max_backoff = callback_max_backoff
        self.web_timeout = web_timeout
        self.shutdown_grace = shutdown_grace
        self.signature_window_ms = signature_window_ms
        self.log_retained_fires = log_retained_fires
        self.log_max_lines = log_max_lines
        self.log_tail_bytes = log_tail_bytes
        self.dedupe_window = max(1, dedupe_window)
        self.body_limit = body_limit
        self.json_max_depth = json_max_depth
        self.max_connections = max_connections
        self.request_timeout = request_timeout
        # HTTPS for the nodes' calls (the C++ SDK's executor.http.tls): certificate chain and key,
        # and optionally a CA that nodes' client certificates must chain to.
        self.tls_cert_file = tls_cert_file
        self.tls_key_file = tls_key_file
        self.tls_client_ca_file = tls_client_ca_file
        # https:// web endpoints (executor.http-client.tls): the CA bundle ("" = the system
        # store) and an optional client certificate. Host names are always verified.
        self.ca_file = ca_file
        self.client_cert_file = client_cert_file
        self.client_key_file = client_key_file
        # Each run's span over OTLP/HTTP (JSON), a child of the traceparent the node sent
        # (docs/architecture/logs-and-traces.md "Spans"); "" = off.
        self.otlp_endpoint = otlp_endpoint
        self.otlp_service_name = otlp_service_name or app
        self.otlp_batch_size = otlp_batch_size
        self.otlp_flush_interval = otlp_flush_interval
        self.otlp_queue_limit = otlp_queue_limit
        self.otlp_retries = otlp_retries
        self.otlp_timeout = otlp_timeout


# TLS 1.2 suites with forward secrecy and AEAD only (TLS 1.3 suites all are); as libs/http.
_TLS12_CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20"


def server_tls_context(options: Options) -> Optional[ssl.SSLContext]:
    """The server context for `options` (None without a certificate): TLS 1.2+, no compression or
    renegotiation, client certificates required when tls_client_ca_file is set."""
    if not options.tls_cert_file:
        return None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers(_TLS12_CIPHERS)
    ctx.options |= ssl.OP_NO_COMPRESSION | getattr(ssl, "OP_NO_RENEGOTIATION", 0) | ssl.OP_NO_TICKET
    ctx.load_cert_chain(options.tls_cert_file, options.tls_key_file)
    if options.tls_client_ca_file:
        ctx.load_verify_locations(cafile=options.tls_client_ca_file)
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def _tls_stamp(options: Options) -> Tuple[Optional[int], ...]:
    """The modification times of the TLS files `options` names (None for one absent or unset)."""
    stamps: List[Optional[int]] = []
    for path in (options.tls_cert_file, options.tls_key_file, options.tls_client_ca_file, options.ca_file,
                 options.client_cert_file, options.client_key_file):
        try:
            stamps.append(os.stat(path).st_mtime_ns if path else None)
        except OSError:
            stamps.append(None)
    return tuple(stamps)


def client_tls_context(options: Options) -> ssl.SSLContext:
    """The context for https:// web endpoints: the peer verified against ca_file (else the system
    store) with its host name checked."""
    ctx = ssl.create_default_context(cafile=options.ca_file or None)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if options.client_cert_file:
        ctx.load_cert_chain(options.client_cert_file, options.client_key_file)
    return ctx


# The fields the executor puts on its per-run log lines (`extra`), as JsonLogFormatter writes them.
LOG_FIELDS = ("app", "job", "fire", "attempt", "epoch", "trace_id", "event")


def run_span_id(traceparent: str) -> str:
    """The `run` span's id under `traceparent` (sched/protocol/fire_spans.hpp FireStepSpanId):
    the first 16 hex digits of SHA-256("sched-step/<trace id>/<parent span id>/run")."""
    span_id = hashlib.sha256(("sched-step/%s/%s/run" % (traceparent[3:35], traceparent[36:52])).encode()).hexdigest()[:16]
    return span_id if span_id.strip("0") else span_id[:15] + "1"


class SpanExporter:
    """Spans to an OTLP/HTTP collector as JSON (the C++ SDK's SpanExporter): push() appends to a
    bounded queue and never waits for the network (a full queue drops and counts); one thread
    posts batches of up to batch_size at least every flush_interval; a post that fails
    (transport, 429, 502-504) is retried `retries` times with doubling backoff, then the batch is
    dropped (counted, logged at most once a minute)."""

    def __init__(self, endpoint: str, service_name: str, batch_size: int = 512, flush_interval: float = 1.0,
                 queue_limit: int = 8192, retries: int = 3, timeout: float = 5.0,
                 tls: Optional[ssl.SSLContext] = None) -> None:
        self.endpoint, self.service_name = endpoint, service_name
        self.batch_size, self.flush_interval, self.queue_limit = batch_size, flush_interval, queue_limit
        self.retries, self.timeout, self.tls = retries, timeout, tls
        self._queue: Deque[Dict[str, Any]] = collections.deque()
        self._cv = threading.Condition()
        self._stopping = False
        self._thread: Optional[threading.Thread] = None
        self._last_drop_log = 0.0
        self.exported = self.dropped_queue_full = self.dropped_export_failed = self.failed_posts = 0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="sched-otlp", daemon=True)
        self._thread.start()

    def push(self, span: Dict[str, Any]) -> bool:
        with self._cv:
            if self._stopping:
                return False
            if len(self._queue) >= self.queue_limit:
                self.dropped_queue_full += 1
                return False
            self._queue.append(span)
            if len(self._queue) >= self.batch_size:
                self._cv.notify()
        return True

    def stop(self) -> None:
        """Posts what is queued once more (no retry), then ends the thread."""
        with self._cv:
            self._stopping = True
            self._cv.notify()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout + 1)

    def body(self, spans: List[Dict[str, Any]]) -> Dict[str, Any]:
        return {"resourceSpans": [{
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": self.service_name}}]},
            "scopeSpans": [{"scope": {"name": "sched"}, "spans": spans}]}]}

    def _take(self) -> List[Dict[str, Any]]:
        n = min(len(self._queue), self.batch_size)
        return [self._queue.popleft() for _ in range(n)]

    def _loop(self) -> None:
        while True:
            with self._cv:
                if not self._stopping and len(self._queue) < self.batch_size:
                    self._cv.wait(self.flush_interval)
                stopping = self._stopping
                batch = self._take()
            while batch:
                self._post(batch, last=stopping)
                with self._cv:
                    batch = self._take() if stopping or len(self._queue) >= self.batch_size else []
            if stopping:
                return

    def _post(self, batch: List[Dict[str, Any]], last: bool) -> None:
        data = json.dumps(self.body(batch)).encode()
        why = ""
        for attempt in range(self.retries + 1):
            retryable = True
            try:
                req = urllib.request.Request(self.endpoint, data=data, method="POST",
                                             headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=self.timeout, context=self.tls) as resp:
                    resp.read(65536)
                self.exported += len(batch)
                return
            except urllib.error.HTTPError as e:
                why, retryable = "HTTP %d" % e.code, e.code in (429, 502, 503, 504)
            except (OSError, http.client.HTTPException) as e:
                why = str(e)
            self.failed_posts += 1
            if not retryable or last or attempt >= self.retries:
                break
            time.sleep(min(0.2 * 2 ** attempt, 5.0))
        self.dropped_export_failed += len(batch)
        now = time.monotonic()
        if now - self._last_drop_log >= 60 or self._last_drop_log == 0:
            self._last_drop_log = now
            log.warning("OTLP export to %s failed (%s): %d span(s) dropped", self.endpoint, why, len(batch))


def run_span(run: "RunRequest", result: "Result", app: str, address: str) -> Optional[Dict[str, Any]]:
    """The OTLP JSON of a run's span: a child of the traceparent's span (None without one)."""
    parent = run["traceparent"]
    if not parent:
        return None

    def attr(key: str, value: object) -> Dict[str, Any]:
        if isinstance(value, int):
            return {"key": key, "value": {"intValue": str(value)}}
        return {"key": key, "value": {"stringValue": str(value)}}

    span: Dict[str, Any] = {
        "traceId": parent[3:35], "spanId": run_span_id(parent), "parentSpanId": parent[36:52], "name": "run",
        "kind": 2, "startTimeUnixNano": str(result["started_ms"] * 1_000_000),
        "endTimeUnixNano": str(max(result["started_ms"], result["finished_ms"]) * 1_000_000),
        "attributes": [attr("sched.fire_id", run["fire_id"]), attr("sched.job_id", run["job_id"]),
                       attr("sched.app", app), attr("sched.attempt", run["attempt"]), attr("sched.node", address),
                       attr("sched.handler", run["handler"]), attr("sched.status", result["status"])]}
    if run.get("tracestate"):
        span["traceState"] = run["tracestate"]  # the caller's vendors' state, forwarded unchanged
    if result["status"] != "succeeded":
        span["status"] = {"code": 2, "message": result.get("message", "")}
    return span


class JsonLogFormatter(logging.Formatter):
    """One JSON object per line, with the run's fields as members (the nodes' `log.format: json`
    shape): {"ts", "level", "logger", <fields>, "msg"}. Install it on a handler of the root logger
    so a collector can filter the service's lines by fire, job or trace id."""

    def format(self, record: logging.LogRecord) -> str:
        out: Dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + ".%03dZ" % record.msecs,
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        for key in LOG_FIELDS:
            value = record.__dict__.get(key)
            if value is not None:
                out[key] = value
        out["msg"] = record.getMessage()
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


class ApiError(Exception):
    """An answer other than success: HTTP status from `code`, the offending `field`."""

    def __init__(self, code: str, message: str, field: Optional[str] = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field

    @property
    def status(self) -> int:
        return _CODE_STATUS.get(self.code, 500)

    def body(self) -> Dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "field": self.field}}


class JobContext:
    """What a handler sees: the run's fields, a log, cooperative cancellation."""

    def __init__(self, run: RunRequest, cancel_event: threading.Event, logger: Callable[[str], None]) -> None:
        self.fire_id = run["fire_id"]
        self.job_id = run["job_id"]
        self.attempt = run["attempt"]
        self.epoch = run["epoch"]
        self.handler = run["handler"]
        self.params = run["params"]
        self.scheduled_ms = run["scheduled_ms"]
        self.timeout_ms = run["timeout_ms"]
        self.shard_index = run["shard_index"]
        self.shard_total = run["shard_total"]
        # The run's W3C traceparent: pass it on (a `traceparent` header) to continue the fire's
        # trace; trace_id is the fire's, the same for every attempt ("" when the node sent none).
        self.traceparent: str = run["traceparent"]
        self.trace_id: str = run["traceparent"][3:35] if run["traceparent"] else ""
        # The W3C tracestate that came with the traceparent (a manual trigger's caller's,
        # unchanged): pass it on as the `tracestate` header; "" when the node sent none.
        self.tracestate: str = run.get("tracestate", "")
        self.result_message: str = ""
        self._cancel = cancel_event
        self._log = logger

    def log(self, text: object) -> None:
        """Appends one line to the fire's log (GET /v1/log, and the tail sent with the result)."""
        self._log(str(text))

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def sleep(self, seconds: float) -> bool:
        """Sleeps unless cancelled first; returns False when cancelled (killed, timed out)."""
        return not self._cancel.wait(max(0.0, seconds))


class HandlerFailed(Exception):
    """Raise from a handler to fail the run with a code (default "internal") and message."""

    def __init__(self, message: str, code: str = "internal") -> None:
        super().__init__(message)
        self.code = code


class _HeldGroup:
    """Runs held until one instant: the first attempts of one scheduled time whose holds end
    within ALIGN_HELD_S of each other (scheduled_ms > 0), or one run of its own (a retry: its
    due time is its own, not its scheduled time)."""

    __slots__ = ("scheduled_ms", "at", "runs", "started")

    def __init__(self, scheduled_ms: int, at: float) -> None:
        self.scheduled_ms = scheduled_ms
        self.at = at  # time.monotonic() it starts at: the earliest hold of its runs
        self.runs: List["_Run"] = []
        self.started = False


class _Run:
    def __init__(self, request: RunRequest) -> None:
        self.request = request
        # The epoch its result carries: the newest it was sent with while held here (a repeat
        # with a newer epoch is the node's re-stamped fire). Written under the registry's lock.
        self.result_epoch = request["epoch"]
        self.cancel = threading.Event()
        self.reason: Optional[str] = None  # "killed", "timeout", "covered", "shutdown"
        self.covered_by: Optional[int] = None
        self.not_before = 0.0  # time.monotonic() before which it does not start (start_in_ms)
        # When its own timeout ends it (time.monotonic()), set as its handler starts: a node's
        # timeout kill acts only once this passed (the node's watch began at its dispatch).
        self.deadline: Optional[float] = None

    def cancel_for(self, reason: str) -> bool:
        """Cancels with `reason`; False when it was cancelled already (the first reason stays)."""
        first = self.reason is None
        if first:
            self.reason = reason
        self.cancel.set()
        return first

    def timeout_left_ms(self, now: float) -> Optional[int]:
        """How long its own timeout still gives it (not started: its whole timeout after what is
        left of its hold, at least), or None once that passed or without a timeout of its own."""
        timeout_ms = self.request["timeout_ms"]
        if timeout_ms <= 0:
            return None
        if self.deadline is None:
            return math.ceil(max(0.0, self.not_before - now) * 1000) + timeout_ms
        left = self.deadline - now
        return math.ceil(left * 1000) if left > 0 else None


class _Lane:
    """One job's runs here: the running one and those queued behind it (block strategies)."""

    __slots__ = ("running", "queued")

    def __init__(self, running: _Run) -> None:
        self.running = running
        self.queued: Deque[_Run] = collections.deque()


# What admit() decided: (outcome, message, run, start_now, dropped).
_Admission = Tuple[str, str, Optional[_Run], bool, List[_Run]]


class _Registry:
    """Admission: the C++ SDK's RunRegistry (one lane per job, fencing, duplicates, capacity)."""

    def __init__(self, capacity: int, dedupe_window: int) -> None:
        self.mu = threading.Lock()
        self.capacity = capacity
        self.dedupe_window = dedupe_window
        self.seen: Set[Tuple[int, int]] = set()
        self.seen_order: Deque[Tuple[int, int]] = collections.deque()
        self.in_flight: Dict[int, _Run] = {}
        self.lanes: Dict[int, _Lane] = {}  # by job_id
        self.max_epoch = 0

    def admit(self, req: RunRequest, on_accepted: Callable[[_Run, bool], None]) -> _Admission:
        """Returns (outcome, message, run, start_now, dropped)."""
        with self.mu:
            key = (req["fire_id"], req["attempt"])
            # A run this instance has is a duplicate whatever its epoch, before the fence: it
            # starts nothing. Refused as stale, the node would take it for not placed, re-stamp
            # the fire and send it again, and this run's result, under the older epoch, would be
            # refused with the fire left running here (docs/protocol.md).
            if key in self.seen:
                self.max_epoch = max(self.max_epoch, req["epoch"])
                held = self.in_flight.get(req["fire_id"])
                if held is not None and held.request["attempt"] == req["attempt"]:
                    held.result_epoch = max(held.result_epoch, req["epoch"])
                return ("duplicate", "", None, False, [])
            if req["epoch"] < self.max_epoch:
                return ("stale", "epoch %d is older than epoch %d already seen: refusing a stale master's dispatch"
                        % (req["epoch"], self.max_epoch), None, False, [])
            self.max_epoch = req["epoch"]
            # The cluster enforced the job's policy and limit (`overlap` sent): the run starts now,
            # in no lane, beside any other run of the job here.
            enforced = bool(req.get("overlap"))
            lane = None if enforced else self.lanes.get(req["job_id"])
            replaced = 0
            if lane is not None:
                if req["block_strategy"] == "discard-later":
                    return ("busy", "job %d is running fire %d (block strategy discard-later)"
                            % (req["job_id"], lane.running.request["fire_id"]), None, False, [])
                if req["block_strategy"] == "cover-early":
                    replaced = len(lane.queued) + 1
            if len(self.in_flight) - replaced >= self.capacity:
                return ("capacity", "out of capacity: %d runs in flight, capacity %d"
                        % (len(self.in_flight), self.capacity), None, False, [])
            self._remember(key)
            run = _Run(req)
            self.in_flight[req["fire_id"]] = run
            on_accepted(run, lane is None)
            dropped: List[_Run] = []
            if lane is None:
                if not enforced:
                    self.lanes[req["job_id"]] = _Lane(run)
                return ("accepted", "", run, True, dropped)
            if req["block_strategy"] == "cover-early":
                for queued in lane.queued:
                    self.in_flight.pop(queued.request["fire_id"], None)
                    queued.covered_by = req["fire_id"]
                    queued.cancel_for("covered")
                    dropped.append(queued)
                lane.queued.clear()
                lane.running.covered_by = req["fire_id"]
                lane.running.cancel_for("covered")
            lane.queued.append(run)
            return ("accepted", "", run, False, dropped)

    def _remember(self, key: Tuple[int, int]) -> None:
        self.seen.add(key)
        self.seen_order.append(key)
        while len(self.seen_order) > self.dedupe_window:
            self.seen.discard(self.seen_order.popleft())

    def finish(self, run: _Run) -> Optional[_Run]:
        with self.mu:
            if self.in_flight.get(run.request["fire_id"]) is run:
                del self.in_flight[run.request["fire_id"]]
            lane = self.lanes.get(run.request["job_id"])
            if lane is None or lane.running is not run:
                return None
            if not lane.queued:
                del self.lanes[run.request["job_id"]]
                return None
            lane.running = lane.queued.popleft()
            return lane.running

    def kill(self, fire_id: int, timeout: bool = False,
             now: Optional[float] = None) -> Tuple[Optional[_Run], bool, Optional[int], bool]:
        """Returns (run or None, was_running, timeout_in_ms, stopped_now). With `timeout` (the
        node's watch of the job's timeout), a run whose own timeout has not passed is left alone
        and timeout_in_ms says for how long; otherwise it is cancelled for "timeout".
        stopped_now: this kill cancelled a running run (False when it was stopping already)."""
        now = time.monotonic() if now is None else now
        with self.mu:
            run = self.in_flight.get(fire_id)
            if run is None:
                return None, False, None, False
            lane = self.lanes.get(run.request["job_id"])
            was_running = lane is None or run not in lane.queued  # running, in its lane or in none
            if timeout:
                left = run.timeout_left_ms(now)
                if left is not None:
                    return run, was_running, left, False
            reason = "timeout" if timeout else "killed"
            if was_running:
                return run, True, None, run.cancel_for(reason)
            assert lane is not None  # queued: so in a lane
            lane.queued.remove(run)
            del self.in_flight[fire_id]
            run.cancel_for(reason)
            return run, False, None, False

    def cancel_all(self, reason: str) -> List[_Run]:
        with self.mu:
            dropped: List[_Run] = []
            for lane in self.lanes.values():
                for queued in lane.queued:
                    self.in_flight.pop(queued.request["fire_id"], None)
                    queued.cancel_for(reason)
                    dropped.append(queued)
                lane.queued.clear()
            # What is left in flight is running: in a lane, or in none (admitted by the cluster).
            for run in self.in_flight.values():
                run.cancel_for(reason)
            return dropped

    def idle(self, job_id: int) -> bool:
        with self.mu:
            return job_id not in self.lanes

    def count(self) -> int:
        with self.mu:
            return len(self.in_flight)

    def result_epoch(self, run: _Run) -> int:
        with self.mu:
            return run.result_epoch

    def epoch(self) -> int:
        with self.mu:
            return self.max_epoch


class _LogBook:
    """Per-fire log lines, at most `max_lines` lines each, for `retained` fires: the fires that
    finished first are forgotten first; a fire still running is kept over the bound (as the C++
    SDK's FireLogBook)."""

    def __init__(self, retained: int, max_lines: int) -> None:
        self.mu = threading.Lock()
        self.retained = retained
        self.max_lines = max_lines
        self.fires: Dict[int, _FireLog] = {}
        self.finished: Deque[int] = collections.deque()  # fire ids, in the order they finished

    def open(self, fire_id: int) -> None:
        with self.mu:
            old = self.fires.get(fire_id)
            if old is not None and old["finished"]:
                self.finished.remove(fire_id)  # a new attempt of a fire still remembered: rare
            self.fires[fire_id] = {"first": 0, "lines": collections.deque(), "finished": False,
                                   "handler_wrote": False}
            self._evict()

    def _evict(self) -> None:
        while len(self.fires) > self.retained and self.finished:
            self.fires.pop(self.finished.popleft(), None)

    def append(self, fire_id: int, line: str, by_handler: bool = False) -> None:
        with self.mu:
            entry = self.fires.get(fire_id)
            if entry is None:
                return
            entry["handler_wrote"] = entry["handler_wrote"] or by_handler
            entry["lines"].append(line[:16384])
            while len(entry["lines"]) > self.max_lines:
                entry["lines"].popleft()
                entry["first"] += 1

    def close(self, fire_id: int) -> None:
        with self.mu:
            entry = self.fires.get(fire_id)
            if entry is None or entry["finished"]:
                return
            entry["finished"] = True
            self.finished.append(fire_id)
            self._evict()

    def read(self, fire_id: int, from_line: int, limit: int) -> Optional[Dict[str, Any]]:
        with self.mu:
            entry = self.fires.get(fire_id)
            if entry is None:
                return None
            start = max(from_line, entry["first"])
            end = entry["first"] + len(entry["lines"])
            lines = [entry["lines"][i - entry["first"]] for i in range(start, min(end, start + limit))]
            return {"from_line": start, "to_line": start + len(lines), "lines": lines, "finished": entry["finished"]}

    def tail(self, fire_id: int, max_bytes: int) -> Optional[Tuple[str, int]]:
        with self.mu:
            entry = self.fires.get(fire_id)
            # The SDK's own lines alone say what the fire's row says: no log is sent (nor stored).
            if entry is None or not entry["handler_wrote"]:
                return None
            text = "\n".join(entry["lines"]).encode("utf-8", "replace")
        cut = max(0, len(text) - max_bytes)
        # Never start inside a UTF-8 sequence.
        while cut < len(text) and cut > 0 and (text[cut] & 0xC0) == 0x80:
            cut += 1
        return text[cut:].decode("utf-8", "replace"), cut


def _json_depth_ok(raw: bytes, limit: int) -> bool:
    """True when no JSON value in `raw` nests deeper than `limit` (strings skipped), checked
    before parsing: Python's parser recurses."""
    depth = 0
    in_string = False
    escaped = False
    for b in raw:
        if in_string:
            if escaped:
                escaped = False
            elif b == 0x5C:
                escaped = True
            elif b == 0x22:
                in_string = False
        elif b == 0x22:
            in_string = True
        elif b in (0x5B, 0x7B):
            depth += 1
            if depth > limit:
                return False
        elif b in (0x5D, 0x7D):
            depth -= 1
    return True


def _field(obj: Mapping[str, Any], name: str, prefix: str, default: object) -> Tuple[str, Any]:
    """The field's label and value, or (label, None) when it is absent or null and `default`
    stands in; raises ApiError when it is absent or null without a default."""
    label = prefix + "." + name if prefix else name
    if name not in obj or obj[name] is None:
        if default is None:
            raise ApiError("invalid_argument", "%s: required" % label, label)
        return label, None
    return label, obj[name]


def _int_field(obj: Mapping[str, Any], name: str, prefix: str, default: Optional[int] = None, minimum: int = 0,
               maximum: int = MAX_INT64) -> int:
    label, v = _field(obj, name, prefix, default)
    if v is None:
        assert default is not None  # _field raised otherwise
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        raise ApiError("invalid_argument", "%s: expected an integer" % label, label)
    if v < minimum or v > maximum:
        raise ApiError("invalid_argument", "%s: expected %d..%d, got %d" % (label, minimum, maximum, v), label)
    return v


def _str_field(obj: Mapping[str, Any], name: str, prefix: str, default: Optional[str] = None,
               max_len: int = 1024) -> str:
    label, v = _field(obj, name, prefix, default)
    if v is None:
        assert default is not None  # _field raised otherwise
        return default
    if not isinstance(v, str):
        raise ApiError("invalid_argument", "%s: expected a string" % label, label)
    if len(v) > max_len:
        raise ApiError("invalid_argument", "%s: longer than %d characters" % (label, max_len), label)
    return v


_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")


def _valid_traceparent(value: str) -> bool:
    """W3C Trace Context: version 00 is exactly 55 characters; a later one (not ff) may add
    fields after a dash; ids are lower-case hex and not all zeros."""
    m = _TRACEPARENT.match(value)
    if not m or m.group(1) == "ff":
        return False
    if len(value) != 55 and (m.group(1) == "00" or value[55] != "-"):
        return False
    return m.group(2) != "0" * 32 and m.group(3) != "0" * 16


# The heartbeat answer's capability (docs/protocol.md): a result may carry its run's traceparent.
RESULT_TRACEPARENT = "result-traceparent"
MAX_TRACESTATE = 512
_TRACESTATE_KEY = re.compile(r"[a-z0-9][a-z0-9_\-*/@]{0,255}")


def check_tracestate(value: str) -> Optional[str]:
    """What is wrong with a W3C tracestate value (None when valid), as the nodes check it
    (sched/protocol/trace_context.hpp CheckTraceState): at most 512 characters and 32 members
    `key=value`; empty members and spaces around members allowed."""
    if len(value) > MAX_TRACESTATE:
        return "at most %d characters" % MAX_TRACESTATE
    members = 0
    for raw in value.split(","):
        member = raw.strip(" \t")
        if not member:
            continue
        members += 1
        if members > 32:
            return "at most 32 list members"
        if "=" not in member:
            return "expected key=value, got \"%s\"" % member
        key, val = member.split("=", 1)
        if not _TRACESTATE_KEY.fullmatch(key) or key.count("@") > 1:
            return "bad key \"%s\"" % key
        if (not val or len(val) > 256 or val.endswith(" ")
                or any(not (0x20 <= ord(c) <= 0x7e) or c in ",=" for c in val)):
            return "bad value of key \"%s\"" % key
    return None


def parse_run(obj: object, prefix: str = "") -> RunRequest:
    """Validates one /v1/run body; raises ApiError naming the field."""
    if not isinstance(obj, dict):
        raise ApiError("invalid_argument", "%s: expected a JSON object" % (prefix or "body"), prefix or "body")
    run: RunRequest = {
        "fire_id": _int_field(obj, "fire_id", prefix),
        "job_id": _int_field(obj, "job_id", prefix),
        "attempt": _int_field(obj, "attempt", prefix),
        "epoch": _int_field(obj, "epoch", prefix),
        "handler": _str_field(obj, "handler", prefix, max_len=128),
        "params": obj.get("params") if obj.get("params") is not None else {},
        "scheduled_ms": _int_field(obj, "scheduled_ms", prefix, 0),
        "timeout_ms": _int_field(obj, "timeout_ms", prefix, 0, maximum=7 * 24 * 3600 * 1000),
        "shard_index": _int_field(obj, "shard_index", prefix, 0),
        "shard_total": _int_field(obj, "shard_total", prefix, 1, minimum=1),
        "block_strategy": _str_field(obj, "block_strategy", prefix, "serial", max_len=32),
        "overlap": _str_field(obj, "overlap", prefix, "", max_len=32),
        "callback_url": _str_field(obj, "callback_url", prefix, "", max_len=2048),
        "start_in_ms": _int_field(obj, "start_in_ms", prefix, 0, maximum=MAX_START_IN_MS),
        "traceparent": _str_field(obj, "traceparent", prefix, "", max_len=512),
        "tracestate": _str_field(obj, "tracestate", prefix, "", max_len=MAX_TRACESTATE),
    }
    label = (prefix + ".") if prefix else ""
    if run["block_strategy"] not in BLOCK_STRATEGIES:
        raise ApiError("invalid_argument", "%sblock_strategy: expected one of %s" % (label, ", ".join(BLOCK_STRATEGIES)),
                       label + "block_strategy")
    if run["overlap"] and run["overlap"] not in OVERLAP_POLICIES:
        raise ApiError("invalid_argument", "%soverlap: expected one of %s" % (label, ", ".join(OVERLAP_POLICIES)),
                       label + "overlap")
    if run["shard_index"] >= run["shard_total"]:
        raise ApiError("invalid_argument", "%sshard_index: must be less than shard_total (%d)"
                       % (label, run["shard_total"]), label + "shard_index")
    if run["traceparent"] and not _valid_traceparent(run["traceparent"]):
        raise ApiError("invalid_argument", "%straceparent: not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)" % label,
                       label + "traceparent")
    if run["tracestate"]:
        bad = check_tracestate(run["tracestate"])
        if bad:
            raise ApiError("invalid_argument", "%stracestate: %s" % (label, bad), label + "tracestate")
    if not run["traceparent"]:
        run["tracestate"] = ""  # meaningless without its traceparent (the trigger route ignores it)
    if run["callback_url"]:
        parts = urllib.parse.urlsplit(run["callback_url"])
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ApiError("invalid_argument", "%scallback_url: expected an http:// or https:// URL" % label,
                           label + "callback_url")
    return run


class Executor:
    """Serves handlers to the scheduler. `handle()` them, `start()`, later `stop()`.

    Thread-safety: `handle` before `start` only; everything else from any thread. Handlers run
    on `worker_threads` threads and must honour `ctx.cancelled` / `ctx.sleep()` to be killable.
    """

    def __init__(self, options: Options) -> None:
        self.options = options
        self._client_tls = client_tls_context(options)  # raises for an unreadable ca_file: a start-up error
        self._tls_files = _tls_stamp(options)
        self._handlers: Dict[str, Handler] = {}
        self._registry = _Registry(options.capacity, options.dedupe_window)
        self._logs = _LogBook(options.log_retained_fires, options.log_max_lines)
        self._keys: Dict[str, str] = {}
        self._keys_mu = threading.Lock()
        self._offset_ms = 0
        self._outbox: Deque[Tuple[Result, str]] = collections.deque()
        self._outbox_mu = threading.Lock()
        self._work: Deque[Optional[_Run]] = collections.deque()
        self._work_cv = threading.Condition()
        # A heap of (start time, seq, group): runs sent ahead, until their time. A group whose
        # start moved earlier has an entry per time; the first to come starts it.
        self._held: List[Tuple[float, int, _HeldGroup]] = []
        # scheduled_ms -> the groups of first attempts held for it (under _held_cv).
        self._held_groups: Dict[int, List[_HeldGroup]] = {}
        self._held_seq = itertools.count()
        self._held_cv = threading.Condition()
        self._stopping = threading.Event()
        self._accepting = False
        self._threads: List[threading.Thread] = []
        self._server: Optional[_Server] = None
        # Per web endpoint: its last heartbeat answer advertised RESULT_TRACEPARENT (heartbeat
        # thread writes; the callback thread reads the one flag).
        self._takes_trace: Dict[str, bool] = {}
        self._results_carry_trace = False
        self._next_probe = 0.0
        self._heartbeat_thread: Optional[threading.Thread] = None
        self._callback_thread: Optional[threading.Thread] = None
        self.address = ""
        self.stats: Counter[str] = collections.Counter()
        self.spans: Optional[SpanExporter] = None
        if options.otlp_endpoint:
            self.spans = SpanExporter(options.otlp_endpoint, options.otlp_service_name, options.otlp_batch_size,
                                      options.otlp_flush_interval, options.otlp_queue_limit, options.otlp_retries,
                                      options.otlp_timeout, self._client_tls)

    # ---- set-up ----

    def handle(self, name: str, fn: Handler) -> Executor:
        """Registers `fn(ctx) -> str | None` (the result message) under `name`; raise to fail."""
        if self._server is not None:
            raise RuntimeError("handle(%r) after start()" % name)
        if not isinstance(name, str) or not 0 < len(name) <= 128 or not all(
                c.isascii() and (c.isalnum() or c in "._-") for c in name):
            raise ValueError("bad handler name %r" % (name,))
        if name in self._handlers:
            raise ValueError("handler %r registered twice" % name)
        self._handlers[name] = fn
        return self

    def start(self) -> None:
        if not self._handlers:
            raise RuntimeError("start() without handlers: call handle() first")
        self._server = _Server((self.options.listen_host, self.options.listen_port), self)
        port = self._server.server_address[1]
        self.address = self.options.advertised_address or "%s:%d" % (self.options.listen_host, port)
        self._accepting = True
        self._spawn(self._server.serve_forever, "http")
        for i in range(self.options.worker_threads):
            self._spawn(self._worker, "worker-%d" % i)
        self._spawn(self._holder, "holder")
        self._heartbeat_thread = self._spawn(self._heartbeat_loop, "heartbeat")
        self._callback_thread = self._spawn(self._callback_loop, "callback")
        if self.spans is not None:
            self.spans.start()
        log.info("executor %s: serving %d handler(s) at %s", self.options.app, len(self._handlers), self.address)

    @property
    def port(self) -> int:
        return self._server.server_address[1] if self._server else 0

    def reload_tls(self) -> bool:
        """Reads the certificate, key and CA files again (call it on SIGHUP; the heartbeat loop
        also does when their modification times change): new connections, in and out, use the new
        ones, open connections keep theirs. Files that do not load (half written, a key that does
        not match) keep the old contexts, logged. Returns whether the new files took."""
        self._tls_files = _tls_stamp(self.options)
        try:
            client = client_tls_context(self.options)
            server = server_tls_context(self.options)
        except (OSError, ssl.SSLError, ValueError) as e:
            log.error("TLS files not reloaded, the previous ones stay in use: %s", e)
            return False
        self._client_tls = client
        if self._server is not None:
            self._server.tls = server
        log.info("TLS certificate and CA files reloaded")
        return True

    def _spawn(self, target: Callable[[], object], name: str) -> threading.Thread:
        t = threading.Thread(target=target, name="sched-" + name, daemon=True)
        t.start()
        self._threads.append(t)
        return t

    def stop(self) -> None:
        """Deregisters, lets running handlers finish within shutdown_grace (then cancels them),
        delivers the last results, closes the server."""
        if self._server is None or self._stopping.is_set():
            return
        self._accepting = False
        self._stopping.set()
        # No heartbeat may land after the deregistration and register the instance again.
        assert self._heartbeat_thread is not None and self._callback_thread is not None  # set by start()
        self._heartbeat_thread.join(timeout=self.options.web_timeout * len(self.options.web_endpoints) + 1)
        self._post("/api/v1/registry/deregister", {"app": self.options.app, "address": self.address})
        deadline = time.monotonic() + self.options.shutdown_grace
        while self._registry.count() > 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        for run in self._registry.cancel_all("shutdown"):
            self._report_never_started(run, "executor shutting down")
        while self._registry.count() > 0:
            time.sleep(0.01)
        with self._work_cv:
            self._work.append(None)
            self._work_cv.notify_all()
        with self._held_cv:
            self._held_cv.notify()  # the holder stops: nothing is held once nothing is in flight
        self._callback_thread.join(timeout=self.options.web_timeout * 2 + 1)
        if self.spans is not None:
            self.spans.stop()  # the last runs' spans
        self._server.shutdown()
        self._server.server_close()
        log.info("executor %s: stopped", self.options.app)

    # ---- the cluster's calls (verified by _Server before they get here) ----

    def verify(self, method: str, target: str, body: bytes, headers: email.message.Message) -> Optional[str]:
        with self._keys_mu:
            keys = dict(self._keys)
            now = _wall_ms() + self._offset_ms
        reason = signature.verify(method, target, body, headers.get(signature.KEY_ID_HEADER),
                                  headers.get(signature.TIMESTAMP_HEADER), headers.get(signature.SIGNATURE_HEADER),
                                  keys, now, self.options.signature_window_ms)
        # Signed for this app, maybe for another of its instances: replayed here, a captured run
        # would run a second time (each instance remembers only the runs it received).
        reason = reason or signature.verify_addressee(target, self.address)
        if reason:
            self.stats["refused_unsigned"] += 1
        return reason

    def on_run(self, body: bytes) -> Answer:
        received = time.monotonic()
        obj = self._json(body)
        return self._admit(obj, "", received)

    def on_runs(self, body: bytes) -> Answer:
        """POST /v1/runs and /v1/runs-ahead: the same admission; serving the second tells a node
        that this executor honours start_in_ms. A run's start_in_ms counts from the request's
        arrival, not from its turn in the batch."""
        received = time.monotonic()
        obj = self._json(body)
        if not isinstance(obj, dict) or not isinstance(obj.get("runs"), list):
            raise ApiError("invalid_argument", "runs: required, an array of runs", "runs")
        for key in obj:
            if key != "runs":
                raise ApiError("invalid_argument", "%s: unknown field" % key[:64], key[:64])
        runs = obj["runs"]
        if not 1 <= len(runs) <= MAX_RUNS_PER_BATCH:
            raise ApiError("invalid_argument", "runs: expected 1..%d runs, got %d" % (MAX_RUNS_PER_BATCH, len(runs)),
                           "runs")
        results = []
        for i, run in enumerate(runs):
            status, answer = self._admit(run, "runs[%d]" % i, received)
            answer["status"] = status
            results.append(answer)
        return 200, {"results": results}

    def _admit(self, obj: object, prefix: str, received: float) -> Answer:
        try:
            run = parse_run(obj, prefix)
            if run["handler"] not in self._handlers:
                label = prefix + ".handler" if prefix else "handler"
                raise ApiError("not_found", "no handler %s in app %s (handlers: %s)" % (
                    json.dumps(run["handler"]), self.options.app, ", ".join(sorted(self._handlers))), label)
            if not self._accepting:
                raise ApiError("unavailable", "the executor is stopping")
        except ApiError as e:
            return e.status, e.body()

        def on_accepted(accepted: _Run, start_now: bool) -> None:
            r = accepted.request
            accepted.not_before = received + r["start_in_ms"] / 1000.0
            self._logs.open(r["fire_id"])
            self._fire_log(r["fire_id"], "accepted: handler %s, attempt %d, epoch %d%s" % (
                r["handler"], r["attempt"], r["epoch"], "" if start_now else " (queued behind the job's running fire)"))

        outcome, message, accepted, start_now, dropped = self._registry.admit(run, on_accepted)
        field = (prefix + ".") if prefix else ""
        if outcome == "stale":
            self.stats["stale"] += 1
            return 409, ApiError("aborted", message, field + "epoch").body()
        if outcome == "duplicate":
            self.stats["duplicates"] += 1
            return 202, {"accepted": True, "duplicate": True, "fire_id": run["fire_id"]}
        if outcome == "busy":
            self.stats["busy"] += 1
            return 409, ApiError("aborted", message, field + "block_strategy").body()
        if outcome == "capacity":
            self.stats["capacity"] += 1
            return 429, ApiError("resource_exhausted", message).body()
        self.stats["accepted"] += 1
        for d in dropped:
            self._report_never_started(d, "covered by fire %d before it started" % run["fire_id"])
        if start_now:
            assert accepted is not None  # accepted: the run is returned
            self._launch(accepted)
        return 202, {"accepted": True, "fire_id": run["fire_id"], "state": "running" if start_now else "queued"}

    def on_kill(self, body: bytes) -> Answer:
        obj = self._json(body)
        if not isinstance(obj, dict):
            raise ApiError("invalid_argument", "body: expected a JSON object", "body")
        fire_id = _int_field(obj, "fire_id", "")
        # Read leniently: a reason this SDK does not know (a newer node's) is a kill by request.
        timeout = _str_field(obj, "reason", "", "request", max_len=MAX_KILL_REASON) == "timeout"
        run, was_running, timeout_in_ms, stopped_now = self._registry.kill(fire_id, timeout)
        if run is None:
            raise ApiError("not_found", "fire %d is not running or queued here" % fire_id, "fire_id")
        answer: Dict[str, Any] = {"fire_id": fire_id, "state": "running" if was_running else "queued"}
        if timeout_in_ms is not None:
            answer["timeout_in_ms"] = timeout_in_ms
            self._fire_log(fire_id, "timeout kill not acted on: the run's own timeout ends it in %d ms (it counts "
                                    "from the handler's start)" % timeout_in_ms)
        elif was_running:
            # A run already stopping (its own timeout, an earlier kill) gets no line: its
            # "finished" line may be written already, and stays the log's last.
            if stopped_now:
                self._fire_log(fire_id, "timeout kill: the handler is asked to stop" if timeout
                               else "kill requested: the handler is asked to stop")
        else:
            self._report_never_started(run, "timed out before it started" if timeout
                                       else "killed by request before it started")
        return 200, answer

    def on_beat(self) -> Answer:
        return 200, {"app": self.options.app, "address": self.address, "handlers": sorted(self._handlers),
                     "capacity": self.options.capacity, "running": self._registry.count(),
                     "epoch": self._registry.epoch()}

    def on_idle_beat(self, body: bytes) -> Answer:
        obj = self._json(body)
        if not isinstance(obj, dict):
            raise ApiError("invalid_argument", "body: expected a JSON object", "body")
        job_id = _int_field(obj, "job_id", "")
        if not self._registry.idle(job_id):
            raise ApiError("failed_precondition", "job %d has a run in progress or queued here" % job_id, "job_id")
        return 200, {"job_id": job_id, "idle": True}

    def on_log(self, query: str) -> Answer:
        try:
            values = urllib.parse.parse_qs(query, keep_blank_values=True, max_num_fields=16)
        except ValueError:
            raise ApiError("invalid_argument", "query: more than 16 parameters", "query")

        def number(name: str, required: bool) -> int:
            if name not in values:
                if required:
                    raise ApiError("invalid_argument", "%s: required" % name, name)
                return 0
            text = values[name][0]
            if not text.isascii() or not text.isdigit() or len(text) > 18:
                raise ApiError("invalid_argument", "%s: expected a non-negative integer, got %s"
                               % (name, json.dumps(text[:32])), name)
            return int(text)

        fire_id = number("fire_id", True)
        page = self._logs.read(fire_id, number("from_line", False), LOG_PAGE_LINES)
        if page is None:
            raise ApiError("not_found", "no log for fire %d here" % fire_id, "fire_id")
        page["fire_id"] = fire_id
        return 200, page

    def _json(self, body: bytes) -> Any:
        if not _json_depth_ok(body, self.options.json_max_depth):
            raise ApiError("invalid_argument", "body: nested deeper than %d" % self.options.json_max_depth, "body")
        try:
            return json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            raise ApiError("invalid_argument", "body: not JSON (%s)" % str(e)[:100], "body")

    # ---- runs ----

    def _fire_log(self, fire_id: int, text: str, by_handler: bool = False) -> None:
        t = time.time()
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % (int(t * 1000) % 1000)
        self._logs.append(fire_id, stamp + " " + text, by_handler)

    def _launch(self, run: _Run) -> None:
        at = run.not_before
        if at > time.monotonic():
            with self._held_cv:
                self._hold(run, at)
                self._held_cv.notify()
            return
        self._to_workers([run])

    def _hold(self, run: _Run, at: float) -> None:
        """Holds `run` until `at`, or with the held first attempts of its scheduled time whose
        start lies within ALIGN_HELD_S of `at` (each node's hold ends at the due time plus its
        own request's transit: the earliest is the nearest to the due time). Under _held_cv."""
        scheduled_ms = run.request["scheduled_ms"]
        if run.request["attempt"] != 0 or scheduled_ms <= 0:
            alone = _HeldGroup(0, at)
            alone.runs.append(run)
            heapq.heappush(self._held, (at, next(self._held_seq), alone))
            return
        groups = self._held_groups.setdefault(scheduled_ms, [])
        group = next((g for g in groups if abs(at - g.at) <= ALIGN_HELD_S), None)
        if group is None:
            group = _HeldGroup(scheduled_ms, at)
            groups.append(group)
            heapq.heappush(self._held, (at, next(self._held_seq), group))
        elif at < group.at:
            group.at = at  # an earlier hold: the group starts then
            heapq.heappush(self._held, (at, next(self._held_seq), group))
        group.runs.append(run)

    def _to_workers(self, runs: List[_Run]) -> None:
        with self._work_cv:
            self._work.extend(runs)
            self._work_cv.notify(len(runs))

    def _holder(self) -> None:
        """Hands each held group to the workers at its time, its runs together. stop() waits
        while any run is in flight, held ones included, so it ends only with nothing held."""
        while True:
            with self._held_cv:
                while True:
                    now = time.monotonic()
                    if self._held and self._held[0][0] <= now:
                        group = heapq.heappop(self._held)[2]
                        if group.started:
                            continue  # an entry left by a start that moved earlier
                        group.started = True
                        if group.scheduled_ms > 0:
                            groups = self._held_groups[group.scheduled_ms]
                            groups.remove(group)
                            if not groups:
                                del self._held_groups[group.scheduled_ms]
                        break
                    if not self._held and self._stopping.is_set() and self._registry.count() == 0:
                        return
                    self._held_cv.wait(self._held[0][0] - now if self._held else 0.5)
            self._to_workers(group.runs)  # their time has come

    def _worker(self) -> None:
        while True:
            with self._work_cv:
                while not self._work:
                    self._work_cv.wait()
                run = self._work.popleft()
                if run is None:
                    self._work.append(None)  # wakes the next worker to stop too
                    return
            self._execute(run)

    def _execute(self, run: _Run) -> None:
        r = run.request
        started_ms = _wall_ms()
        timer: Optional[threading.Timer] = None
        if r["timeout_ms"] > 0:
            # The timeout counts from here, the handler's start, whatever the run waited for.
            run.deadline = time.monotonic() + r["timeout_ms"] / 1000.0
            timer = threading.Timer(r["timeout_ms"] / 1000.0, run.cancel_for, args=("timeout",))
            timer.daemon = True
            timer.start()
        fid = r["fire_id"]
        ctx = JobContext(r, run.cancel, lambda line: self._fire_log(fid, line, True))
        # The trace id in the fire's log and on the process's debug lines (as `extra` fields, for a
        # JSON formatter), so the handler's work can be found from the fire and back.
        self._fire_log(fid, "started: shard %d/%d%s" % (r["shard_index"], r["shard_total"],
                                                       ", trace " + ctx.trace_id if ctx.trace_id else ""))
        fields = {"app": self.options.app, "job": r["job_id"], "fire": fid, "attempt": r["attempt"], "epoch": r["epoch"],
                  "trace_id": ctx.trace_id}
        log.debug("run of fire %d started (%s) trace_id=%s", fid, r["handler"], ctx.trace_id,
                  extra=dict(fields, event="started"))
        code, message = "ok", ""
        if run.cancel.is_set():
            code, message = "cancelled", "cancelled before it started"
        else:
            try:
                returned = self._handlers[r["handler"]](ctx)
                message = str(returned) if returned is not None else ctx.result_message
            except HandlerFailed as e:
                code, message = str(e.code)[:64], str(e)
            except Exception as e:  # a handler's bug fails its run, never the executor
                code, message = "internal", "handler raised %s: %s" % (type(e).__name__, e)
        if timer:
            timer.cancel()
        result: Result = {"fire_id": r["fire_id"], "attempt": r["attempt"], "started_ms": started_ms,
                  "finished_ms": _wall_ms()}
        if run.reason == "timeout":
            # Without a timeout of its own, only the node's watch (a kill with reason timeout) ends it.
            result.update(status="timeout", code="deadline_exceeded",
                          message="timed out after %d ms" % r["timeout_ms"] if r["timeout_ms"] > 0
                          else "timed out: the job's timeout, watched by the node")
        elif run.reason == "killed":
            result.update(status="killed", code="cancelled", message="killed by request")
        elif run.reason == "covered":
            result.update(status="killed", code="cancelled", message="covered by fire %s" % run.covered_by)
        elif run.reason == "shutdown":
            result.update(status="killed", code="cancelled", message="executor shutting down")
        else:
            result.update(status="succeeded" if code == "ok" else "failed", code=code, message=message[:4096])
        self._fire_log(r["fire_id"], "finished: %s%s" % (result["status"],
                                                         ": " + result["message"] if result["message"] else ""))
        log.debug("run of fire %d %s (%s) trace_id=%s", fid, result["status"], r["handler"], ctx.trace_id,
                  extra=dict(fields, event=result["status"]))
        if self.spans is not None:
            span = run_span(r, result, self.options.app, self.address)
            if span is not None:
                self.spans.push(span)
        # The tail before close: a closed log may be forgotten at once (more fires running than
        # log_retained_fires), and the result would go without it.
        self._attach_tail(result)
        self._logs.close(r["fire_id"])
        nxt = self._registry.finish(run)
        # Read once the run left the registry: no repeat can move it to a newer epoch after this.
        result["epoch"] = self._registry.result_epoch(run)
        if r["traceparent"]:
            result["traceparent"] = r["traceparent"]
        self._report(result, r["callback_url"])
        if nxt is not None:
            self._launch(nxt)

    def _report_never_started(self, run: _Run, message: str) -> None:
        r = run.request
        now = _wall_ms()
        status = "timeout" if run.reason == "timeout" else "killed"
        result: Result = {"fire_id": r["fire_id"], "attempt": r["attempt"], "epoch": self._registry.result_epoch(run),
                  "status": status,
                  "code": "deadline_exceeded" if status == "timeout" else "cancelled", "message": message,
                  "started_ms": now, "finished_ms": now}
        self._fire_log(r["fire_id"], status + ": " + message)
        self._attach_tail(result)
        self._logs.close(r["fire_id"])
        if r["traceparent"]:
            result["traceparent"] = r["traceparent"]
        self._report(result, r["callback_url"])

    def _attach_tail(self, result: Result) -> None:
        if self.options.log_tail_bytes <= 0:
            return
        tail = self._logs.tail(result["fire_id"], self.options.log_tail_bytes)
        if tail is not None:
            result["log"], result["log_truncated_bytes"] = tail

    def _report(self, result: Result, callback_url: str) -> None:
        result["address"] = self.address
        self.stats[result["status"]] += 1
        with self._outbox_mu:
            self._outbox.append((result, callback_url))

    # ---- calls to the cluster ----

    def _post(self, path: str, body: object, preferred_url: str = "",
              endpoints: Optional[Sequence[str]] = None) -> Optional[Tuple[Any, int, int, str]]:
        """POSTs to the first endpoint that answers 2xx (of `endpoints`, default every web endpoint);
        returns (parsed answer, sent_ms, answered_ms, url) or None."""
        payload = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        targets = (([preferred_url] if preferred_url else [])
                   + [e + path for e in (self.options.web_endpoints if endpoints is None else endpoints)])
        for url in targets:
            parts = urllib.parse.urlsplit(url)
            sent = _wall_ms()
            try:
                conn: http.client.HTTPConnection
                host = parts.hostname or ""
                if parts.scheme == "https":
                    conn = http.client.HTTPSConnection(host, parts.port, timeout=self.options.web_timeout,
                                                       context=self._client_tls)
                else:
                    conn = http.client.HTTPConnection(host, parts.port, timeout=self.options.web_timeout)
                try:
                    conn.request("POST", (parts.path or "/") + ("?" + parts.query if parts.query else ""), payload,
                                 {"Content-Type": "application/json", "Authorization": "Bearer " + self.options.token,
                                  "User-Agent": "sched-client-python/" + self.options.app})
                    resp = conn.getresponse()
                    answer = resp.read(4 * 1024 * 1024 + 1)
                finally:
                    conn.close()
            except ssl.SSLError as e:
                # Certificate problems are configuration, not weather: say so where operators look.
                log.warning("POST %s failed: TLS: %s", url, e)
                continue
            except (OSError, http.client.HTTPException, ValueError) as e:
                log.debug("POST %s failed: %s", url, e)
                continue
            if 200 <= resp.status < 300:
                try:
                    parsed = json.loads(answer) if answer and len(answer) <= 4 * 1024 * 1024 else {}
                except (ValueError, RecursionError):
                    parsed = {}
                return parsed, sent, _wall_ms(), url
            log.debug("POST %s: HTTP %d", url, resp.status)
        return None

    def _learn_signing(self, answer: Any, sent: int, received: int) -> None:
        # An answer without keys changes nothing; a malformed one is ignored whole.
        if not isinstance(answer, dict) or "signing" not in answer:
            return
        s = answer["signing"]
        if not isinstance(s, dict) or not isinstance(s.get("keys"), list) or len(s["keys"]) > 8:
            return
        server_ms = s.get("server_time_ms")
        if isinstance(server_ms, bool) or not isinstance(server_ms, int):
            return
        keys: Dict[str, str] = {}
        for k in s["keys"]:
            if not isinstance(k, dict) or not isinstance(k.get("id"), str) or not isinstance(k.get("secret"), str):
                return
            if not 0 < len(k["id"]) <= 256 or not 0 < len(k["secret"]) <= 256:
                return
            keys[k["id"]] = k["secret"]
        with self._keys_mu:
            if set(keys) != set(self._keys):
                log.info("executor %s: signing keys now %s", self.options.app, ", ".join(keys))
            self._keys = keys
            self._offset_ms = server_ms - (sent + received) // 2

    def _learn_capabilities(self, answer: Any, url: str) -> None:
        """Notes whether the endpoint behind `url` advertised result-traceparent, and whether
        every web endpoint has now (then results carry their run's traceparent)."""
        endpoint = next((e for e in self.options.web_endpoints if url.startswith(e + "/")), None)
        if endpoint is None:
            return
        caps = answer.get("capabilities") if isinstance(answer, dict) else None
        takes = isinstance(caps, list) and RESULT_TRACEPARENT in caps[:32]
        self._takes_trace[endpoint] = takes
        carry = all(self._takes_trace.get(e, False) for e in self.options.web_endpoints)
        if carry != self._results_carry_trace:
            log.info("executor %s: results %s the run's traceparent", self.options.app,
                     "now carry" if carry else "no longer carry")
        self._results_carry_trace = carry

    def _probe_capabilities(self, body: Dict[str, Any]) -> None:
        """A heartbeat to one endpoint not known to take a result's traceparent, at most one a
        minute: the heartbeat loop reaches only the first endpoint that answers."""
        if self._results_carry_trace or time.monotonic() < self._next_probe:
            return
        self._next_probe = time.monotonic() + 60.0
        unknown = [e for e in self.options.web_endpoints if not self._takes_trace.get(e, False)]
        if unknown:
            answer = self._post("/api/v1/registry/heartbeat", body, endpoints=unknown[:1])
            if answer is not None:
                self._learn_capabilities(answer[0], answer[3])

    def _heartbeat_loop(self) -> None:
        while not self._stopping.is_set():
            body = {"app": self.options.app, "address": self.address, "handlers": sorted(self._handlers),
                    "capacity": self.options.capacity, "running": self._registry.count()}
            answer = self._post("/api/v1/registry/heartbeat", body)
            if answer is not None:
                self._learn_signing(answer[0], answer[1], answer[2])
                self._learn_capabilities(answer[0], answer[3])
                self._probe_capabilities(body)
                self.stats["heartbeats_ok"] += 1
            else:
                self.stats["heartbeats_failed"] += 1
            if _tls_stamp(self.options) != self._tls_files:
                self.reload_tls()
            interval = self.options.heartbeat_interval
            self._stopping.wait(interval if answer is not None else min(interval, 2.0))

    def _take_batch(self) -> Tuple[List[Tuple[Result, str]], str]:
        with self._outbox_mu:
            if not self._outbox:
                return [], ""
            url = self._outbox[0][1]
            batch: List[Tuple[Result, str]] = []
            rest: Deque[Tuple[Result, str]] = collections.deque()
            for item in self._outbox:
                if item[1] == url and len(batch) < self.options.callback_batch_size:
                    batch.append(item)
                else:
                    rest.append(item)
            self._outbox = rest
            return batch, url

    def _flush(self) -> bool:
        with self._outbox_mu:
            due = len(self._outbox)
        sent = 0
        while sent < due:
            batch, url = self._take_batch()
            if not batch:
                break
            sent += len(batch)
            # A node before the field refuses a result carrying it: sent only once every web
            # endpoint advertised it (a refusing callback_url falls through to them).
            carry = self._results_carry_trace
            items = [item[0] if carry else {k: v for k, v in item[0].items() if k != "traceparent"}
                     for item in batch]
            if self._post("/api/v1/callback", items, url) is None:
                self.stats["callback_failures"] += 1
                with self._outbox_mu:
                    self._outbox.extendleft(reversed(batch))
                return False
            self.stats["delivered"] += len(batch)
        return True

    def _callback_loop(self) -> None:
        backoff = self.options.callback_flush_interval
        while True:
            final = self._stopping.is_set() and self._registry.count() == 0
            ok = self._flush()
            if final:
                return
            backoff = self.options.callback_flush_interval if ok else min(backoff * 2,
                                                                          self.options.callback_max_backoff)
            # While stopping, no long backoff: stop() waits for the final round.
            time.sleep(min(backoff, 0.05) if self._stopping.is_set() else backoff)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "sched-client-python"
    sys_version = ""

    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # access log to the logger, errors only
        pass

    def _answer(self, status: int, body: object, close: bool = False) -> None:
        data = json.dumps(body, separators=(",", ":")).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    def _error(self, e: ApiError, close: bool = False) -> None:
        self._answer(e.status, e.body(), close)

    def _drain(self, n: int) -> None:
        """Reads and drops a refused body, up to 4x body_limit and 2 s, so that the client gets
        its 413 instead of a broken pipe while it is still sending (a lingering close). Larger
        or slower bodies are cut off: the connection closes after the answer."""
        left = min(n, 4 * self.server.executor.options.body_limit)
        deadline = time.monotonic() + 2.0
        try:
            while left > 0 and time.monotonic() < deadline:
                # A buffered reader at run time (StreamRequestHandler), typed as any binary file.
                chunk = cast(io.BufferedIOBase, self.rfile).read1(min(left, 65536))
                if not chunk:
                    break
                left -= len(chunk)
        except OSError:
            pass

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            raise ApiError("invalid_argument", "Transfer-Encoding: chunked bodies are not accepted", "Transfer-Encoding")
        text = self.headers.get("Content-Length")
        if text is None:
            return b""
        if not text.isascii() or not text.isdigit() or len(text) > 12:
            raise ApiError("invalid_argument", "Content-Length: expected a number", "Content-Length")
        n = int(text)
        if n > self.server.executor.options.body_limit:
            self._drain(n)
            raise ApiError("payload_too_large", "body: larger than %d bytes" % self.server.executor.options.body_limit,
                           "body")
        data = self.rfile.read(n)
        if len(data) != n:
            raise ApiError("invalid_argument", "body: shorter than Content-Length", "body")
        return data

    def _dispatch(self, method: str) -> None:
        ex = self.server.executor
        try:
            body = self._read_body()
        except ApiError as e:
            return self._error(e, close=True)
        except OSError:
            self.close_connection = True
            return None
        target = self.path
        path, _, query = target.partition("?")
        reason = ex.verify(method, target, body, self.headers)
        if reason:
            return self._error(ApiError("unauthenticated", reason))
        routes: Dict[Tuple[str, str], Callable[[bytes], Answer]] = {
            ("POST", "/v1/run"): ex.on_run, ("POST", "/v1/runs"): ex.on_runs,
            ("POST", "/v1/runs-ahead"): ex.on_runs, ("POST", "/v1/kill"): ex.on_kill,
            ("POST", "/v1/idle-beat"): ex.on_idle_beat}
        try:
            if (method, path) in routes:
                status, answer = routes[(method, path)](body)
            elif (method, path) == ("GET", "/v1/beat"):
                status, answer = ex.on_beat()
            elif (method, path) == ("GET", "/v1/log"):
                status, answer = ex.on_log(query)
            else:
                raise ApiError("not_found", "no route %s %s" % (method, path[:128]), None)
        except ApiError as e:
            return self._error(e)
        except Exception:  # a bug here must not leave the caller without an answer
            log.exception("executor %s: %s %s failed", ex.options.app, method, path[:128])
            return self._error(ApiError("internal", "internal error"))
        return self._answer(status, answer)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: Tuple[str, int], executor: Executor) -> None:
        self.executor = executor
        self._slots = threading.BoundedSemaphore(executor.options.max_connections)
        super().__init__(address, _Handler)
        # Each accepted connection is wrapped with the context current at its accept, so a reload
        # (Executor.reload_tls) reaches new connections while open ones keep theirs.
        self.tls = server_tls_context(executor.options)

    def get_request(self) -> Tuple[Any, Any]:
        request, client_address = super().get_request()
        tls = self.tls
        if tls is not None:
            # The handshake runs on the connection's own thread (process_request_thread), under
            # request_timeout, so a silent peer cannot stall the accept loop.
            request = tls.wrap_socket(request, server_side=True, do_handshake_on_connect=False)
        return request, client_address

    def process_request(self, request: Any, client_address: Any) -> None:
        # At the connection cap a new connection is closed at once rather than given a thread.
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        request.settimeout(self.executor.options.request_timeout)
        try:
            super().process_request(request, client_address)
        except Exception:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            if isinstance(request, ssl.SSLSocket):
                try:
                    request.do_handshake()
                except (OSError, ssl.SSLError) as e:
                    log.info("TLS handshake with %s failed: %s", client_address[0], e)
                    self.shutdown_request(request)
                    return
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("connection from %s ended with an error", client_address, exc_info=True)


__all__ = ["Executor", "Options", "JobContext", "HandlerFailed", "ApiError", "Handler", "RunRequest", "parse_run"]
