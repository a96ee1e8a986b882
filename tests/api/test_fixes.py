"""The newcomer's traps, each fixed: load(device=), a CLI-written model beside PyG's MUTAG,
the help's empty defaults, ENZYMES for a user with a network, another architecture given
to load."""

import shutil

import pytest
import torch

import autogcl
from autogcl.errors import ConfigError, DataError


def tiny_model(tmp_path, **kw):
    from torch_geometric.data import Data

    graphs = [Data(x=torch.rand(n, 3), edge_index=torch.tensor([[0, 1], [1, 0]])) for n in range(2, 7)]
    torch.manual_seed(0)
    model = autogcl.AutoGCL(hidden=8, num_layers=2, **kw)
    model.fit(graphs, epochs=1, batch_size=5, seed=0, progress=False)
    return model, graphs, model.save(tmp_path / "m.pt")


def test_load_takes_device_like_fit_and_embed(tmp_path, monkeypatch):
    model, graphs, path = tiny_model(tmp_path)
    for kw in ({"device": "cpu"}, {"device": "auto"} if not torch.cuda.is_available() else {}, {"map_location": "cpu"}):
        back = autogcl.load(path, **kw)
        assert back.device.type == "cpu" and torch.equal(back.embed(graphs), model.embed(graphs))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ConfigError, match=r"load\(device='cuda'\): .*sees no CUDA GPU \(use device='cpu' or 'auto'\)"):
        autogcl.load(path, device="cuda")
    with pytest.raises(ConfigError, match="unknown device"):
        autogcl.load(path, device="tpu")


def test_a_model_of_another_architecture_is_a_clear_error(tmp_path):
    model, graphs, path = tiny_model(tmp_path)
    blob = torch.load(path, weights_only=True)
    blob["hparams"]["hidden"] = 16  # the weights are those of hidden 8
    torch.save(blob, tmp_path / "other.pt")
    with pytest.raises(DataError, match="not those of a AutoGCL.*has shape.*another architecture"):
        autogcl.load(tmp_path / "other.pt")
    blob["class"] = "GraphCL"
    blob["hparams"] = {k: v for k, v in model.hparams.items() if k in ("in_channels", "hidden", "num_layers")}
    torch.save(blob, tmp_path / "graphcl.pt")
    with pytest.raises(DataError, match="not those of a GraphCL.*unexpected, e.g. 'gen1"):
        autogcl.load(tmp_path / "graphcl.pt")
    torch.save(model.encoder.state_dict(), tmp_path / "bare.pt")
    with pytest.raises(DataError, match="bare state dict of .* tensors"):
        autogcl.load(tmp_path / "bare.pt")
    blob["class"] = "MolPredictor"
    torch.save(blob, tmp_path / "mol.pt")
    with pytest.raises(DataError, match="model of type 'MolPredictor'.*known: AutoGCL, GraphCL, SemiSupervised"):
        autogcl.load(tmp_path / "mol.pt")


def test_registered_model_types_load_through_the_registry(tmp_path):
    from autogcl.api import MODEL_TYPES, register_model_type

    class Tiny(autogcl.AutoGCL):
        pass

    try:
        register_model_type(Tiny, name="Tiny")
        model, graphs, _ = tiny_model(tmp_path)
        tiny = Tiny(3, hidden=8, num_layers=2)
        tiny.load_state_dict(model.state_dict())
        back = autogcl.load(tiny.save(tmp_path / "tiny.pt"))
        assert type(back) is Tiny and torch.equal(back.embed(graphs), model.embed(graphs))
        with pytest.raises(ConfigError, match="no from_saved"):
            register_model_type(object)
    finally:
        MODEL_TYPES.pop("Tiny", None)


def test_a_cli_model_applies_its_recipe_to_pyg_mutag(tmp_path, data_root):
    """The unsupervised protocol's model records the recipe its dataset was built with, so
    loaded beside PyG's own MUTAG (7 one-hot label columns) it applies it (109 features)."""
    from torch_geometric.datasets import TUDataset

    from autogcl.data import load_tu
    from autogcl.protocols.unsupervised import UnsupervisedConfig, build_model

    ours = load_tu("MUTAG", data_root)
    torch.manual_seed(0)
    model = build_model(UnsupervisedConfig(dataset="MUTAG", epochs=1), ours.num_features)
    assert model.hparams["features"] is None and model.hparams["recipe"] == "deg+odeg100"
    back = autogcl.load(model.save(tmp_path / "model.pt"))
    shutil.copytree(data_root / "TU" / "MUTAG" / "raw", tmp_path / "pyg" / "MUTAG" / "raw")
    pyg = TUDataset(str(tmp_path / "pyg"), "MUTAG")
    assert pyg.num_features == 7
    assert torch.allclose(back.embed(pyg), back.embed(ours), atol=1e-5)


def test_help_shows_no_empty_default():
    from autogcl.cli import build_parser

    texts = {}
    for argv in (["transfer", "pretrain"], ["unsupervised"], ["semi"], ["transfer", "finetune"]):
        parser = build_parser(argv)
        sub = parser._subparsers._group_actions[0].choices[argv[0]]
        if len(argv) > 1:
            sub = sub._subparsers._group_actions[0].choices[argv[1]]
        texts[" ".join(argv)] = " ".join(sub.format_help().split())
        assert "(default: )" not in texts[" ".join(argv)], argv
    corpus = texts["transfer pretrain"].split("--corpus CORPUS ")[1].split(" --")[0]
    assert "default: <data root>/pretrain/moses_train.csv.gz" in corpus and corpus.count("default") == 1


def test_a_tu_dataset_outside_the_mirror_is_downloaded_when_allowed(tmp_path, monkeypatch):
    from autogcl.data import datasets

    asked = []

    def fake_download(name, roots):
        asked.append(name)
        raise DataError(f"(test) would download {name}")

    monkeypatch.setattr(datasets, "_download", fake_download)
    monkeypatch.delenv("AUTOGCL_DATA", raising=False)
    with pytest.raises(DataError, match="would download ENZYMES"):
        datasets.load_tu("ENZYMES")  # no data root named: a user with a network gets it downloaded
    with pytest.raises(DataError, match="would download ENZYMES"):
        datasets.load_tu("ENZYMES", tmp_path, download=True)
    assert asked == ["ENZYMES", "ENZYMES"]
    with pytest.raises(DataError, match="unknown dataset 'ENZYMES'"):
        datasets.load_tu("ENZYMES", tmp_path)  # a named root without it, no --download: refused, listed
    with pytest.raises(DataError, match="not a dataset name"):
        datasets.load_tu("../etc", download=True)


@pytest.mark.parametrize("argv", [
    ["unsupervised", "--method", "graphcl", "--add-mask", "--epochs", "1", "--seeds", "1"],
    ["semi", "--row", "graphcl_cl", "--add-mask", "--epochs", "1", "--pretrain-epochs", "1", "--folds", "3",
     "--fold-limit", "1"],
])
def test_a_warning_is_said_once(argv, tmp_path, data_root, caplog):
    import logging

    from autogcl.cli import main

    with caplog.at_level(logging.WARNING):
        assert main([*argv, "--dataset", "mutag", "--data-root", str(data_root), "--out", str(tmp_path)]) == 0
    said = [r for r in caplog.records if "--add-mask=True do(es) not apply" in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in said]
