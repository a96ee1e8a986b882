"""View generators: the learnable AutoGCL generator and GraphCL's random augmentations."""

from .learnable import OPERATIONS, MoleculeViewGenerator, ViewDecision, ViewGenerator
from .random import AUGMENTATIONS, RandomAugmentor

__all__ = ["AUGMENTATIONS", "OPERATIONS", "MoleculeViewGenerator", "RandomAugmentor", "ViewDecision",
           "ViewGenerator"]
