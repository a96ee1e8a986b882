"""Training strategies."""

from .naive import GraphCLStrategy, NaiveStrategy

__all__ = ["NaiveStrategy", "GraphCLStrategy"]
