"""The tuned table (``docs/results.md``): configurations that ``autogcl tune`` chose on
validation folds, kept apart from the paper protocol's tables, from the committed summaries
``docs/results/tuned/DATASET-ESTIMATOR/summary.json``."""

from __future__ import annotations

import json
from pathlib import Path

TUNED = "docs/results/tuned"


def _space(space: dict) -> str:
    parts = []
    for k, v in sorted(space.items()):
        if isinstance(v, list) and len(v) == 3 and v[0] in ("loguniform", "uniform", "randint"):
            parts.append(f"`{k}` {v[0]} {v[1]:g} … {v[2]:g}")
        elif isinstance(v, list):
            parts.append(f"`{k}` " + "/".join(str(x) for x in v))
        else:
            parts.append(f"`{k}` {v}")
    return ", ".join(parts)


def tuned_block(root: Path) -> str:
    summaries = sorted((Path(root) / TUNED).glob("*/summary.json"))
    if not summaries:
        return "not run"
    lines = ["| set | estimator | outer folds searched | trials per fold | max epochs | val (test) | "
             "test_max (test) | commit |", "|---|---|---|---|---|---|---|---|"]
    spaces = []
    for path in summaries:
        s = json.loads(path.read_text())
        k, prov = s["search"], s.get("provenance") or {}
        commit = (prov.get("commit") or "not recorded")[:7] + ("+" if prov.get("dirty") else "")
        lines.append(f"| {k['dataset']} | {k['estimator']} | {s['val']['n']} of {k['folds']} | {k['trials']} | "
                     f"{k['max_epochs']} | {100 * s['val']['mean']:.2f} ± {100 * s['val']['std']:.2f} | "
                     f"{100 * s['test_max']['mean']:.2f} ± {100 * s['test_max']['std']:.2f} | {commit} |")
        rate = f", label rate {k['label_rate']}" if k["estimator"] == "semi" else ", SVM on the training folds' embeddings"
        spaces.append(f"- {k['dataset']} ({k['estimator']}{rate}, seed {k['seed']}): "
                      f"{_space(s['space'])}; selection: {s['selection']}.")
    lines += ["", "Test-fold accuracy (%) of each outer fold's chosen configuration, mean ± std over the folds "
              "searched (population std, ddof 0): `val` at the trial's best validation epoch, `test_max` its best "
              "test epoch (the paper's rule, for comparison only; the search never reads it). Search spaces and "
              "the selection rule:", "", *spaces, "",
              f"Summaries: `{TUNED}/` (each folder's `search.json` holds the settings); made by `autogcl tune` "
              "with those settings (`--out docs/results/tuned`)."]
    return "\n".join(lines)
