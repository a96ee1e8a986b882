"""``autogcl tune`` chooses each outer fold's configuration by the trials' best validation
accuracy (``val_best``) alone: the earliest trial on ties, and a trial without a finite score
never wins; the test fold's figures (``val``, ``test_max``) are reported and never decide."""

from __future__ import annotations

import math

from autogcl.protocols.tune import METRIC, choose


def trial(order, val_best, val=0.5, test_max=0.5):
    return {"order": order, METRIC: val_best, "val": val, "test_max": test_max}


def test_the_best_validation_score_is_chosen_whatever_the_test_figures():
    trials = [trial(0, 0.70, val=0.99, test_max=0.99), trial(1, 0.80, val=0.10, test_max=0.20),
              trial(2, 0.75, val=0.98, test_max=1.0)]
    assert choose(trials) is trials[1]
    flipped = [trial(t["order"], t[METRIC], val=1 - t["val"], test_max=1 - t["test_max"]) for t in trials]
    assert choose(flipped)["order"] == 1  # the test figures reversed: the same choice


def test_ties_go_to_the_earliest_trial_by_order_not_by_list_position():
    late, early = trial(5, 0.80), trial(2, 0.80)
    assert choose([late, early]) is early and choose([early, late]) is early
    assert choose([trial(0, 0.79), late]) is late  # a tie only when the scores are equal


def test_a_trial_without_a_finite_validation_score_never_wins():
    good = trial(3, 0.10)
    for bad in (None, math.nan, math.inf):
        assert choose([trial(0, bad, val=1.0, test_max=1.0), good]) is good
        assert choose([trial(0, bad)]) is None
    assert choose([]) is None
