"""Evaluators: :class:`SVMEvaluator` and :class:`LinearProbe` objects on any embeddings
(:mod:`autogcl.eval.evaluators`), the SVM protocol on frozen embeddings
(:mod:`autogcl.eval.svm`), accuracy and ROC-AUC (:mod:`autogcl.eval.metrics`). Names are
imported on first use: this package imports nothing itself, so the SVM's worker processes
stay light."""

from __future__ import annotations

import importlib

_EXPORTS = {"LinearProbe": "evaluators", "SVMEvaluator": "evaluators", "svm_evaluate": "svm",
            "svm_protocol": "svm", "select_epoch": "svm", "C_GRID": "svm", "accuracy": "metrics",
            "roc_auc": "metrics"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'autogcl.eval' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
