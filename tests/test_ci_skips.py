"""CI cannot pass by skipping: with AUTOGCL_REQUIRE_DATA set (as .ci/run sets it), a skip for
anything but a named optional dependency, or a missing data mirror, fails the session."""

import os
import subprocess
import sys

from autogcl.paths import child_pythonpath
from tests.conftest import REPO

SKIPS = '''
import pytest

def test_ok():
    pass

def test_needs_cuda():
    pytest.skip("no CUDA device visible")
'''


def _pytest(tmp_path, body, **env):
    (tmp_path / "test_sample.py").write_text(body, encoding="utf-8")
    environ = {**os.environ, "PYTHONPATH": child_pythonpath(REPO), "AUTOGCL_REQUIRE_DATA": "1", **env}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "tests.conftest", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), str(tmp_path / "test_sample.py")],
                          capture_output=True, text=True, env=environ, cwd=tmp_path)


def test_a_skip_for_missing_data_fails_the_session(tmp_path, data_root):
    body = SKIPS + '''
def test_needs_data():
    pytest.skip("offline data mirror not found at /nowhere")
'''
    out = _pytest(tmp_path, body, AUTOGCL_TEST_DATA=str(data_root))
    assert out.returncode == 1, out.stdout
    assert "test_needs_data: Skipped: offline data mirror not found" in out.stdout
    assert "test_needs_cuda" not in out.stdout.split("skips not allowed")[1].split("short test summary")[0]
    assert "SKIPPED" in out.stdout  # -rs: the summary of every skip


def test_a_skip_for_a_named_optional_dependency_passes(tmp_path, data_root):
    out = _pytest(tmp_path, SKIPS, AUTOGCL_TEST_DATA=str(data_root))
    assert out.returncode == 0, out.stdout


def test_a_missing_data_mirror_fails_even_without_skips(tmp_path):
    out = _pytest(tmp_path, "def test_ok():\n    pass\n", AUTOGCL_TEST_DATA=str(tmp_path / "no-mirror"))
    assert out.returncode == 1, out.stdout
    assert "the data mirror is missing" in out.stdout



def test_xdist_workers_share_the_cores(monkeypatch):
    """tests/conftest.py gives each of N xdist workers 1/N of the cores (at least one thread), in
    its torch and in the processes its tests start; a thread count the user set is left alone."""
    import torch

    from tests import conftest

    cores = len(os.sched_getaffinity(0))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    assert conftest._share_the_cores() == max(1, cores // 2) == torch.get_num_threads()
    assert os.environ["OMP_NUM_THREADS"] == str(max(1, cores // 2))
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(4 * cores))
    monkeypatch.delenv("OMP_NUM_THREADS")  # the share the call above set
    assert conftest._share_the_cores() == 1 == torch.get_num_threads()
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert conftest._share_the_cores() is None and os.environ["OMP_NUM_THREADS"] == "3"
    monkeypatch.delenv("OMP_NUM_THREADS")
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT")
    assert conftest._share_the_cores() is None and "OMP_NUM_THREADS" not in os.environ  # one process: all cores
