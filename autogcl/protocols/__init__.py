"""The paper's protocols and analyses: each composes data, models, a strategy run by the
shared :class:`autogcl.train.loop.Trainer`, and an evaluator. Every sweep (unsupervised
seeds, semi-supervised folds, fine-tuning seeds, pre-training, GraphCL ablations) runs its
units through :func:`autogcl.units.run_units` (serially or on Ray: :mod:`autogcl.executors`); the view visualisation is one direct run into
its output folder (no resume), and reports only read finished runs."""

#: the protocol modules (imported by name: each pulls in what its protocol needs)
__all__ = ["ablation", "configs", "grid", "pretrain", "published", "report", "semi", "transfer", "unsupervised", "views"]
