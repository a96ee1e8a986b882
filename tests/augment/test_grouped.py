"""Two molecule view generators run as one grouped network (stacked channels, one Gumbel
draw, one forced-keep pass) against each generator's own pass with the same weights and the
same noise: logits, BatchNorm running statistics and gradients to float rounding, samples
exactly."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch

import autogcl.augment.learnable as learnable
from autogcl.augment.learnable import KEEP, MoleculeViewGenerator, sample_grouped
from autogcl.data.molecules import VOCAB, smiles_to_graph
from autogcl.models.mol_gin import MolNodeScorer, grouped_scores
from autogcl.models.norm import sync

SMILES = ["CCO", "c1ccccc1", "CC(=O)N", "C", "OCC(O)CO", "c1ccncc1", "CC(C)C", "C=CC#N"]
RTOL, ATOL = 1e-5, 1e-6  # float32: the block-diagonal products add exact zeros, in another order


def assert_same_gradients(gens, copies):
    """Every parameter's gradient within 2e-6 of the largest gradient entry of its generator
    (float32 rounding of sums over every atom; the bias before a BatchNorm has a gradient of 0
    up to that rounding, so a relative test per tensor would read noise)."""
    for g, c in zip(gens, copies):
        scale = max(float(q.grad.abs().max()) for q in c.parameters())
        for (name, p), q in zip(g.named_parameters(), c.parameters()):
            err = float((p.grad - q.grad).abs().max())
            assert err <= 2e-6 * scale, (name, err, scale)


def batch() -> Batch:
    return Batch.from_data_list([smiles_to_graph(s) for s in SMILES])


def generators(seed: int = 0, hidden: int = 8):
    torch.manual_seed(seed)
    gens = [MoleculeViewGenerator(MolNodeScorer(3, VOCAB, hidden)) for _ in range(2)]
    for g in gens:  # BatchNorm weights and running statistics away from their initial values
        for bn in g.scorer.gnn.bns:
            with torch.no_grad():
                bn.weight.uniform_(0.5, 1.5), bn.bias.uniform_(-0.5, 0.5)
                bn.running_mean.uniform_(-1, 1), bn.running_var.uniform_(0.5, 2)
    return gens


def state(gens) -> dict:
    return {f"{i}.{k}": v.detach().clone() for i, g in enumerate(gens) for k, v in g.state_dict().items()}


@pytest.mark.parametrize("training", [True, False])
def test_grouped_logits_statistics_and_gradients_equal_separate_passes(training):
    data = batch()
    gens, copies = generators(), generators()
    for g, c in zip(gens, copies):
        g.train(training), c.train(training)
    weights = torch.randn(data.num_nodes, 2, 3)
    got = grouped_scores([g.scorer for g in gens], data)
    want = torch.stack([c.scorer(data) for c in copies], 1)
    torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL)
    (got * weights).sum().backward()
    (want * weights).sum().backward()
    got_state, want_state = state(gens), state(copies)
    assert got_state.keys() == want_state.keys()
    for k in want_state:  # running statistics, num_batches_tracked and weights
        torch.testing.assert_close(got_state[k], want_state[k], rtol=RTOL, atol=ATOL)
    if training:
        assert not torch.equal(got_state["0.scorer.gnn.bns.0.running_mean"],
                               generators()[0].scorer.gnn.bns[0].running_mean)  # they moved
    assert_same_gradients(gens, copies)


def test_one_row_batch_normalises_with_the_running_statistics():
    data = Batch.from_data_list([smiles_to_graph("C")])
    gens, copies = generators(), generators()
    got = grouped_scores([g.scorer for g in gens], data)
    want = torch.stack([c.scorer(data) for c in copies], 1)
    torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL)
    assert state(gens).keys() == state(copies).keys()
    assert all(torch.equal(a, b) for a, b in zip(state(gens).values(), state(generators()).values()))


def gumbel_hard(logits, tau, gumbels=None):
    """``F.gumbel_softmax(logits, tau, hard=True)`` over the last dimension, the same operations,
    with the Gumbel noise given (``None``: drawn as torch draws it)."""
    if gumbels is None:
        gumbels = -torch.empty_like(logits).exponential_().log()
    soft = ((logits + gumbels) / tau).softmax(-1)
    hard = torch.zeros_like(logits).scatter_(-1, soft.max(-1, keepdim=True)[1], 1.0)
    return hard - soft.detach() + soft


def separate_sample(gen, data, gumbels):
    """ViewGenerator.sample with the Gumbel noise given (the same operations)."""
    logits = gen.scores(data)
    sample = gumbel_hard(logits, gen.tau, gumbels)
    return sample.index_add(0, *gen._forced_keep(sample.detach(), logits[:, KEEP].detach(), data.batch,
                                                 int(data.num_graphs)))


@pytest.mark.parametrize("drop_all", [False, True])
def test_grouped_samples_equal_each_generators_own_draw(drop_all, monkeypatch):
    data = batch()
    gens, copies = generators(1), generators(1)
    torch.manual_seed(5)
    gumbels = -torch.empty(data.num_nodes, 2, 3).exponential_().log()
    if drop_all:  # generator 2 drops every atom: the forced keep keeps one in every molecule
        gumbels[:, 1, 1] += 100.0
    # the grouped draw is one F.gumbel_softmax of nodes x generators x operations: given this noise
    monkeypatch.setattr(learnable.F, "gumbel_softmax", lambda logits, tau=1.0, hard=True: gumbel_hard(logits, tau, gumbels))
    got = sample_grouped(gens, data)
    monkeypatch.undo()
    want = [separate_sample(c, data, gumbels[:, j]) for j, c in enumerate(copies)]
    for g, w in zip(got, want):
        # one-hot rows: (1 - s) + s rounds to exactly 1 and (0 - s) + s to 0 for s in [0, 1], so
        # the values are exact and equal where the choices are (only a tie of two noisy logits
        # within rounding, never met, could differ)
        assert torch.equal(g.detach(), w.detach())
        torch.testing.assert_close(g, w, rtol=RTOL, atol=ATOL)  # and the straight-through values
    if drop_all:
        kept = torch.zeros(data.num_graphs).index_add_(0, data.batch, got[1][:, KEEP].detach())
        assert torch.equal(kept, torch.ones(data.num_graphs))  # sums of exact 0s and 1s: exact
    weights = torch.randn(data.num_nodes, 3)
    sum((s * weights).sum() for s in got).backward()
    sum((s * weights).sum() for s in want).backward()
    assert_same_gradients(gens, copies)


def test_gumbel_hard_is_torchs_gumbel_softmax():
    logits = torch.randn(50, 3, requires_grad=True)
    torch.manual_seed(2)
    want = torch.nn.functional.gumbel_softmax(logits, tau=0.7, hard=True)
    torch.manual_seed(2)
    got = gumbel_hard(logits, 0.7)
    assert torch.equal(got, want)


def test_generators_that_cannot_be_grouped_are_refused():
    data = batch()
    gens = generators()
    other = MoleculeViewGenerator(MolNodeScorer(3, VOCAB, 16))
    assert sample_grouped([gens[0], other], data) is None  # another width
    sync(gens[1])  # a data-parallel synced BatchNorm: one pass each
    assert sample_grouped(gens, data) is None
