"""Every training loop: the shared :class:`Trainer` and the strategies it runs (naive and
GraphCL contrastive pre-training, the semi-supervised strategies, molecule fine-tuning and
chunked molecule pre-training)."""

from .finetune import FinetuneStrategy
from .loop import FitPlan, Strategy, Trainer, check_finite, check_fit_plan, check_report, run_epoch, to_device
from .naive import GraphCLStrategy, NaiveStrategy
from .semi import (
    JointReleasedStrategy,
    JointStrategy,
    LearnableAugStrategy,
    SupervisedStrategy,
)

__all__ = ["FinetuneStrategy", "FitPlan", "GraphCLStrategy", "JointReleasedStrategy", "JointStrategy", "LearnableAugStrategy",
           "NaiveStrategy", "Strategy", "SupervisedStrategy", "Trainer", "check_finite", "check_fit_plan", "check_report", "run_epoch",
           "to_device"]
