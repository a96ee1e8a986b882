"""The training engine's speed: pre-training throughput, operations per step, where a step's
time goes, TU epochs in plain-GIN epochs, a whole seed, memory, and the SVM evaluation.

    python benchmarks/engine.py --data-root ../shared/data [--sections throughput ops waits split epochs seed memory svm]
        [--device cpu|cuda] [--threads 1] [--baseline-path DIR] [--tag cpu] [--out docs/results/perf]

Each section writes ``OUT/<section>_<tag>.json`` in the shape ``scripts/docs/docs.py`` renders
(benchmarks/README.md): the command, machine, device, threads, torch version, date and one
row per measurement. Every measurement runs in its own process. ``--baseline-path`` names a
folder holding another version's ``autogcl`` package (e.g. ``git archive 881293c autogcl | tar
-x -C /tmp/base``): the throughput, ops, epochs and seed sections then measure it too, in the
same run, in rows whose ``code`` is ``baseline`` (this checkout's rows: ``this``).

Sections:

* ``throughput``: molecules per second of transfer pre-training steps (batch 256, the first
  ``--molecules`` MOSES molecules as one chunk), batching included, after warm-up steps, as
  the median over ``--windows`` windows of ``--steps`` steps (default 3 x 200), each with the
  method's own view draws; the windows of this checkout and of ``--baseline-path`` alternate,
  each version in its own long-lived process, so that both see the same machine load (the
  file keeps every window, and ``step_ms_vs_baseline``: the median of the paired ratios, with
  their extremes; ``--slices K`` serves each window in K slices, the versions' slices
  alternating, for a shared machine whose speed drifts within a window's seconds); at
  full size (5 x 300, generators 128) and at width 8 (``--dim 8 --gen-hidden 8``: what a GPU
  waits for, the host's work); with ``--device cuda`` also bfloat16 and ``torch.compile``.
  And the whole command ``autogcl transfer pretrain --dim 8 --gen-hidden 8`` (its own
  ``molecules_per_s``).
* ``ops``: operations per pre-training step: ``torch.profiler`` events (nested ones included)
  over 12 steps, batching included, per step.
* ``waits``: the operations of a pre-training step that wait for the device on a GPU (a size or
  a value read back to the host: :func:`autogcl.devices.host_waits`), per step, by operation and
  the autogcl line that issues it, over 12 steps after warm-up; with ``--device cuda`` also the
  synchronizations CUDA itself reports (``torch.cuda.set_sync_debug_mode``). This checkout only.
  On a CPU the neighbour sum is a sparse product whose own waits (``bincount``) a GPU never runs.
* ``split``: a step's milliseconds in batching, forward, backward and optimizer: the mean over
  every step of its windows (the same plan as ``throughput``), each window's means kept.
* ``epochs``: seconds per unsupervised epoch of AutoGCL, GraphCL and a plain supervised GIN
  (the same encoder, a linear head) on each of ``--datasets``, and the ratio to plain.
* ``seed``: the wall time of ``autogcl unsupervised --dataset PROTEINS --seeds 1`` in plain
  epochs, and its peak memory.
* ``memory``: the import floor and the peak memory of PROTEINS AutoGCL training.
* ``svm``: seconds of one SVM evaluation (10 x 5-fold C search, every core) per dataset, on
  the embeddings of an untrained encoder.

Run it on a quiet machine where one can: nothing else may run while it times. On a shared one
(``--note`` says so in the files), read the paired ratios and ``cpu_step_ms`` (process CPU time),
which the load moves least.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def _pythonpath(first: str) -> str:
    """A child's ``PYTHONPATH`` (:func:`autogcl.paths.child_pythonpath`), imported here and not at
    the top: a child of this file may import another commit's autogcl, which lacks it."""
    from autogcl.paths import child_pythonpath

    return child_pythonpath(first)


# ----------------------------------------------------------------------------------------- children


def _sync(device):
    import torch

    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def _peak_mb(device) -> float:
    import torch

    if str(device).startswith("cuda"):
        return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _loader(ds, batch_size, gen, device, shuffle=True, drop_last=True):
    try:
        from autogcl.data.batching import GraphLoader
    except ImportError:  # a version before device-resident batching
        from torch_geometric.loader import DataLoader

        return DataLoader(ds, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last, generator=gen), False
    return GraphLoader(ds, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last, generator=gen,
                       device=device), True


def _endless(loader, device, pad=None):
    """Batches without end, on ``device``; ``pad``: each padded to a multiple of that many atoms
    (``autogcl.data.batching.pad_batch``)."""
    try:
        from autogcl.data.batching import to_device
    except ImportError:
        def to_device(batch, device):
            return batch.to(device)
    if pad:
        from autogcl.data.batching import pad_batch
    while True:
        empty = True
        for batch in loader:
            empty = False
            batch = to_device(batch, device)
            yield pad_batch(batch, pad) if pad else batch
        if empty:  # fewer molecules than one full batch (drop_last): there would be no end to the wait
            n = getattr(loader, "num_graphs", None) or len(loader.dataset)
            raise SystemExit(f"engine.py: {n} molecules make no full batch of {loader.batch_size}: "
                             "raise --molecules")


