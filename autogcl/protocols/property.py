"""``autogcl property``: :class:`autogcl.PropertyPredictor` from the command line (compose
only): ``fit`` reads a SMILES CSV or an SDF file and saves the predictor; ``predict`` writes
one row per molecule of another file with each task's value and the members' spread."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from .. import atomic
from ..api.property import PropertyPredictor
from ..data.molecules import is_sdf, read_labeled_csv
from .configs import PropertyConfig

log = logging.getLogger(__name__)


def read(path, smiles_col: str, label_cols, label_map=None) -> tuple[list[str], list[int], np.ndarray, list[str]]:
    """SMILES, line (or SDF record) numbers, labels and task names of a labeled file."""
    return read_labeled_csv(Path(path), "" if is_sdf(path) else smiles_col, label_cols, label_map=label_map)


def fit(cfg: PropertyConfig, device="cpu", progress: bool | None = None) -> tuple[PropertyPredictor, dict]:
    """Fit the predictor a config describes, save it to ``cfg.out``; the predictor and its
    validation scores (empty without ``--validation``)."""
    smiles, _, y, tasks = read(cfg.data, cfg.smiles_col, cfg.label_cols, cfg.label_map)
    model = PropertyPredictor(cfg.task, members=cfg.members, encoder=cfg.encoder, gnn_seeds=cfg.gnn_seeds,
                              finetune=cfg.finetune_options(), n_trees=cfg.n_trees, seed=cfg.seed)
    model.fit(smiles, y, tasks=tasks, device=device, progress=progress)  # labels mapped when read
    scores = {}
    if cfg.validation:
        v_smiles, _, v_y, v_tasks = read(cfg.validation, cfg.smiles_col, tasks, cfg.label_map)
        scores = model.score(v_smiles, v_y)
    model.save(cfg.out)
    return model, scores


def predict(model_dir, data, out, smiles_col: str = "smiles", device="cpu") -> Path:
    """Write ``out`` (CSV): per molecule that parses, its input row, file line (SDF: record),
    SMILES, and per task the prediction and the members' spread (std)."""
    from ..data.molecules import iter_smiles

    model = PropertyPredictor.load(model_dir, device)
    path = Path(data)
    pairs = list(iter_smiles(path, None if is_sdf(path) or not path.name.lower().removesuffix(".gz").endswith(".csv")
                             else smiles_col))
    lines, smiles = [p[0] for p in pairs], [p[1] for p in pairs]
    values, std, index = model.predict(smiles, return_std=True)
    rows = []
    for k, i in enumerate(index):
        row = {"index": int(i), "line": lines[i], "smiles": smiles[i]}
        for t, name in enumerate(model.tasks):
            row[f"pred_{name}"] = f"{values[k, t]:.6g}"
            row[f"std_{name}"] = f"{std[k, t]:.6g}"
        rows.append(row)
    atomic.atomic_write_csv(Path(out), rows)
    return Path(out)
