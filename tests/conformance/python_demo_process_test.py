#!/usr/bin/env python3
"""Process test: a real scheduler-standalone (SQLite, loopback) schedules a job on the Python demo
service (sdk/python/examples/demo_service.py): the job's fires run there and succeed, and the
log the service sent with the result is served by the cluster.

    python_demo_process_test.py /path/to/scheduler-standalone
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from process_harness import call, run_test  # noqa: E402


def test(run, standalone_bin):
    standalone = run.start_standalone(standalone_bin, "  level: info\n")
    service = run.start_python_demo("serving at")
    job_id = run.create_job("python-conformance-echo", "conformance.echo", params={"from": "python-sdk"})["id"]
    succeeded = run.wait_success(job_id)
    failed = [(f.get("id"), f.get("status")) for f in run.fires(job_id)
              if f.get("id") <= succeeded["id"] and f.get("status") in ("failed", "timeout", "killed", "lost")]
    assert not failed, "fires that did not succeed: %s\n--- standalone ---\n%s" % (failed, standalone.output())

    status, log = call(run.base, "GET", "/api/v1/fires/%d/log" % succeeded["id"], run.admin)
    assert status == 200, "GET fire log: %s %s" % (status, log)
    assert any("python-sdk" in line for line in log.get("lines", [])), "fire log lacks the echo: %s" % log
    print("fire %d of job %d succeeded on the Python demo service; log: %s" % (
        succeeded["id"], job_id, log.get("source")))
    assert service.stop() == 0, "the demo service did not stop cleanly:\n" + service.output()


if __name__ == "__main__":
    sys.exit(run_test(__doc__, 1, "sched-pydemo-", test))
