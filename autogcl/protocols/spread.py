"""The ± of every protocol's summaries, decided here once: the std's ``ddof`` per protocol,
the std itself (:func:`spread`) and its words for the printed tables and the docs (``SPREAD``).
Free of torch and numpy at import, so that the parsers and the docs tooling can read it."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["DDOF", "SPREAD", "heading", "spread"]

#: numpy's ddof of each protocol's std: population over seeds (unsupervised, transfer), sample
#: over the (seed, fold) results (semi, as the released code)
DDOF = {"unsupervised": 0, "semi": 1, "transfer": 0}
#: what each protocol's std runs over
_OVER = {"unsupervised": "seeds", "semi": "the (seed, fold) results", "transfer": "seeds"}


def _kind(protocol: str) -> str:
    return "sample" if DDOF[protocol] else "population"


#: what each protocol's ± is, in words (said under every printed table and in the docs)
SPREAD = {p: f"std over {_OVER[p]} ({_kind(p)}, ddof {DDOF[p]})" for p in DDOF}


def heading(protocol: str) -> str:
    """The ± part of a report section's heading."""
    return f"mean ± std over {_OVER[protocol]}, {_kind(protocol)} std (ddof {DDOF[protocol]})"


def spread(values: Sequence[float], protocol: str) -> float:
    """The std of ``values`` under ``protocol``'s convention (:data:`DDOF`); 0 where there are
    too few values for it (one value under a sample std)."""
    import numpy as np  # here: the parsers read this module's words without numpy

    v = np.asarray(values, dtype=float)
    return float(v.std(ddof=DDOF[protocol])) if v.size > DDOF[protocol] else 0.0
