"""Published figures (the AutoGCL paper's Tables 2-4 and appendix), shown beside our results.
``None`` = not published."""

from ..choices import AUG_NODE_DROP

#: (method, dataset) -> (mean, std) accuracy %, unsupervised protocol, test_max selection.
UNSUPERVISED = {
    ("autogcl", "MUTAG"): (88.64, 1.08),
    ("autogcl", "PROTEINS"): (75.80, 0.36),
    ("autogcl", "NCI1"): (82.00, 0.29),
    ("graphcl", "MUTAG"): (86.80, None),
    ("graphcl", "PROTEINS"): (74.39, None),
    ("graphcl", "NCI1"): (77.87, None),
}

#: (row, dataset) -> (mean, std) accuracy %, semi-supervised protocol (10% labels).
SEMI = {
    ("labeled", "PROTEINS"): (69.72, 6.71),
    ("labeled", "NCI1"): (75.16, 2.07),
    ("graphcl_cl", "PROTEINS"): (74.21, 4.50),
    ("graphcl_cl", "NCI1"): (73.16, 2.90),
    ("joint", "PROTEINS"): (75.65, 2.40),
    ("joint", "NCI1"): (73.75, 2.25),
}

#: (row, dataset) -> (mean, std) ROC-AUC %, transfer protocol.
TRANSFER = {
    ("no_pretrain", "bbbp"): (65.8, 4.5),
    ("no_pretrain", "sider"): (57.3, 1.6),
    ("no_pretrain", "clintox"): (58.0, 4.4),
    ("no_pretrain", "bace"): (70.1, 5.4),
    ("autogcl", "bbbp"): (73.36, 0.77),
    ("autogcl", "sider"): (62.51, 0.63),
    ("autogcl", "clintox"): (80.99, 3.38),
    ("autogcl", "bace"): (83.26, 1.13),
}


def fmt(entry) -> str:
    if entry is None:
        return "-"
    mean, std = entry
    return f"{mean:.2f}" if std is None else f"{mean:.2f} ± {std:.2f}"

#: (dataset, augmentation) -> accuracy % at aug ratios 0.0, 0.1, ..., 0.5 (paper appendix,
#: semi-supervised GraphCL, node dropping).
ABLATION_RATIO = {
    ("NCI1", AUG_NODE_DROP): (74.48, 75.01, 74.40, 74.57, 73.94, 73.70),
}
ABLATION_RATIOS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
