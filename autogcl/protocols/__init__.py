"""The paper's protocols and analyses: each composes data, models, a strategy run by the
shared :class:`autogcl.train.loop.Trainer`, and an evaluator, over units run by
:func:`autogcl.runs.run_units` (unsupervised, semi-supervised, transfer pre-training and
fine-tuning, view visualisation, GraphCL ablations, reports)."""
