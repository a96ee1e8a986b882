"""Property-based tests of the public API on random graphs: 1-node and edgeless graphs,
self-loops, duplicate edges, isolated nodes, features of any scale and dtype, broken
edge indices or none at all, labels of any kind (float ones too) or missing, PyG transforms as
augmentations. Every call gives finite output or a clear
AutoGCL error (never another exception, never NaN), and a fit never leaves BatchNorm
statistics that poison later embeddings."""

import os

import pytest
import torch

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch_geometric.data import Batch, Data

import autogcl
from autogcl.augment import Compose, RandomAugmentor, ViewGenerator
from autogcl.errors import AutoGCLError, DataError

PROPS = settings(max_examples=int(os.environ.get("AUTOGCL_PROPERTY_EXAMPLES", "20")), deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

FEATURES = 3
DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64, "int32": torch.int32}


@st.composite
def graphs(draw, labels=True, features=True):
    """A random graph: 1 to 7 nodes, random edges (self-loops, duplicates and isolated nodes
    allowed), features of a random dtype and scale (``features``; else none), a random label
    or none."""
    n = draw(st.integers(1, 7))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=12))
    ei = torch.tensor(pairs, dtype=torch.long).t().reshape(2, -1)
    g = Data(edge_index=ei, num_nodes=n)
    kind = draw(st.sampled_from(list(DTYPES))) if features else "none"
    if kind != "none":
        scale = 10.0 ** draw(st.integers(-6, 9 if kind.startswith("int") else 20))
        values = draw(st.lists(st.floats(-1, 1, allow_nan=False, width=32), min_size=n * FEATURES,
                               max_size=n * FEATURES))
        x = torch.tensor(values, dtype=torch.float64).view(n, FEATURES) * scale
        g.x = x.round().to(DTYPES[kind]) if not DTYPES[kind].is_floating_point else x.to(DTYPES[kind])
    if labels:
        y = draw(st.sampled_from([None, -1, 0, 1, 2, 1.0, float("nan"), 0.5, "cat"]))
        if y is not None:
            g.y = y if isinstance(y, str) else torch.tensor([y])
    return g


@st.composite
def graph_lists(draw, min_size, max_size, labels=True, features=None):
    """Graphs that all have features, or none has (a model reads one width)."""
    features = draw(st.booleans()) if features is None else features
    return draw(st.lists(graphs(labels, features), min_size=min_size, max_size=max_size))


REFERENCE = Data(x=torch.rand(4, FEATURES), edge_index=torch.tensor([[0, 1, 2], [1, 2, 3]]))


@PROPS
@given(graph_lists(2, 6), st.integers(2, 4),
       st.sampled_from(["autogcl", "graphcl"]))
def test_fit_embed_inspect_give_finite_output_or_a_clear_error(items, batch_size, kind):
    torch.manual_seed(0)
    model = (autogcl.AutoGCL(hidden=4, num_layers=2, add_mask=True) if kind == "autogcl"
             else autogcl.GraphCL(hidden=4, num_layers=2))
    try:
        rows = model.fit(items, epochs=1, batch_size=batch_size, seed=0, progress=False)
    except AutoGCLError as exc:
        hypothesis.event(f"fit refused: {str(exc).split(':')[-1][:40]}")
        assert "scale them" in str(exc), exc  # features too large: said, naming the graph
        return
    hypothesis.event("fit trained")
    assert all(torch.isfinite(torch.tensor(float(r["loss"]))) for r in rows)
    z = model.embed(items)
    assert z.shape == (len(items), 8) and torch.isfinite(z).all()
    if getattr(items[0], "x", None) is None:
        ref = Data(edge_index=REFERENCE.edge_index, num_nodes=4)
    else:
        ref = REFERENCE
    assert torch.isfinite(model.embed([ref])).all()  # no poisoned BatchNorm statistics
    assert all(torch.isfinite(b).all() for b in model.buffers() if b.is_floating_point())
    if kind == "autogcl":
        d1, d2 = model.inspect(items)
        n = sum(g.num_nodes for g in items)
        assert d1.op.shape == (n,) and torch.isfinite(d1.probs).all()


