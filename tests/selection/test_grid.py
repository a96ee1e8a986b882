"""A sweep (``--grid``) chooses its configuration by the mean validation score of the ``val``
selection alone; the test figures of both selections are shown and never decide."""

from __future__ import annotations

import math

import pytest

from autogcl.errors import ConfigError
from autogcl.protocols.grid import grid_report, validation_score


def unit(score, val_test, test_max, shape="semi"):
    """A unit result of one protocol's shape, whose val selection scored ``score``."""
    key = "auc" if shape == "transfer" else "acc"
    return {"selections": {"val": {"epoch": 2, key: val_test, "score": score, "criterion": "validation"},
                           "test_max": {"epoch": 3, key: test_max, "criterion": "test"}}}


def entry(name, scores, val_tests, test_maxes, shape="semi"):
    results = [unit(s, v, t, shape) for s, v, t in zip(scores, val_tests, test_maxes)]
    mean = lambda xs: 100 * sum(xs) / len(xs)  # noqa: E731
    summary = {"val": {"mean": mean(val_tests), "std": 0.0}, "test_max": {"mean": mean(test_maxes), "std": 0.0}}
    return name, summary, results


@pytest.mark.parametrize("shape", ["semi", "unsupervised", "transfer"])
def test_the_best_mean_validation_score_is_chosen_whatever_the_test_figures(shape):
    # "a" has the best validation score; "b" the best test figure under both selections; "c"
    # the best single validation score of any unit but a worse mean
    entries = [entry("a", [0.80, 0.82], [0.60, 0.62], [0.70, 0.71], shape),
               entry("b", [0.70, 0.71], [0.90, 0.91], [0.99, 0.99], shape),
               entry("c", [0.95, 0.55], [0.80, 0.80], [0.90, 0.90], shape)]
    text, record = grid_report("toy", entries)
    assert record["chosen"] == "a" and record["criterion"] == "mean validation score of the val selection"
    assert record["title"] == "toy" and text.startswith("### toy\n\nChosen by the mean validation score")
    assert "| configuration | validation score | test (val selection) | test_max | units | |" in text
    assert [r["validation_score"] for r in record["rows"]] == pytest.approx([81.0, 70.5, 75.0])
    assert [line.endswith("**chosen** |") for line in text.splitlines() if line.startswith("| ")][1:] == [
        True, False, False]


def test_ties_go_to_the_first_configuration_and_missing_scores_never_win():
    entries = [entry("nan", [math.nan], [0.99], [0.99]), entry("first", [0.8], [0.5], [0.6]),
               entry("second", [0.8], [0.9], [0.9])]
    assert grid_report("tie", entries)[1]["chosen"] == "first"
    mixed = [entry("part", [math.nan, 0.6], [0.9, 0.9], [0.9, 0.9]), entry("full", [0.5, 0.5], [0.5, 0.5], [0.5, 0.5])]
    _, record = grid_report("mixed", mixed)  # a NaN unit is left out of its configuration's mean
    assert record["rows"][0]["validation_score"] == pytest.approx(60.0) and record["chosen"] == "part"
    below_zero = [entry("x", [-0.5], [0.9], [0.9]), entry("y", [-0.2], [0.1], [0.1])]
    assert grid_report("neg", below_zero)[1]["chosen"] == "y"


def test_validation_score_is_the_val_selections_score_not_its_test_figure():
    assert validation_score(unit(0.7, 0.2, 0.9)) == 0.7
    assert math.isnan(validation_score({"selections": {"test_max": {"acc": 0.9}}}))
    with pytest.raises(ConfigError, match="no unit recorded a validation score"):
        grid_report("released", [("a", {"val": {}, "test_max": {}}, [{"selections": {"test_max": {"acc": 0.9}}}])])


class Sweep:
    def __init__(self, results):
        self.units = [type("Unit", (), {"result": lambda self, r=r: r})() for r in results]


def test_write_reports_chooses_within_each_table_and_writes_what_it_chose(tmp_path):
    from autogcl.protocols.grid import write_reports
    from autogcl.atomic import read_json

    a, b = entry("lam=0.5", [0.8], [0.6], [0.7]), entry("lam=1", [0.7], [0.9], [0.99])
    c, d = entry("lam=0.5", [0.5], [0.9], [0.9]), entry("lam=1", [0.6], [0.5], [0.5])
    entries = [("MUTAG", a[0], Sweep(a[2]), a[1]), ("PROTEINS", c[0], Sweep(c[2]), c[1]),
               ("MUTAG", b[0], Sweep(b[2]), b[1]), ("PROTEINS", d[0], Sweep(d[2]), d[1])]
    text = write_reports(tmp_path, entries)
    mutag, proteins = read_json(tmp_path / "grid" / "MUTAG.json"), read_json(tmp_path / "grid" / "PROTEINS.json")
    assert mutag["chosen"] == "lam=0.5" and proteins["chosen"] == "lam=1"
    assert [r["point"] for r in mutag["rows"]] == ["lam=0.5", "lam=1"] and [r["units"] for r in proteins["rows"]] == [1, 1]
    assert (tmp_path / "grid" / "MUTAG.md").read_text() == grid_report("MUTAG", [a, b])[0] + "\n"
    assert text == grid_report("MUTAG", [a, b])[0] + "\n\n" + grid_report("PROTEINS", [c, d])[0]


def test_the_report_is_the_table_of_every_configuration_with_the_chosen_one_marked():
    text, _ = grid_report("toy", [entry("a", [0.8], [0.6], [0.7]), entry("b", [0.7], [0.9], [0.99])])
    assert text.splitlines() == [
        "### toy", "",
        "Chosen by the mean validation score of the `val` selection only; `test_max` is shown, never used.", "",
        "| configuration | validation score | test (val selection) | test_max | units | |",
        "|---|---:|---:|---:|---:|---|",
        "| a | 80.00 | 60.00 ± 0.00 | 70.00 ± 0.00 | 1 | **chosen** |",
        "| b | 70.00 | 90.00 ± 0.00 | 99.00 ± 0.00 | 1 |  |"]
