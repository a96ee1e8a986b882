"""Property-based tests (hypothesis) over the augmentors, the losses and the SVM evaluator with
random graphs and inputs: 1-node and edgeless graphs, self-loops, duplicate edges, isolated
nodes, integer and float64 features of any scale. Each call gives finite output of the right
shape, or a clear autogcl error; never another exception, never NaN."""

import math
import os

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch_geometric.data import Batch, Data

from autogcl.augment import AUGMENTATIONS, RandomAugmentor, ViewGenerator
from autogcl.errors import AutoGCLError, DataError
from autogcl.eval.svm import svm_evaluate
from autogcl.losses import ClassificationLoss, MaskedBCE, NTXent, SimilarityLoss

#: examples per property (CI: the default keeps the whole file well under a minute)
EXAMPLES = int(os.environ.get("AUTOGCL_PROPERTY_EXAMPLES", "40"))
PROP = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SCALES = st.sampled_from([0.0, 1e-30, 1e-3, 1.0, 1e3, 1e6])


@st.composite
def graphs(draw, min_nodes=1):
    """One graph: 1-8 nodes (``min_nodes`` at least), random directed edges (self-loops and
    duplicates allowed, possibly none: isolated nodes), and a label."""
    n = draw(st.integers(min_nodes, 8))
    m = draw(st.integers(0, 12))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), min_size=m, max_size=m))
    edge_index = torch.tensor(pairs, dtype=torch.long).t().reshape(2, -1)
    return n, edge_index, draw(st.integers(0, 1))


@st.composite
def batches(draw, max_graphs=5, min_total=1, dtypes=(torch.float32, torch.float64, torch.int64)):
    """A batch of 1-``max_graphs`` random graphs with features of one dtype (float32, float64,
    int64) and scale."""
    dim = draw(st.integers(1, 4))
    dtype = draw(st.sampled_from(dtypes))
    scale = draw(SCALES)
    seed = draw(st.integers(0, 2**16))
    gen = torch.Generator().manual_seed(seed)
    data = []
    for n, e, y in draw(st.lists(graphs(), min_size=1, max_size=max_graphs)):
        x = torch.randn(n, dim, generator=gen, dtype=torch.float64) * scale
        x = x.round().to(dtype) if dtype == torch.int64 else x.to(dtype)
        data.append(Data(x=x, edge_index=e, y=torch.tensor([y])))
    batch = Batch.from_data_list(data)
    if batch.num_nodes < min_total:
        batch = Batch.from_data_list(data + data)
    return batch


def check_view(view, batch):
    """A view of ``batch``: every graph keeps a node, edges point at nodes, features finite."""
    assert view.num_graphs == batch.num_graphs
    assert torch.bincount(view.batch, minlength=batch.num_graphs).min() >= 1
    ei = view.edge_index
    assert ei.dtype == torch.long and ei.dim() == 2 and ei.shape[0] == 2
    assert ei.numel() == 0 or (int(ei.min()) >= 0 and int(ei.max()) < view.num_nodes)
    if torch.is_floating_point(view.x):
        assert torch.isfinite(view.x).all()


@PROP
@given(batch=batches(), name=st.sampled_from(sorted(AUGMENTATIONS) + ["random4"]),
       ratio=st.floats(0.0, 0.99), seed=st.integers(0, 2**16))
def test_random_augmentations_give_a_valid_view_of_any_batch(batch, name, ratio, seed):
    torch.manual_seed(seed)
    check_view(RandomAugmentor(name, ratio)(batch), batch)


@PROP
@given(batch=batches(), add_mask=st.booleans(), dropped=st.sampled_from(["isolate", "remove"]),
       token=st.sampled_from(["scalar", "feature"]), train=st.booleans(), deterministic=st.booleans(),
       seed=st.integers(0, 2**16))
def test_the_learnable_generator_gives_a_valid_view_of_any_batch(batch, add_mask, dropped, token, train,
                                                                  deterministic, seed):
    torch.manual_seed(seed)
    gen = ViewGenerator(batch.x.shape[1], hidden=8, add_mask=add_mask, dropped=dropped, mask_token=token)
    gen.train(train)
    view, sample = gen(batch, deterministic=deterministic)
    check_view(view, batch)
    assert sample.shape == (batch.num_nodes, gen.num_ops) and torch.isfinite(sample).all()
    assert torch.allclose(sample.detach().sum(1), torch.ones(batch.num_nodes))
    decision = gen.inspect(batch, deterministic=True)
    assert torch.isfinite(decision.probs).all() and decision.op.shape == (batch.num_nodes,)


def test_the_learnable_generator_trains_on_a_batch_of_one_node():
    batch = Batch.from_data_list([Data(x=torch.ones(1, 3), edge_index=torch.empty(2, 0, dtype=torch.long))])
    gen = ViewGenerator(3, hidden=8).train()
    check_view(gen(batch)[0], batch)


