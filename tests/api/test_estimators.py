"""The estimators of autogcl.api on small hand-built graphs (and MUTAG for save/load)."""

import os

import pytest
import torch
from torch_geometric.data import Batch, Data

import autogcl
from autogcl.errors import ConfigError, DataError
from tests.conftest import make_batch, undirected


def path_graph(n, feat=None):
    e = undirected([[i, i + 1] for i in range(n - 1)]) if n > 1 else torch.empty(2, 0, dtype=torch.long)
    return Data(edge_index=e, num_nodes=n, **({} if feat is None else {"x": torch.rand(n, feat)}))


def test_public_names_resolve():
    for name in autogcl.__all__:
        assert getattr(autogcl, name) is not None
    with pytest.raises(AttributeError):
        autogcl.not_a_name  # noqa: B018


def test_unlabeled_graphs_without_features_train_and_embed():
    graphs = [path_graph(n) for n in range(2, 12)]
    model = autogcl.AutoGCL(hidden=16, num_layers=2)
    history = model.fit(graphs, epochs=2, batch_size=4, seed=0, progress=False)
    assert [r["epoch"] for r in history] == [1, 2] and all(r["loss"] == r["loss"] for r in history)
    assert model.hparams["in_channels"] == 102  # degree + one-hot degree capped at 100
    z = model.embed(graphs)
    assert isinstance(z, torch.Tensor) and z.shape == (10, 32) and z.device.type == "cpu"
    more = model.fit(graphs, epochs=1, batch_size=4, seed=1, progress=False)
    assert more[0]["epoch"] == 3 and len(model.history) == 3  # fit continues


def test_features_rules():
    graphs = [path_graph(4, feat=3), path_graph(5, feat=3)]
    def first_x(model, data):
        return model.prepare(data).store.batch([0]).x

    assert first_x(autogcl.AutoGCL(hidden=8, num_layers=1), graphs).shape == (4, 3)  # auto keeps x
    constant = first_x(autogcl.AutoGCL(hidden=8, num_layers=1, features="constant"), graphs)
    assert torch.equal(constant, torch.ones(4, 1))
    with pytest.raises(DataError, match="graph 0 has no node features"):
        autogcl.AutoGCL(hidden=8, num_layers=1, features=None).prepare([path_graph(3)])
    with pytest.raises(DataError, match="graph 1 has no nodes"):
        autogcl.AutoGCL(hidden=8, num_layers=1).prepare([path_graph(3), Data(edge_index=torch.empty(2, 0, dtype=torch.long), num_nodes=0)])
    with pytest.raises(DataError, match="graph 1 has 4 node features, the model expects 3"):
        autogcl.AutoGCL(3, hidden=8, num_layers=1).prepare([path_graph(3, feat=3), path_graph(3, feat=4)])
    with pytest.raises(ConfigError, match="unknown token"):
        autogcl.AutoGCL(features="degree")


def test_inspect_and_deterministic_views():
    batch = make_batch()
    model = autogcl.AutoGCL(batch.num_features, hidden=8, num_layers=2, add_mask=True, features=None)
    torch.manual_seed(0)
    d1, d2 = model.inspect(batch)
    assert d1.names == ("keep", "drop", "mask") and d1.op.shape == (batch.num_nodes,)
    assert torch.allclose(d1.probs.sum(1), torch.ones(batch.num_nodes))
    assert torch.equal(d1.op, d1.sample.argmax(1))
    a, _ = model.inspect(batch, deterministic=True)
    b, _ = model.inspect(batch, deterministic=True)
    assert torch.equal(a.op, b.op)  # no randomness
    forced = a.op != a.probs.argmax(1)  # only where a graph would lose every node
    kept = (a.op != 1)
    assert forced.sum() <= batch.num_graphs and all(kept[batch.batch == g].any() for g in range(batch.num_graphs))
    v1, v2 = model.views(batch)
    assert isinstance(v1, Batch) and v1.num_graphs == batch.num_graphs


def test_save_load_restores_the_whole_model(tmp_path):
    graphs = [path_graph(n, feat=5) for n in range(3, 9)]
    torch.manual_seed(0)
    model = autogcl.GraphCL(5, hidden=8, num_layers=2, aug="node_drop", aug_ratio=0.3)
    model.fit(graphs, epochs=1, batch_size=3, seed=0, progress=False)
    path = model.save(tmp_path / "m.pt")
    back = autogcl.load(path)
    assert type(back) is autogcl.GraphCL and back.hparams == model.hparams and back.history == model.history
    assert torch.equal(back.embed(graphs), model.embed(graphs))
    with pytest.raises(ConfigError, match="nothing to save"):
        autogcl.AutoGCL().save(tmp_path / "empty.pt")


