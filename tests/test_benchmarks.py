"""The benchmark scripts under benchmarks/ on the smallest real input they take (no timing
assertions: the figures of a loaded test machine mean nothing)."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

from autogcl.paths import child_pythonpath

REPO = Path(__file__).resolve().parents[1]
#: the routes of the smoke run: every route but compile, whose cold compilation alone takes
#: minutes on a loaded machine
SMOKE_ROUTES = ("onednn", "padded", "transposed", "rowgroup", "wgrad", "fused", "segbn", "native", "nativebn")


def _has_numba() -> bool:
    import importlib.util

    return importlib.util.find_spec("numba") is not None


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


def _two_molecules():
    """A hand-built batch: a 4-atom chain and a 3-atom ring, every bond both ways, bond types and
    directions of each kind."""
    import torch

    pairs = [(0, 1), (1, 2), (2, 3), (4, 5), (5, 6), (6, 4)]
    src = [a for a, b in pairs] + [b for a, b in pairs]
    dst = [b for a, b in pairs] + [a for a, b in pairs]
    attr = [[t % 4, t % 3] for t in range(len(src))]
    return torch.tensor([src, dst]), torch.tensor(attr), 7


def test_native_route_layer_equals_the_eager_bond_gin_layer_forward_and_backward():
    import pytest
    import torch

    if not _has_numba():
        pytest.skip("numba is not installed: the native route's kernels need it")
    cpu_routes = _script("cpu_routes")
    from autogcl.data.molecules import VOCAB
    from autogcl.models import mol_gin

    edge_index, edge_attr, n = _two_molecules()
    torch.manual_seed(0)
    for dtype, tile, tol in ((torch.float64, 3, 1e-12), (torch.float32, None, 1e-5)):
        conv = mol_gin.BondGINConv(4, VOCAB).to(dtype)
        x = torch.randn(n, 4, dtype=dtype, requires_grad=True)
        weights = torch.randn(n, 4, dtype=dtype)  # the output's gradient
        got = []
        for native in (False, True):
            conv.zero_grad()
            x.grad = None
            if native:  # tile 3: two full tiles and a partial one
                structure = mol_gin.bond_structure(edge_index, edge_attr, n, conv.vocab, dtype)
                table = torch.cat([conv.bond.weight, conv.direction.weight])
                first, last = conv.mlp[0], conv.mlp[2]
                out = cpu_routes.native_function(tile).apply(x, table, first.weight, first.bias, last.weight,
                                                             last.bias, structure.counts,
                                                             *cpu_routes.native_csr(structure, n))
            else:  # float64: the gather-and-scatter sum, not the sparse product the route reads
                out = conv(x, edge_index, edge_attr)
            (out * weights).sum().backward()
            got.append([out.detach(), x.grad] + [p.grad for p in conv.parameters()])
        for a, b in zip(*got):
            assert a.shape == b.shape and (a - b).abs().max() <= tol * max(1.0, a.abs().max()), (dtype, a, b)


def test_nativebn_route_gnn_equals_the_eager_one_with_and_without_segments():
    """The nativebn route's encoder pass (native GIN layers, BatchNorm of each view apart, ReLU):
    its output, gradients and running statistics those of the eager MolGNN (float64)."""
    from types import SimpleNamespace

    import pytest
    import torch

    if not _has_numba():
        pytest.skip("numba is not installed: the native route's kernels need it")
    cpu_routes = _script("cpu_routes")
    from autogcl.data.molecules import VOCAB
    from autogcl.models import mol_gin

    edge_index, edge_attr, n = _two_molecules()
    torch.manual_seed(0)
    for segments in ((4, 3), None):
        gnn = mol_gin.MolGNN(VOCAB, 4, 3).to(torch.float64)
        atoms = torch.stack([torch.randint(0, 10, (n,)), torch.randint(0, 3, (n,))], 1)
        data = SimpleNamespace(x=atoms, edge_index=edge_index, edge_attr=edge_attr, _segments=segments)
        weights = torch.randn(n, 4, dtype=torch.float64)
        start = {k: v.clone() for k, v in gnn.state_dict().items()}
        got = []
        for forward in (mol_gin.MolGNN.forward, cpu_routes._native_gnn_forward()):
            gnn.load_state_dict(start)
            gnn.zero_grad()
            out = forward(gnn, data)
            (out * weights).sum().backward()
            got.append([out.detach()] + [p.grad for p in gnn.parameters()] + list(gnn.state_dict().values()))
        for a, b in zip(*got):
            assert (a.double() - b.double()).abs().max() <= 1e-10, (segments, a, b)


def test_the_rowgroup_product_is_the_plain_product_for_every_row_count_and_width():
    """Route ``rowgroup``: rows taken ``r`` at a time against a block-diagonal weight give
    ``x @ w.T + b`` (also the last ``N mod r`` rows, computed apart; with and without a bias)."""
    import torch

    cpu_routes = _script("cpu_routes")
    g = torch.Generator().manual_seed(0)
    for rows, k, n in ((7, 16, 8), (8, 16, 8), (10, 9, 8), (11, 16, 6), (1, 4, 3)):
        x = torch.randn(rows, k, generator=g, dtype=torch.float64)
        w = torch.randn(n, k, generator=g, dtype=torch.float64)
        b = torch.randn(n, generator=g, dtype=torch.float64)
        got, plain = cpu_routes._rowgroup(x, w, b), torch.addmm(b, x, w.t())
        assert got.shape == plain.shape and got.is_contiguous()
        assert (got - plain).abs().max() <= 1e-12, (rows, k, n)
        assert (cpu_routes._rowgroup(x, w, None) - x @ w.t()).abs().max() <= 1e-12, (rows, k, n)


def test_cpu_routes_writes_every_route_with_finite_timings_and_the_eager_steps_numbers(data_root, tmp_path):
    cpu_routes = _script("cpu_routes")
    assert set(SMOKE_ROUTES) == set(cpu_routes.ROUTES) - {"compile"}
    routes = SMOKE_ROUTES if _has_numba() else tuple(r for r in SMOKE_ROUTES if not r.startswith("native"))
    # 256 molecules: one batch of 256 (the loader drops a partial one); one window of one step
    args = ["--data-root", str(data_root), "--molecules", "256", "--windows", "1", "--steps", "1",
            "--routes", *routes, "--out", str(tmp_path), "--tag", "smoke"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": child_pythonpath(REPO)}  # AUTOGCL_CACHE: the test's own
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "cpu_routes.py"), *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads((tmp_path / "cpu_routes_smoke.json").read_text())
    assert doc["benchmark"] == "cpu_routes" and doc["threads"] == 1
    assert doc["tolerance"] == {"loss_abs_diff": cpu_routes.LOSS_TOL,
                                "grad_max_abs_diff_over_grad_max_abs": cpu_routes.GRAD_TOL}
    assert [r["route"] for r in doc["rows"]] == list(routes)
    for row in doc["rows"]:
        timings = [row[k] for k in ("cpu_step_ms_eager", "cpu_step_ms_route", "cpu_step_ms_vs_eager", "warmup_s")]
        assert all(math.isfinite(t) and t > 0 for t in timings), row
        assert (row["windows"], row["steps_per_window"]) == (1, 1)
        assert math.isfinite(row["grad_max_abs"]) and row["grad_max_abs"] > 0, row
        assert 0 <= row["loss_abs_diff"] <= cpu_routes.LOSS_TOL, row
        assert 0 <= row["grad_max_abs_diff"] <= cpu_routes.GRAD_TOL * row["grad_max_abs"], row
    # one window with and one without the route, per route
    assert sorted((w["route"], w["with_route"]) for w in doc["windows"]) == sorted(
        (r, on) for r in routes for on in (False, True))
    assert all(math.isfinite(w["cpu_step_ms"]) and w["cpu_step_ms"] > 0 for w in doc["windows"])


def test_every_engine_benchmark_file_names_the_code_commit_it_measured(tmp_path, monkeypatch):
    """``engine.write`` (every benchmark of benchmarks/engine.py) records the checkout's commit,
    which the docs' performance tables name."""
    import argparse

    engine = _script("engine")
    monkeypatch.delenv("AUTOGCL_COMMIT", raising=False)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True)
    if head.returncode != 0:  # a source tree without git: nothing to name
        assert engine.code_commit() is None
        return
    args = argparse.Namespace(out=str(tmp_path), tag="t", device="cpu", threads=1)
    engine.write(args, "tu_memory", [{"peak_rss_mb": 1.0}], "a note")
    doc = json.loads((tmp_path / "tu_memory_t.json").read_text())
    assert doc["commit"].rstrip("+") == head.stdout.strip()[:7]  # short, as the tables show it
    assert doc["rows"] == [{"peak_rss_mb": 1.0}] and doc["note"] == "a note"
    # the caller's AUTOGCL_COMMIT comes first (a GPU machine's copy may hold a stale git folder)
    monkeypatch.setenv("AUTOGCL_COMMIT", "abc1234")
    assert engine.code_commit() == "abc1234"


