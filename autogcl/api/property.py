"""autogcl's default molecular property predictor: the pre-trained molecule GIN fine-tuned on
the data, blended with a random forest on fixed RDKit features.

:class:`PropertyPredictor` is what ``docs/molecules.md`` recommends for a chemist's own
labeled molecules (binary labels or a numeric property): ``fit(smiles, y)``, ``predict``,
``score``, ``save``/``load``. Its members, each trained on the same molecules:

* ``"gnn"``: :meth:`autogcl.MoleculeEncoder.finetune` of the shipped encoder with its task's
  default recipe (one fit per seed in ``gnn_seeds``);
* ``"forest"``: a random forest (scikit-learn) on Morgan count fingerprints joined with
  RDKit's 2D descriptors (:mod:`autogcl.data.descriptors`), one forest per task;
* ``"svr"`` (regression only): an RBF support-vector regression on the
  quantile-normalised RDKit descriptors, one per task.

The prediction is the mean of the members' (probabilities, or values in the targets' units),
with equal weight per member kind, so no weight is fitted on a small validation part; the
spread of the members is returned as an uncertainty. Which members are the default, and
each one's effect, is measured by ``benchmarks/molprop.py`` (``docs/molecules.md``).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..atomic import atomic_write_json, read_json
from ..choices import FINETUNE_SELECTIONS, LR_COSINE, check_choice
from ..errors import ConfigError, DataError

log = logging.getLogger(__name__)

#: the member kinds a predictor can blend
MEMBERS = ("gnn", "forest", "svr")
#: the default members per task (chosen on ``benchmarks/molprop.py``, ``docs/molecules.md``): for
#: a regression the blend of all three, whose members err apart (the SVR extrapolates where the
#: forest cannot) and whose mean beat the GIN + forest blend on both regression sets; for
#: classification the forest alone, which the fine-tuned GIN has not yet beaten there (the GIN's
#: ROC-AUC is lower, and the blend's with it, at many times the CPU time)
DEFAULT_MEMBERS = {"regression": ("gnn", "forest", "svr"), "classification": ("forest",)}
#: the ``gnn`` member's fine-tuning options where ``finetune=`` leaves them (the rest: the task's
#: defaults of :meth:`MoleculeEncoder.finetune`): a cosine decay and the last epoch, for
#: classification too, so that no epoch is chosen on a small validation part, whose score swings
#: between epochs by more than the epochs differ
GNN_RECIPE = {"lr_schedule": LR_COSINE, "selection": FINETUNE_SELECTIONS[0]}
PROPERTY_FORMAT = "autogcl-property-predictor-1"


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class PropertyPredictor:
    """A molecular property predictor for binary labels (classification) or numbers
    (regression), several tasks at once with NaN for a missing label.

    ``task``: ``"classification"``, ``"regression"`` or ``None`` (inferred from the labels:
    all 0/1 is classification, and the log says so). ``members``: which of :data:`MEMBERS`
    to blend (``None``: :data:`DEFAULT_MEMBERS` of the task; ``members_`` after ``fit``). ``encoder``: the pre-trained encoder the ``gnn`` member fine-tunes (a shipped
    name or an ``encoder.pt``; ``None``: random weights). ``gnn_seeds``: one fine-tuned GIN per
    seed (their mean is the member; more seeds, a steadier member and a better uncertainty, at
    one fit each). ``finetune``: options for :meth:`MoleculeEncoder.finetune` (``epochs``,
    ``lr``, ``readout``, ...; :data:`GNN_RECIPE` and the task's defaults otherwise). ``n_trees``, ``max_features``:
    the forest's (a classification forest weighs the classes by their inverse share). ``seed`` fixes everything the members draw."""

    def __init__(self, task: str | None = None, *, members: Sequence[str] | None = None,
                 encoder: str | Path | None = "autogcl-moses-fullx1", gnn_seeds: Sequence[int] | int = 1,
                 finetune: dict | None = None, n_trees: int = 500, max_features: float | str | None = None,
                 seed: int = 0):
        from ..choices import TASKS

        if task is not None:
            check_choice("task", task, TASKS)
        members = None if members is None else tuple(members)
        if members is not None and not members:
            raise ConfigError(f"members must name at least one of {', '.join(MEMBERS)}")
        for m in members or ():
            check_choice("member", m, MEMBERS)
        if isinstance(gnn_seeds, int):
            if gnn_seeds < 1:
                raise ConfigError(f"gnn_seeds must be at least 1 (or a list of seeds), got {gnn_seeds}")
            gnn_seeds = [seed + k for k in range(gnn_seeds)]
        if not isinstance(n_trees, int) or n_trees < 1:
            raise ConfigError(f"n_trees must be a positive int, got {n_trees!r}")
        self.task, self.members, self.encoder = task, members, encoder
        self.gnn_seeds = [int(s) for s in gnn_seeds]
        self.finetune_options = dict(finetune or {})
        self.n_trees, self.max_features, self.seed = n_trees, max_features, int(seed)
        self.tasks: list[str] | None = None
        self.gnns: list = []  # MoleculePredictor per gnn seed
        self.forests: list = []  # per task: a fitted forest, or None for a task without labels
        self.svrs: list = []  # per task: a fitted SVR (the svr member, regression only)
        self.fit_seconds: dict[str, float] = {}

    # ------------------------------------------------------------------------------ fit

    @property
    def fitted(self) -> bool:
        return self.tasks is not None

    def get_params(self) -> dict:
        return {"task": self.task, "members": None if self.members is None else list(self.members), "encoder": None if self.encoder is None
                else str(self.encoder), "gnn_seeds": list(self.gnn_seeds), "finetune": dict(self.finetune_options),
                "n_trees": self.n_trees, "max_features": self.max_features, "seed": self.seed}

    def fit(self, data, y=None, *, validation=None, tasks: Sequence[str] | None = None,
            label_map: dict | None = None, device="auto", progress: bool | None = None) -> PropertyPredictor:
        """Train every member on ``data`` (SMILES with labels ``y``, a SMILES or SDF file with
        ``y`` naming its label columns, or :func:`autogcl.from_smiles`'s result with labels).

        ``validation``: held-out ``(smiles, y)`` that the ``gnn`` member may use to choose its
        epoch (``finetune={"selection": "val"}``); the default recipe keeps the last epoch of a
        decaying learning rate and needs none. Molecules that do not parse are skipped and
        reported, as everywhere. ``label_map``: numbers for text labels, e.g. ``{"inactive": 0,
        "active": 1}``, applied to ``y`` (and ``validation``'s) before they are read as numbers.
        A second ``fit`` trains new members from scratch (it does not continue the first)."""
        from ..data.molecules import label_task
        from ..molecules import _column_names, _labeled

        t_all = time.process_time()
        graphs, labels, smiles, mols = _labeled(data, y, label_map)
        # labels as the library stores them (float32, as the GIN trains on them and files are read),
        # so that a forest fitted from Python and from a file of the same numbers is the same forest
        labels = labels.astype(np.float32).astype(np.float64)
        if not smiles:
            raise DataError("PropertyPredictor needs the molecules' SMILES (its forest reads RDKit features): give "
                            "SMILES, a SMILES or SDF file, or from_smiles's result")
        names = list(tasks) if tasks is not None else _column_names(data, y)
        if names is not None and len(names) != labels.shape[1]:
            raise DataError(f"{len(names)} task names for {labels.shape[1]} label column(s)")
        self.tasks = names or [f"task{i}" for i in range(labels.shape[1])]
        task = label_task(labels, self.task, "labels y")
        if self.task is None:
            log.info("labels are %s: PropertyPredictor for %s (pass task= to choose)",
                     "all 0 or 1" if task == "classification" else "numbers", task)
        self.task_ = task
        v_smiles = v_labels = None
        if validation is not None:
            try:
                vdata, vy = validation
            except (TypeError, ValueError):
                raise ConfigError("validation must be a pair (smiles, y)") from None
            _, v_labels, v_smiles, _ = _labeled(vdata, vy, label_map)
            if v_labels.shape[1] != labels.shape[1]:
                raise DataError(f"validation labels have {v_labels.shape[1]} task(s), the training labels "
                                f"{labels.shape[1]}")
        self.gnns, self.forests, self.svrs, self.fit_seconds = [], [], [], {}
        self.members_ = self.members or DEFAULT_MEMBERS[task]  # the members this fit trains
        if "svr" in self.members_ and task != "regression":
            raise ConfigError("the svr member predicts numbers: it is for a regression (members 'gnn' and "
                              "'forest' classify)")
        t0 = time.process_time()
        x = _fixed_features(list(smiles)) if {"svr", "forest"} & set(self.members_) else None  # computed once
        feature_s = time.process_time() - t0
        if "svr" in self.members_:
            t0 = time.process_time()
            self.svrs = self._fit_svrs(x[:, -_n_descriptors():], labels)
            self.fit_seconds["svr"] = time.process_time() - t0 + feature_s
        if "forest" in self.members_:
            t0 = time.process_time()
            self.forests = self._fit_forests(x, labels, task)
            self.fit_seconds["forest"] = time.process_time() - t0 + feature_s
        if "gnn" in self.members_:
            t0 = time.process_time()
            self.gnns = [self._fit_gnn(list(smiles), labels, v_smiles, v_labels, task, s, device, progress)
                         for s in self.gnn_seeds]
            self.fit_seconds["gnn"] = time.process_time() - t0
        self.fit_seconds["total"] = time.process_time() - t_all
        return self

    def _fit_gnn(self, smiles, labels, v_smiles, v_labels, task, seed, device, progress):
        from ..molecules import MoleculeEncoder

        enc = MoleculeEncoder.load(self.encoder) if self.encoder is not None else MoleculeEncoder()
        opts = {**GNN_RECIPE, **self.finetune_options}
        if v_smiles is not None:
            data = list(smiles) + list(v_smiles)
            y = np.concatenate([labels, v_labels])
            opts.setdefault("split", {"train": np.arange(len(smiles)),
                                      "valid": np.arange(len(smiles), len(data))})
        else:
            data, y = smiles, labels
            if opts.get("selection") == "val":
                raise ConfigError("finetune={'selection': 'val'} needs validation=(smiles, y) in fit")
        return enc.finetune(data, y, task=task, seed=seed, device=device, progress=progress,
                            from_scratch=self.encoder is None, desc=f"fine-tuning (seed {seed})", **opts)

    def _fit_forests(self, x, labels, task):
        out = []
        for t in range(labels.shape[1]):
            lab = ~np.isnan(labels[:, t])
            yt = labels[lab, t]
            if lab.sum() < 2 or (task == "classification" and yt.min() == yt.max()):
                log.warning("task %s: %s; the forest predicts its training mean for it", self.tasks[t],
                            "fewer than two labels" if lab.sum() < 2 else "labels of one class only")
                out.append(float(np.mean(yt)) if yt.size else (0.5 if task == "classification" else 0.0))
                continue
            out.append(_forest(task, self.n_trees, self.max_features, self.seed + t).fit(x[lab], yt))
        return out

    def _fit_svrs(self, x, labels):
        """Per task an RBF support-vector regression on RDKit's 2D descriptors (``x``), each mapped
        to a normal distribution by its training quantiles (a smooth model, which extrapolates
        beyond the training targets where a forest cannot)."""
        out = []
        for t in range(labels.shape[1]):
            lab = ~np.isnan(labels[:, t])
            out.append(_svr(int(lab.sum())).fit(x[lab], labels[lab, t]) if lab.sum() >= 2
                       else float(np.nanmean(labels[:, t])) if lab.any() else 0.0)
        return out

    # ------------------------------------------------------------------------------ predict

    def _require_fitted(self) -> None:
        if not self.fitted:
            raise ConfigError("this PropertyPredictor is not fitted yet: call fit(smiles, y) first")

    def predict_members(self, smiles) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """``({member: values}, index)``: each member's ``molecules x tasks`` float64 predictions
        (the ``gnn`` member: the mean over its seeds) of the SMILES that parse, and their
        positions in ``smiles``."""
        from ..molecules import _smiles_of_file, as_molecules

        self._require_fitted()
        smiles = _smiles_of_file(smiles)
        mols = as_molecules(smiles)
        if not mols.smiles:
            raise DataError("PropertyPredictor predicts from SMILES (or a SMILES or SDF file), not from graphs")
        out = {}
        if self.gnns:
            out["gnn"] = np.mean([g._predicted(mols)[0] for g in self.gnns], axis=0)
        x = _fixed_features(mols.smiles) if self.forests or self.svrs else None  # computed once
        if self.forests:
            cols = []
            for f in self.forests:
                if isinstance(f, float):
                    cols.append(np.full(len(x), f))
                elif self.task_ == "classification":
                    cols.append(f.predict_proba(x)[:, list(f.classes_).index(1.0)])
                else:
                    cols.append(f.predict(x))
            out["forest"] = np.stack(cols, axis=1).astype(np.float64)
        if self.svrs:
            d = x[:, -_n_descriptors():]
            out["svr"] = np.stack([np.full(len(d), m) if isinstance(m, float) else m.predict(d) for m in self.svrs],
                                  axis=1).astype(np.float64)
        return out, mols.index

    def predict(self, smiles, return_std: bool = False):
        """``(values, index)``: a float32 ``molecules x tasks`` array (probabilities, or values
        in the targets' units) of the SMILES that parse, and their positions in ``smiles``.
        ``return_std=True``: ``(values, std, index)``, where ``std`` is the spread (std, ddof 0)
        of the members' predictions around the blend, a rough uncertainty (0 with one member)."""
        parts, index = self.predict_members(smiles)
        stack = np.stack(list(parts.values()))
        mean = stack.mean(axis=0)
        if return_std:
            return mean.astype(np.float32), stack.std(axis=0).astype(np.float32), index
        return mean.astype(np.float32), index

    def score(self, smiles, y, *, label_map: dict | None = None) -> dict:
        """Scores on labeled molecules (``y`` and ``label_map`` as :meth:`fit` takes them):
        ``{"roc_auc", "tasks"}`` (tasks with both classes) or ``{"rmse", "mae", "r2", "tasks"}``
        in the targets' units (as :meth:`autogcl.MoleculePredictor.score`)."""
        from ..eval.metrics import regression_scores, roc_auc
        from ..molecules import _labeled, check_task_columns

        self._require_fitted()
        _, labels, smiles, _ = _labeled(smiles, y, label_map)
        check_task_columns(labels, self.tasks)
        values, index = self.predict(list(smiles))
        labels = labels[index]
        if self.task_ == "regression":
            scores, n = regression_scores(labels, values)
            return {**scores, "tasks": n}
        auc, n = roc_auc(labels, values)
        return {"roc_auc": auc, "tasks": n}

    # ------------------------------------------------------------------------------ files

    def save(self, path: str | Path) -> Path:
        """Write the predictor to the folder ``path``: ``predictor.json`` (settings, tasks and
        each member file's SHA-256), ``gnn_<seed>.pt`` (:meth:`MoleculePredictor.save`) and
        ``forest.joblib`` (scikit-learn's forests, a pickle: load only folders you trust)."""
        import joblib

        self._require_fitted()
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        files = {}
        for s, g in zip(self.gnn_seeds, self.gnns):
            files[f"gnn_{s}.pt"] = g.save(path / f"gnn_{s}.pt")
        for name, models in (("forest", self.forests), ("svr", self.svrs)):
            if models:
                tmp = path / f"{name}.joblib.tmp"
                joblib.dump(models, tmp)
                tmp.replace(path / f"{name}.joblib")
                files[f"{name}.joblib"] = path / f"{name}.joblib"
        from .. import __version__

        atomic_write_json(path / "predictor.json", {
            "format": PROPERTY_FORMAT, "autogcl": __version__, "params": self.get_params(), "task": self.task_,
            "tasks": self.tasks, "fit_seconds": self.fit_seconds, "members": list(self.members_),
            "files": {name: _digest(p) for name, p in files.items()}})
        return path

    @classmethod
    def load(cls, path: str | Path, device="cpu") -> PropertyPredictor:
        """Restore a predictor written by :meth:`save`; a member file whose SHA-256 differs from
        the one recorded is refused by name (damaged or replaced)."""
        import joblib

        from ..molecules import MoleculePredictor

        path = Path(path)
        meta_path = path / "predictor.json"
        if not meta_path.is_file():
            raise DataError(f"{path}: not a saved PropertyPredictor (no predictor.json; "
                            f"{'a file' if path.is_file() else 'no such folder'})")
        meta = read_json(meta_path)
        if meta.get("format") != PROPERTY_FORMAT:
            raise DataError(f"{meta_path}: format {meta.get('format')!r}, not {PROPERTY_FORMAT!r}")
        for name, digest in meta["files"].items():
            f = path / name
            if not f.is_file():
                raise DataError(f"{f}: missing (the predictor folder lists it)")
            if _digest(f) != digest:
                raise DataError(f"{f}: damaged or replaced (its SHA-256 differs from the one predictor.json "
                                "recorded at save)")
        p = meta["params"]
        pred = cls(p["task"], members=p["members"], encoder=p["encoder"], gnn_seeds=p["gnn_seeds"],
                   finetune=p["finetune"], n_trees=p["n_trees"], max_features=p["max_features"], seed=p["seed"])
        pred.tasks, pred.task_, pred.fit_seconds = meta["tasks"], meta["task"], meta.get("fit_seconds", {})
        pred.members_ = tuple(meta.get("members") or pred.members or DEFAULT_MEMBERS[pred.task_])
        pred.gnns = [MoleculePredictor.load(path / f"gnn_{s}.pt", device) for s in pred.gnn_seeds
                     if f"gnn_{s}.pt" in meta["files"]]
        pred.forests = joblib.load(path / "forest.joblib") if "forest.joblib" in meta["files"] else []
        pred.svrs = joblib.load(path / "svr.joblib") if "svr.joblib" in meta["files"] else []
        return pred

    def __repr__(self) -> str:
        state = f"fitted on {len(self.tasks)} task(s)" if self.fitted else "not fitted"
        members = list(getattr(self, "members_", None) or self.members or ["by task"])
        return f"PropertyPredictor(members={members}, task={self.task!r}, {state})"


def _fixed_features(smiles) -> np.ndarray:
    """Morgan counts and RDKit 2D descriptors (the last :func:`_n_descriptors` columns); a
    descriptor RDKit cannot compute is 0."""
    from ..data.descriptors import features

    return np.nan_to_num(features(smiles), nan=0.0, posinf=0.0, neginf=0.0)


def _n_descriptors() -> int:
    from ..data.descriptors import descriptor_names

    return len(descriptor_names())


def _svr(n: int):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import QuantileTransformer
    from sklearn.svm import SVR

    return make_pipeline(QuantileTransformer(n_quantiles=min(200, n), output_distribution="normal"), SVR(C=10.0))


def _forest(task: str, n_trees: int, max_features, seed: int):
    """The forest member of one task. A classifier weighs each class by the inverse of its share
    in the tree's bootstrap sample (``class_weight="balanced_subsample"``), so that a rare label
    (a toxicity flag held by a few percent of the molecules) shapes the trees as much as the
    common one (both forests on the benchmark's splits: ``docs/molecules.md``)."""
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

    if task == "classification":
        return RandomForestClassifier(n_estimators=n_trees, max_features=max_features or "sqrt", n_jobs=1,
                                      class_weight="balanced_subsample", random_state=seed)
    return RandomForestRegressor(n_estimators=n_trees, max_features=max_features or 0.33, n_jobs=1,
                                 random_state=seed)

