"""The molecular property benchmark's tables (``docs/molecules.md``), from the committed units of
``benchmarks/molprop.py`` (``docs/results/molprop/units/SET/SPLIT-SEED-METHOD.json``) and the
published anchors (``docs/results/molprop/anchors.json``, each with the paper it comes from)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np

MOLPROP = "docs/results/molprop"
#: the sets in table order, with their metric's name
SETS = {"freesolv": "RMSE (kcal/mol)", "solubility": "RMSE (log mol/L)", "bace": "ROC-AUC", "bbbp": "ROC-AUC",
        "clintox": "ROC-AUC", "sider": "ROC-AUC", "tox21": "ROC-AUC"}
PEERS = (("autogcl", "autogcl (default)"), ("rf_morgan", "Morgan + random forest"), ("chemprop", "chemprop 2.3.1"))
ROUTES = (("autogcl", "default (by task)"), ("autogcl_blend", "blend: GIN + forest"),
          ("autogcl_blend3", "blend: GIN + forest + SVR"), ("autogcl_gnn", "fine-tuned GIN alone"),
          ("autogcl_forest", "forest on Morgan counts + RDKit descriptors alone"),
          ("autogcl_svr", "SVR on RDKit descriptors alone"),
          ("autogcl_scratch", "GIN from random weights alone"))


#: a route read from the default predictor's own units, where each member is scored alone
MEMBER_ROUTES = {"autogcl_gnn": "gnn", "autogcl_forest": "forest", "autogcl_svr": "svr"}


def units(root: Path, split: str = "scaffold") -> dict:
    """(set, method) -> the units of that split, seed order. A member of the default predictor
    with no unit of its own is read from the default's units (its score alone, same fit)."""
    out = defaultdict(list)
    for path in sorted((Path(root) / MOLPROP / "units").glob(f"*/{split}-*.json")):
        u = json.loads(path.read_text())
        out[(u["set"], u["method"])].append(u)
    for (s, m), us in list(out.items()):  # a default that is the blend (a regression's) is the blend route
        blends = [u for u in us if m == "autogcl" and sorted(u.get("members") or []) == ["forest", "gnn"]]
        if blends and (s, "autogcl_blend") not in out:
            out[(s, "autogcl_blend")] = [{**u, "method": "autogcl_blend"} for u in blends]
    for route, member in MEMBER_ROUTES.items():
        for (s, m), us in list(out.items()):
            if m in ("autogcl_blend", "autogcl_blend3", "autogcl") and (s, route) not in out:
                alone = [{**u, "method": route, "test": u["member_scores"][member]["test"],
                          "cpu_s": u["member_seconds"][member]} for u in us
                         if member in (u.get("member_scores") or {})]
                if alone:
                    out[(s, route)] = alone
    for v in out.values():
        v.sort(key=lambda u: u["seed"])
    return out


def _cell(us: list, with_time: bool = True) -> str:
    if not us:
        return "not run"
    m = us[0]["metric"]
    v = np.array([u["test"][m] for u in us], dtype=float)
    text = f"{v.mean():.3f} ± {v.std():.3f} ({len(us)})"
    if with_time:
        text += f", {np.mean([u['cpu_s'] for u in us]):.0f} s"
    return text


def _commits(found: dict) -> str:
    commits = sorted({u["provenance"]["commit"][:7] + ("+" if u["provenance"].get("dirty") else "")
                      for us in found.values() for u in us})
    return ", ".join(commits) if commits else "none"


def _anchors(root: Path) -> dict:
    path = Path(root) / MOLPROP / "anchors.json"
    if not path.is_file():
        return {}
    out = defaultdict(list)
    for a in json.loads(path.read_text())["anchors"]:
        out[a["set"]].append(f"{a['model']} {a['value']:.3f}")
    return out


def molprop_block(root: Path) -> str:
    """Each set's test metric on the scaffold splits: autogcl's default predictor beside the peers."""
    found = units(root)
    anchors = _anchors(root)
    lines = ["| set | metric | " + " | ".join(name for _, name in PEERS) + " | published (other splits) |",
             "|---|---|" + "---|" * len(PEERS) + "---|"]
    for s, metric in SETS.items():
        cells = [_cell(found.get((s, m), [])) for m, _ in PEERS]
        lines.append(f"| {s} | {metric} | " + " | ".join(cells) + f" | {'; '.join(anchors.get(s, [])) or '-'} |")
    lines += ["", "Each cell: the test metric's mean ± std over seeds (population std, ddof 0; the seeds' count in "
              "brackets), then the mean CPU seconds of one fit on one thread (features included). The same "
              "balanced scaffold split per seed for every method (80/10/10; `docs/results/molprop/splits/`); "
              "lower RMSE and higher ROC-AUC are better. Published figures: `docs/results/molprop/anchors.json` "
              "names each one's paper and split.", "",
              f"Units: `{MOLPROP}/units/` (code commit(s): {_commits(found)}); made by "
              "`python benchmarks/molprop.py --methods autogcl,rf_morgan,chemprop`."]
    return "\n".join(lines)


def molprop_routes_block(root: Path) -> str:
    """Each member of the default predictor on its own, on the same splits (what each adds)."""
    found = units(root)
    lines = ["| set | " + " | ".join(name for _, name in ROUTES) + " |", "|---|" + "---|" * len(ROUTES)]
    for s in SETS:
        lines.append(f"| {s} | " + " | ".join(_cell(found.get((s, m), [])) for m, _ in ROUTES) + " |")
    lines += ["", "The test metric as above (mean ± std over seeds, ddof 0, the count in brackets; CPU seconds per "
              "fit). The two members are scored alone on the blend's own fits (its units' `member_scores`, CPU "
              "seconds of that member's training); the GIN from random weights is a fit of its own "
              "(`python benchmarks/molprop.py --methods autogcl_scratch`)."]
    return "\n".join(lines)


def forest_weights_block(root: Path) -> str:
    """The classification forest with and without class weights (``scripts/studies/
    forest_class_weight.py``): validation and test ROC-AUC on the benchmark's splits."""
    path = Path(root) / MOLPROP / "forest_class_weight.json"
    if not path.is_file():
        return "not run"
    rec = json.loads(path.read_text())
    rows = defaultdict(list)
    for r in rec["rows"]:
        rows[(r["set"], r["variant"])].append(r)
    variants = list(dict.fromkeys(r["variant"] for r in rec["rows"]))
    sets = list(dict.fromkeys(r["set"] for r in rec["rows"]))
    lines = ["| set | " + " | ".join(f"{v}: validation | {v}: test" for v in variants) + " |",
             "|---|" + "---|---|" * len(variants)]
    for s in sets:
        cells = []
        for v in variants:
            for part in ("val", "test"):
                x = np.array([r[part] for r in rows[(s, v)]], dtype=float)
                cells.append(f"{x.mean():.3f} ± {x.std():.3f} ({len(x)})")
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    lines += ["", "ROC-AUC, mean ± std over the scaffold splits (population std, ddof 0; the count in brackets), of "
              "the forest member alone on the benchmark's features, one forest per task seeded as "
              f"`PropertyPredictor` seeds it. Commit {rec['commit'][:7]}; made by `{rec['command']}`."]
    return "\n".join(lines)