def test_the_learnable_generator_takes_float64_features():
    batch = Batch.from_data_list([Data(x=torch.rand(3, 2, dtype=torch.float64),
                                       edge_index=torch.tensor([[0, 1], [1, 2]]))] * 2)
    check_view(ViewGenerator(2, hidden=8).eval()(batch)[0], batch)


@PROP
@given(n=st.integers(1, 12), d=st.integers(1, 6), scale=SCALES, tau=st.floats(0.01, 10.0),
       variant=st.sampled_from(["simclr", "released"]), method=st.sampled_from(["autogcl", "graphcl"]),
       zero_rows=st.booleans(), seed=st.integers(0, 2**16))
def test_nt_xent_is_finite_for_any_embeddings(n, d, scale, tau, variant, method, zero_rows, seed):
    gen = torch.Generator().manual_seed(seed)
    z1, z2 = (torch.randn(n, d, generator=gen) * scale for _ in range(2))
    if zero_rows:
        z1[0] = 0.0  # a graph whose embedding is all zeros
    z1.requires_grad_(True)
    loss = NTXent(tau, variant, method)(z1, z2)
    assert loss.dim() == 0 and math.isfinite(float(loss))
    loss.backward()
    assert torch.isfinite(z1.grad).all()


@PROP
@given(n=st.integers(1, 12), ops=st.sampled_from([2, 3]), kind=st.sampled_from(["cosine", "mse"]),
       seed=st.integers(0, 2**16))
def test_similarity_loss_is_finite_and_bounded(n, ops, kind, seed):
    gen = torch.Generator().manual_seed(seed)
    s1, s2 = (torch.nn.functional.one_hot(torch.randint(ops, (n,), generator=gen), ops).float() for _ in range(2))
    loss = float(SimilarityLoss(kind)(s1, s2))
    assert math.isfinite(loss) and -1e-6 <= loss <= 1 + 1e-6


@PROP
@given(n=st.integers(1, 12), classes=st.integers(2, 4), views=st.integers(1, 3), scale=SCALES,
       reduce=st.sampled_from(["sum", "mean"]), seed=st.integers(0, 2**16))
def test_classification_loss_is_finite(n, classes, views, scale, reduce, seed):
    gen = torch.Generator().manual_seed(seed)
    logp = [torch.log_softmax(torch.randn(n, classes, generator=gen) * scale, -1) for _ in range(views)]
    y = torch.randint(classes, (n,), generator=gen)
    assert math.isfinite(float(ClassificationLoss(reduce)(logp, y)))


@PROP
@given(n=st.integers(1, 12), tasks=st.integers(1, 4), missing=st.floats(0.0, 1.0), scale=SCALES,
       seed=st.integers(0, 2**16))
def test_masked_bce_is_finite_whatever_is_missing(n, tasks, missing, scale, seed):
    gen = torch.Generator().manual_seed(seed)
    logits = (torch.randn(n, tasks, generator=gen) * scale).requires_grad_(True)
    y = torch.randint(2, (n, tasks), generator=gen).float()
    y[torch.rand(n, tasks, generator=gen) < missing] = float("nan")
    loss = MaskedBCE()(logits, y)
    assert math.isfinite(float(loss))
    loss.backward()
    assert torch.isfinite(logits.grad).all()


@settings(max_examples=max(EXAMPLES // 2, 5), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 40), d=st.integers(1, 4), classes=st.integers(1, 3), scale=SCALES,
       duplicate=st.booleans(), seed=st.integers(0, 2**16))
def test_the_svm_evaluator_scores_any_embeddings_or_says_why_not(n, d, classes, scale, duplicate, seed):
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(n, d)) * scale
    if duplicate:
        emb[:] = emb[0]  # every graph embedded alike (a collapsed encoder)
    y = rng.integers(0, classes, size=n)
    try:
        res = svm_evaluate(emb, y, folds=3, inner_folds=2, n_jobs=1)
    except DataError as exc:  # too few graphs or classes for the folds: named, with the counts
        assert "the SVM protocol" in str(exc) and "class" in str(exc), str(exc)
        return
    assert all(math.isfinite(res[k]) and 0.0 <= res[k] <= 1.0 for k in ("test_acc", "val_acc"))
    assert math.isfinite(res["test_std"]) and len(res["folds"]) == 3


def test_the_svm_evaluator_refuses_non_finite_embeddings():
    emb = np.ones((20, 2))
    emb[3, 1] = np.nan
    with pytest.raises((AutoGCLError, ValueError), match="NaN or inf"):
        svm_evaluate(emb, np.arange(20) % 2, folds=3, inner_folds=2)
