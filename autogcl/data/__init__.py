"""Datasets, node-feature recipes and splits."""

from .datasets import KNOWN_TU_DATASETS, GraphDataset, load_tu
from .features import FeatureRecipe, parse_recipe

__all__ = ["KNOWN_TU_DATASETS", "FeatureRecipe", "GraphDataset", "load_tu", "parse_recipe"]
