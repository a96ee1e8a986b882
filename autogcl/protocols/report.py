"""Result tables: our mean ± std under each selection beside the published figures."""

from __future__ import annotations

from ..choices import AUG_RANDOM4
import logging
from pathlib import Path

from ..atomic import atomic_write_json, read_json
from ..errors import DataError
from . import published
from .spread import heading

log = logging.getLogger(__name__)


def _ms(d: dict, digits: int = 2) -> str:
    """``mean ± std``; a selection that is not defined, or a score that could not be computed
    (NaN), says so instead of a number."""
    if d.get("undefined"):
        return f"- ({d['undefined']})"
    if d["mean"] != d["mean"]:
        return "not scored (NaN)"
    return f"{d['mean']:.{digits}f} ± {d['std']:.{digits}f}"


def rebuild_summary(folder: Path) -> dict:
    """A sweep's ``summary.json`` made again from the ``result.json`` and ``config.json`` of
    its units below ``folder`` (written back atomically); a :class:`DataError` when there are none."""
    import importlib

    units = sorted(p.parent for p in Path(folder).rglob("result.json") if not p.parent.name.startswith("."))
    if not units:
        raise DataError(f"{folder}: no finished unit (result.json) to make its summary from")
    results = [read_json(u / "result.json") for u in units]
    protocol = results[0].get("protocol")
    kind = {"unsupervised": ("unsupervised", "UnsupervisedConfig"), "semi": ("semi", "SemiConfig"),
            "transfer": ("transfer", "FinetuneConfig")}.get(protocol)
    if kind is None:
        raise DataError(f"{units[0] / 'result.json'}: unknown protocol {protocol!r}")
    module = importlib.import_module(f".{kind[0]}", __package__)
    config_file = units[0] / "config.json"
    stored = read_json(config_file)
    try:
        cfg = getattr(module, kind[1]).from_dict(stored)
        summary = module.make_summary(cfg, results, Path(folder))
    except (KeyError, TypeError, ValueError) as exc:  # a ConfigError, or results without their fields
        raise DataError(f"{folder}: cannot make its summary again from its units' results and "
                        f"{config_file.name} ({type(exc).__name__}: {exc})") from exc
    atomic_write_json(Path(folder) / "summary.json", summary)
    return summary


#: what the tables read from a summary of each protocol
REQUIRED = {"unsupervised": ("dataset", "method", "tag", "n_seeds", "config", "val", "test_max"),
            "semi": ("dataset", "row", "n_seeds", "n_folds", "val", "test_max"),
            "transfer": ("dataset", "tag", "pretrained", "n_seeds", "config", "val", "test_max")}
#: a regression fine-tuning's summary names its second selection for what it is
REGRESSION_REQUIRED = ("dataset", "tag", "pretrained", "n_seeds", "config", "val", "test_min")


def check_summary(path: Path, s) -> dict:
    """``s`` when it is a summary the tables can show; else a :class:`DataError` naming ``path``."""
    if not isinstance(s, dict) or s.get("protocol") not in REQUIRED:
        raise DataError(f"{path}: not a summary of an autogcl sweep (no known protocol)")
    required = REGRESSION_REQUIRED if s.get("task") == "regression" else REQUIRED[s["protocol"]]
    missing = [k for k in required if k not in s]
    missing += [k for k in ("val", "test_max", "test_min") if k in s and not (
        isinstance(s[k], dict) and all(isinstance(s[k].get(m), (int, float)) for m in ("mean", "std")))]
    if "config" in s and not isinstance(s["config"], dict):
        missing.append("config")
    if missing:
        raise DataError(f"{path}: incomplete {s['protocol']} summary (missing or malformed: {', '.join(missing)})")
    return s


