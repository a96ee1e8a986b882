"""autogcl: graph contrastive learning with learnable view generators (AutoGCL, AAAI 2022).

The public API (``autogcl.__all__``; guide and examples in ``docs/api.md``)::

    import autogcl
    model = autogcl.AutoGCL(in_channels)          # or autogcl.GraphCL(...)
    history = model.fit(graphs, epochs=30, device="auto")
    z = model.embed(graphs)                       # graphs x 640 tensor
    autogcl.svm_protocol({30: z}, labels)         # SVM, both selections
    model.save("model.pt"); autogcl.load("model.pt")

Names are imported on first use, so ``import autogcl`` (and the command line's ``--help``)
stays light.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

#: public name -> module that defines it
_EXPORTS = {
    # estimators
    "AutoGCL": "api", "GraphCL": "api", "ContrastiveLearner": "api", "load": "api",
    "SemiSupervised": "api", "Estimator": "api", "register_model_type": "api",
    # molecules: SMILES to graphs, the shipped encoder, embeddings, fine-tuning
    "from_smiles": "molecules", "smiles_to_graph": "molecules", "MoleculeEncoder": "molecules",
    "MoleculePredictor": "molecules", "Molecules": "molecules", "load_encoder": "models.mol_gin",
    "pretrained_encoders": "molecules", "MoleculePretrainer": "api.pretrain", "pretrain_molecules": "api.pretrain",
    "PropertyPredictor": "api.property",
    # data: features, datasets
    "NodeFeatures": "data.features", "parse_recipe": "data.features", "DEFAULT_RECIPE": "data.features",
    "load_tu": "data.datasets", "GraphDataset": "data.datasets",
    "load_moleculenet": "data.moleculenet", "load_molecule_csv": "data.moleculenet",
    # augmentations: learnable and random
    "ViewGenerator": "augment.learnable", "ViewDecision": "augment.learnable",
    "MoleculeViewGenerator": "augment.learnable", "OPERATIONS": "augment.learnable",
    "RandomAugmentor": "augment.random", "AUGMENTATIONS": "augment.random",
    "node_drop": "augment.random", "edge_pert": "augment.random", "subgraph": "augment.random",
    "attr_mask": "augment.random", "Compose": "augment.random", "RandomChoice": "augment.random",
    "GeneratedView": "augment.learnable", "FixedView": "augment.learnable",
    # models
    "GINEncoder": "models.gin", "ProjectionHead": "models.gin", "ContrastModel": "models.gin",
    "GINClassifier": "models.gin",
    "ResGCN": "models.resgcn", "MolEncoder": "models.mol_gin", "MolPredictor": "models.mol_gin",
    # losses
    "NTXent": "losses", "SimilarityLoss": "losses", "ClassificationLoss": "losses", "MaskedBCE": "losses",
    "nt_xent": "losses", "similarity_loss": "losses", "classification_loss": "losses", "masked_bce": "losses",
    # training
    "Trainer": "train.loop", "Strategy": "train.loop", "NaiveStrategy": "train.naive",
    "GraphCLStrategy": "train.naive", "JointStrategy": "train.semi", "SupervisedStrategy": "train.semi",
    "LearnableAugStrategy": "train.semi", "JointReleasedStrategy": "train.semi",
    "FinetuneStrategy": "train.finetune",
    # evaluation
    "svm_evaluate": "eval.svm", "svm_protocol": "eval.svm", "select_epoch": "eval.svm",
    "accuracy": "eval.metrics", "roc_auc": "eval.metrics",
    "SVMEvaluator": "eval.evaluators", "LinearProbe": "eval.evaluators",
    # runtime
    "resolve_device": "devices", "runtime_info": "devices", "seed_everything": "seeding", "Engine": "devices",
    "deterministic_kernels": "devices",
    # where sweeps run (serial or Ray)
    "SerialExecutor": "executors", "RayExecutor": "executors",
    # the search of configurations on validation folds (Ray Tune, Optuna TPE, ASHA)
    "tune": "protocols.tune",
    # errors
    "AutoGCLError": "errors", "ConfigError": "errors", "DataError": "errors", "TrainingError": "errors",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'autogcl' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
