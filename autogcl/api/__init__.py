"""The estimators researchers use on their own graphs, sharing one base
(:class:`Estimator`): :class:`AutoGCL` (learnable view generators) and :class:`GraphCL`
(random augmentations) learn graph embeddings without labels; :class:`SemiSupervised`
learns a classifier from a few labeled graphs among many unlabeled ones.

``fit`` takes a PyG dataset, a list of ``Data``, a ``Data``, a ``Batch`` or a PyG
``DataLoader``, on any device, with a progress bar, and returns the per-epoch history;
``embed`` gives graph embeddings as a tensor (``predict`` / ``score`` the classes of the
semi-supervised one); the prepared graphs are cached on the device for the next call.
``save`` and :func:`load` store and restore a whole model (architecture, feature rule,
weights, history) and load safely (``weights_only``). See ``docs/api.md``.

Model files and other model types: ``save`` writes ``{"format": MODEL_FORMAT, "class":
name, "hparams", "state_dict", "history"}``; :func:`load` looks ``"class"`` up in
:data:`MODEL_TYPES` and calls that class's ``from_saved(blob, path)``. A module that adds a
model type (e.g. a molecule model) registers it with ``@register_model_type`` (or
``register_model_type(cls, name=...)``), either by subclassing :class:`Estimator` (whose
``from_saved`` rebuilds from ``hparams`` and checks the weights) or by defining its own
``from_saved``; ``autogcl.load`` then reads its files. Registration happens on import, so
the module must be imported before ``load`` reads such a file.
"""

from .base import MODEL_FORMAT, MODEL_TYPES, OTHER_FORMATS, Estimator, Prepared, load, register_model_type
from .contrastive import AutoGCL, ContrastiveLearner, GraphCL
from .semi import SEMI_STRATEGIES, SemiSupervised

__all__ = ["MODEL_FORMAT", "MODEL_TYPES", "OTHER_FORMATS", "SEMI_STRATEGIES", "AutoGCL", "ContrastiveLearner", "Estimator", "GraphCL",
           "Prepared", "SemiSupervised", "load", "register_model_type"]