def _fake_served(times: dict, asked: list):
    """A stand-in for ``engine.Served``: each version's windows take the step times of
    ``times[code]`` (an iterator) in turn; ``asked`` gets ``(code, steps)`` of every window asked
    for; the code "broken" fails to start, as a child that cannot import its version."""

    class FakeServed:
        def __init__(self, spec, code, threads):
            if code == "broken":
                raise RuntimeError("ImportError: no module")
            self.name, self.ready = code, {"device_resident_batches": True}

        def ask(self, what):
            if what.get("peak"):
                return {"peak_mem_mb": 1.0}
            asked.append((self.name, what["steps"]))
            ms = next(times[self.name])
            return {"steps": what["steps"], "molecules": 256 * what["steps"], "molecules_per_s": 256e3 / ms,
                    "step_ms": ms, "cpu_step_ms": ms}

        def close(self):
            pass

    return FakeServed


def test_throughput_windows_alternate_and_the_goal_reads_the_median_of_the_paired_ratios(monkeypatch):
    """``engine.measure_windows`` (the throughput goals' figures) on served windows whose times
    are given: the versions' windows alternate (this, baseline, baseline, this, ...), each row is
    the median over its own windows, ``cpu_step_ms_vs_baseline`` the median of the ratios of the
    windows paired by position, and its ``_min``/``_max`` their extremes; a version whose child
    fails gets a row with the error, not figures."""
    import argparse
    import statistics

    engine = _script("engine")
    times = {"this": iter([40.0, 44.0, 30.0, 50.0, 42.0]), "baseline": iter([50.0, 50.0, 60.0, 40.0, 70.0])}
    asked = []
    monkeypatch.setattr(engine, "Served", _fake_served(times, asked))
    args = argparse.Namespace(windows=5, steps=200, device="cpu", threads=1, full_windows=None, full_steps=None)
    spec = {"width": 8}
    rows, windows = engine.measure_windows(args, spec, [("this", "this"), ("baseline", "baseline")])
    assert [code for code, _ in asked] == ["this", "baseline", "baseline", "this", "this", "baseline", "baseline",
                                           "this", "this", "baseline"]
    assert len(windows) == 10 and all(w["steps"] == 200 and w["width"] == 8 for w in windows)
    this, base = rows
    assert this["cpu_step_ms"] == 42.0 and base["cpu_step_ms"] == 50.0 and this["windows"] == 5
    ratios = [40 / 50, 44 / 50, 30 / 60, 50 / 40, 42 / 70]
    assert math.isclose(this["cpu_step_ms_vs_baseline"], statistics.median(ratios), rel_tol=1e-12)
    assert math.isclose(this["cpu_step_ms_vs_baseline_min"], 0.5, rel_tol=1e-12)
    assert math.isclose(this["cpu_step_ms_vs_baseline_max"], 1.25, rel_tol=1e-12)
    assert "cpu_step_ms_vs_baseline" not in base
    times["this"] = iter([40.0] * 5)
    rows, _ = engine.measure_windows(args, spec, [("this", "this"), ("baseline", "broken")])
    assert rows[1] == {"code": "baseline", "width": 8, "precision": "fp32", "compile": False,
                       "error": "ImportError: no module"}
    assert "cpu_step_ms_vs_baseline" not in rows[0]


