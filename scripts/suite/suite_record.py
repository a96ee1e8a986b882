"""Run the test suite once and record what happened, to show that it passes away from the
machine it was written on (docs/reliability.md, "The suite elsewhere").

    python scripts/suite/suite_record.py --tag cpu-default-isa --env ATEN_CPU_CAPABILITY=default \
        --env MKL_ENABLE_INSTRUCTIONS=SSE4_2 -- -n 2
    python scripts/suite/suite_record.py --tag h100 -- -n 8        # on a lent GPU machine

It runs ``python -m pytest -q -rs --junitxml=...`` with the given environment and extra pytest
arguments, reads the JUnit file (every test case, with its outcome), and writes
``docs/results/suite/<tag>.json``: the counts, every failed or erroring test by id with the first
line of its message, every skip with its reason, the machine (CPU model, cores, the ATen CPU
capability torch used), torch, the code commit, the environment it set, the pytest arguments and
the :data:`SLOWEST` slowest tests with their seconds (``slowest``: setup, call and teardown together,
pytest's JUnit ``time``; from the per-test log, a cut run's, the phases it logged).
A run whose pytest was cut (no JUnit file) is recorded as such, never as a pass; its counts
then come from the per-test log that ``scripts/suite/suite_outcomes.py`` (loaded with ``-p``) appends to
as each test is reported. ``--amend RECORD LOG`` fills a cut record that has no counts from pytest's
progress characters in its output. Exit status: the pytest exit status.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from autogcl.atomic import atomic_write_text  # noqa: E402
from autogcl.paths import child_pythonpath  # noqa: E402
from autogcl.protocols.publishing import code_commit  # noqa: E402

OUT = REPO / "docs" / "results" / "suite"
#: how many of the slowest tests a record names (``slowest``), as pytest's ``--durations=25``
SLOWEST = 25


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _commit() -> str | None:
    """The code's commit (``AUTOGCL_COMMIT`` first, as for published runs), ``+`` when autogcl/
    or tests/ have uncommitted changes."""
    sha, dirty = code_commit(REPO)
    if sha and not os.environ.get("AUTOGCL_COMMIT", "").strip():
        tests = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "tests"], cwd=REPO,
                               capture_output=True, text=True)
        dirty = dirty or bool(tests.stdout.strip())
    return sha and sha + ("+" if dirty and not sha.endswith("+dirty") else "")


def _own_session() -> None:
    """In the child before pytest starts: its own session, so that a stop reaches pytest and its
    xdist workers once, from here; and SIGINT back to its default, so that Python turns it into
    KeyboardInterrupt even where this script's parent ignores it (an xdist worker does, and an
    ignored signal stays ignored across exec)."""
    os.setsid()
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def read_junit(path: Path) -> dict:
    """Counts, failures and skips of a JUnit XML file written by pytest: a test case counts once,
    by its first failure, error or skip (a test that fails and then errs in teardown is a
    failure; an xfail is a skip, as pytest writes it); a case without a name (a test stopped
    by SIGINT) does not count. ``seconds``: each test's ``time`` (setup, call and teardown)."""
    root = ET.parse(path).getroot()
    cases = root.iter("testcase")
    out = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0, "failures": [], "skips": [], "seconds": {}}
    for case in cases:
        if not case.get("name"):  # pytest's entry for a test stopped by SIGINT: it did not finish
            continue
        test = f"{case.get('classname', '')}::{case.get('name', '')}"
        out["seconds"][test] = out["seconds"].get(test, 0.0) + float(case.get("time") or 0.0)
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = child.tag
                message = (child.get("message") or child.text or "").strip().splitlines()
                first = message[0][:300] if message else ""
                if child.tag == "skipped":
                    out["skips"].append({"test": test, "reason": first})
                else:
                    out["failures"].append({"test": test, "kind": child.tag, "message": first})
                break
        key = {"passed": "passed", "failure": "failed", "error": "errors", "skipped": "skipped"}[outcome]
        out[key] += 1
    return out


def read_outcomes(path: Path) -> dict:
    """The same counts and lists as :func:`read_junit`, from the JSON lines of
    ``scripts/suite/suite_outcomes.py`` (written as each test is reported): a test counts once, by its
    call's outcome, or as an error when its setup or teardown failed (a failed call stays a
    failure); a line cut while written is left out. ``seconds``: each test's logged phases' ``s``."""
    per: dict = {}
    seconds: dict = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        seconds[r["test"]] = seconds.get(r["test"], 0.0) + float(r.get("s", 0.0))
        if r["outcome"] == "skipped":
            key = "skipped"
        elif r["when"] == "call":
            key = "failed" if r["outcome"] == "failed" else "passed"
        else:
            key = "errors"
        if per.get(r["test"], ("passed",))[0] == "passed":
            per[r["test"]] = (key, r.get("message", ""))
    out = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0, "failures": [], "skips": [], "seconds": seconds}
    for test, (key, message) in per.items():
        out[key] += 1
        if key == "skipped":
            out["skips"].append({"test": test, "reason": message})
        elif key != "passed":
            out["failures"].append({"test": test, "kind": "failure" if key == "failed" else "error",
                                    "message": message})
    return out


#: a line of pytest -q's progress: one character per test, then the percentage
PROGRESS = re.compile(r"^([.sFExX]+)\s+\[\s*\d+%\]")


def read_progress(text: str) -> dict:
    """Counts from pytest -q's progress characters (``.`` passed, ``s`` or ``x`` skipped, ``F``
    failed, ``E`` error, ``X`` an unexpected pass): the last resort for a run cut after its last
    test that left neither a JUnit file nor the per-test log (no test ids then)."""
    chars = "".join(m.group(1) for m in map(PROGRESS.match, text.splitlines()) if m)
    return {"passed": chars.count(".") + chars.count("X"), "failed": chars.count("F"),
            "errors": chars.count("E"), "skipped": chars.count("s") + chars.count("x")}


