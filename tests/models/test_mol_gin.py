"""The molecule GIN: shapes, generator weights, encoder files."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch

from autogcl.augment import MoleculeViewGenerator
from autogcl.augment.random import attr_mask
from autogcl.data.molecules import VOCAB, smiles_to_graph
from autogcl.errors import ConfigError, DataError
from autogcl.models.mol_gin import (
    MolEncoder,
    MolNodeScorer,
    MolPredictor,
    load_encoder,
    save_encoder,
)


def mol_batch():
    return Batch.from_data_list([smiles_to_graph(s) for s in ["CCO", "c1ccccc1", "[Na+]", "CC(=O)N"]])


def test_shapes_and_pooling():
    b = mol_batch()
    enc = MolEncoder(VOCAB, dim=16, num_layers=3).eval()
    z = enc(b)
    assert z.shape == (4, 16) and torch.isfinite(z).all()
    pred = MolPredictor(num_tasks=5, vocab=VOCAB, dim=16, num_layers=2)
    assert pred(b).shape == (4, 5)


def test_the_sum_readout_is_the_mean_times_the_atoms():
    b = mol_batch()
    mean = MolEncoder(VOCAB, dim=16, num_layers=2).eval()
    total = MolEncoder(VOCAB, dim=16, num_layers=2, readout="sum").eval()
    total.load_state_dict(mean.state_dict())  # no weights of its own: any encoder file fits
    atoms = torch.bincount(b.batch).float().view(-1, 1)
    torch.testing.assert_close(total(b), mean(b) * atoms, rtol=1e-5, atol=1e-6)
    with pytest.raises(ConfigError, match="unknown readout 'max'"):
        MolPredictor(1, VOCAB, dim=8, num_layers=1, readout="max")


class _GivenNodes(torch.nn.Module):
    """Stands in for the GIN: each atom's representation is the batch's ``h`` row."""

    def forward(self, data):
        return data.h


def test_the_scaled_sum_readout_is_the_sum_over_the_scale_on_a_hand_built_batch():
    h = torch.tensor([[1.0, 2.0], [3.0, -4.0], [5.0, 6.0], [0.5, 0.25], [-1.0, 7.0]])
    b = Batch(h=h, batch=torch.tensor([0, 0, 1, 1, 1]), ptr=torch.tensor([0, 2, 5]))
    enc = MolEncoder(VOCAB, dim=2, num_layers=1, readout="scaled_sum", readout_scale=4.0)
    enc.gnn = _GivenNodes()
    # sums (4, -2) and (4.5, 13.25), divided by 4: exact in binary floating point
    assert torch.equal(enc(b), torch.tensor([[1.0, -0.5], [1.125, 3.3125]]))
    enc.readout, enc.readout_scale = "mean", None
    assert torch.equal(enc(b), torch.tensor([[2.0, -1.0], [1.5, 13.25 / 3]]))


def test_the_scaled_sum_needs_a_positive_scale_and_fits_any_encoder_file():
    b = mol_batch()
    mean = MolEncoder(VOCAB, dim=16, num_layers=2).eval()
    scaled = MolEncoder(VOCAB, dim=16, num_layers=2, readout="scaled_sum", readout_scale=2.5).eval()
    scaled.load_state_dict(mean.state_dict())  # no weights of its own
    atoms = torch.bincount(b.batch).float().view(-1, 1)
    torch.testing.assert_close(scaled(b), mean(b) * atoms / 2.5, rtol=1e-5, atol=1e-6)
    assert MolEncoder(VOCAB, dim=8, num_layers=1, readout="mean", readout_scale=3.0).readout_scale is None
    for bad in (None, 0.0, -1.0, float("nan"), float("inf"), "3"):
        with pytest.raises(ConfigError, match="readout 'scaled_sum' needs a positive scale"):
            MolPredictor(1, VOCAB, dim=8, num_layers=1, readout="scaled_sum", readout_scale=bad)


def test_generator_views_carry_gradients_to_the_generator():
    torch.manual_seed(0)
    b = mol_batch()
    gen = MoleculeViewGenerator(MolNodeScorer(3, VOCAB, hidden=8), add_mask=True, dropped="remove")
    view, _sample = gen(b)
    assert view.x.dtype == torch.long and view.node_keep.shape[0] == view.num_nodes
    assert torch.equal(view.node_keep + view.node_mask, torch.ones(view.num_nodes))  # dropped are gone
    assert int(view.batch.max()) == 3  # every molecule keeps an atom
    enc = MolEncoder(VOCAB, dim=8, num_layers=2)
    enc(view).sum().backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in gen.parameters())


def test_mask_weights_equal_the_mask_atom():
    b = mol_batch()
    enc = MolEncoder(VOCAB, dim=8, num_layers=1).eval()
    masked = b.clone()
    masked.node_keep = torch.zeros(b.num_nodes)
    masked.node_mask = torch.ones(b.num_nodes)
    ids = b.clone()
    ids.x = torch.zeros_like(b.x)
    ids.x[:, 0] = 119
    assert torch.allclose(enc(masked), enc(ids), atol=1e-6)
    view = attr_mask(b, 0.5)  # GraphCL's attribute masking on atom ids
    assert view.node_mask.sum() == 1 + 3 + 0 + 2  # floor(n / 2) atoms of molecules of 3, 6, 1, 4 atoms


def test_encoder_file_round_trip(tmp_path):
    enc = MolEncoder(VOCAB, dim=12, num_layers=2)
    save_encoder(enc, tmp_path / "e.pt", {"method": "autogcl"}, half=True)
    state, arch, meta = load_encoder(tmp_path / "e.pt")
    assert arch == {"dim": 12, "num_layers": 2, "vocab": VOCAB} and meta["method"] == "autogcl"
    other = MolEncoder(**arch)
    other.load_state_dict(state)
    for k, v in enc.state_dict().items():
        assert torch.allclose(other.state_dict()[k].float(), v.float(), atol=1e-2)
    with pytest.raises(DataError, match="no such checkpoint"):
        load_encoder(tmp_path / "missing.pt")
    torch.save({"x": 1}, tmp_path / "bad.pt")
    with pytest.raises(DataError, match="not an autogcl molecule encoder"):
        load_encoder(tmp_path / "bad.pt")


def _reference_layer(conv, x, edge_index, edge_attr):
    """Hu et al.'s GIN layer written per bond: self-loops added, every message ``h_j + bond[t] +
    direction[d]`` summed at its target, then the MLP (what BondGINConv computes otherwise)."""
    n = x.shape[0]
    loops = torch.arange(n)
    src = torch.cat([edge_index[0], loops])
    dst = torch.cat([edge_index[1], loops])
    types = torch.cat([edge_attr[:, 0], torch.full((n,), VOCAB["self_loop_bond"])])
    dirs = torch.cat([edge_attr[:, 1], torch.zeros(n, dtype=torch.long)])
    msg = x[src] + conv.bond.weight[types] + conv.direction.weight[dirs]
    return conv.mlp(torch.zeros_like(x).index_add(0, dst, msg))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])  # float64: the gather-and-scatter path
def test_bond_gin_layer_equals_the_per_bond_formula_with_its_gradients(dtype):
    from autogcl.models.mol_gin import BondGINConv, bond_structure

    torch.manual_seed(0)
    batch = mol_batch()
    batch.edge_index = torch.cat([batch.edge_index, batch.edge_index[:, :1]], 1)  # a repeated bond counts twice
    batch.edge_attr = torch.cat([batch.edge_attr, batch.edge_attr[:1]])
    conv = BondGINConv(6, VOCAB).to(dtype)
    x = torch.randn(batch.num_nodes, 6, dtype=dtype, requires_grad=True)
    structure = bond_structure(batch.edge_index, batch.edge_attr, batch.num_nodes, VOCAB, dtype)
    assert (structure.adj is not None) == (dtype == torch.float32)
    got = conv(x, batch.edge_index, batch.edge_attr)
    want = _reference_layer(conv, x, batch.edge_index, batch.edge_attr)
    w = torch.randn_like(want)
    g_got = torch.autograd.grad((got * w).sum(), [x, *conv.parameters()])
    g_want = torch.autograd.grad((want * w).sum(), [x, *conv.parameters()])
    tol = 1e-5 if dtype == torch.float32 else 1e-12  # the same sums in another order
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)
    for a, b in zip(g_got, g_want):
        torch.testing.assert_close(a, b, rtol=tol, atol=tol)


def test_the_encoder_runs_under_bfloat16_autocast_close_to_float32():
    """``--precision bf16`` runs the step under autocast: a layer's bond sum (addmm) comes out in
    bfloat16 while the atoms' features are float32; the neighbour sum adds them in the wider type
    (it raised "index_add_(): self (BFloat16) and source (Float)" on an H100). CPU autocast takes
    the same path as the GPU's (gather and scatter); bfloat16 keeps 8 bits of mantissa, and the
    training-mode BatchNorm over 13 atoms amplifies it: over seeds 0-4 the embeddings differ from
    float32 by 1.2-4.5% in norm, so the test allows 10%."""
    torch.manual_seed(0)
    b = mol_batch()
    enc = MolEncoder(VOCAB, dim=16, num_layers=3)
    want = enc(b)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = enc(b)
    got.float().sum().backward()
    assert got.dtype == torch.bfloat16
    assert float((got.float() - want).norm() / want.norm()) < 0.1
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in enc.parameters() if p.requires_grad)


def test_a_bond_structure_lives_no_longer_than_its_batch():
    """The structure cache is keyed by a batch's ``edge_index`` and holds no view of it (a view
    kept its key, and the batch, alive: about 1.7 MB a step of width-8 pre-training at batch 256
    stayed in memory for good); a lookup still gives the bonds' ends."""
    import gc
    import weakref

    from autogcl.models import mol_gin

    gc.collect()
    before = len(mol_gin._STRUCTURE)
    batch = mol_batch()
    first = mol_gin.bond_structure(batch.edge_index, batch.edge_attr, batch.num_nodes, VOCAB)
    again = mol_gin.bond_structure(batch.edge_index, batch.edge_attr, batch.num_nodes, VOCAB)
    assert again.counts is first.counts and again.adj is first.adj  # computed once
    assert torch.equal(again.src, batch.edge_index[0]) and torch.equal(again.dst, batch.edge_index[1])
    assert len(mol_gin._STRUCTURE) == before + 1
    key = weakref.ref(batch.edge_index)
    del batch, first, again
    gc.collect()
    assert key() is None and len(mol_gin._STRUCTURE) == before


def test_pretraining_steps_keep_no_structure_of_their_batches():
    """Steps of AutoGCL's molecule pre-training (both generators' views, the encoder over two
    views): once a step's batch is gone, nothing of its bond structures stays cached."""
    import gc

    from autogcl.api.pretrain import MoleculePretrainer
    from autogcl.models import mol_gin

    torch.manual_seed(0)
    strategy = MoleculePretrainer("autogcl", dim=8, gen_hidden=8, batch_size=4).build_strategy()
    for m in strategy.modules().values():
        m.train()
    gc.collect()
    before = len(mol_gin._STRUCTURE)
    for step in range(6):
        strategy.losses(mol_batch(), [step % 3, (step + 1) % 3])["loss"].backward()
    gc.collect()
    assert len(mol_gin._STRUCTURE) == before