class _Exploit:
    def __reduce__(self):
        return (os.system, (f"touch {_Exploit.marker}",))


def test_load_refuses_code_executing_pickles(tmp_path):
    _Exploit.marker = tmp_path / "pwned"
    bad = tmp_path / "bad.pt"
    torch.save({"format": "autogcl-model-1", "class": "AutoGCL", "hparams": _Exploit()}, bad)
    with pytest.raises(DataError, match="not a readable autogcl model"):
        autogcl.load(bad)
    assert not _Exploit.marker.exists()
    torch.save({"x": torch.zeros(1)}, tmp_path / "other.pt")
    with pytest.raises(DataError, match="not an autogcl model file"):
        autogcl.load(tmp_path / "other.pt")
    with pytest.raises(DataError, match="no such model file"):
        autogcl.load(tmp_path / "missing.pt")


def test_optimizer_without_generator_parameters_is_refused():
    model = autogcl.AutoGCL(4, hidden=8, num_layers=1)
    with pytest.raises(ConfigError, match="parameter\\(s\\) of gen2"):
        autogcl.NaiveStrategy(model.contrast, model.gen1, model.gen2,
                              torch.optim.Adam([*model.contrast.parameters(), *model.gen1.parameters()]))


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ConfigError, match="lr must be positive"):
        autogcl.AutoGCL(lr=0)
    with pytest.raises(ConfigError, match="unknown similarity loss"):
        autogcl.AutoGCL(sim_loss="l2")
    with pytest.raises(ConfigError, match="unknown augmentation"):
        autogcl.GraphCL(aug="shuffle")
    with pytest.raises(DataError, match="no graphs"):
        autogcl.AutoGCL().fit([], epochs=1)


def test_inspection_leaves_training_mode_alone():
    model = autogcl.AutoGCL(4, hidden=8, num_layers=1, features=None)
    model.train()
    model.inspect(make_batch())
    model.views(make_batch())
    assert model.gen1.training and model.gen2.training


def test_fit_again_with_a_checkpoint_trains_the_new_epochs(tmp_path):
    graphs = [path_graph(n, feat=3) for n in range(3, 11)]
    torch.manual_seed(0)
    model = autogcl.AutoGCL(3, hidden=8, num_layers=1)
    first = model.fit(graphs, epochs=2, batch_size=4, seed=0, progress=False, checkpoint=tmp_path / "c.pt")
    second = model.fit(graphs, epochs=2, batch_size=4, seed=1, progress=False, checkpoint=tmp_path / "c.pt")
    assert [r["epoch"] for r in first] == [1, 2] and [r["epoch"] for r in second] == [3, 4]
    assert [r["epoch"] for r in model.history] == [1, 2, 3, 4]
    assert torch.load(tmp_path / "c.pt", weights_only=True)["epoch"] == 4


def test_numpy_scores_from_evaluate_are_stored_as_plain_numbers(tmp_path):
    import numpy as np

    graphs = [path_graph(n, feat=3) for n in range(3, 9)]
    model = autogcl.AutoGCL(3, hidden=8, num_layers=1)
    rows = model.fit(graphs, epochs=1, batch_size=3, seed=0, progress=False, checkpoint=tmp_path / "c.pt",
                     evaluate=lambda e: {"score": np.float64(0.5), "n": np.int64(3)})
    assert type(rows[0]["score"]) is float and type(rows[0]["n"]) is int
    assert autogcl.load(model.save(tmp_path / "m.pt")).history[0]["score"] == 0.5


def test_embed_ignores_node_level_labels():
    graphs = [Data(x=torch.rand(n, 3), edge_index=undirected([[0, 1]]), y=torch.zeros(n, dtype=torch.long))
              for n in (2, 3, 4)]
    assert autogcl.AutoGCL(3, hidden=8, num_layers=1).embed(graphs).shape == (3, 8)


def test_constructor_checks_every_option():
    with pytest.raises(ConfigError, match="NT-Xent variant"):
        autogcl.AutoGCL(cl_variant="bogus")
    with pytest.raises(ConfigError, match="unknown dropped 'delete'; choose from isolate, remove"):
        autogcl.AutoGCL(dropped="delete")
