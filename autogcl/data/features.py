"""Node-feature recipes: how raw TU node labels/attributes and degrees become ``x``.

A recipe is a ``+``-joined list of tokens:

* ``deg``      the node degree as one column;
* ``odegN``    the degree one-hot encoded, capped at N (N + 1 columns), e.g. ``odeg100``;
* ``attr``     the continuous node attributes of the file, when present;
* ``constant`` a single column of ones *instead of* the node labels.

Without ``constant`` the node labels of the file, one-hot encoded per label column as in
PyTorch Geometric's ``TUDataset``, come first. ``deg+odeg100`` (the default) is the
recipe of the released AutoGCL/GraphCL code (its ``FeatureExpander``).

:class:`NodeFeatures` is the same recipe as a PyTorch Geometric transform, for a PyG
``TUDataset`` (whose ``x`` holds the one-hot node labels) or a user's own graphs: it gives
the features the TU reader of :func:`autogcl.data.load_tu` gives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch_geometric.transforms import BaseTransform

from ..errors import ConfigError, DataError

DEFAULT_RECIPE = "deg+odeg100"
#: the largest N of ``odegN``: the one-hot degree has N + 1 columns for every node
MAX_ONEHOT_DEGREE = 10000


@dataclass(frozen=True)
class FeatureRecipe:
    spec: str
    constant: bool = False
    attr: bool = False
    degree: bool = False
    onehot_max_degree: int | None = None


def parse_recipe(spec: str) -> FeatureRecipe:
    """Parse a recipe string such as ``deg+odeg100``; unknown tokens are an error."""
    tokens = [t for t in spec.strip().split("+") if t]
    if not tokens:
        raise ConfigError(f"empty feature recipe {spec!r}")
    kw: dict = {}
    for tok in tokens:
        m = re.fullmatch(r"odeg(\d+)", tok)
        if tok == "deg":
            kw["degree"] = True
        elif tok == "attr":
            kw["attr"] = True
        elif tok == "constant":
            kw["constant"] = True
        elif m:
            cap = int(m.group(1))
            if not 1 <= cap <= MAX_ONEHOT_DEGREE:
                raise ConfigError(f"feature token {tok!r} in recipe {spec!r}: N of odegN must lie in "
                                  f"1..{MAX_ONEHOT_DEGREE} (N + 1 columns per node)")
            kw["onehot_max_degree"] = cap
        else:
            raise ConfigError(
                f"unknown token {tok!r} in feature recipe {spec!r}; "
                "use '+'-joined tokens from: deg, odegN (e.g. odeg100), attr, constant"
            )
    return FeatureRecipe(spec="+".join(tokens), **kw)


def one_hot_labels(node_labels: torch.Tensor) -> torch.Tensor:
    """One-hot encode each column of integer node labels (shifted to start at 0)."""
    cols = []
    for j in range(node_labels.shape[1]):
        col = node_labels[:, j] - node_labels[:, j].min()
        cols.append(F.one_hot(col, int(col.max()) + 1).float())
    return torch.cat(cols, dim=1)


def build_features(
    recipe: FeatureRecipe,
    num_nodes: int,
    edge_index: torch.Tensor,
    node_labels: torch.Tensor | None = None,
    node_attributes: torch.Tensor | None = None,
    dataset: str = "?",
    base: torch.Tensor | None = None,
) -> torch.Tensor:
    """Node feature matrix (float32, ``num_nodes x d``) for one recipe. ``base``: features
    that stand first instead of the one-hot ``node_labels`` (a graph's existing ``x``)."""
    parts: list[torch.Tensor] = []
    if recipe.constant:
        parts.append(torch.ones(num_nodes, 1, device=edge_index.device))
    elif base is not None:
        parts.append(base.float().view(num_nodes, -1))
    elif node_labels is not None:
        parts.append(one_hot_labels(node_labels))
    if recipe.attr:
        if node_attributes is None and base is None:
            raise ConfigError(f"feature token 'attr': {dataset} has no continuous node attributes "
                              "(no NAME_node_attributes.txt); leave 'attr' out of the recipe")
        if node_attributes is not None:
            parts.append(node_attributes.float())
    if recipe.degree or recipe.onehot_max_degree is not None:
        deg = torch.bincount(edge_index[0], minlength=num_nodes)
        if recipe.degree:
            parts.append(deg.float().view(-1, 1))
        if recipe.onehot_max_degree is not None:
            cap = recipe.onehot_max_degree
            parts.append(F.one_hot(deg.clamp(max=cap), cap + 1).float())
    return torch.cat(parts, dim=1)  # never empty: every recipe has a token that adds columns or raises


class NodeFeatures(BaseTransform):
    """PyG transform: ``data.x`` becomes the features of a recipe (default ``deg+odeg100``).

    The graph's own ``x`` (e.g. the one-hot node labels of PyG's ``TUDataset``) stands first
    (``constant`` replaces it by a column of ones), then the degree tokens; a graph without
    ``x`` gets the degree tokens alone. Degrees count the graph's ``edge_index`` entries by
    source (an undirected graph stores both directions), as the TU reader does. So that
    ``NodeFeatures("deg+odeg100")`` on PyG's ``TUDataset("...", "MUTAG")`` gives exactly the
    109 features of ``load_tu("MUTAG")`` (``attr`` has no meaning here: the transform keeps
    whatever ``x`` holds).

    >>> from torch_geometric.datasets import TUDataset
    >>> ds = TUDataset(root, "MUTAG", transform=NodeFeatures("deg+odeg100"))  # doctest: +SKIP
    """

    def __init__(self, recipe: str = DEFAULT_RECIPE):
        self.recipe = parse_recipe(recipe)
        if self.recipe.attr:
            raise ConfigError("the 'attr' token selects attributes of TU files; NodeFeatures keeps the "
                              "graph's own x as it is (leave 'attr' out)")

    def forward(self, data):
        n = data.num_nodes
        if n is None or n == 0:
            raise DataError("NodeFeatures: a graph without nodes has no node features to build")
        x = getattr(data, "x", None)
        out = data.clone() if hasattr(data, "clone") else data
        out.x = build_features(self.recipe, n, data.edge_index, base=x, dataset="the graph")
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.recipe.spec!r})"