def test_a_window_served_in_slices_alternates_the_versions_slice_by_slice(monkeypatch):
    """``--slices 2``: each version's window is two slices of half its steps, the versions'
    slices alternating (this, baseline, baseline, this | baseline, this, this, baseline), and the
    window's figures are those of its steps together (time-weighted, not a mean of the slices')."""
    import argparse

    engine = _script("engine")
    asked = []
    ms = {"this": iter([10.0, 30.0, 20.0, 20.0]), "baseline": iter([40.0, 40.0, 40.0, 40.0])}

    monkeypatch.setattr(engine, "Served", _fake_served(ms, asked))
    args = argparse.Namespace(windows=2, steps=200, slices=2, device="cpu", threads=1, full_windows=None,
                              full_steps=None)
    rows, windows = engine.measure_windows(args, {"width": 8}, [("this", "this"), ("baseline", "baseline")])
    assert asked == [("this", 100), ("baseline", 100), ("baseline", 100), ("this", 100),
                     ("this", 100), ("baseline", 100), ("baseline", 100), ("this", 100)]
    mine = [w for w in windows if w["code"] == "this"]
    assert [w["steps"] for w in mine] == [200, 200] and [w["cpu_step_ms"] for w in mine] == [20.0, 20.0]
    assert math.isclose(mine[0]["molecules_per_s"], 256 * 200 / 4.0, rel_tol=1e-12)  # 200 steps in 4 s
    assert rows[0]["slices_per_window"] == 2 and rows[0]["cpu_step_ms_vs_baseline"] == 0.5