def collect(run_dirs: list[Path]) -> list[dict]:
    """Every ``summary.json`` below the given folders (each once); a damaged one is rebuilt from
    its units' results, with a warning. A folder that does not exist, or holds no summary, is a
    :class:`DataError` naming it."""
    missing = [str(d) for d in run_dirs if not d.exists()]
    if missing:
        raise DataError(f"no such run folder: {', '.join(missing)}")
    seen, out = set(), []
    for d in run_dirs:
        files = [d] if d.is_file() else sorted(d.rglob("summary.json"))
        if not files:
            raise DataError(f"{d} holds no summary.json (no finished sweep below it)")
        for f in files:
            key = f.resolve()
            if key not in seen:
                seen.add(key)
                try:
                    out.append(check_summary(f, read_json(f)))
                    if f.name == "summary.json":
                        warn_damaged_units(f.parent)
                except DataError as exc:
                    if f.name != "summary.json":  # a file named on the command line: not ours to rewrite
                        raise DataError(f"{exc}; give a run folder or its summary.json") from exc
                    log.warning("%s; rebuilding it from the results of its units", exc)
                    out.append(rebuild_summary(f.parent))
    return out


def warn_damaged_units(folder: Path) -> list[Path]:
    """A warning for each finished unit below a sweep's ``folder`` whose ``result.json`` cannot
    be read back (cut, overwritten): the summary was made before, but the unit's record is lost
    and a ``--resume`` would stop at it. The damaged units."""
    damaged = []
    for result in sorted(Path(folder).rglob("result.json")):
        if any(p.startswith(".") for p in result.relative_to(folder).parts):
            continue  # work in progress
        try:
            read_json(result)
        except DataError as exc:
            damaged.append(result.parent)
            log.warning("%s: its result.json is damaged (%s); the table shows the sweep's summary.json, made before. "
                        "Delete %s and rerun the sweep with --resume to run that unit again", result.parent, exc,
                        result.parent)
    return damaged


def changed_options(cfg: dict) -> list[str]:
    """``key=value`` for each option of an unsupervised run's stored config that is set away from
    its default (for the run's dataset and method), the augmentation and the selection
    aside (the first is in the tag, the second does not change the run); [] when the config
    cannot be read as one."""
    from .configs import UnsupervisedConfig

    try:
        default = UnsupervisedConfig(dataset=cfg["dataset"], method=cfg["method"]).to_dict()
        # the evaluation epochs follow --epochs by default
        default["eval_epochs"] = UnsupervisedConfig(dataset=cfg["dataset"], method=cfg["method"],
                                                    epochs=cfg.get("epochs", 30)).eval_epochs
    except (KeyError, TypeError, ValueError):  # a ConfigError is a ValueError
        return []
    skip = {"dataset", "method", "aug", "select"}
    return [f"{k}={cfg[k]}" for k in default if k not in skip and k in cfg and cfg[k] != default[k]]


def unsupervised_table(summaries: list[dict]) -> str:
    """A row per sweep; the method column names the options a run set away from their default
    (e.g. the released loss form), so that two forms of one method never look alike."""
    lines = [
        "| dataset | method | seeds | val (ours) | test_max (ours) | published (test_max) |",
        "|---|---|---|---|---|---|",
    ]
    for s in summaries:
        cfg = s["config"]
        pub = published.UNSUPERVISED.get((s["method"], s["dataset"]))
        if s["method"] == "graphcl" and cfg.get("aug") != AUG_RANDOM4:
            pub = None
        name = s["tag"][len(s["dataset"]) + 1:]
        changed = changed_options(cfg)
        if changed:
            name += f" ({', '.join(changed)})"
        lines.append(f"| {s['dataset']} | {name} | {s['n_seeds']} | {_ms(s['val'])} | "
                     f"{_ms(s['test_max'])} | {published.fmt(pub)} |")
    return "\n".join(lines)


