"""SVMEvaluator and LinearProbe on embeddings of a known structure."""

import numpy as np
import pytest
import torch

import autogcl
from autogcl.errors import ConfigError, DataError


def blobs(n=60, d=5, sep=3.0, scale=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 2
    x = torch.randn(n, d, generator=g) + sep * y.view(-1, 1).float()
    return x * scale, y


def test_svm_evaluator_wraps_the_protocol_and_selects_by_val():
    x, y = blobs()
    res = autogcl.SVMEvaluator(folds=5)(x, y)
    direct = autogcl.svm_protocol({0: x}, y, folds=5)
    assert res["acc"] == direct["selections"]["val"]["acc"] and res["select"] == "val" and res["acc"] > 0.9
    noisy = {1: blobs(sep=0.0, seed=1)[0], 2: x}
    per_epoch = autogcl.SVMEvaluator(folds=5, select="test_max")(noisy, y)
    assert per_epoch["epoch"] == 2 and set(per_epoch["selections"]) == {"val", "test_max"}
    with pytest.raises(ConfigError, match="unknown selection"):
        autogcl.SVMEvaluator(select="best")


def test_linear_probe_on_raw_sums_needs_standardisation():
    x, y = blobs(scale=400.0)  # the scale of AutoGCL's summed embeddings
    x = x + 5000.0
    probe = autogcl.LinearProbe(folds=5, epochs=200, device="cpu")
    res = probe(x, y)
    assert res["select"] == "val" and res["acc"] > 0.9 and set(res["selections"]) == {"val", "test_max"}
    assert res["selections"]["test_max"]["acc"] >= res["selections"]["val"]["acc"]
    assert len(res["selections"]["val"]["epochs"]) == 5
    raw = autogcl.LinearProbe(folds=5, epochs=200, standardize=False, device="cpu")(x, y)
    assert raw["acc"] < res["acc"]
    assert autogcl.LinearProbe(folds=5, epochs=50, device="cpu")(x, y) == autogcl.LinearProbe(
        folds=5, epochs=50, device="cpu")(x, y)  # a seed fixes it


def test_evaluators_leave_unlabeled_graphs_out_and_check_inputs():
    x, y = blobs()
    y = y.clone()
    y[::7] = -1
    res = autogcl.LinearProbe(folds=3, epochs=20, device="cpu")(x, y)
    assert len(res["folds"]) == 3 and res["unlabeled_left_out"] == 9
    assert autogcl.SVMEvaluator(folds=3)(x, y)["unlabeled_left_out"] == 9
    with pytest.raises(DataError, match="60 labels|labels"):
        autogcl.LinearProbe(folds=3)(x, y[:-1])
    bad = x.clone()
    bad[3, 0] = float("nan")
    with pytest.raises(DataError, match="NaN or inf"):
        autogcl.SVMEvaluator(folds=3)(bad, y)
    with pytest.raises(DataError, match="at least two classes"):
        autogcl.LinearProbe(folds=3)(x, np.zeros(60, dtype=int))
    with pytest.raises(ConfigError, match="LinearProbe"):
        autogcl.LinearProbe(val_share=1.5)


def test_estimator_evaluate_uses_its_labels(data_root):
    from autogcl.data import load_tu

    ds = load_tu("MUTAG", data_root)
    torch.manual_seed(0)
    model = autogcl.GraphCL(hidden=8, num_layers=2)
    res = model.evaluate(ds, evaluator=autogcl.LinearProbe(folds=3, epochs=30, device="cpu"))
    assert 0.5 < res["acc"] <= 1.0
    assert model.evaluate(ds, evaluator=autogcl.SVMEvaluator(folds=3))["acc"] > 0.5
