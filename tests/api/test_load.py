"""One load API: ``autogcl.load`` takes every model file autogcl writes and the shipped
encoder names; each class's ``load`` refuses another kind's file, naming what it holds and
what loads it; ``autogcl embed --model`` takes any model that has ``embed``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

import autogcl
from autogcl.errors import ConfigError, DataError


def ring(n: int, y: int = 0, feat: int = 3) -> Data:
    i = torch.arange(n)
    e = torch.stack([i, (i + 1) % n])
    return Data(x=torch.rand(n, feat), edge_index=torch.cat([e, e.flip(0)], 1), y=torch.tensor([y]))


GRAPHS = [ring(n, n % 2) for n in range(3, 11)]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A saved file of every estimator."""
    folder = tmp_path_factory.mktemp("models")
    torch.manual_seed(0)
    out = {}
    for cls, kw in ((autogcl.AutoGCL, {}), (autogcl.GraphCL, {}), (autogcl.SemiSupervised, {"num_classes": 2})):
        model = cls(3, hidden=4, num_layers=2, **kw)
        model.fit(GRAPHS, epochs=1, batch_size=4, seed=0, progress=False, device="cpu")
        out[cls.__name__] = model.save(folder / f"{cls.__name__}.pt")
    return out


@pytest.mark.parametrize("name", ["AutoGCL", "GraphCL", "SemiSupervised"])
def test_each_class_loads_its_own_file_as_autogcl_load_does(files, name):
    cls = getattr(autogcl, name)
    own = cls.load(files[name])
    anyhow = autogcl.load(files[name])
    assert type(own) is cls and type(anyhow) is cls
    assert torch.equal(own.embed(GRAPHS), anyhow.embed(GRAPHS))


@pytest.mark.parametrize("name", ["AutoGCL", "GraphCL", "SemiSupervised"])
def test_each_class_refuses_another_kinds_file_by_name(files, name):
    for other, path in files.items():
        if other == name:
            continue
        with pytest.raises(DataError, match=f"holds an? {other} model, not an? {name} model; use "
                                            f"autogcl.{other}.load or autogcl.load"):
            getattr(autogcl, name).load(path)


def test_the_shared_base_of_autogcl_and_graphcl_loads_both(files):
    assert type(autogcl.ContrastiveLearner.load(files["GraphCL"])) is autogcl.GraphCL
    with pytest.raises(DataError, match="SemiSupervised model"):
        autogcl.ContrastiveLearner.load(files["SemiSupervised"])


def test_shipped_encoder_names(files):
    pytest.importorskip("rdkit", reason="the molecule encoder needs RDKit")
    enc = autogcl.load("autogcl-moses-fullx1")
    assert type(enc).__name__ == "MoleculeEncoder"
    with pytest.raises(DataError, match="holds a molecule encoder, not a GraphCL model; use "
                                        "autogcl.MoleculeEncoder.load or autogcl.load"):
        autogcl.GraphCL.load("autogcl-moses-fullx1")
    with pytest.raises(DataError, match="no such model file, nor the name of a shipped encoder "
                                        r"\(shipped: .*autogcl-moses-fullx1"):
        autogcl.load("autogcl-moses-fullx9")
    with pytest.raises(DataError, match="a folder, not a model file"):
        autogcl.load(files["GraphCL"].parent)


OLD_SEMI_FORMAT = "autogcl-semi-classifier-1"  # what an earlier `autogcl semi` wrote


def old_semi_classifier_file(path):
    """A file as an earlier `autogcl semi` wrote it (a ResGCN state, before the command saved
    SemiSupervised models)."""
    from autogcl.models.resgcn import ResGCN

    torch.manual_seed(0)
    model = ResGCN(3, 2, 8)
    torch.save({"format": OLD_SEMI_FORMAT, "class": "ResGCN", "config": {"feat": "deg+odeg100"},
                "hparams": {"in_dim": 3, "num_classes": 2, "hidden": 8}, "state_dict": model.state_dict(),
                "generators": {}, "fold": 0}, path)
    return model.eval()


def test_an_earlier_semi_commands_classifier_is_named_with_what_to_do(tmp_path):
    from autogcl.api import OTHER_FORMATS

    assert OLD_SEMI_FORMAT in OTHER_FORMATS  # the format autogcl.load names
    old_semi_classifier_file(tmp_path / "model.pt")
    with pytest.raises(DataError, match=r"earlier autogcl's semi-supervised protocol.*rerun its fold"):
        autogcl.load(tmp_path / "model.pt")
    with pytest.raises(DataError, match="not a SemiSupervised model; rerun its fold"):
        autogcl.SemiSupervised.load(tmp_path / "model.pt")


def test_a_checkpoint_or_a_state_dict_is_named(tmp_path):
    model = autogcl.GraphCL(3, hidden=4, num_layers=2)
    model.fit(GRAPHS, epochs=1, batch_size=4, progress=False, device="cpu", checkpoint=tmp_path / "ck.pt")
    with pytest.raises(DataError, match=r"holds a training checkpoint \(fit\(checkpoint=...\)\), not a model"):
        autogcl.load(tmp_path / "ck.pt")
    torch.save(model.state_dict(), tmp_path / "sd.pt")
    with pytest.raises(DataError, match="bare state dict"):
        autogcl.GraphCL.load(tmp_path / "sd.pt")


def test_fit_refuses_a_saved_model_as_its_checkpoint(files):
    before = files["GraphCL"].read_bytes()
    with pytest.raises(ConfigError, match=f"checkpoint='{files['GraphCL']}'.*holds a GraphCL model, not a training "
                                          "checkpoint"):
        autogcl.GraphCL(3, hidden=4, num_layers=2).fit(GRAPHS, epochs=1, progress=False, checkpoint=files["GraphCL"])
    assert files["GraphCL"].read_bytes() == before  # not overwritten


def test_embed_command_takes_every_model_with_embed(files, tmp_path, capsys):
    from autogcl.cli import main

    torch.save(GRAPHS, tmp_path / "graphs.pt")
    for name, path in files.items():
        out = tmp_path / f"{name}.npy"
        assert main(["embed", str(tmp_path / "graphs.pt"), "--model", str(path), "--out", str(out),
                     "--device", "cpu"]) == 0
        expected = autogcl.load(path).embed(GRAPHS).numpy()
        np.testing.assert_allclose(np.load(out), expected, rtol=1e-5, atol=1e-6)
    assert "8 x 8 embeddings" in capsys.readouterr().out