def test_the_waits_section_counts_what_a_step_reads_back_from_the_device(data_root, tmp_path):
    """``engine.py --sections waits --static-views`` on the CPU: every wait of a pre-training step
    is node removal's two ``nonzero`` (once per generated view contrasted) or the CPU-only sparse
    neighbour sum's ``bincount``; with atoms removed in place only the latter is left; the
    per-line figures add up to the total."""
    args = ["--data-root", str(data_root), "--molecules", "256", "--sections", "waits", "--widths", "8",
            "--out", str(tmp_path), "--tag", "smoke", "--static-views"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": child_pythonpath(REPO)}
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "engine.py"), *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads((tmp_path / "pretrain_waits_smoke.json").read_text())
    removed, static = doc["rows"]
    assert (doc["benchmark"], doc["device"], removed["code"], removed["width"]) == ("pretrain_waits", "cpu", "this", 8)
    assert (removed["static_views"], static["static_views"]) == (False, True)
    for row, allowed in ((removed, {("nonzero", "augment/learnable.py"), ("bincount", "models/mol_gin.py")}),
                         (static, {("bincount", "models/mol_gin.py")})):
        parts = [part.rsplit(" ", 2) for part in row["where"].split(", ")]
        assert {(op, line.split(":")[0]) for op, line, _ in parts} <= allowed
        assert math.isclose(sum(float(n) for *_, n in parts), row["waits_per_step"], rel_tol=0.05)
        assert row["waits_per_step"] > 0 and "cuda_syncs_per_step" not in row
    assert any(part.startswith("nonzero") for part in removed["where"].split(", "))


def test_a_loader_with_no_full_batch_is_an_error_not_an_endless_wait():
    """engine.py's endless batches from fewer molecules than one full batch (drop_last): a clear
    error, where it used to spin on an empty loader for ever (``--molecules 64`` of a section
    whose batches are 256)."""
    import pytest
    import torch
    from torch_geometric.data import Data

    from autogcl.data.batching import GraphLoader

    eng = _script("engine")
    graphs = [Data(x=torch.zeros(2, 2), edge_index=torch.tensor([[0, 1], [1, 0]])) for _ in range(3)]
    batches = eng._endless(GraphLoader(graphs, batch_size=256, drop_last=True), torch.device("cpu"))
    with pytest.raises(SystemExit, match="3 molecules make no full batch of 256: raise --molecules"):
        next(batches)
    full = eng._endless(GraphLoader(graphs, batch_size=2, drop_last=True), torch.device("cpu"))
    assert [next(full).num_graphs for _ in range(3)] == [2, 2, 2]  # one full batch a pass, without end
