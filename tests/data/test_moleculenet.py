"""MoleculeNet and user-CSV loaders: parsing, skipped SMILES, cache, errors, download."""

from __future__ import annotations

import math

import pytest
import torch

from autogcl.data import moleculenet as M
from autogcl.errors import DataError


def test_user_csv_skips_bad_smiles_and_keeps_labels(tmp_path, caplog):
    p = tmp_path / "mine.csv"
    p.write_text("name,smi,t1,t2\na,CCO,1,0\nb,C1CC,0,1\nc,c1ccccc1,,1\n")
    ds = M.load_molecule_csv(p, "smi", ["t1", "t2"], workers=1, progress=False)
    assert len(ds) == 2 and ds.meta["tasks"] == ["t1", "t2"]
    assert ds.meta["smiles"] == ["CCO", "c1ccccc1"] and ds.meta["rows"] == [2, 4]
    assert ds.meta["skipped"][0]["row"] == 3 and ds.meta["skipped"][0]["smiles"] == "C1CC"
    assert "1 of 3 SMILES could not be parsed" in caplog.text
    y = ds._data.y
    assert y.shape == (2, 2) and y[0].tolist() == [1.0, 0.0] and math.isnan(y[1, 0]) and y[1, 1] == 1
    assert ds[1].x.dtype == torch.long and ds[1].num_nodes == 6
    again = M.load_molecule_csv(p, "smi", ["t1", "t2"], workers=1, progress=False)  # from the cache
    assert torch.equal(again._data.x, ds._data.x)


def test_bbbp_from_the_mirror(data_root):
    ds = M.load_moleculenet("BBBP", data_root, workers=1, progress=False)
    assert len(ds) == 2039 and ds.meta["tasks"] == ["p_np"] and ds.meta["skipped"] == []
    assert ds._data.x.shape[1] == 2 and ds._data.edge_attr.shape[1] == 2


def test_multitask_columns(data_root):
    sider = M.load_moleculenet("sider", data_root, workers=1, progress=False)
    assert len(sider.meta["tasks"]) == 27 and sider._data.y.shape == (1427, 27)


def test_unknown_name_and_missing_file(tmp_path):
    with pytest.raises(DataError, match="unknown MoleculeNet dataset 'bbbq'.*bbbp"):
        M.load_moleculenet("bbbq")
    with pytest.raises(DataError, match="dataset bace not found; looked in"):
        M.load_moleculenet("bace", tmp_path, download=False)


def test_download_failure_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOGCL_CACHE", str(tmp_path / "own-cache"))  # a fake download stays here
    import torch_geometric.data

    def offline(url, folder, log=True):
        raise OSError("network unreachable")

    monkeypatch.setattr(torch_geometric.data, "download_url", offline)
    with pytest.raises(DataError, match="could not be downloaded.*network unreachable"):
        M.load_moleculenet("bace", tmp_path, download=True)


def test_download_lands_in_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOGCL_CACHE", str(tmp_path / "own-cache"))  # a fake download stays here
    import torch_geometric.data

    seen = {}

    def fake(url, folder, log=True):
        seen["url"] = url
        from pathlib import Path

        Path(folder).mkdir(parents=True, exist_ok=True)
        out = Path(folder) / url.rsplit("/", 1)[1]
        out.write_text("mol,CID,Class\nCCO,x,1\nCCN,y,0\n")
        return str(out)

    monkeypatch.setattr(torch_geometric.data, "download_url", fake)
    with pytest.raises(DataError, match="bace not found; looked in .*--download on the command line, download=True in Python"):
        M.load_moleculenet("bace", tmp_path, workers=1, progress=False)  # named root lacks it
    assert seen == {}
    ds = M.load_moleculenet("bace", None, workers=1, progress=False)  # no named root: fetched
    assert seen["url"].endswith("/bace.csv") and len(ds) == 2 and ds.meta["tasks"] == ["Class"]
