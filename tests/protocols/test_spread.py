"""The ± convention is decided once (autogcl/protocols/spread.py): every summary's std and every
table's words come from it, and each protocol keeps the ddof its committed numbers were made with."""

import numpy as np
import pytest

from autogcl.protocols import semi, transfer, unsupervised
from autogcl.protocols.spread import DDOF, SPREAD, spread

VALUES = [70.0, 72.5, 75.0]


def test_each_protocol_keeps_its_ddof():
    assert DDOF == {"unsupervised": 0, "semi": 1, "transfer": 0}
    assert spread(VALUES, "unsupervised") == pytest.approx(np.std(VALUES, ddof=0), abs=1e-12)
    assert spread(VALUES, "semi") == pytest.approx(np.std(VALUES, ddof=1), abs=1e-12)
    assert spread([71.0], "semi") == 0.0  # one value: no sample std
    assert SPREAD["semi"] == "std over the (seed, fold) results (sample, ddof 1)"
    assert SPREAD["unsupervised"] == SPREAD["transfer"] == "std over seeds (population, ddof 0)"


def _sel(key, v):
    return {"val": {key: v / 100}, "test_max": {key: v / 100}}


@pytest.mark.parametrize("protocol,module,result", [
    ("unsupervised", unsupervised, lambda i, v: {"seed": i, "selections": _sel("acc", v), "train_time_s": 1.0,
                                                 "eval_time_s": 1.0}),
    ("semi", semi, lambda i, v: {"seed": 0, "fold": i, "selections": _sel("acc", v), "time_s": 1.0}),
    ("transfer", transfer, lambda i, v: {"seed": i, "selections": _sel("auc", v), "train_time_s": 1.0}),
])
def test_every_summary_reads_the_one_convention(protocol, module, result):
    summary = module.summarize([result(i, v) for i, v in enumerate(VALUES)])
    for s in ("val", "test_max"):
        assert summary[s]["std"] == pytest.approx(spread(VALUES, protocol), abs=1e-9)
