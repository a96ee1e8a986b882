import os
from pathlib import Path

import pytest

from autogcl.data import datasets, load_tu
from autogcl.data.datasets import fingerprint
from autogcl.errors import DataError
from tests.data.test_tu import write_tu


def test_mutag_from_the_mirror(data_root):
    ds = load_tu("MUTAG", data_root)
    assert len(ds) == 188 and ds.num_classes == 2
    assert ds.num_features == 7 + 1 + 101  # node labels + degree + one-hot degree (cap 100)
    assert ds.meta["num_edges"] == 2 * 3721  # 19.79 undirected edges per graph, as in SOURCES.md
    assert sorted(ds._data.y.bincount().tolist()) == [63, 125]


def test_name_is_case_insensitive_and_unknown_name_lists_known(data_root):
    assert load_tu("mutag", data_root).name == "MUTAG"
    with pytest.raises(DataError, match=r"unknown dataset 'NOPE'; known datasets: MUTAG, PROTEINS.* \(another TU "
                                        r"dataset: download=True in Python, --download on the command line"):
        load_tu("NOPE", data_root)


def test_cache_is_keyed_by_recipe(tmp_path):
    write_tu(tmp_path)
    a = load_tu("TOY", tmp_path, "deg+odeg100")
    b = load_tu("TOY", tmp_path, "constant")
    assert a.num_features == 3 + 1 + 101 and b.num_features == 1
    again = load_tu("TOY", tmp_path, "deg+odeg100")  # from the cache
    assert again.num_features == a.num_features and len(again) == 2
    assert again[0].x.shape == (3, 105) and again[1].edge_index.tolist() == [[0, 1], [1, 0]]


def test_changed_raw_file_invalidates_cache(tmp_path):
    raw = write_tu(tmp_path)
    assert load_tu("TOY", tmp_path).meta["num_edges"] == 8
    (raw / "TOY_A.txt").write_text("1, 2\n2, 1\n4, 5\n5, 4\n")
    assert load_tu("TOY", tmp_path).meta["num_edges"] == 4


def test_fingerprint_follows_content_not_modification_time(tmp_path):
    f = tmp_path / "TOY_A.txt"
    f.write_text("1, 2\n2, 1\n")
    before = fingerprint([f])
    os.utime(f, ns=(0, 10**18))  # touched, as a re-mounted or copied data folder is
    assert fingerprint([f]) == before
    f.write_text("2, 1\n1, 2\n")  # same name and size, other content
    after = fingerprint([f])
    assert after[0][:2] == before[0][:2] and after != before


def test_touched_raw_files_keep_the_cache(tmp_path, monkeypatch):
    raw = write_tu(tmp_path)
    load_tu("TOY", tmp_path)
    for f in raw.iterdir():
        os.utime(f, ns=(0, 10**18))
    built = []
    monkeypatch.setattr(datasets, "build_tu", lambda *a: built.append(a))
    assert load_tu("TOY", tmp_path).meta["num_edges"] == 8 and built == []


def test_missing_dataset_without_network_is_clear(tmp_path):
    (tmp_path / "TU" / "MINE" / "raw").mkdir(parents=True)  # known on disk, but no files
    with pytest.raises(DataError, match="MINE not found; looked in"):
        load_tu("MINE", tmp_path, download=False)


def test_download_goes_to_the_project_cache(tmp_path, monkeypatch):
    """A dataset in no data root is fetched with PyG's TUDataset into the cache data root."""
    monkeypatch.setenv("AUTOGCL_CACHE", str(tmp_path / "own-cache"))  # a fake download stays here
    import torch_geometric.datasets as pyg_datasets

    from autogcl import paths

    calls = []

    class FakeTUDataset:  # stands in for the network: writes the raw files PyG would
        def __init__(self, root, name):
            calls.append((root, name))
            write_tu(Path(root).parent, name=name)

    monkeypatch.setattr(pyg_datasets, "TUDataset", FakeTUDataset)
    with pytest.raises(DataError, match="COLLAB not found; looked in .*--download on the command line, download=True in Python"):
        load_tu("COLLAB", tmp_path / "empty-root")  # a named root that lacks it: no silent download
    assert calls == []
    ds = load_tu("COLLAB", tmp_path / "empty-root", download=True)
    assert calls == [(str(paths.default_data_dir() / "TU"), "COLLAB")]
    assert len(ds) == 2 and ds.meta["raw_dir"].startswith(str(paths.default_data_dir()))
    load_tu("COLLAB", tmp_path / "empty-root")  # second time: found in the cache root
    assert len(calls) == 1


def test_failed_download_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOGCL_CACHE", str(tmp_path / "own-cache"))  # a fake download stays here
    import torch_geometric.datasets as pyg_datasets

    def offline(root, name):
        raise OSError("Temporary failure in name resolution")

    monkeypatch.setattr(pyg_datasets, "TUDataset", offline)
    with pytest.raises(DataError, match=r"GITHUB|github_stargazers") as exc:
        load_tu("GITHUB", tmp_path, download=True)
    msg = str(exc.value)
    assert "could not be downloaded" in msg and "name resolution" in msg and "--data-root" in msg
    assert "{name}" not in msg and "/raw/, or connect to the network" in msg  # the folder is named


def test_a_childs_pythonpath_puts_the_code_first_keeps_the_callers_and_has_no_empty_entry(monkeypatch):
    """An empty entry would put the child's working directory on its path; the caller's entries
    are where a machine may install packages (RDKit on the lent GPU machine)."""
    import os

    from autogcl.paths import child_pythonpath

    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert child_pythonpath("/code") == "/code"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/site", "", "/more"]))
    assert child_pythonpath("/code") == os.pathsep.join(["/code", "/site", "/more"])
    # the environment the child gets, where it is not this process's (suite_record.py --env PYTHONPATH=...)
    assert child_pythonpath("/code", env={"PYTHONPATH": "/old:"}) == os.pathsep.join(["/code", "/old"])
    assert child_pythonpath("/code", env={}) == "/code"
