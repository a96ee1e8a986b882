"""View generators: the learnable AutoGCL generator and GraphCL's random augmentations."""

from .learnable import MoleculeViewGenerator, ViewGenerator
from .random import AUGMENTATIONS, RandomAugmentor

__all__ = ["AUGMENTATIONS", "MoleculeViewGenerator", "RandomAugmentor", "ViewGenerator"]
