import math

import pytest
import torch

from autogcl.losses import classification_loss, nt_xent, similarity_loss


def cos(a, b):
    return float(a @ b / (a.norm() * b.norm()))


def test_nt_xent_by_hand():
    z1 = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    z2 = torch.tensor([[1.0, 1.0], [0.0, 1.0]])
    tau = 0.5
    s = [[cos(z1[i], z2[j]) / tau for j in range(2)] for i in range(2)]
    st = [[s[j][i] for j in range(2)] for i in range(2)]

    def one_way(m, exclude):
        tot = 0.0
        for i in range(2):
            den = sum(math.exp(m[i][j]) for j in range(2) if not (exclude and j == i))
            tot += -math.log(math.exp(m[i][i]) / den)
        return tot / 2

    simclr = 0.5 * (one_way(s, False) + one_way(st, False))
    released = 0.5 * (one_way(s, True) + one_way(st, True))
    assert math.isclose(float(nt_xent(z1, z2, tau)), simclr, rel_tol=1e-6)
    assert math.isclose(float(nt_xent(z1, z2, tau, exclude_positive=True)), released, rel_tol=1e-6)
    assert math.isclose(float(nt_xent(z1, z2, tau, True, symmetric=False)), one_way(s, True), rel_tol=1e-6)


def test_nt_xent_prefers_aligned_views():
    torch.manual_seed(0)
    z = torch.randn(8, 16)
    assert nt_xent(z, z) < nt_xent(z, torch.randn(8, 16))


def test_similarity_losses():
    a = torch.tensor([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0], [1.0, 0, 0]])
    b = torch.tensor([[1.0, 0, 0], [1.0, 0, 0], [0, 0, 1.0], [0, 1.0, 0]])
    assert math.isclose(float(similarity_loss(a, b, "cosine")), 2 / 4)
    keep_a, keep_b = torch.tensor([1.0, 0, 1, 1]), torch.tensor([1.0, 1, 1, 0])  # keep + mask
    assert math.isclose(float(similarity_loss(a, b, "mse")), 1 - float(((keep_a - keep_b) ** 2).mean()))


def test_classification_loss_sum_and_mean():
    y = torch.tensor([0, 1])
    logits = [torch.tensor([[2.0, 0.0], [0.0, 1.0]]), torch.tensor([[0.0, 0.0], [1.0, 0.0]])]
    ce = [float(torch.nn.functional.cross_entropy(lg, y)) for lg in logits]
    log_probs = [torch.log_softmax(lg, dim=1) for lg in logits]  # what the classifiers output
    assert math.isclose(float(classification_loss(log_probs, y)), sum(ce), rel_tol=1e-6)
    assert math.isclose(float(classification_loss(log_probs, y, "mean")), sum(ce) / 2, rel_tol=1e-6)


def test_masked_bce_ignores_missing_labels():
    from autogcl.losses import masked_bce

    logits = torch.tensor([[2.0, -1.0], [0.5, 3.0]], requires_grad=True)
    y = torch.tensor([[1.0, float("nan")], [0.0, float("nan")]])
    loss = masked_bce(logits, y)
    ref = torch.nn.functional.binary_cross_entropy_with_logits(torch.tensor([2.0, 0.5]), torch.tensor([1.0, 0.0]))
    assert torch.allclose(loss, ref)
    loss.backward()
    assert logits.grad[:, 1].abs().sum() == 0 and logits.grad[:, 0].abs().sum() > 0
    y_changed = y.clone()
    assert torch.allclose(masked_bce(logits.detach() + torch.tensor([[0.0, 9.0], [0.0, -9.0]]), y_changed), ref)
    assert masked_bce(logits, torch.full_like(y, float("nan"))).item() == 0.0


def test_loss_objects_are_the_functions():
    from autogcl.errors import ConfigError
    from autogcl.losses import (
        ClassificationLoss,
        MaskedBCE,
        NTXent,
        SimilarityLoss,
        classification_loss,
        masked_bce,
    )

    torch.manual_seed(0)
    z1, z2 = torch.randn(6, 4), torch.randn(6, 4)
    assert torch.equal(NTXent(0.5)(z1, z2), nt_xent(z1, z2, 0.5))
    assert torch.equal(NTXent(0.2, "released", "graphcl")(z1, z2),
                       nt_xent(z1, z2, 0.2, exclude_positive=True, symmetric=False))
    s1 = torch.eye(3)[torch.tensor([0, 1, 2, 0])]
    s2 = torch.eye(3)[torch.tensor([0, 0, 2, 1])]
    assert torch.equal(SimilarityLoss("mse")(s1, s2), similarity_loss(s1, s2, "mse"))
    lp = torch.log_softmax(torch.randn(4, 2), 1)
    y = torch.tensor([0, 1, 1, 0])
    assert torch.equal(ClassificationLoss("mean")([lp, lp], y), classification_loss([lp, lp], y, "mean"))
    logits, t = torch.randn(4, 2), torch.tensor([[1.0, float("nan")], [0.0, 1.0], [float("nan"), 0.0], [1.0, 1.0]])
    assert torch.equal(MaskedBCE()(logits, t), masked_bce(logits, t))
    for bad in (lambda: NTXent(0.0), lambda: NTXent(0.5, "other"), lambda: SimilarityLoss("l1"),
                lambda: ClassificationLoss("max")):
        with pytest.raises(ConfigError):
            bad()
