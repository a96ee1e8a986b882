"""Datasets, node-feature recipes and splits."""

from .datasets import KNOWN_TU_DATASETS, GraphDataset, load_tu
from .features import DEFAULT_RECIPE, FeatureRecipe, NodeFeatures, parse_recipe

__all__ = ["DEFAULT_RECIPE", "KNOWN_TU_DATASETS", "FeatureRecipe", "GraphDataset", "NodeFeatures", "load_tu",
           "parse_recipe"]
