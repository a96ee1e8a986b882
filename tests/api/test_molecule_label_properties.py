"""Property-based tests of molecule labels of any kind: binary, float, integer, missing (NaN),
huge or tiny. The task is inferred as documented, standardisation round-trips, the regression
scores obey their identities, and fine-tuning gives finite values in the labels' own units
or a clear AutoGCL error."""

import math
import os

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
pytest.importorskip("rdkit", reason="molecules need RDKit (pip install rdkit)")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from autogcl.data.molecules import label_task  # noqa: E402
from autogcl.errors import AutoGCLError  # noqa: E402
from autogcl.eval.metrics import regression_scores  # noqa: E402
from autogcl.molecules import MoleculeEncoder, _scaling  # noqa: E402

PROPS = settings(max_examples=int(os.environ.get("AUTOGCL_PROPERTY_EXAMPLES", "20")), deadline=None,
                 suppress_health_check=[HealthCheck.too_slow])
SMILES = ["CCO", "c1ccccc1O", "CC(=O)Nc1ccccc1", "CCN(CC)CC", "OCC(O)CO", "C1CCCCC1"]

finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, width=32)
label = st.one_of(st.sampled_from([0.0, 1.0, math.nan]), finite, st.integers(-3, 3).map(float))


@st.composite
def matrices(draw, rows=st.integers(2, 6), tasks=st.integers(1, 3)):
    n, t = draw(rows), draw(tasks)
    return np.array(draw(st.lists(label, min_size=n * t, max_size=n * t)), dtype=np.float64).reshape(n, t)


@PROPS
@given(matrices())
def test_the_task_is_classification_exactly_when_every_label_is_0_or_1(y):
    labeled = y[~np.isnan(y)]
    binary = bool(np.isin(labeled, (0.0, 1.0)).all())
    assert label_task(y) == ("classification" if binary else "regression")
    assert label_task(y, "regression") == "regression"  # numbers are always a valid regression target
    if not binary:
        with pytest.raises(AutoGCLError, match="not 0, 1 or missing"):
            label_task(y, "classification")


@PROPS
@given(matrices())
def test_standardisation_round_trips_and_centres_the_targets(y):
    s = _scaling(y)
    mean, std = np.array(s["mean"]), np.array(s["std"])
    assert np.isfinite(mean).all() and (std > 0).all()
    z = (y - mean) / std
    np.testing.assert_allclose(z * std + mean, y, rtol=1e-9, atol=1e-9 * (1 + np.nanmax(np.abs(y), initial=0)))
    for t in range(y.shape[1]):
        col = z[~np.isnan(z[:, t]), t]
        if col.size and np.ptp(y[~np.isnan(y[:, t]), t]) > 0:
            assert abs(col.mean()) < 1e-6 and col.std() == pytest.approx(1.0, rel=1e-6)


@PROPS
@given(matrices(), st.floats(-10, 10, allow_nan=False))
def test_regression_scores_obey_their_identities(y, shift):
    perfect, n = regression_scores(y, np.nan_to_num(y))
    scored = [t for t in range(y.shape[1]) if (~np.isnan(y[:, t])).sum() >= 1]  # RMSE and MAE: one label is enough
    assert n == len(scored)
    if not n:
        assert math.isnan(perfect["rmse"])
        return
    assert perfect["rmse"] == 0 and perfect["mae"] == 0
    moved, _ = regression_scores(y, np.nan_to_num(y) + shift)  # a constant error: RMSE = MAE = |shift|
    assert moved["rmse"] == pytest.approx(abs(shift), abs=1e-9) and moved["mae"] == pytest.approx(abs(shift), abs=1e-9)
    assert moved["mae"] <= moved["rmse"] + 1e-12


@settings(max_examples=int(os.environ.get("AUTOGCL_PROPERTY_EXAMPLES", "20")) // 4 + 1, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(label, min_size=len(SMILES), max_size=len(SMILES)))
def test_finetune_on_any_labels_predicts_finite_values_in_their_units_or_refuses_clearly(values):
    encoder = MoleculeEncoder(dim=4, num_layers=1)
    try:
        pred = encoder.finetune(SMILES, values, epochs=1, batch_size=3, seed=0, progress=False)
    except AutoGCLError as exc:
        assert "every label is missing" in str(exc), exc
        hypothesis.event("refused: no label")
        return
    out, kept = pred.predict(SMILES)
    assert np.isfinite(out).all() and kept.tolist() == list(range(len(SMILES)))
    y = np.array(values)
    if pred.task == "classification":
        assert ((out >= 0) & (out <= 1)).all()
    else:  # standardised outputs of a barely trained GIN, mapped back: near the labels' spread
        labeled = y[~np.isnan(y)]
        spread = max(float(np.ptp(labeled)), 1e-12)
        assert np.all(np.abs(out - labeled.mean()) <= 50 * max(float(labeled.std()), 1.0) + 50 * spread)
    hypothesis.event(f"trained: {pred.task}")


def test_binary_columns_regressed_with_numeric_ones_are_named(caplog):
    """Inferred regression over columns of which some hold only 0 and 1: the log names those
    columns (they are regressed, not classified); all numeric or all binary: no word."""
    import logging

    y = np.array([[0.5, 1.0, 0.0], [2.0, 0.0, math.nan], [3.5, 1.0, 1.0]])
    for matrix, said in ((y, ["cls", "flag"]), (y[:, :1], None), (y[:, 1:], None)):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="autogcl"):
            task = label_task(matrix, names=["logp", "cls", "flag"][:matrix.shape[1]] if said else None)
        assert task == ("classification" if matrix.shape[1] == 2 else "regression")
        assert (f"column(s) {said} hold only 0 and 1 but are regressed" in caplog.text) == bool(said), caplog.text
