"""Datasets, node-feature recipes and splits."""

from .datasets import KNOWN_TU_DATASETS, GraphDataset, load_tu
from .features import FeatureRecipe, parse_recipe

__all__ = ["GraphDataset", "KNOWN_TU_DATASETS", "load_tu", "FeatureRecipe", "parse_recipe"]