def _seed_everything():
    """autogcl's seed_everything, from the measured version: autogcl.seeding since 61d0bc1,
    autogcl.runs before (the b434260 baseline)."""
    try:
        from autogcl.seeding import seed_everything
    except ModuleNotFoundError as exc:
        if exc.name != "autogcl.seeding":
            raise
        from autogcl.runs import seed_everything
    return seed_everything


def _chunk(spec):
    if spec.get("chunk_file"):  # a featurised chunk carried from elsewhere (a GPU machine has no RDKit)
        import gzip

        import torch
        from torch_geometric.data import Data

        from autogcl.data.datasets import GraphDataset

        opener = gzip.open if spec["chunk_file"].endswith(".gz") else open
        with opener(spec["chunk_file"], "rb") as f:
            blob = torch.load(f, weights_only=True)
        return GraphDataset(Data.from_dict(blob["data"]), blob["slices"], "chunk", blob["info"])
    from autogcl.data.corpus import MoleculeCorpus
    from autogcl.protocols.pretrain import resolve_corpus

    path = resolve_corpus(spec.get("corpus", ""), spec.get("data_root"))
    n = spec["molecules"]
    corpus = MoleculeCorpus(path, max_molecules=n, chunk_size=n, progress=False)
    corpus.prepare()
    return corpus.load(0)


def _pretrain_strategy(spec):
    import torch

    from autogcl.protocols.pretrain import PretrainConfig, build_strategy
    seed_everything = _seed_everything()

    width = spec["width"]
    kw = {} if width == 300 else {"dim": width, "gen_hidden": width}
    if spec.get("static_views"):  # atoms removed in place (a version without the option fails here)
        kw["static_views"] = True
    gen = seed_everything(0)
    strategy = build_strategy(PretrainConfig(method=spec.get("method", "autogcl"), batch_size=256, **kw))
    device = torch.device(spec["device"])
    try:
        from autogcl.devices import Engine

        strategy.to(Engine(spec["device"], spec.get("precision", "fp32"), spec.get("compile", False)))
    except ImportError:
        strategy.to(device)
    if spec.get("cudagraphs"):  # a probe, not a library route: CUDA graphs of each module's forward and backward
        for m in strategy.modules().values():
            m.compile(mode="reduce-overhead", dynamic=False)
    for m in strategy.modules().values():
        m.train()
    return strategy, gen, device


def _timed_steps(strategy, it, steps: int, device) -> dict:
    """``steps`` steps of the strategy's own ``step`` (its own view draws), batching included:
    molecules, wall and process CPU seconds."""
    _sync(device)
    n, t0, c0 = 0, time.perf_counter(), time.process_time()
    for i in range(steps):
        batch = next(it)
        strategy.step(batch, 1, i)
        n += int(batch.num_graphs)
    _sync(device)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"steps": steps, "molecules": n, "molecules_per_s": n / wall, "step_ms": 1000 * wall / steps,
            "cpu_step_ms": 1000 * cpu / steps}


class GraphedSteps:
    """A probe, not a library route: every pre-training step replayed as one CUDA graph per
    batch shape and view pair (``torch.cuda.CUDAGraph``; the batches padded to size buckets, the
    views static, so a step's shapes and kernels depend on those alone). Each new key is warmed
    up on a side stream for 3 steps (which train), then captured with the optimizer step inside
    (Adam made capturable); each later step copies its batch into the key's buffers and
    replays. It measures what graphs would gain; its numbers are not checked against eager."""

    FIELDS = ("x", "edge_index", "edge_attr", "batch", "node_alive")

    def __init__(self, strategy):
        self.strategy, self.graphs = strategy, {}
        for group in strategy.opt.param_groups:
            group["capturable"] = True

    def step(self, batch, epoch: int, i: int) -> dict:
        picks = self.strategy.draw_views()
        key = (int(batch.x.shape[0]), int(batch.edge_index.shape[1]), tuple(picks))
        if key not in self.graphs:
            self.graphs[key] = self._capture(batch, picks)
        static, graph, out = self.graphs[key]
        for name in self.FIELDS:
            getattr(static, name).copy_(getattr(batch, name), non_blocking=True)
        graph.replay()
        return out

    def _train(self, batch, picks) -> dict:
        s = self.strategy
        s.opt.zero_grad(set_to_none=False)
        terms = s.losses(batch, picks)
        terms["loss"].backward()
        s.opt.step()
        return {k: v.detach() for k, v in terms.items()}

    def _capture(self, batch, picks):
        import torch

        from autogcl.models import mol_gin

        static = batch.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self._train(static, picks)
        torch.cuda.current_stream().wait_stream(side)
        mol_gin._STRUCTURE.clear()  # computed inside the graph, from the buffers, not from the warm-up's batch
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = self._train(static, picks)
        return static, graph, out


