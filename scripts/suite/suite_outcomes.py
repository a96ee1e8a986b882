"""pytest plugin of scripts/suite/suite_record.py: every test report, appended as one JSON line to the
file ``AUTOGCL_SUITE_OUTCOMES`` names as soon as pytest (the xdist controller, under ``-n``) has
it, so that a run cut after its last test (a worker that hangs while it exits) keeps every
outcome; pytest's JUnit file is written only at the end of the session."""

from __future__ import annotations

import json
import os


def _message(report) -> str:
    longrepr = report.longrepr
    if longrepr is None:
        return ""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (file, line, reason)
        return str(longrepr[2]).removeprefix("Skipped: ")
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        return str(crash.message)
    lines = str(longrepr).strip().splitlines()
    return lines[-1] if lines else ""


_WORKER = False


def pytest_configure(config):
    # an xdist worker (its config has ``workerinput``) leaves the writing to the controller, which
    # receives its reports; the environment cannot tell: a suite run from inside a test inherits
    # the outer worker's PYTEST_XDIST_WORKER
    global _WORKER
    _WORKER = hasattr(config, "workerinput")


def pytest_runtest_logreport(report):
    path = os.environ.get("AUTOGCL_SUITE_OUTCOMES")
    if not path or _WORKER:
        return
    if report.when == "call" or report.outcome != "passed":  # the call; a setup or teardown that did not pass
        lines = _message(report).strip().splitlines()
        row = {"test": report.nodeid, "when": report.when, "outcome": report.outcome,
               "message": lines[0][:300] if lines else "", "s": round(report.duration, 3)}
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