def amend(record: Path, log: Path) -> dict:
    """Fill the counts of a cut ``record`` that has none from the progress characters of its
    pytest output ``log``, saying so in ``counts_from``; a record with counts is left alone."""
    d = json.loads(record.read_text(encoding="utf-8"))
    if d.get("passed") is not None:
        return d
    d.update(read_progress(log.read_text(encoding="utf-8", errors="replace")))
    d["counts_from"] = (f"pytest's progress characters in {log.name} (the run left no per-test report: "
                        "test ids of failures and skips are unknown)")
    atomic_write_text(record, json.dumps(d, indent=1) + "\n")
    return d


def slowest(seconds: dict, n: int = SLOWEST) -> list[dict]:
    """The ``n`` slowest tests of ``seconds`` (test id -> seconds), slowest first."""
    top = sorted(seconds.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    return [{"test": test, "s": round(s, 2)} for test, s in top]


def capability(env: dict) -> str | None:
    """The CPU capability ATen dispatches to under ``env``: this process's where the run's
    ``ATEN_CPU_CAPABILITY`` is this process's (the only variable that moves it), else a probe."""
    if env.get("ATEN_CPU_CAPABILITY") == os.environ.get("ATEN_CPU_CAPABILITY"):
        import torch

        return torch.backends.cpu.get_cpu_capability()
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
                           env=env, capture_output=True, text=True)
    return probe.stdout.strip() or None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tag", help="the record's name: docs/results/suite/TAG.json (required for a run)")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                   help="an environment variable set for the run (repeatable)")
    p.add_argument("--note", default="", help="free text kept in the record (where, under what load)")
    p.add_argument("--out", type=Path, default=OUT, help="the folder of the records")
    p.add_argument("--timeout-s", type=float, default=None,
                   help="stop pytest with SIGINT after this many seconds (it then writes the tests so far)")
    p.add_argument("--amend", nargs=2, type=Path, metavar=("RECORD", "LOG"),
                   help="no run: fill the counts of a cut RECORD from the pytest output LOG (read_progress)")
    p.add_argument("pytest_args", nargs="*", help="after --: extra pytest arguments (-n 2, a test path)")
    args = p.parse_args(argv)
    if args.amend:
        d = amend(*args.amend)
        print(f"suite_record: {args.amend[0]}: {({k: d.get(k) for k in ('passed', 'failed', 'errors', 'skipped')})}")
        return 0
    if not args.tag:
        p.error("--tag is required for a run")
    env = dict(os.environ)
    set_env = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            p.error(f"--env {item!r}: expected KEY=VALUE")
        set_env[key] = value
    env.update(set_env)
    args.out.mkdir(parents=True, exist_ok=True)
    junit = args.out / f".{args.tag}.junit.xml"
    live = args.out / f".{args.tag}.outcomes.jsonl"
    junit.unlink(missing_ok=True)
    live.unlink(missing_ok=True)
    # the per-test log (scripts/suite/suite_outcomes.py), for a run cut before pytest writes its JUnit file
    env["AUTOGCL_SUITE_OUTCOMES"] = str(live.resolve())
    env["PYTHONPATH"] = child_pythonpath(REPO / "scripts" / "suite", env=env)
    cmd = [sys.executable, "-m", "pytest", "-q", "-rs", f"--junitxml={junit}", "-p", "suite_outcomes",
           *args.pytest_args]
    start = time.time()
    stopped = None
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, preexec_fn=_own_session)
    try:
        rc = proc.wait(timeout=args.timeout_s)
    except (subprocess.TimeoutExpired, KeyboardInterrupt) as stop:  # a bounded call, or Ctrl-C: keep what finished
        after = f"after {args.timeout_s:g} s" if isinstance(stop, subprocess.TimeoutExpired) else "(interrupted)"
        stopped = f"stopped by SIGINT {after}: the counts are of the tests that ran"
        _signal_group(proc, signal.SIGINT)  # pytest writes its JUnit report of the tests so far
        try:
            rc = proc.wait(timeout=60)
        except (subprocess.TimeoutExpired, KeyboardInterrupt):
            _signal_group(proc, signal.SIGKILL)
            rc = proc.wait()
    wall = time.time() - start
    import torch

    record = {
        "tag": args.tag, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": _commit(),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "platform": platform.platform(),
                    "aten_cpu_capability": capability(env),
                    "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None},
        "python": platform.python_version(), "torch": torch.__version__, "env": set_env,
        "pytest_args": args.pytest_args, "exit_code": rc, "wall_s": round(wall, 1), "note": args.note,
    }
    counted = False
    if junit.is_file():
        try:
            record.update(read_junit(junit))
            counted = True
        except ET.ParseError as exc:  # killed while writing it
            stopped = stopped or f"pytest's JUnit file is damaged ({exc})"
        junit.unlink()
    else:
        stopped = stopped or "pytest wrote no JUnit file (stopped before its end)"
    if not counted and live.is_file():
        record.update(read_outcomes(live))
        record["counts_from"] = "the per-test log (scripts/suite/suite_outcomes.py): pytest's JUnit file is missing or damaged"
    live.unlink(missing_ok=True)
    if "seconds" in record:
        record["slowest"] = slowest(record.pop("seconds"))
    if stopped:
        record["cut"] = stopped
    path = args.out / f"{args.tag}.json"
    atomic_write_text(path, json.dumps(record, indent=1) + "\n")
    counts = {k: record.get(k) for k in ("passed", "failed", "errors", "skipped")}
    print(f"suite_record: {path.relative_to(REPO) if path.is_relative_to(REPO) else path}: exit {rc}, {counts}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
