"""View generators: the learnable AutoGCL generator and GraphCL's random augmentations."""

from .learnable import ViewGenerator
from .random import AUGMENTATIONS, RandomAugmentor

__all__ = ["ViewGenerator", "RandomAugmentor", "AUGMENTATIONS"]
