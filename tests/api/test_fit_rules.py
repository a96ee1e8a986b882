"""The rules every fit shares (issue 59): a fit that cannot take one training step is refused
with the reason (one fit-plan check); an ``evaluate`` callback that returns no dict is the same
ConfigError in every fit; a second ``fit`` continues training; ``predict``/``score`` before
``fit`` warn as ``embed`` does; one keyword vocabulary for every fit."""

from __future__ import annotations

import logging

import pytest
import torch
from torch_geometric.data import Data

import autogcl
from autogcl.errors import ConfigError, DataError

SMILES = ["CCO", "CCN", "c1ccccc1O", "CC(=O)O", "CCCl", "OCCO", "CC(C)O", "NCCN"]


def small_encoder():
    from autogcl.molecules import MoleculeEncoder

    torch.manual_seed(0)
    return MoleculeEncoder(dim=16, num_layers=2)


def graphs(n: int, labels=None):
    gen = torch.Generator().manual_seed(n)
    out = []
    for i in range(n):
        y = (i % 2) if labels is None else labels[i]
        out.append(Data(x=torch.randn(5, 3, generator=gen), edge_index=torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]]),
                        y=torch.tensor([y])))
    return out


# ------------------------------------------------------------------ a fit with no step
def test_a_finetune_of_one_training_molecule_is_refused_with_the_reason():
    with pytest.raises(DataError, match=r"MoleculeEncoder.finetune: no training step would run .*1 training "
                                        r"molecule in batches of 32.*dropped"):
        small_encoder().finetune(["CCO"], [1.0], epochs=1, split="none", selection="last", device="cpu",
                                 progress=False)


def test_the_fit_plan_check_is_the_one_every_fit_runs(monkeypatch):
    """AutoGCL, GraphCL, SemiSupervised and fine-tuning ask the one check before training (a
    plan with no step is refused by it, whatever the estimator)."""
    import autogcl.api.contrastive as contrastive
    import autogcl.api.semi as semi
    import autogcl.train as train

    def refuse(loaders, epochs, what, unit="graph"):
        raise DataError(f"{what}: refused by the plan check")

    for module in (contrastive, semi, train):
        monkeypatch.setattr(module, "check_fit_plan", refuse)
    data = graphs(6)
    for model in (autogcl.AutoGCL(hidden=8, num_layers=2), autogcl.GraphCL(hidden=8, num_layers=2),
                  autogcl.SemiSupervised(hidden=8, num_layers=2, strategy="supervised")):
        with pytest.raises(DataError, match=f"{type(model).__name__}.fit: refused by the plan check"):
            model.fit(data, epochs=1, device="cpu", progress=False)
    with pytest.raises(DataError, match="finetune: refused by the plan check"):
        small_encoder().finetune(SMILES, [0, 1] * 4, epochs=1, split="none", selection="last", device="cpu",
                                 progress=False)


def test_check_fit_plan_counts_the_steps_a_loader_takes():
    from autogcl.data.batching import GraphLoader
    from autogcl.train import FitPlan, check_fit_plan

    store = graphs(3)
    check_fit_plan(GraphLoader(store, 2, drop_last=True), 1, "fit")  # one batch of two: a step
    with pytest.raises(DataError, match="3 graphs in batches of 4 give no batch|no training step"):
        check_fit_plan(GraphLoader(store, 4, drop_last=True), 1, "fit")
    check_fit_plan(GraphLoader(store, 4, drop_last=True), 0, "fit")  # no epoch: nothing to refuse
    with pytest.raises(DataError, match="there is no molecule to train on"):
        check_fit_plan(FitPlan(0, 8, 0), 2, "pretrain", "molecule")


# ------------------------------------------------------------------ evaluate callbacks
def test_an_evaluate_returning_a_float_is_the_same_config_error_in_finetune_and_autogcl_fit():
    with pytest.raises(ConfigError, match=r"evaluate\(1\) returned a float .*must return a dict"):
        autogcl.AutoGCL(hidden=8, num_layers=2).fit(graphs(4), epochs=1, device="cpu", progress=False,
                                                    evaluate=lambda epoch: 0.5)
    with pytest.raises(ConfigError, match=r"evaluate\(predictor, 1\) returned a float .*must return a dict"):
        small_encoder().finetune(SMILES, [0, 1] * 4, epochs=1, split="none", selection="last", device="cpu",
                                 progress=False, evaluate=lambda pred, epoch: 0.5)