def child_throughput(spec) -> dict:
    """Serves timing windows: after the warm-up, reads one JSON line per window (``{"steps":
    n}``) on stdin and answers with that window's figures, so that a parent can alternate the
    windows of two versions; ``{"peak": true}`` answers the peak memory. The stream of batches
    and of view draws goes on from window to window."""
    import torch

    ds = _chunk(spec)
    strategy, gen, device = _pretrain_strategy(spec)
    loader, resident = _loader(ds, 256, gen, device)
    it = _endless(loader, device, spec.get("pad"))
    if spec.get("graphs"):
        strategy = GraphedSteps(strategy)
    for i in range(spec["warmup"]):
        strategy.step(next(it), 1, i)
    _sync(device)
    if str(device).startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    print(json.dumps({"ready": True, "device_resident_batches": resident}), flush=True)
    for line in sys.stdin:
        ask = json.loads(line)
        if ask.get("peak"):
            graphs = {"graphs_captured": len(strategy.graphs)} if spec.get("graphs") else {}
            print(json.dumps({"peak_mem_mb": _peak_mb(device), **graphs}), flush=True)
            continue
        print(json.dumps(_timed_steps(strategy, it, ask["steps"], device)), flush=True)
    return {}


def child_ops(spec) -> dict:
    from torch.profiler import ProfilerActivity, profile

    ds = _chunk(spec)
    strategy, gen, device = _pretrain_strategy(spec)
    it = _endless(_loader(ds, 256, gen, device)[0], device, spec.get("pad"))
    for i in range(5):
        strategy.step(next(it), 1, i)
    steps = 12
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for i in range(steps):
            strategy.step(next(it), 1, i)
        _sync(device)
    events = prof.events()
    by_name: dict = {}
    for e in events:
        by_name[e.name] = by_name.get(e.name, 0) + 1
    top = sorted(by_name.items(), key=lambda kv: -kv[1])[:8]
    calls: dict = {}  # the operations the program itself issues (no parent event), before their expansion
    for e in events:
        if e.cpu_parent is None:
            calls[e.name] = calls.get(e.name, 0) + 1
    top_calls = sorted(calls.items(), key=lambda kv: -kv[1])[:8]
    params = sum(p.numel() > 0 for m in strategy.modules().values() for p in m.parameters()) \
        if hasattr(strategy, "modules") else None
    phases = _ops_by_phase(strategy, it) if hasattr(strategy, "losses") else {}
    return {"ops_per_step": len(events) / steps, "top_level_per_step": sum(calls.values()) / steps,
            "parameter_tensors": params, **phases,
            "most_frequent": ", ".join(f"{k} {v / steps:.0f}" for k, v in top),
            "top_level_most_frequent": ", ".join(f"{k.replace('autograd::engine::evaluate_function: ', 'bwd ')} "
                                                 f"{v / steps:.0f}" for k, v in top_calls)}


def child_waits(spec) -> dict:
    """The waits of 12 steps (:func:`autogcl.devices.host_waits`; on CUDA also the synchronizations
    that ``torch.cuda.set_sync_debug_mode`` warns of), per step."""
    import warnings

    import torch

    from autogcl.devices import host_waits

    ds = _chunk(spec)
    strategy, gen, device = _pretrain_strategy(spec)
    it = _endless(_loader(ds, 256, gen, device)[0], device, spec.get("pad"))
    for i in range(5):
        strategy.step(next(it), 1, i)
    _sync(device)
    steps = 12
    batches = [next(it) for _ in range(steps)]  # batching's own waits are not the step's
    cuda = str(device).startswith("cuda")
    with warnings.catch_warnings(record=True) as caught, host_waits() as waits:
        warnings.simplefilter("always")
        if cuda:
            torch.cuda.set_sync_debug_mode("warn")
        try:
            for i, batch in enumerate(batches):
                strategy.step(batch, 1, i)
        finally:
            if cuda:
                torch.cuda.set_sync_debug_mode("default")
    by_line = sorted(waits.items(), key=lambda kv: (-kv[1], kv[0]))
    row = {"waits_per_step": sum(waits.values()) / steps,
           "where": ", ".join(f"{op.removeprefix('aten::')} {line} {n / steps:.2g}" for (op, line), n in by_line)}
    if cuda:
        row["cuda_syncs_per_step"] = sum("synchroniz" in str(w.message) for w in caught) / steps
    return row


def _ops_by_phase(strategy, it) -> dict:
    """Profiler events of each part of one step: batching, forward, backward, optimizer."""
    from torch.profiler import ProfilerActivity, profile

    def count(fn):
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            out = fn()
        return len(prof.events()), out

    got = {}
    got["ops_batching"], batch = count(lambda: next(it))
    strategy.opt.zero_grad()
    got["ops_forward"], terms = count(lambda: strategy.losses(batch, strategy.draw_views()))
    got["ops_backward"], _ = count(lambda: terms["loss"].backward())
    got["ops_optimizer"], _ = count(strategy.opt.step)
    return got


