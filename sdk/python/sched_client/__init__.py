"""sched_client: the executor side of the scheduler's protocol in Python (docs/protocol.md).

    from sched_client import Executor, Options
    ex = Executor(Options(app="billing", web_endpoints=["http://sched:8080"], token=TOKEN))
    ex.handle("report", lambda ctx: "done")
    ex.start()
"""

from .executor import (ApiError, Executor, Handler, HandlerFailed, JobContext, JsonLogFormatter, Options, RunRequest,
                       SpanExporter, check_tracestate, parse_run, run_span, run_span_id)
from .signature import addressed_target, canonical_string, sign, verify, verify_addressee

__version__ = "0.1.0"
PROTOCOL_VERSION = "1"

__all__ = ["ApiError", "Executor", "Handler", "HandlerFailed", "JobContext", "JsonLogFormatter", "Options", "RunRequest", "parse_run",
           "SpanExporter", "check_tracestate", "run_span", "run_span_id",
           "addressed_target", "canonical_string", "sign", "verify", "verify_addressee", "PROTOCOL_VERSION"]
