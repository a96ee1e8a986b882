"""Shared fixtures: small hand-built graph batches and the offline data mirror."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Batch, Data

REPO = Path(__file__).resolve().parent.parent
DATA_ROOT = Path(os.environ.get("AUTOGCL_TEST_DATA", REPO.parent / "shared" / "data"))


def _share_the_cores() -> int | None:
    """Under pytest-xdist (``-n N``), each worker's torch, and the processes its tests start, get
    an equal share of the machine's cores instead of all of them each: N workers of all-core torch
    oversubscribe the machine, and OpenMP's waiting threads then spin against each other. On the
    2-core CI machine one MUTAG test took 119 s in the suite and 5 s alone (16 s at one thread
    beside two busy processes, 55 s at two). A thread count the user set (``OMP_NUM_THREADS``),
    or one a test sets itself, wins. The share, or None outside xdist."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if workers < 1 or os.environ.get("OMP_NUM_THREADS"):
        return None
    share = max(1, len(os.sched_getaffinity(0)) // workers)
    os.environ["OMP_NUM_THREADS"] = str(share)  # the processes a test starts
    torch.set_num_threads(share)
    return share


THREADS = _share_the_cores()


def undirected(pairs):
    e = torch.tensor(pairs, dtype=torch.long).t()
    return torch.cat([e, e.flip(0)], dim=1)


def make_batch(feat_dim: int = 4) -> Batch:
    """Four graphs: a triangle, a 5-path, a single node, a 4-star (with a few features)."""
    g = torch.Generator().manual_seed(0)
    graphs = [
        Data(x=torch.rand(3, feat_dim, generator=g), edge_index=undirected([[0, 1], [1, 2], [2, 0]]), y=torch.tensor([0])),
        Data(x=torch.rand(5, feat_dim, generator=g), edge_index=undirected([[0, 1], [1, 2], [2, 3], [3, 4]]), y=torch.tensor([1])),
        Data(x=torch.rand(1, feat_dim, generator=g), edge_index=torch.empty(2, 0, dtype=torch.long), y=torch.tensor([0])),
        Data(x=torch.rand(5, feat_dim, generator=g), edge_index=undirected([[0, 1], [0, 2], [0, 3], [0, 4]]), y=torch.tensor([1])),
    ]
    return Batch.from_data_list(graphs)


def superpixel_batch(n_graphs=3, n=12, k=3, seed=0) -> Batch:
    """Graphs shaped like MNIST superpixels: x = [intensity, row, col] in [0, 1], pos in
    pixels, symmetric kNN edges."""
    g = torch.Generator().manual_seed(seed)
    graphs = []
    for c in range(n_graphs):
        x = torch.rand(n, 3, generator=g)
        d = torch.cdist(x[:, 1:], x[:, 1:]) + torch.eye(n) * 1e9
        nbr = d.topk(k, largest=False).indices
        e = torch.stack([torch.arange(n).repeat_interleave(k), nbr.reshape(-1)])
        e = torch.unique(torch.cat([e, e.flip(0)], 1), dim=1)
        graphs.append(Data(x=x, edge_index=e, pos=x[:, 1:] * 28, y=torch.tensor([c % 2])))
    return Batch.from_data_list(graphs)


@pytest.fixture
def batch() -> Batch:
    return make_batch()


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory, monkeypatch):
    """Every test session uses its own cache, so tests never see stale processed data."""
    cache = tmp_path_factory.getbasetemp() / "cache"
    monkeypatch.setenv("AUTOGCL_CACHE", str(cache))
    monkeypatch.delenv("AUTOGCL_DATA", raising=False)


@pytest.fixture(autouse=True)
def _torch_threads():
    """A test that sets torch's intra-op threads (a unit's, a fault test's one thread) leaves the
    next test in its process the threads it found."""
    before = torch.get_num_threads()
    yield
    if torch.get_num_threads() != before:
        torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def _environment():
    """A test that runs the command line in its own process (``autogcl.cli.main``) leaves the
    next test the environment it found: ``--log-dir``/``--tracking`` export
    ``AUTOGCL_LOG_DIR``/``AUTOGCL_TRACKING`` for the command's child processes, and a later
    test's child then logged to the first test's MLflow folder (which MLflow 3 refuses without
    ``MLFLOW_ALLOW_FILE_STORE``: three fault and script tests failed after it in one worker)."""
    before = dict(os.environ)
    yield
    if os.environ != before:
        os.environ.clear()
        os.environ.update(before)


#: whether this machine's torch sees a GPU, read before the suite hides it (below)
CUDA = torch.cuda.is_available()
if CUDA:  # initialised before the GPU is hidden: the driver keeps the devices it first saw
    torch.cuda.init()
    torch.cuda.device_count()
_REAL_CUDA = {name: getattr(torch.cuda, name) for name in ("is_available", "device_count", "is_initialized")}
VISIBLE = os.environ.get("CUDA_VISIBLE_DEVICES")  # as the session found it


def _hide_cuda() -> None:
    """The suite checks the CPU's numbers, also on a machine with a GPU: there ``device="auto"``
    would pick CUDA, whose scatter-adds are not bitwise deterministic, and the tests that hold a
    resumed, reloaded or re-seeded run bit-equal (a CPU property: same machine, device and
    threads) would test the GPU's rounding instead. So, as in PyTorch Geometric's tests, the
    CUDA paths are tested by the tests marked ``cuda`` (``tests/test_cuda.py``), and the rest of
    the session sees no GPU in this process (``torch.cuda``: no device, none initialised; from
    here on, module- and session-scoped fixtures included) nor in the processes a test or its
    fixtures start (``CUDA_VISIBLE_DEVICES``, set around each test's setup, call and teardown:
    set for the whole session, it would hide the GPU from pytest-xdist's workers too)."""
    torch.cuda.is_available = lambda: False
    torch.cuda.device_count = lambda: 0
    torch.cuda.is_initialized = lambda: False


