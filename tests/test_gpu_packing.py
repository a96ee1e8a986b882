"""Small units share one GPU on the Ray executor (``--gpus-per-unit 0.25``): on a local 2-CPU
cluster that declares one GPU (Ray counts the resource; no GPU is needed to schedule by it),
four units that each ask for a quarter of it and half a CPU all run at once, each given the
same GPU id and the fractions it asked for. The test starts and shuts down its own cluster."""

import json
import os
import time

import pytest

from autogcl import units
from autogcl.executors import RayExecutor

ray = pytest.importorskip("ray")

UNITS = 4


def together(unit):
    """Records what Ray gave the unit, then waits (60 s at most) until every unit has started:
    ``together`` is True only when all of them ran at the same time."""
    units.start_work(unit)
    ctx = ray.get_runtime_context()
    here = unit.dir.parent
    (here / f"started-{unit.seed}").write_text("")
    deadline = time.monotonic() + 60
    while len(list(here.glob("started-*"))) < UNITS and time.monotonic() < deadline:
        time.sleep(0.05)
    return units.publish(unit, [], {"gpu_ids": [str(g) for g in ray.get_gpu_ids()],
                                   "resources": ctx.get_assigned_resources(),
                                   "together": len(list(here.glob("started-*"))) == UNITS})


@pytest.fixture(scope="module")
def one_gpu_cluster():
    if ray.is_initialized():
        ray.shutdown()
    # the suite hides the GPU with an empty CUDA_VISIBLE_DEVICES (tests/conftest.py), which Ray reads
    # as "no GPU" and then refuses to declare one: the cluster starts without it (its units never
    # touch CUDA; Ray counts the declared GPU)
    hidden = os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    try:
        ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False)
    finally:
        if hidden is not None:
            os.environ["CUDA_VISIBLE_DEVICES"] = hidden
    yield
    ray.shutdown()


def test_quarter_gpu_units_share_one_gpu(one_gpu_cluster, tmp_path):
    todo = [units.Unit(dir=tmp_path / f"u{i}", config={"i": i}, seed=i, label=f"u{i}") for i in range(UNITS)]
    res = units.run_units(todo, together, False, "packing", show_progress=False,
                         executor=RayExecutor(cpus_per_unit=0.5, gpus_per_unit=0.25))
    assert len(res) == UNITS
    assert all(r["together"] for r in res), json.dumps(res)  # four units on one GPU at once
    assert {tuple(r["gpu_ids"]) for r in res} == {("0",)}  # the same (only) GPU
    assert all(r["resources"].get("GPU") == 0.25 and r["resources"].get("CPU") == 0.5 for r in res)


def test_more_gpu_than_the_cluster_has_is_refused(one_gpu_cluster, tmp_path):
    from autogcl.errors import ConfigError

    unit = units.Unit(dir=tmp_path / "u", config={}, seed=0, label="u")
    with pytest.raises(ConfigError, match="asks for 2 GPU.*cluster has 1"):
        units.run_units([unit], together, False, "packing", show_progress=False,
                       executor=RayExecutor(gpus_per_unit=2))