def child_split(spec) -> dict:
    """Where a step's time goes: every step of ``windows`` windows of ``steps`` steps (the
    method's own view draws) timed in parts (batching, forward, backward, optimizer; the device
    synchronised between them); the mean of each part over all those steps, and each window's."""
    ds = _chunk(spec)
    strategy, gen, device = _pretrain_strategy(spec)
    loader, resident = _loader(ds, 256, gen, device)
    it = _endless(loader, device, spec.get("pad"))
    if not hasattr(strategy, "losses"):
        raise SystemExit("split needs a strategy with losses() (this version's)")
    names = ("batching", "forward", "backward", "optimizer")
    windows = []
    for i in range(spec["warmup"] + spec["windows"] * spec["steps"]):
        t0 = time.perf_counter()
        batch = next(it)
        _sync(device)
        t1 = time.perf_counter()
        strategy.opt.zero_grad()
        picks = strategy.draw_views() if hasattr(strategy, "draw_views") else None
        with strategy.autocast():
            terms = strategy.losses(batch, picks)
        _sync(device)
        t2 = time.perf_counter()
        terms["loss"].backward()
        _sync(device)
        t3 = time.perf_counter()
        strategy.opt.step()
        _sync(device)
        t4 = time.perf_counter()
        k = i - spec["warmup"]
        if k < 0:
            continue
        if k % spec["steps"] == 0:
            windows.append({n: 0.0 for n in names})
        for n, a, b in zip(names, (t0, t1, t2, t3), (t1, t2, t3, t4)):
            windows[-1][n] += 1000 * (b - a) / spec["steps"]
    mean = {f"{n}_ms": statistics.mean(w[n] for w in windows) for n in names}
    return {**mean, "step_ms": sum(mean.values()), "windows": len(windows), "steps_per_window": spec["steps"],
            "window_ms": [{f"{n}_ms": w[n] for n in names} for w in windows]}


def _plain_strategy(num_features, num_classes):
    import torch
    import torch.nn.functional as F

    from autogcl.models.gin import GINEncoder
    from autogcl.train.loop import Strategy

    try:
        from autogcl.train.optim import adam
    except ImportError:
        adam = torch.optim.Adam

    class Plain(Strategy):
        def __init__(self):
            self.encoder = GINEncoder(num_features)
            self.model = torch.nn.Sequential()
            self.model.add_module("encoder", self.encoder)
            self.model.add_module("head", torch.nn.Linear(self.encoder.out_dim, num_classes))
            self.opt = adam(self.model.parameters(), lr=0.001)

        def step(self, batch, epoch, step):
            self.opt.zero_grad()
            loss = F.cross_entropy(self.model.head(self.encoder(batch)), batch.y.view(-1))
            loss.backward()
            self.opt.step()
            return {"loss": loss.detach()}

    return Plain()


def child_epochs(spec) -> dict:
    """Seconds per epoch of one method (``plain``: the supervised GIN), after a warm-up epoch."""
    import torch

    from autogcl.data import load_tu
    from autogcl.protocols.unsupervised import UnsupervisedConfig, build_strategy
    seed_everything = _seed_everything()

    ds = load_tu(spec["dataset"], spec.get("data_root"))
    gen = seed_everything(0)
    device = torch.device(spec["device"])
    if spec["method"] == "plain":
        strategy = _plain_strategy(ds.num_features, ds.num_classes)
    else:
        cfg = UnsupervisedConfig(dataset=ds.name, method=spec["method"], epochs=2, eval_epochs=[1])
        strategy = build_strategy(cfg, ds.num_features)
    strategy.to(device)
    loader, _ = _loader(ds, 128, gen, device, drop_last=False)
    times = []
    for e in range(spec["epochs"] + 1):
        _sync(device)
        t0 = time.perf_counter()
        strategy.train_epoch(loader, e)
        _sync(device)
        times.append(time.perf_counter() - t0)
    times = times[1:]
    return {"s_per_epoch": statistics.mean(times), "s_per_epoch_std": statistics.pstdev(times),
            "peak_mem_mb": _peak_mb(device), "graphs": len(ds)}


def child_floor(spec) -> dict:
    import sklearn.svm  # noqa: F401
    import torch  # noqa: F401
    import torch_geometric  # noqa: F401

    return {"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def child_svm(spec) -> dict:
    import torch

    from autogcl.data import load_tu
    from autogcl.data.batching import GraphLoader
    from autogcl.eval.svm import auto_jobs, svm_evaluate
    from autogcl.models.embed import embed
    from autogcl.models.gin import GINEncoder

    emb_file = Path(spec.get("embeddings_dir") or "/nonexistent") / f"{spec['dataset']}.npz"
    if emb_file.is_file():  # computed elsewhere (the raw files of a large dataset do not travel)
        import numpy as np

        blob = np.load(emb_file)
        emb, y = torch.from_numpy(blob["emb"].astype("float32")), torch.from_numpy(blob["y"])
    else:
        ds = load_tu(spec["dataset"], spec.get("data_root"))
        torch.manual_seed(0)
        emb, y = embed(GINEncoder(ds.num_features), GraphLoader(ds, batch_size=512))
    jobs = spec.get("jobs") or auto_jobs(len(y), 50)
    t0 = time.perf_counter()
    res = svm_evaluate(emb, y, n_jobs=jobs)
    return {"seconds_per_eval": time.perf_counter() - t0, "jobs": jobs, "graphs": len(y),
            "test_acc": 100 * res["test_acc"]}


CHILDREN = {"throughput": child_throughput, "ops": child_ops, "waits": child_waits, "split": child_split,
            "epochs": child_epochs,
            "floor": child_floor, "svm": child_svm}


# ----------------------------------------------------------------------------------------- parent


def run_child(kind: str, spec: dict, code: str | None, threads: int) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
           "PYTHONPATH": _pythonpath(code or str(REPO))}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--_child", kind, "--_spec", json.dumps(spec)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    if out.returncode:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1][:300]}
    return json.loads(out.stdout.strip().splitlines()[-1])


