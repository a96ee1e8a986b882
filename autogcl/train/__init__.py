"""Training strategies."""

from .naive import GraphCLStrategy, NaiveStrategy

__all__ = ["NaiveStrategy", "GraphCLStrategy"]
from .semi import (
    JointReleasedStrategy,
    JointStrategy,
    LearnableAugStrategy,
    SupervisedStrategy,
)

__all__ += ["SupervisedStrategy", "LearnableAugStrategy", "JointStrategy", "JointReleasedStrategy"]
