#!/usr/bin/env python3
"""A demo business service on the Python SDK: serves the conformance handler set
(docs/protocol.md "Conformance handler set") and echo/sleep/fail under their demo names.

    SCHED_TOKEN=<executor token> python3 demo_service.py --web http://127.0.0.1:8080 --app demo
    SCHED_TOKEN=... python3 demo_service.py --web https://web:8080 --ca-file ca.crt \
        --tls-cert-file svc.crt --tls-key-file svc.key     # TLS both ways

Stops gracefully on SIGTERM or SIGINT (deregisters, lets running handlers finish)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from typing import Any, Dict, List, NoReturn, Optional, Type

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from sched_client import Executor, Handler, HandlerFailed, JobContext, JsonLogFormatter, Options  # noqa: E402


def _params(ctx: JobContext) -> Dict[str, Any]:
    return ctx.params if isinstance(ctx.params, dict) else {}


def echo(ctx: JobContext) -> str:
    text = json.dumps(ctx.params, separators=(",", ":"))
    ctx.log("echo: " + text)
    return text


def sleep(ctx: JobContext) -> str:
    ms = _params(ctx).get("ms", 1000)
    if isinstance(ms, bool) or not isinstance(ms, int) or not 0 <= ms <= 24 * 3600 * 1000:
        raise HandlerFailed("params.ms: expected an integer 0..86400000", "invalid_argument")
    ctx.log("sleeping %d ms" % ms)
    if not ctx.sleep(ms / 1000.0):
        raise HandlerFailed("interrupted while sleeping", "cancelled")
    return "slept %d ms" % ms


def fail(ctx: JobContext) -> NoReturn:
    message = _params(ctx).get("message", "failed on purpose")
    if not isinstance(message, str):
        raise HandlerFailed("params.message: expected a string", "invalid_argument")
    ctx.log("failing: " + message[:1024])
    raise HandlerFailed(message[:1024])


HANDLERS: Dict[str, Handler] = {"conformance.echo": echo, "conformance.sleep": sleep, "conformance.fail": fail,
            "echo": echo, "sleep": sleep, "fail": fail}


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--web", action="append", required=True, help="cluster base URL (repeat to fail over)")
    p.add_argument("--app", default="demo", help="application name (default demo)")
    p.add_argument("--token", default=os.environ.get("SCHED_TOKEN", ""), help="executor token (or SCHED_TOKEN)")
    p.add_argument("--listen", default="127.0.0.1:0", help="host:port to serve /v1/* on (port 0 = any free one)")
    p.add_argument("--heartbeat-interval", type=float, default=10.0, help="seconds between heartbeats")
    p.add_argument("--callback-flush-interval", type=float, default=0.1, help="seconds a result may wait")
    p.add_argument("--shutdown-grace", type=float, default=30.0, help="seconds running handlers get on stop")
    p.add_argument("--tls-cert-file", default="", help="PEM certificate chain: serve the nodes' calls over HTTPS")
    p.add_argument("--tls-key-file", default="", help="PEM private key of --tls-cert-file")
    p.add_argument("--tls-client-ca-file", default="", help="PEM CA bundle: require node client certificates")
    p.add_argument("--ca-file", default="", help="PEM CA bundle for https:// --web URLs (default: the system store)")
    p.add_argument("--client-cert-file", default="", help="PEM client certificate for the web nodes")
    p.add_argument("--client-key-file", default="", help="PEM private key of --client-cert-file")
    p.add_argument("--log-level", default="INFO")
    p.add_argument("--log-format", choices=("text", "json"), default="text",
                   help="json: one JSON object per line, with fire, job and trace_id members on run lines")
    p.add_argument("--otlp-endpoint", default="",
                   help="export each run's span over OTLP/HTTP (JSON) to this collector URL (default: off)")
    p.add_argument("--otlp-flush-interval", type=float, default=1.0, help="seconds a span may wait to be posted")
    return p.parse_args(argv)


def main(argv: Optional[List[str]] = None, executor_class: Type[Executor] = Executor) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.log_format == "json":
        for h in logging.getLogger().handlers:
            h.setFormatter(JsonLogFormatter())
    host, _, port = args.listen.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        print("demo_service: --listen: expected host:port, got %r" % args.listen, file=sys.stderr)
        return 2
    try:
        options = Options(app=args.app, web_endpoints=args.web, token=args.token, listen_host=host,
                          listen_port=int(port), heartbeat_interval=args.heartbeat_interval,
                          callback_flush_interval=args.callback_flush_interval, shutdown_grace=args.shutdown_grace,
                          tls_cert_file=args.tls_cert_file, tls_key_file=args.tls_key_file,
                          tls_client_ca_file=args.tls_client_ca_file, ca_file=args.ca_file,
                          client_cert_file=args.client_cert_file, client_key_file=args.client_key_file,
                          otlp_endpoint=args.otlp_endpoint, otlp_flush_interval=args.otlp_flush_interval)
    except ValueError as e:
        print("demo_service: %s" % e, file=sys.stderr)
        return 2
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    reload_tls = threading.Event()  # SIGHUP: read the TLS files again (the main loop does it)
    signal.signal(signal.SIGHUP, lambda *_: reload_tls.set())
    executor = executor_class(options)
    for name, fn in HANDLERS.items():
        executor.handle(name, fn)
    executor.start()
    announce = "demo_service: serving at %s" % executor.address
    if args.log_format == "json":  # stdout in the log's shape too, so a collector meets only JSON
        announce = JsonLogFormatter().format(logging.makeLogRecord(
            {"msg": announce, "levelname": "INFO", "levelno": logging.INFO, "name": "demo_service"}))
    print(announce, flush=True)
    while not stop.wait(0.5):
        if reload_tls.is_set():
            reload_tls.clear()
            executor.reload_tls()
    executor.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