class Served:
    """A child process serving timing windows (:func:`child_throughput`) for one version."""

    def __init__(self, spec: dict, code: str | None, threads: int):
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
               "PYTHONPATH": _pythonpath(code or str(REPO))}
        cmd = [sys.executable, str(Path(__file__).resolve()), "--_child", "throughput", "--_spec", json.dumps(spec)]
        self.err = tempfile.TemporaryFile(mode="w+")  # a file, not a pipe: a chatty child never blocks
        self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, text=True, cwd=tempfile.gettempdir())
        self.ready = self._answer()

    def _answer(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            self.err.seek(0)
            err = self.err.read().strip().splitlines() or ["failed"]
            raise RuntimeError(err[-1][:300])
        return json.loads(line)

    def ask(self, what: dict) -> dict:
        self.proc.stdin.write(json.dumps(what) + "\n")
        self.proc.stdin.flush()
        return self._answer()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()
        self.err.close()


def codes(args) -> list[tuple[str, str | None]]:
    out = [("this", None)]
    if args.baseline_path:
        out.append(("baseline", str(Path(args.baseline_path).resolve())))
    return out


def machine(args) -> str:
    import torch

    cores = os.cpu_count()
    if args.device.startswith("cuda") and torch.cuda.is_available():
        return f"{torch.cuda.get_device_name(0)}, {cores} cores"
    return f"{platform.machine()} CPU, {cores} cores"


def code_commit() -> str | None:
    """The checkout's commit (the library code a benchmark's "this" rows ran), short, ``+`` when
    autogcl/ has uncommitted changes, or the ``AUTOGCL_COMMIT`` the caller sets, which comes first:
    :func:`autogcl.protocols.publishing.code_commit` (a GPU machine's copy of the working tree may
    carry a stale git folder; on an H100 it named the session's first commit, 51e275d+); ``None``
    when neither is there."""
    from autogcl.protocols.publishing import code_commit as library_commit

    sha, dirty = library_commit(REPO)
    if sha is None or os.environ.get("AUTOGCL_COMMIT", "").strip():
        return sha
    return sha[:7] + ("+" if dirty else "")


def write(args, name: str, rows: list[dict], note: str = "", **extra) -> None:
    import torch

    out = Path(args.out) / f"{name}_{args.tag}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"benchmark": name, "command": "python benchmarks/engine.py " + " ".join(sys.argv[1:]),
           "machine": machine(args), "device": args.device, "threads": args.threads, "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": code_commit(), **({"note": note} if note else {}),
           "rows": rows, **extra}
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, out)
    print(f"wrote {out}", flush=True)


def show(row: dict) -> None:
    print("  " + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()), flush=True)


def pretrain_specs(args) -> list[dict]:
    base = {"molecules": args.molecules, "data_root": args.data_root, "corpus": args.corpus, "device": args.device,
            "chunk_file": args.chunk_file}
    specs = [{**base, "width": w} for w in args.widths]
    # in this order: a time-boxed GPU call measures the first ones
    if static_views(args):
        specs += [{**base, "width": 300, "static_views": True}]
    if args.device.startswith("cuda"):
        # batches padded to 256-atom buckets, then those shapes as CUDA graphs (torch.compile's
        # reduce-overhead mode, a probe of what graphs would gain)
        # padded to 256-atom buckets; then every step as a CUDA graph per shape (GraphedSteps); then
        # each module compiled in torch.compile's reduce-overhead mode (CUDA graphs of their own)
        padded = {**base, "width": 300, "static_views": True, "pad": 256}
        specs += [padded, {**padded, "graphs": True}, {**padded, "cudagraphs": True}]
    if static_views(args):
        specs += [{**base, "width": 8, "static_views": True}]
    if args.device.startswith("cuda"):
        specs += [{**base, "width": 300, "precision": "bf16"}, {**base, "width": 300, "compile": True},
                  {**base, "width": 8, "compile": True}]
    return [s for s in specs if s["width"] in args.widths]


def static_views(args) -> bool:
    """Whether to measure the step with atoms removed in place too (``--static-views``; always on CUDA)."""
    return args.static_views or args.device.startswith("cuda")


THROUGHPUT_NOTE = ("batch 256, the first {} MOSES molecules as one chunk; each row: the median over its timing "
                   "windows (windows x steps_per_window steps, the method's own view draws, batching included; "
                   "the windows of the versions of one configuration alternate, so that both see the same load; "
                   "every window is in this file's windows list); cpu_step_ms: process CPU time per step; "
                   "step_ms_vs_baseline: the median over the windows of this version's step time over the "
                   "baseline's window beside it; cpu_step_ms_vs_baseline_min, _max: the smallest and largest "
                   "of those ratios (of process CPU time); slices_per_window (when given): each window served "
                   "in that many slices of its steps, the versions' slices alternating")


