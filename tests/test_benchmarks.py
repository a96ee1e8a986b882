"""The benchmark scripts under benchmarks/ on the smallest real input they take (no timing
assertions: the figures of a loaded test machine mean nothing)."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: the routes of the smoke run: every route but compile, whose cold compilation alone takes
#: minutes on a loaded machine
SMOKE_ROUTES = ("onednn", "padded", "transposed", "wgrad", "fused", "segbn")


def _script(name: str):
    """The module of ``benchmarks/NAME.py`` (its constants), leaving sys.path as it was."""
    import importlib.util

    saved = list(sys.path)
    spec = importlib.util.spec_from_file_location(f"_benchmark_{name}", REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)  # the script puts benchmarks/ and the checkout on sys.path
    finally:
        sys.path[:] = saved
    return module


def test_cpu_routes_writes_every_route_with_finite_timings_and_the_eager_steps_numbers(data_root, tmp_path):
    cpu_routes = _script("cpu_routes")
    assert set(SMOKE_ROUTES) == set(cpu_routes.ROUTES) - {"compile"}
    # 256 molecules: one batch of 256 (the loader drops a partial one); one window of one step
    args = ["--data-root", str(data_root), "--molecules", "256", "--windows", "1", "--steps", "1",
            "--routes", *SMOKE_ROUTES, "--out", str(tmp_path), "--tag", "smoke"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}  # AUTOGCL_CACHE: the test's own
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "cpu_routes.py"), *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads((tmp_path / "cpu_routes_smoke.json").read_text())
    assert doc["benchmark"] == "cpu_routes" and doc["threads"] == 1
    assert doc["tolerance"] == {"loss_abs_diff": cpu_routes.LOSS_TOL,
                                "grad_max_abs_diff_over_grad_max_abs": cpu_routes.GRAD_TOL}
    assert [r["route"] for r in doc["rows"]] == list(SMOKE_ROUTES)
    for row in doc["rows"]:
        timings = [row[k] for k in ("cpu_step_ms_eager", "cpu_step_ms_route", "cpu_step_ms_vs_eager", "warmup_s")]
        assert all(math.isfinite(t) and t > 0 for t in timings), row
        assert (row["windows"], row["steps_per_window"]) == (1, 1)
        assert math.isfinite(row["grad_max_abs"]) and row["grad_max_abs"] > 0, row
        assert 0 <= row["loss_abs_diff"] <= cpu_routes.LOSS_TOL, row
        assert 0 <= row["grad_max_abs_diff"] <= cpu_routes.GRAD_TOL * row["grad_max_abs"], row
    # one window with and one without the route, per route
    assert sorted((w["route"], w["with_route"]) for w in doc["windows"]) == sorted(
        (r, on) for r in SMOKE_ROUTES for on in (False, True))
    assert all(math.isfinite(w["cpu_step_ms"]) and w["cpu_step_ms"] > 0 for w in doc["windows"])


def test_every_engine_benchmark_file_names_the_code_commit_it_measured(tmp_path):
    """``engine.write`` (every benchmark of benchmarks/engine.py) records the checkout's commit,
    which the docs' performance tables name."""
    import argparse

    engine = _script("engine")
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    if head.returncode != 0:  # a source tree without git: nothing to name
        assert engine.code_commit() is None
        return
    args = argparse.Namespace(out=str(tmp_path), tag="t", device="cpu", threads=1)
    engine.write(args, "tu_memory", [{"peak_rss_mb": 1.0}], "a note")
    doc = json.loads((tmp_path / "tu_memory_t.json").read_text())
    assert doc["commit"].rstrip("+") == head.stdout.strip()
    assert doc["rows"] == [{"peak_rss_mb": 1.0}] and doc["note"] == "a note"
