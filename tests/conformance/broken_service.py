#!/usr/bin/env python3
"""Test-only: the Python demo service with one protocol clause broken on purpose, so that a test
can show the conformance kit fails it (tests/conformance/CMakeLists.txt).

    broken_service.py --break duplicate-runs|stale-epoch|unsigned|unaddressed|callback-retry [demo_service args]
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "sdk", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "sdk", "python", "examples"))

import demo_service  # noqa: E402
from sched_client import Executor  # noqa: E402

BREAKS = ("duplicate-runs", "stale-epoch", "unsigned", "unaddressed", "callback-retry")


def broken_executor(mode):
    class Broken(Executor):
        def _admit(self, obj, prefix, received):
            if mode == "duplicate-runs":
                with self._registry.mu:  # forget every run seen: a repeat runs again
                    self._registry.seen.clear()
            if mode == "stale-epoch":
                with self._registry.mu:  # no fencing
                    self._registry.max_epoch = 0
            return super()._admit(obj, prefix, received)

        def verify(self, method, target, body, headers):
            if mode == "unsigned":
                return None
            reason = super().verify(method, target, body, headers)
            if mode == "unaddressed" and reason and reason.startswith("instance:"):
                return None  # the signature checked, not which instance the call is addressed to
            return reason

        def _flush(self):
            if mode == "callback-retry":
                with self._outbox_mu:  # a failed delivery is dropped, never retried
                    batch = list(self._outbox)
                    self._outbox.clear()
                for result, url in batch:
                    self._post("/api/v1/callback", [result], url)
                return True
            return super()._flush()

    return Broken


def main():
    args = sys.argv[1:]
    if len(args) < 2 or args[0] != "--break" or args[1] not in BREAKS:
        print("usage: broken_service.py --break %s [demo_service args]" % "|".join(BREAKS), file=sys.stderr)
        return 2
    return demo_service.main(args[2:], executor_class=broken_executor(args[1]))


if __name__ == "__main__":
    sys.exit(main())
