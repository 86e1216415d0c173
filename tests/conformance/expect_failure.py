#!/usr/bin/env python3
"""Runs the conformance kit against an executor that must NOT conform and passes only when the
kit exits non-zero with the named clause reported FAIL.

    expect_failure.py CLAUSE -- <sched_conformance.py arguments>
"""

import re
import subprocess
import sys


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    clause = sys.argv[1]
    proc = subprocess.run([sys.executable] + sys.argv[3:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=120)
    out = proc.stdout.decode("utf-8", "replace")
    print(out)
    if proc.returncode == 0:
        print("expect_failure: the kit passed a broken executor (exit 0)")
        return 1
    if not re.search(r"^FAIL\s+%s\s" % re.escape(clause), out, re.M):
        print("expect_failure: exit %d but no FAIL line for clause %s" % (proc.returncode, clause))
        return 1
    print("expect_failure: the kit failed clause %s as it should (exit %d)" % (clause, proc.returncode))
    return 0


if __name__ == "__main__":
    sys.exit(main())