def window_plan(args, spec) -> tuple[int, int]:
    """(windows, steps per window) of a configuration: ``--full-windows``/``--full-steps`` for
    full size on a CPU when given (a full-size CPU step is slow), else ``--windows``/``--steps``."""
    if spec["width"] == 300 and not args.device.startswith("cuda"):
        return args.full_windows or args.windows, args.full_steps or args.steps
    return args.windows, args.steps


def _joined(parts: list[dict]) -> dict:
    """The figures of one window served in slices (each slice's :func:`_timed_steps`)."""
    steps = sum(p["steps"] for p in parts)
    molecules = sum(p["molecules"] for p in parts)
    wall = sum(p["step_ms"] * p["steps"] for p in parts) / 1000
    cpu = sum(p["cpu_step_ms"] * p["steps"] for p in parts) / 1000
    return {"steps": steps, "molecules": molecules, "molecules_per_s": molecules / wall,
            "step_ms": 1000 * wall / steps, "cpu_step_ms": 1000 * cpu / steps}


def measure_windows(args, spec: dict, versions: list[tuple[str, str | None]]) -> tuple[list[dict], list[dict]]:
    """Rows (medians, one per version) and every window of one configuration, the versions'
    windows alternating (this, baseline, baseline, this, ...)."""
    n_windows, steps = window_plan(args, spec)
    slow = spec["width"] == 300 and not args.device.startswith("cuda")  # a full-size CPU step: seconds
    # graphs: enough steps to meet every view pair of the few shapes (each new one is captured)
    warm = 40 if spec.get("compile") or spec.get("cudagraphs") else 60 if spec.get("graphs") else 3 if slow else 10
    served, failed = {}, {}
    for code, path in versions:
        try:
            served[code] = Served({**spec, "warmup": warm}, path, args.threads)
        except RuntimeError as exc:
            failed[code] = str(exc)
    windows: list[dict] = []
    order = list(served)
    slices = max(1, min(getattr(args, "slices", 1) or 1, steps))
    for w in range(n_windows):
        # a window of each version is served in ``slices`` slices of its steps, the versions'
        # slices alternating: both versions see the machine in the same seconds
        parts = {code: [] for code in order}
        for i in range(slices):
            n = steps // slices + (i < steps % slices)
            for code in order if (w * slices + i) % 2 == 0 else order[::-1]:
                parts[code].append(served[code].ask({"steps": n}))
        for code in order if w % 2 == 0 else order[::-1]:
            windows.append({"code": code, "window": w, **_joined(parts[code])})
    rows = []
    key = {"width": spec["width"], "precision": spec.get("precision", "fp32"), "compile": bool(spec.get("compile")),
           **{k: spec[k] for k in ("static_views", "pad", "graphs", "cudagraphs") if spec.get(k)}}  # the routes' own keys
    for code, _ in versions:
        if code in failed:
            rows.append({"code": code, **key, "error": failed[code]})
            continue
        mine = [x for x in windows if x["code"] == code]
        row = {"code": code, **key, "windows": len(mine), "steps_per_window": steps,
               **({"slices_per_window": slices} if slices > 1 else {})}
        for f in ("molecules_per_s", "step_ms", "cpu_step_ms"):
            row[f] = statistics.median(x[f] for x in mine)
        row.update(served[code].ask({"peak": True}))
        row["device_resident_batches"] = served[code].ready.get("device_resident_batches")
        rows.append(row)
        served[code].close()
    if "this" in served and "baseline" in served:
        this = [x for x in windows if x["code"] == "this"]
        base = [x for x in windows if x["code"] == "baseline"]
        for f in ("step_ms", "cpu_step_ms"):
            ratios = [a[f] / b[f] for a, b in zip(this, base)]
            rows[0][f"{f}_vs_baseline"] = statistics.median(ratios)
        # the spread of the paired ratios the median reads (the machine's noise, window to window)
        rows[0]["cpu_step_ms_vs_baseline_min"], rows[0]["cpu_step_ms_vs_baseline_max"] = min(ratios), max(ratios)
    for x in windows:
        x.update(key)
    return rows, windows


def section_throughput(args) -> None:
    rows, windows = [], []
    note = THROUGHPUT_NOTE.format(args.molecules) + (f"; {args.note}" if args.note else "")
    for spec in pretrain_specs(args):
        versions = [(c, p) for c, p in codes(args)
                    if not (c == "baseline" and any(spec.get(k) for k in ("precision", "compile", "static_views")))]
        got, win = measure_windows(args, spec, versions)
        for row in got:
            show(row)
        rows += got
        windows += win
        write(args, "pretrain_throughput", rows, note, windows=windows)  # kept if cut short
    cmd_row = None if args.chunk_file or args.no_command else command_throughput(args)
    if cmd_row:
        rows.append(cmd_row)
    write(args, "pretrain_throughput", rows, note, windows=windows)


