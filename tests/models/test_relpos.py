"""RelPosNet / RelPosConv: node weights as soft removal (no data files needed)."""

import pytest
import torch

from autogcl.augment.ops import keep_nodes
from autogcl.data.mnist import POS_COLS
from autogcl.models.relpos import RelPosNet
from tests.conftest import superpixel_batch


@pytest.mark.parametrize("aggr", ["mean", "max"])
def test_weight_zero_is_removal(aggr):
    torch.manual_seed(0)
    batch = superpixel_batch()
    model = RelPosNet(3, 2, hidden=16, num_layers=3, aggr=aggr, pos_cols=POS_COLS)
    model.train()
    for _ in range(3):  # non-trivial BatchNorm running statistics
        model(batch)
    model.eval()
    keep = torch.rand(batch.num_nodes) > 0.4
    keep[batch.ptr[:-1]] = True  # every graph keeps a node
    weighted = batch.clone()
    weighted.node_weight = keep.float()
    removed = keep_nodes(batch, keep)
    assert torch.allclose(model(weighted), model(removed), atol=1e-5)
    assert not torch.allclose(model(batch), model(removed), atol=1e-3)


def test_dropped_nodes_get_a_gradient_with_mean_aggregation():
    torch.manual_seed(0)
    batch = superpixel_batch()
    model = RelPosNet(3, 2, hidden=16, num_layers=2, pos_cols=POS_COLS)
    w = (torch.rand(batch.num_nodes) > 0.5).float().requires_grad_()
    batch.node_weight = w
    model(batch).sum().backward()
    assert (w.grad[w.detach() == 0] != 0).all()
