"""Inputs accepted without a word before issue 59: ``SemiSupervised.paper`` with a dataset name
it does not know, and integer ``edge_attr`` read as numbers without the warning integer ``x`` gets."""

from __future__ import annotations

import logging

import pytest
import torch
from torch_geometric.data import Data

import autogcl
from autogcl.errors import ConfigError


@pytest.mark.parametrize("name, batch", [("DD", 64), ("dd", 64), ("reddit-binary", 64), ("github", 64),
                                         ("PROTEINS", 128), ("proteins", 128)])
def test_paper_matches_the_known_datasets_in_any_case(name, batch):
    assert autogcl.SemiSupervised.paper("joint", name).hparams["batch_size"] == batch


def test_paper_refuses_a_dataset_name_it_does_not_know():
    with pytest.raises(ConfigError, match=r"SemiSupervised.paper: unknown dataset 'DDD'; the paper's datasets "
                                          r"\(any case\): MUTAG, PROTEINS, .*leave dataset out"):
        autogcl.SemiSupervised.paper("joint", "DDD")
    assert autogcl.SemiSupervised.paper("joint").hparams["batch_size"] == 128  # no dataset: the default batch


def graph(edge_attr):
    return Data(x=torch.randn(3, 2), edge_index=torch.tensor([[0, 1], [1, 2]]), edge_attr=edge_attr)


def test_integer_edge_attr_gets_the_warning_integer_x_gets(caplog):
    model = autogcl.AutoGCL(hidden=8, num_layers=2, edge_dim="auto")
    with caplog.at_level(logging.WARNING, logger="autogcl.api.base"):
        model.embed([graph(torch.tensor([[1], [2]])), graph(torch.tensor([[0], [3]]))])
    said = [r.getMessage() for r in caplog.records if "are integers" in r.getMessage()]
    assert said == ["the data: edge features (edge_attr) are integers (torch.int64) and are read as numbers; if they "
                    "are category ids (e.g. atom or bond types), one-hot encode them first "
                    "(torch.nn.functional.one_hot), or use the molecule encoder"]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="autogcl.api.base"):
        autogcl.AutoGCL(hidden=8, num_layers=2, edge_dim="auto").embed([graph(torch.rand(2, 1))] * 2)
        x_int = Data(x=torch.ones(3, 2, dtype=torch.long), edge_index=torch.tensor([[0, 1], [1, 2]]))
        autogcl.AutoGCL(hidden=8, num_layers=2).embed([x_int, x_int])
    said = [r.getMessage() for r in caplog.records if "are integers" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("the data: node features (x) are integers (torch.int64)")
