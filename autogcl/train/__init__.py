"""Training strategies."""

from .naive import GraphCLStrategy, NaiveStrategy

__all__ = ["GraphCLStrategy", "NaiveStrategy"]
from .semi import (
    JointReleasedStrategy,
    JointStrategy,
    LearnableAugStrategy,
    SupervisedStrategy,
)

__all__ += ["JointReleasedStrategy", "JointStrategy", "LearnableAugStrategy", "SupervisedStrategy"]
