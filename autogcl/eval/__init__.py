"""Evaluators: the SVM protocol on frozen embeddings (:mod:`autogcl.eval.svm`), accuracy and
ROC-AUC (:mod:`autogcl.eval.metrics`). Import them from their modules (or from ``autogcl``):
this package imports nothing itself, so the SVM's worker processes stay light."""
