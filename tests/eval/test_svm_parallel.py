"""The SVM evaluation gives the same numbers whatever the number of processes, and the
automatic number of processes follows the cores and the memory."""

import numpy as np

from autogcl.eval.svm import auto_jobs, svm_evaluate


def test_parallel_fits_give_the_serial_numbers():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(120, 6))
    y = (x[:, 0] + 0.7 * rng.normal(size=120) > 0).astype(int)
    serial = svm_evaluate(x, y, n_jobs=1)
    assert svm_evaluate(x, y, n_jobs=2) == serial
    assert svm_evaluate(x, y, n_jobs=None) == serial


def test_auto_jobs_follows_cores_tasks_and_memory():
    assert auto_jobs(100, 50, cores=16, memory=64 << 30) == 16
    assert auto_jobs(100, 10, cores=16, memory=64 << 30) == 10
    # 5000 graphs: three 200 MB kernels and an interpreter per process; 2 GB holds two
    assert auto_jobs(5000, 50, cores=16, memory=2 << 30) == 1
    assert auto_jobs(5000, 50, cores=16, memory=4 << 30) == 3
    assert auto_jobs(10, 50, cores=1, memory=None) >= 1


def test_the_suite_stops_the_svm_workers_before_exit():
    """tests/conftest.py stops joblib's process pool at the end of each session (its exit handler
    hung the xdist workers of a 16-core GPU machine): after it, none of the pool's processes lives,
    and a later parallel evaluation starts a new pool and gives the serial numbers."""
    from tests.conftest import stop_joblib_workers

    rng = np.random.default_rng(1)
    x = rng.normal(size=(60, 4))
    y = (x[:, 0] > 0).astype(int)
    svm_evaluate(x, y, folds=3, inner_folds=2, n_jobs=2)
    from joblib.externals.loky import reusable_executor

    workers = list(reusable_executor._executor._processes.values())
    assert workers and all(p.is_alive() for p in workers)
    assert stop_joblib_workers()
    for p in workers:
        p.join(timeout=30)
    assert not any(p.is_alive() for p in workers)
    assert svm_evaluate(x, y, folds=3, inner_folds=2, n_jobs=2) == svm_evaluate(x, y, folds=3, inner_folds=2, n_jobs=1)
    stop_joblib_workers()