@PROPS
@given(graph_lists(1, 4, labels=False, features=False), st.data())
def test_bad_edge_index_is_always_a_clear_error(items, data):
    i = data.draw(st.integers(0, len(items) - 1))
    g = items[i]
    n = g.num_nodes
    bad = data.draw(st.sampled_from([
        torch.tensor([[0, n], [n, 0]]),  # out of range
        torch.tensor([[-1], [0]]),  # negative
        torch.zeros(3, 2, dtype=torch.long),  # wrong shape
        torch.zeros(2, dtype=torch.long),  # 1-D
        torch.zeros(2, 1),  # float
        [[0], [0]],  # not a tensor
    ]))
    g.edge_index = bad
    with pytest.raises(DataError, match=f"graph {i}: edge_index"):
        autogcl.AutoGCL(hidden=4, num_layers=1).embed(items)


@PROPS
@given(graph_lists(2, 8))
def test_semi_supervised_on_labels_missing_on_some_graphs(items):
    torch.manual_seed(0)
    model = autogcl.SemiSupervised(hidden=4, num_layers=1)
    try:
        model.fit(items, epochs=1, batch_size=3, seed=0, progress=False)
    except AutoGCLError as exc:
        hypothesis.event("semi refused")
        assert any(s in str(exc) for s in ("unlabeled", "class index", "values", "not a number", "negative",
                                             "scale them")), exc
        return
    hypothesis.event("semi trained")
    p = model.predict_proba(items)
    assert p.shape[0] == len(items) and torch.isfinite(p).all()


@PROPS
@given(st.lists(graphs(labels=False), min_size=1, max_size=5), st.sampled_from(RandomAugmentor.names),
       st.floats(0.0, 0.9))
def test_augmentors_keep_batches_valid(items, name, ratio):
    for g in items:
        if getattr(g, "x", None) is None:
            g.x = torch.ones(g.num_nodes, FEATURES)
        g.x = g.x.float().clamp(-1e6, 1e6)
    batch = Batch.from_data_list(items)
    torch.manual_seed(0)
    for aug in (RandomAugmentor(name, ratio), Compose([RandomAugmentor(name, ratio)]),
                ViewGenerator(FEATURES, hidden=4, dropped="remove").as_transform()):
        view = aug(batch)
        assert int(view.num_graphs) == len(items)
        assert torch.equal(torch.unique(view.batch), torch.arange(len(items)))  # no graph emptied
        if view.edge_index.numel():
            assert int(view.edge_index.max()) < view.num_nodes and int(view.edge_index.min()) >= 0
        assert torch.isfinite(view.x).all()
        one = aug(items[0])
        assert isinstance(one, Data) and one.num_nodes >= 1


@PROPS
@given(st.integers(4, 30), st.integers(1, 6), st.integers(-3, 6), st.lists(st.integers(-1, 2), min_size=30,
                                                                           max_size=30), st.booleans())
def test_evaluators_give_a_score_or_a_clear_error(n, d, scale, labels, svm):
    x = torch.randn(n, d, generator=torch.Generator().manual_seed(n)) * 10.0 ** scale
    y = torch.tensor(labels[:n])
    evaluator = autogcl.SVMEvaluator(folds=2, inner_folds=2) if svm else autogcl.LinearProbe(folds=2, epochs=5,
                                                                                            device="cpu")
    try:
        res = evaluator(x, y)
    except DataError as exc:
        assert "two classes" in str(exc) or "too few labeled graphs" in str(exc), exc
        return
    assert 0.0 <= res["acc"] <= 1.0 and res["unlabeled_left_out"] == int((y < 0).sum())


# ------------------------------------------------------------------ new inputs: graphs without edge_index,
# float labels, PyG transforms as augmentations

import numpy as np  # noqa: E402
import torch_geometric.transforms as T  # noqa: E402

