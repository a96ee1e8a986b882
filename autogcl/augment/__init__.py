"""View generators: the learnable AutoGCL generator and GraphCL's random augmentations, all
usable on a PyG ``Data`` or ``Batch`` and as PyG transforms, and composable into one's own
views (:class:`Compose`, :class:`RandomChoice`)."""

from .learnable import OPERATIONS, FixedView, GeneratedView, MoleculeViewGenerator, ViewDecision, ViewGenerator
from .ops import RowBatchNorm
from .random import (AUGMENTATIONS, CheckedAugmentation, Compose, PerGraph, RandomAugmentor, RandomChoice, as_augmentation,
                     attr_mask, edge_pert, node_drop, subgraph)

__all__ = ["AUGMENTATIONS", "OPERATIONS", "CheckedAugmentation", "Compose", "PerGraph", "as_augmentation", "FixedView", "GeneratedView", "MoleculeViewGenerator", "RandomAugmentor",
           "RandomChoice", "RowBatchNorm", "ViewDecision", "ViewGenerator", "attr_mask", "edge_pert", "node_drop",
           "subgraph"]