_hide_cuda()


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: a test of the CUDA paths; it alone sees the GPU (see _hide_cuda)")


_HIDDEN = pytest.StashKey[str | None]()  # CUDA_VISIBLE_DEVICES before a test hid the GPU


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    if item.get_closest_marker("cuda") is None:
        item.stash[_HIDDEN] = os.environ.get("CUDA_VISIBLE_DEVICES")
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield
    if _HIDDEN in item.stash:
        before = item.stash[_HIDDEN]
        if before is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = before


@pytest.fixture(autouse=True)
def _gpu_for_cuda_tests(request, monkeypatch):
    """A test marked ``cuda`` sees the machine's GPU (function-scoped fixtures only)."""
    if request.node.get_closest_marker("cuda") is not None:
        for name, real in _REAL_CUDA.items():
            monkeypatch.setattr(torch.cuda, name, real)


@pytest.fixture(scope="session")
def data_root() -> Path:
    if not (DATA_ROOT / "TU" / "MUTAG" / "raw").is_dir():
        pytest.skip(f"offline data mirror not found at {DATA_ROOT} (set AUTOGCL_TEST_DATA)")
    return DATA_ROOT


@pytest.fixture
def mnist_root(data_root) -> Path:
    """The data root, for a test of MNIST superpixels: a skip where it holds no MNIST (a GPU
    call carries a lighter data folder; in CI the skip fails the session, as every data skip)."""
    from autogcl.data.mnist import IMAGES_FILE

    if not (data_root / "MNIST" / "raw" / IMAGES_FILE).is_file():
        pytest.skip(f"MNIST raw files not found under {data_root}")
    return data_root


def break_at(strat, cut: int) -> None:
    """Make ``strat`` raise KeyboardInterrupt when epoch ``cut`` starts (an interrupted fit)."""
    real = strat.train_epoch

    def breaks(data, epoch):
        if epoch == cut:
            raise KeyboardInterrupt
        return real(data, epoch)
    strat.train_epoch = breaks


# ------------------------------------------------------------------------- CI cannot pass by skipping

#: skips that are allowed when AUTOGCL_REQUIRE_DATA is set (CI): a named optional dependency
#: or device is absent (or present, for a test of its absence). Any other skip, e.g. a missing
#: data mirror or dataset, fails the session there.
OPTIONAL = ("CUDA", "GPU", "rdkit", "RDKit", "ray", "hypothesis", "numba")


def _allowed(reason: str) -> bool:
    import re

    return any(re.search(rf"\b{re.escape(name)}\b", reason) for name in OPTIONAL)


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    return longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)


def stop_joblib_workers() -> bool:
    """Shut joblib's reusable process pool (loky; the SVM's ``n_jobs``) down now, killing its
    workers; False when this process has none. Left to loky's handler at interpreter exit, it hung
    the xdist workers of a lent 16-core GPU machine after their last test (docs/reliability.md)."""
    import sys

    module = sys.modules.get("joblib.externals.loky.reusable_executor")
    executor = getattr(module, "_executor", None)
    if executor is None:
        return False
    executor.shutdown(wait=True, kill_workers=True)
    return True


def pytest_sessionfinish(session, exitstatus):
    stop_joblib_workers()  # in each xdist worker, before its interpreter exits
    if not os.environ.get("AUTOGCL_REQUIRE_DATA"):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    bad = [(r.nodeid, _skip_reason(r)) for r in skipped if not _allowed(_skip_reason(r))]
    if not (DATA_ROOT / "TU" / "MUTAG" / "raw").is_dir():
        bad.insert(0, ("(session)", f"the data mirror is missing at {DATA_ROOT}"))
    if bad:
        session.config._autogcl_bad_skips = bad
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    bad = getattr(config, "_autogcl_bad_skips", None)
    if bad:
        terminalreporter.section("skips not allowed in CI (AUTOGCL_REQUIRE_DATA is set)", red=True)
        for nodeid, reason in bad:
            terminalreporter.line(f"{nodeid}: {reason}")
        terminalreporter.line(f"only a missing optional dependency may skip a test: {', '.join(OPTIONAL)}")


# ------------------------------------------------------------------------- two workers (pytest -n 2)
#: test files whose tests one pytest-xdist worker runs, one after another: the Ray tests (each
#: starts a local cluster, and test_executors.py finds the unit workers by their title and kills
#: them, so no other Ray test may run beside them) and the torchrun tests (their module fixtures,
#: the corpus and the unbroken run, are made once)
XDIST_GROUPS = {"tests/test_executors.py": "ray", "tests/test_gpu_packing.py": "ray", "tests/protocols/test_tune.py": "ray",
                "tests/train/test_distributed.py": "torchrun"}


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """With ``-n``, xdist's default distribution (``load``: each test to whichever worker is
    free) except that each of :data:`XDIST_GROUPS` goes whole to one worker. (xdist's
    ``xdist_group`` marks are not used: under pytest 9 its ``loadgroup`` mode groups nothing.)"""
    if config.getvalue("dist") != "load":
        return None  # another --dist asked for by name
    from xdist.scheduler import LoadScopeScheduling

    class Grouped(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return XDIST_GROUPS.get(nodeid.split("::")[0], nodeid)

    return Grouped(config, log)