from autogcl.augment import as_augmentation  # noqa: E402


@PROPS
@given(graph_lists(2, 6, labels=False), st.data())
def test_graphs_without_edge_index_embed_as_edgeless_graphs(items, data):
    bare = data.draw(st.lists(st.integers(0, len(items) - 1), min_size=1, max_size=len(items), unique=True))
    for i in bare:
        del items[i].edge_index
    explicit = [g.clone() for g in items]
    for i in bare:
        explicit[i].edge_index = torch.empty(2, 0, dtype=torch.long)
    torch.manual_seed(0)
    model = autogcl.GraphCL(hidden=4, num_layers=2)
    try:
        z = model.embed(items)
    except DataError as exc:
        assert "scale them" in str(exc), exc  # features too large, named (never a TypeError)
        return
    assert torch.isfinite(z).all()
    assert torch.equal(z, model.embed(explicit))


LABELS = st.sampled_from([0.0, 1.0, 2.0, 0.5, -1.0, float("nan"), 3.0])


@PROPS
@given(st.lists(LABELS, min_size=6, max_size=10))
def test_float_labels_train_or_are_refused_clearly(labels):
    items = [Data(x=torch.rand(3, FEATURES), edge_index=torch.tensor([[0, 1], [1, 2]]), y=torch.tensor([v]))
             for v in labels]
    values = [v for v in labels if v == v and v >= 0]
    if any(v != int(v) for v in values):
        expected = "is not a class index"
    elif not values:
        expected = "are unlabeled"
    elif min(values) > 0:
        expected = "with no class 0"
    else:
        expected = None
    torch.manual_seed(0)
    model = autogcl.SemiSupervised(hidden=4, num_layers=1)
    if expected is not None:
        hypothesis.event(f"refused: {expected}")
        with pytest.raises(DataError, match=expected):
            model.fit(items, epochs=1, batch_size=4, seed=0, progress=False)
        return
    hypothesis.event("trained")
    model.fit(items, epochs=1, batch_size=4, seed=0, progress=False)
    assert model.hparams["num_classes"] == max(2, int(max(values)) + 1)


@PROPS
@given(st.lists(st.sampled_from([0.0, 1.0, 2.0, float("nan")]), min_size=24, max_size=24))
def test_evaluators_read_integral_float_labels_as_classes(labels):
    x = torch.randn(24, 3, generator=torch.Generator().manual_seed(0))
    y = np.array(labels)
    as_int = np.nan_to_num(y, nan=-1).astype(int)
    probe = autogcl.LinearProbe(folds=2, epochs=5, device="cpu")
    try:
        expected = probe(x, as_int)
    except DataError:
        with pytest.raises(DataError):
            probe(x, y)
        return
    assert probe(x, y)["acc"] == expected["acc"]  # the same classes, the same fit: bit-exact by construction


PER_GRAPH = [T.VirtualNode(), T.HalfHop(), T.AddSelfLoops(), T.ToUndirected(), T.LocalDegreeProfile(),
             T.NormalizeFeatures()]


@PROPS
@given(st.lists(graphs(labels=False), min_size=1, max_size=5), st.sampled_from(PER_GRAPH))
def test_pyg_transforms_as_augmentations_keep_graphs_apart_or_are_named(items, transform):
    for g in items:
        g.x = (g.x if getattr(g, "x", None) is not None else torch.ones(g.num_nodes, FEATURES)).float()
        g.x = g.x.clamp(-1e6, 1e6)
    batch = Batch.from_data_list(items)
    torch.manual_seed(0)
    try:
        view = as_augmentation(transform)(batch)
    except DataError as exc:
        assert repr(transform).split("(")[0] in str(exc), exc
        hypothesis.event(f"named: {repr(transform)}")
        return
    assert int(view.num_graphs) == len(items) and view.x.shape == (view.batch.numel(), FEATURES)
    if view.edge_index.numel():
        src, dst = view.edge_index
        assert torch.equal(view.batch[src], view.batch[dst])  # no edge joins two graphs