# ------------------------------------------------------------------ one keyword vocabulary
def test_pretrain_molecules_takes_every_keyword_of_the_fit(corpus, tmp_path):
    from autogcl.api.pretrain import pretrain_molecules

    seen = []
    enc = pretrain_molecules(corpus, tmp_path / "ck", progress=False, workers=1, epochs=1, batch_size=16,
                             chunk_size=40, dim=16, num_layers=2, gen_hidden=8,
                             on_epoch=lambda rows, encoder: seen.append(len(rows)))
    assert seen == [1] and enc.meta["epochs"] == 1
    with pytest.raises(ConfigError, match=r"pretrain_molecules: unknown option 'colour'.*progress"):
        pretrain_molecules(corpus, colour="red")


# ------------------------------------------------------------------ a second fit
def two_fits_and_one(make, data, **kw):
    """``(rows of the second of two fits of 2 then 1 epochs, that model, a model fit once for 3 epochs)``,
    both built from the same seed and shuffled by generators of the same seed."""
    torch.manual_seed(0)
    twice = make()
    gen = torch.Generator().manual_seed(1)
    first = twice.fit(data, epochs=2, seed=gen, device="cpu", progress=False, **kw)
    second = twice.fit(data, epochs=1, seed=gen, device="cpu", progress=False, **kw)
    torch.manual_seed(0)
    once = make()
    once.fit(data, epochs=3, seed=torch.Generator().manual_seed(1), device="cpu", progress=False, **kw)
    return first, second, twice, once


@pytest.mark.parametrize("make, kw", [
    (lambda: autogcl.AutoGCL(hidden=8, num_layers=2), {}),
    (lambda: autogcl.GraphCL(hidden=8, num_layers=2, aug="node_drop"), {}),
    (lambda: autogcl.SemiSupervised(hidden=8, num_layers=2, strategy="supervised"), {}),
    (lambda: autogcl.SemiSupervised(hidden=8, num_layers=2, strategy="joint"), {}),
    (lambda: autogcl.SemiSupervised(hidden=8, num_layers=2, strategy="naive"), {"pretrain_epochs": 1}),
], ids=["AutoGCL", "GraphCL", "SemiSupervised-supervised", "SemiSupervised-joint", "SemiSupervised-naive"])
def test_a_second_fit_continues_training_as_one_longer_fit(make, kw):
    """Every estimator: a second fit continues from the current weights with the same optimizers,
    its epochs numbered on (pre-training is not repeated): fits of 2 then 1 epochs give the weights
    of one fit of 3 epochs (to 1e-5)."""
    first, second, twice, once = two_fits_and_one(make, graphs(8), **kw)
    assert [r["epoch"] for r in second] == [3] and {r.get("phase", "train") for r in second} == {"train"}
    assert [r["epoch"] for r in twice.history if r.get("phase", "train") == "train"] == [1, 2, 3]
    a, b = twice.state_dict(), once.state_dict()
    assert a.keys() == b.keys()
    for k in a:
        assert torch.allclose(a[k].float(), b[k].float(), atol=1e-5), k


# ------------------------------------------------------------------ answers before fit
def test_predict_and_score_before_fit_warn_as_embed_does(caplog):
    model = autogcl.SemiSupervised(3, hidden=8, num_layers=2, num_classes=2)
    with caplog.at_level(logging.WARNING, logger="autogcl.api.base"):
        model.predict(graphs(4))
        model.score(graphs(4))
    said = [r.getMessage() for r in caplog.records if "before fit" in r.getMessage()]
    assert said == ["SemiSupervised: predict before fit: the model is untrained, so the predictions (and scores) "
                    "come from its random initial weights (fit it first, or autogcl.load a trained one)"]
    caplog.clear()
    trained = autogcl.SemiSupervised(3, hidden=8, num_layers=2, num_classes=2, strategy="supervised")
    trained.fit(graphs(4), epochs=1, device="cpu", progress=False,
                evaluate=lambda epoch: {"acc": trained.score(graphs(4))})  # inside a fit: no warning
    trained.predict(graphs(4))
    assert not [r for r in caplog.records if "before fit" in r.getMessage()]
