"""Evaluators: the SVM protocol on frozen embeddings, accuracy and ROC-AUC."""

from .metrics import accuracy, roc_auc
from .svm import C_GRID, svm_evaluate

__all__ = ["C_GRID", "accuracy", "roc_auc", "svm_evaluate"]