def semi_table(summaries: list[dict]) -> str:
    """Rows x datasets; each cell holds val and test_max (seeds x folds) and the published figure."""
    datasets = sorted({s["dataset"] for s in summaries})
    from .configs import ROWS  # the paper's row order

    def row(s):  # the released split's results are a row of their own
        return s["row"] + (" (released split)" if s.get("config", {}).get("split") == "released" else "")

    def order(r):
        base = r.split(" ")[0]
        return (list(ROWS).index(base) if base in ROWS else len(ROWS), r)

    rows = sorted({row(s) for s in summaries}, key=order)
    by: dict = {}
    for s in summaries:
        key = (row(s), s["dataset"])
        if key in by:  # e.g. runs of one row with another --lr: one cell cannot hold both
            a, b = by[key].get("config", {}), s.get("config", {})
            differ = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            log.warning("two %s summaries on %s (options differing: %s): the table shows the later one; report "
                        "their folders separately", key[0], key[1], ", ".join(differ) or "none")
        by[key] = s
    head = "| row | " + " | ".join(f"{d} val | {d} test_max | {d} published" for d in datasets) + " |"
    lines = [head, "|---|" + "---|" * (3 * len(datasets))]
    for r in rows:
        cells = []
        for d in datasets:
            s = by.get((r, d))
            if s is None:
                cells += ["-", "-", published.fmt(published.SEMI.get((r.split(" ")[0], d)))]
                continue
            n = f" ({s['n_folds']} folds)" if s["n_folds"] != 10 * s["n_seeds"] else ""
            cells += [_ms(s["val"]) + n, _ms(s["test_max"]), published.fmt(published.SEMI.get((s["row"], d)))]
        lines.append(f"| {r} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def transfer_table(summaries: list[dict]) -> str:
    """Fine-tuning ROC-AUC: a row per (dataset, pre-training), in MoleculeNet order."""
    from ..data.moleculenet import MOLECULENET

    order = list(MOLECULENET)

    def key(s):
        d = s["dataset"]
        return (order.index(d) if d in order else len(order), d, s["pretrained"], s["tag"])

    regression = [s for s in summaries if s.get("task") == "regression"]
    summaries = [s for s in summaries if s.get("task") != "regression"]
    lines = ["| dataset | pre-training | seeds | epochs | val (ours) | test_max (ours) | published (test_max) |",
             "|---|---|---|---|---|---|---|"] if summaries else []
    for s in sorted(summaries, key=key):
        pub_key = s.get("pretrain_method") if s["pretrained"] else "no_pretrain"
        pub = published.fmt(published.TRANSFER.get((pub_key, s["dataset"])))
        lines.append(f"| {s['dataset']} | {s['tag']} | {s['n_seeds']} | {s['config']['epochs']} | "
                     f"{_ms(s['val'])} | {_ms(s['test_max'])} | {pub} |")
    if regression:  # numeric targets: test RMSE (and R²) in the targets' units, lower is better
        lines += ([""] if lines else []) + [
            "| dataset (regression) | pre-training | seeds | epochs | val: test RMSE | val: test R² | test_min RMSE |",
            "|---|---|---|---|---|---|---|"]
        for s in sorted(regression, key=key):
            lines.append(f"| {s['dataset']} | {s['tag']} | {s['n_seeds']} | {s['config']['epochs']} | "
                         f"{_ms(s['val'], 4)} | {_ms(s['val']['r2'], 3)} | {_ms(s['test_min'], 4)} |")
    return "\n".join(lines)


def table(protocol: str, summaries: list[dict]) -> str:
    """The table of ``protocol``'s summaries."""
    return {"unsupervised": unsupervised_table, "semi": semi_table, "transfer": transfer_table}[protocol](summaries)


def render(summaries: list[dict]) -> str:
    parts = []
    uns = [s for s in summaries if s.get("protocol") == "unsupervised"]
    semi = [s for s in summaries if s.get("protocol") == "semi"]
    transfer = [s for s in summaries if s.get("protocol") == "transfer"]
    if uns:
        parts.append(f"## Unsupervised (SVM accuracy %, {heading('unsupervised')})\n\n" + unsupervised_table(uns))
    if semi:
        parts.append(f"## Semi-supervised (accuracy %, {heading('semi')})\n\n" + semi_table(semi))
    if transfer:
        scores = ("ROC-AUC %; regression: RMSE and R² in the targets' units" if any(s.get("task") == "regression"
                                                                                   for s in transfer) else "ROC-AUC %")
        parts.append(f"## Transfer (fine-tuning {scores}, {heading('transfer')})\n\n"
                     + transfer_table(transfer))
    if not parts:
        return "no finished runs (summary.json) found"
    parts.append("val: selection on data that is not the test fold (honest); "
                 "test_max: best test score over epochs (the published protocol).")
    return "\n\n".join(parts)