def command_throughput(args) -> dict | None:
    """``autogcl transfer pretrain --dim 8 --gen-hidden 8`` as a user runs it: its result's
    molecules per second (this checkout only)."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "autogcl", "transfer", "pretrain", "--dim", "8", "--gen-hidden", "8", "--epochs",
               "1", "--max-molecules", str(args.molecules), "--chunk-size", str(args.molecules), "--device",
               args.device, "--no-progress", "--out", str(Path(tmp) / "run")]
        cmd += ["--data-root", args.data_root] if args.data_root else []
        cmd += ["--corpus", args.corpus] if args.corpus else []
        env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "PYTHONPATH": _pythonpath(str(REPO))}
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=REPO)
        if out.returncode:
            print("  command failed: " + out.stderr.strip()[-300:], flush=True)
            return None
        res = json.loads((Path(tmp) / "run" / "result.json").read_text())
    row = {"code": "this", "width": 8, "precision": "fp32", "compile": False, "what": "whole command",
           "molecules_per_s": res["molecules_per_s"]}
    show(row)
    return row


OPS_NOTE = ("torch.profiler events per pre-training step (nested ones included), batching included; mean over 12 "
            "steps; top_level: the events without a parent, the operations the program issues itself")


def section_ops(args) -> None:
    rows = []
    for width in args.widths:
        for code, path in codes(args):
            spec = {"molecules": args.molecules, "data_root": args.data_root, "corpus": args.corpus,
                    "device": args.device, "width": width, "chunk_file": args.chunk_file}
            row = {"code": code, "width": width, **run_child("ops", spec, path, args.threads)}
            show(row)
            rows.append(row)
            write(args, "pretrain_ops", rows, OPS_NOTE)  # kept if cut short
    write(args, "pretrain_ops", rows, "torch.profiler events per pre-training step (nested ones included), "
          "batching included; mean over 12 steps")


WAITS_NOTE = ("operations of a pre-training step (batch 256, the method's own view draws) that wait for the device on "
              "a GPU, per step over 12 steps: autogcl.devices.host_waits, by operation and the autogcl line issuing it; "
              "cuda_syncs_per_step: the synchronizations torch.cuda.set_sync_debug_mode warns of (CUDA only); on a CPU "
              "the neighbour sum's sparse product adds waits (bincount in models/mol_gin.py) that a GPU never runs")


def section_waits(args) -> None:
    rows = []
    for static in (False, True) if static_views(args) else (False,):
        for width in args.widths:
            spec = {"molecules": args.molecules, "data_root": args.data_root, "corpus": args.corpus,
                    "device": args.device, "width": width, "chunk_file": args.chunk_file, "static_views": static}
            row = {"code": "this", "width": width, "static_views": static,
                   **run_child("waits", spec, None, args.threads)}
            show(row)
            rows.append(row)
            write(args, "pretrain_waits", rows, WAITS_NOTE)


def section_split(args) -> None:
    rows, windows = [], []
    for spec in pretrain_specs(args)[:len(args.widths)]:  # fp32, eager
        n_windows, steps = window_plan(args, spec)
        res = run_child("split", {**spec, "steps": steps, "windows": n_windows, "warmup": 10}, None, args.threads)
        win = res.pop("window_ms", [])
        row = {"width": spec["width"], **res}
        show(row)
        rows.append(row)
        windows += [{"width": spec["width"], "window": i, **w} for i, w in enumerate(win)]
    write(args, "pretrain_step_split", rows, "mean milliseconds of each part of a step (batch 256) over every step of "
          "its windows (the method's own view draws; each window's means in the windows list)"
          + (f"; {args.note}" if args.note else ""), windows=windows)


EPOCHS_NOTE = ("seconds per unsupervised epoch (batch 128) after a warm-up epoch; plain: a supervised 5-layer GIN "
               "with a linear head, timed before and after the others (their mean)")


def section_epochs(args) -> None:
    rows = []
    for ds in args.datasets:
        for code, path in codes(args):
            got = {}
            for method in ("plain", "autogcl", "graphcl", "plain"):  # plain before and after: its mean
                spec = {"dataset": ds, "data_root": args.data_root, "device": args.device, "method": method,
                        "epochs": args.epochs}
                res = run_child("epochs", spec, path, args.threads)
                got.setdefault(method, []).append(res)
            plain = statistics.mean(r["s_per_epoch"] for r in got["plain"])
            for method in ("plain", "autogcl", "graphcl"):
                r = got[method][0] if method != "plain" else {**got["plain"][0], "s_per_epoch": plain}
                row = {"code": code, "dataset": ds, "method": method, "s_per_epoch": r["s_per_epoch"],
                       "plain_epochs": r["s_per_epoch"] / plain, "peak_mem_mb": r["peak_mem_mb"]}
                show(row)
                rows.append(row)
        write(args, "tu_epochs", rows, EPOCHS_NOTE)  # kept if cut short
    write(args, "tu_epochs", rows, "seconds per unsupervised epoch (batch 128) after a warm-up epoch; plain: a "
          "supervised 5-layer GIN with a linear head, timed before and after the others (their mean)")


def _wall_and_rss(cmd, env) -> tuple[float, float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=REPO)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr.read()[-2000:]}")
    return time.perf_counter() - t0, usage.ru_maxrss / 1024


def section_seed(args) -> None:
    rows = []
    for code, path in codes(args):
        spec = {"dataset": "PROTEINS", "data_root": args.data_root, "device": args.device, "method": "plain",
                "epochs": args.epochs}
        plain = run_child("epochs", spec, path, args.threads)["s_per_epoch"]
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [sys.executable, "-m", "autogcl", "unsupervised", "--dataset", "PROTEINS", "--seeds", "1",
                   "--device", args.device, "--no-progress", "--out", tmp]
            cmd += ["--data-root", args.data_root] if args.data_root else []
            env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "PYTHONPATH": _pythonpath(path or str(REPO))}
            wall, rss = _wall_and_rss(cmd, env)
            result = json.loads(next(Path(tmp).rglob("result.json")).read_text())
        row = {"code": code, "dataset": "PROTEINS", "wall_s": wall, "plain_epochs": wall / plain,
               "train_s": result["train_time_s"], "svm_s": result["eval_time_s"], "peak_rss_mb": rss}
        show(row)
        rows.append(row)
    write(args, "tu_seed", rows, "autogcl unsupervised --dataset PROTEINS --seeds 1 (30 epochs, 3 SVM evaluations, "
          "start-up), in plain-GIN epochs measured in the same run")


def section_memory(args) -> None:
    floor = run_child("floor", {}, None, args.threads)["peak_rss_mb"]
    rows = [{"what": "import floor (torch, PyG, scikit-learn)", "peak_rss_mb": floor, "over_floor_mb": 0.0}]
    for code, path in codes(args):
        spec = {"dataset": "PROTEINS", "data_root": args.data_root, "device": "cpu", "method": "autogcl",
                "epochs": 3}
        mb = run_child("epochs", spec, path, args.threads)["peak_mem_mb"]
        rows.append({"what": "PROTEINS AutoGCL training", "code": code, "peak_rss_mb": mb, "over_floor_mb": mb - floor})
        show(rows[-1])
    write(args, "tu_memory", rows, "peak resident memory (ru_maxrss) of a process")


def section_svm(args) -> None:
    rows = []
    for ds in args.svm_datasets:
        res = run_child("svm", {"dataset": ds, "data_root": args.data_root, "jobs": args.jobs,
                                "embeddings_dir": args.embeddings_dir}, None, 1)
        row = {"dataset": ds, **res}
        show(row)
        rows.append(row)
        write(args, "svm_eval", rows, "one evaluation: outer stratified 10-fold CV, C by inner 5-fold search over 7 "
              "values, the fits in parallel processes (jobs); embeddings of an untrained 5 x 128 GIN encoder")


SECTIONS = {"throughput": section_throughput, "ops": section_ops, "waits": section_waits, "split": section_split,
            "epochs": section_epochs,
            "seed": section_seed, "memory": section_memory, "svm": section_svm}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-root", default=None)
    p.add_argument("--corpus", default="")
    p.add_argument("--chunk-file", default=None, help="a featurised corpus chunk (.pt or .pt.gz) instead of --corpus")
    p.add_argument("--sections", nargs="+", default=list(SECTIONS), choices=list(SECTIONS))
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1, help="torch threads of every measured process")
    p.add_argument("--molecules", type=int, default=10_000)
    p.add_argument("--steps", type=int, default=200, help="steps per timing window (throughput, split)")
    p.add_argument("--windows", type=int, default=3, help="timing windows per configuration (their median is reported)")
    p.add_argument("--slices", type=int, default=1,
                   help="throughput: serve each window in this many slices, the versions' slices alternating (the "
                        "paired windows then see the machine in the same seconds)")
    p.add_argument("--full-steps", type=int, default=None, help="steps per window at full size on a CPU (slow there)")
    p.add_argument("--full-windows", type=int, default=None, help="windows at full size on a CPU")
    p.add_argument("--widths", type=int, nargs="+", default=[8, 300], choices=[8, 300])
    p.add_argument("--static-views", action="store_true",
                   help="throughput, waits: also the step with atoms removed in place (static_views; always on CUDA)")
    p.add_argument("--no-command", action="store_true", help="throughput: leave the whole command's row out")
    p.add_argument("--note", default="", help="added to the files' note (e.g. the machine's load)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--datasets", nargs="+", default=["PROTEINS", "NCI1"])
    p.add_argument("--svm-datasets", nargs="+", default=["MUTAG", "PROTEINS", "IMDB-BINARY", "NCI1"])
    p.add_argument("--jobs", type=int, default=None, help="SVM processes (default: every core, as memory allows)")
    p.add_argument("--embeddings-dir", default=None, help="DATASET.npz (emb, y) to evaluate instead of computing them")
    p.add_argument("--baseline-path", default=None)
    p.add_argument("--tag", default="cpu")
    p.add_argument("--out", default=str(REPO / "docs" / "results" / "perf"))
    p.add_argument("--_child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--_spec", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args._child:
        import torch

        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
        print(json.dumps(CHILDREN[args._child](json.loads(args._spec))))
        return 0
    for name in ("chunk_file", "data_root", "embeddings_dir"):  # the children run in a temporary folder
        if getattr(args, name):
            setattr(args, name, str(Path(getattr(args, name)).resolve()))
    for s in args.sections:
        print(f"== {s}", flush=True)
        SECTIONS[s](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
