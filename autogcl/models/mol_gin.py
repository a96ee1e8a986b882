"""The molecule GIN of Hu et al. 2020 ("Strategies for pre-training graph neural networks")
and its heads.

Atoms enter as embeddings of (atom type, chirality); every GIN layer adds an embedding of
(bond type, bond direction) to the messages, with a self-loop bond per atom; 5 layers of
300, BatchNorm, ReLU between layers, dropout; JK = last layer; mean pooling.

A view made by a learnable generator carries ``node_keep`` / ``node_mask`` weights (the
straight-through one-hot sample); the encoder then uses
``keep * emb(atom) + mask * emb(mask atom)`` so that the generator receives gradients.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.weak import WeakIdKeyDictionary
from torch_geometric.nn import MessagePassing, global_add_pool, global_mean_pool

from ..choices import READOUT_MEAN, READOUT_SCALED_SUM, READOUT_SUM, READOUTS, check_choice
from ..errors import ConfigError
from .embed import embed
from .norm import SegmentBatchNorm

#: the vocabulary the embeddings are sized for: every model here takes one as ``vocab``
#: (e.g. :data:`autogcl.data.molecules.VOCAB`, the featurisation of Hu et al.)
VOCAB_KEYS = ("num_atom_types", "num_chirality", "num_bond_types", "num_bond_dirs", "mask_atom",
              "self_loop_bond")


def check_vocab(vocab) -> dict:
    """The vocabulary as a plain dict, with a clear error when an entry is missing."""
    missing = [k for k in VOCAB_KEYS if k not in (vocab or {})]
    if missing:
        raise ValueError(f"molecule vocabulary lacks {missing}; pass e.g. autogcl.data.molecules.VOCAB")
    return {k: int(vocab[k]) for k in VOCAB_KEYS}


class AtomEncoder(nn.Module):
    """Sum of the atom-type and chirality embeddings, honouring generator weights."""

    def __init__(self, dim: int, vocab):
        super().__init__()
        vocab = check_vocab(vocab)
        self.mask_atom = vocab["mask_atom"]
        self.atom = nn.Embedding(vocab["num_atom_types"], dim)
        self.chirality = nn.Embedding(vocab["num_chirality"], dim)
        nn.init.xavier_uniform_(self.atom.weight)
        nn.init.xavier_uniform_(self.chirality.weight)

    def forward(self, data) -> torch.Tensor:
        x = data.x
        # row lookups as index_select: the same numbers as nn.Embedding, and a backward that
        # adds rows (index_add) instead of embedding's much slower dense backward on the CPU
        h = self.atom.weight.index_select(0, x[:, 0]) + self.chirality.weight.index_select(0, x[:, 1])
        keep = getattr(data, "node_keep", None)
        if keep is not None:
            h = h * keep.view(-1, 1)
            mask = getattr(data, "node_mask", None)
            if mask is not None:
                token = self.atom.weight[self.mask_atom] + self.chirality.weight[0]
                h = h + mask.view(-1, 1) * token
        return h


#: bond structure of a batch, computed once for every layer and every network reading it; an
#: entry lives as long as its ``edge_index`` tensor, so it holds no view of that tensor (a view
#: would keep its key, and with it the batch, alive for good)
_STRUCTURE = WeakIdKeyDictionary()


def _csr(rows: torch.Tensor, cols: torch.Tensor, n: int, dtype: torch.dtype,
         values: torch.Tensor | None = None) -> torch.Tensor:
    """The ``n x n`` matrix with a 1 (or ``values[k]``) at every ``(rows[k], cols[k])`` (repeats
    add up), in CSR with 32-bit indices (what the CPU product reads without converting them at
    every call)."""
    order = torch.argsort(rows, stable=True)
    crow = torch.zeros(n + 1, dtype=torch.int32, device=rows.device)
    torch.cumsum(torch.bincount(rows, minlength=n), 0, out=crow[1:])
    cols = cols[order].to(torch.int32)
    ones = torch.ones(rows.numel(), dtype=dtype, device=rows.device) if values is None else values[order].to(dtype)
    with warnings.catch_warnings():  # "sparse CSR support is in beta": the product used here is long stable
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(crow, cols, ones, (n, n), check_invariants=False)


class _AddNeighbourSum(torch.autograd.Function):
    """``base + sum_j x_j`` over every atom's incoming bonds, as one sparse product with the
    adjacency (``addmm(base, adj, x)``; backward ``adj.T @ grad``) instead of a gather and a
    scatter of every bond's message: the same sum in another order (equal to float rounding),
    and faster on a CPU."""

    @staticmethod
    def forward(ctx, base, x, adj, adj_t):
        ctx.adj_t = adj_t
        return torch.addmm(base, adj, x)

    @staticmethod
    def backward(ctx, grad):
        return grad, torch.sparse.mm(ctx.adj_t, grad), None, None


class BondStructure(NamedTuple):
    """What every GIN layer of a molecule batch reads (:func:`bond_structure`)."""

    src: torch.Tensor
    dst: torch.Tensor
    counts: torch.Tensor
    adj: torch.Tensor | None  # incoming bonds as a CSR matrix (None: summed by gather and scatter)
    adj_t: torch.Tensor | None
    weight: torch.Tensor | None = None  # per bond, 1 where both atoms are in the view (None: every bond)

    def add_neighbour_sum(self, base: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """``base + sum_j x_j`` over every atom's incoming bonds (``base``: a fresh tensor, which the
        gather-and-scatter path updates in place)."""
        if self.adj is not None and x.dtype == base.dtype == self.adj.dtype and x.device == self.adj.device:
            return _AddNeighbourSum.apply(base, x, self.adj, self.adj_t)
        # in place on a fresh sum (addmm's backward does not read its output); under autocast
        # (--precision bf16) addmm gives bfloat16 and x is float32: summed in the wider type
        wide = torch.promote_types(base.dtype, x.dtype)
        msg = x.index_select(0, self.src).to(wide)
        return base.to(wide).index_add_(0, self.dst, msg if self.weight is None else msg * self.weight.view(-1, 1))


def bond_structure(edge_index: torch.Tensor, edge_attr: torch.Tensor, num_nodes: int, vocab: dict,
                   dtype: torch.dtype = torch.float32, alive: torch.Tensor | None = None) -> BondStructure:
    """The :class:`BondStructure` of a molecule batch: the bonds' ends, the adjacency (on a
    CPU: a sparse matrix, so that a layer's neighbour sum is one product) and for every atom
    how many incoming bonds of each type and of each direction it has, its self-loop included
    (``counts``: ``num_nodes x (bond types + directions)``, the type counts, then the direction
    counts). A GIN layer's bond messages, ``sum_j (bond[t_ij] + direction[d_ij])``, are then one
    matrix product with the two tables stacked (``counts @ [bond; direction]``) instead of an
    embedding lookup per bond. Cached per ``edge_index`` tensor, so the encoder and both
    generators of a step compute it once per batch or view.

    ``alive`` (one 0/1 weight per atom): the atoms of weight 0 are out of the view (removed in
    place, with the batch's shapes kept): a bond counts only between two atoms of weight 1, the
    same sums as the batch without those atoms and their bonds."""
    hit = _STRUCTURE.get(edge_index)
    if hit is not None and hit[0] is edge_attr and hit[1] == num_nodes and hit[2].counts.dtype == dtype \
            and hit[3] is alive:
        return hit[2]._replace(src=edge_index[0], dst=edge_index[1])
    types = vocab["num_bond_types"]
    width = types + vocab["num_bond_dirs"]
    src, dst = edge_index[0], edge_index[1]
    counts = torch.zeros(num_nodes, width, dtype=dtype, device=edge_index.device)
    weight = None if alive is None else (alive.index_select(0, src) * alive.index_select(0, dst)).to(dtype)
    ones = torch.ones_like(dst, dtype=counts.dtype) if weight is None else weight
    counts.view(-1).index_add_(0, torch.cat([dst * width + edge_attr[:, 0], dst * width + types + edge_attr[:, 1]]),
                               torch.cat([ones, ones]))
    counts[:, vocab["self_loop_bond"]] += 1.0  # every atom's self-loop: its bond type ...
    counts[:, types] += 1.0  # ... and bond direction 0
    sparse = edge_index.device.type == "cpu" and dtype == torch.float32  # the GPU keeps gather and scatter
    adj, adj_t = (_csr(dst, src, num_nodes, dtype, weight), _csr(src, dst, num_nodes, dtype, weight)) if sparse \
        else (None, None)
    out = BondStructure(src, dst, counts, adj, adj_t, weight)
    _STRUCTURE[edge_index] = (edge_attr, num_nodes, out._replace(src=None, dst=None), alive)
    return out


class BondGINConv(MessagePassing):
    """GIN layer with bond embeddings: ``MLP(sum_j (h_j + e_ij))`` over neighbours and a
    self-loop (bond type ``vocab["self_loop_bond"]``); MLP = Linear(d, 2d) -> ReLU -> Linear(2d, d).

    Computed as ``h_i + counts_i @ [bond; direction] + sum_j h_j``: the same sum, with the bond
    embeddings summed per atom by one matrix product and the neighbours' states by one sparse
    product (:func:`bond_structure`), three operations in all."""

    def __init__(self, dim: int, vocab):
        super().__init__(aggr="add")
        vocab = check_vocab(vocab)
        self.vocab = vocab
        self.self_loop_bond = vocab["self_loop_bond"]
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))
        self.bond = nn.Embedding(vocab["num_bond_types"], dim)
        self.direction = nn.Embedding(vocab["num_bond_dirs"], dim)
        nn.init.xavier_uniform_(self.bond.weight)
        nn.init.xavier_uniform_(self.direction.weight)

    def forward(self, x, edge_index, edge_attr, structure: BondStructure | None = None):
        structure = structure or bond_structure(edge_index, edge_attr, x.shape[0], self.vocab, x.dtype)
        # the self term and the bond messages in one product, plus the neighbours' sum
        agg = torch.addmm(x, structure.counts, torch.cat([self.bond.weight, self.direction.weight]))
        return self.mlp(structure.add_neighbour_sum(agg, x))


class MolGNN(nn.Module):
    """Node representations: ``num_layers`` x (BondGINConv -> BatchNorm -> ReLU (not after
    the last) -> dropout); JK = last."""

    def __init__(self, vocab, dim: int = 300, num_layers: int = 5, dropout: float = 0.0):
        super().__init__()
        if num_layers < 1:
            raise ConfigError(f"the molecule GIN needs at least one layer (num_layers={num_layers})")
        self.vocab = check_vocab(vocab)
        self.dim, self.dropout = dim, dropout
        self.atoms = AtomEncoder(dim, vocab)
        self.convs = nn.ModuleList(BondGINConv(dim, vocab) for _ in range(num_layers))
        self.bns = nn.ModuleList(SegmentBatchNorm(dim) for _ in range(num_layers))

    def forward(self, data) -> torch.Tensor:
        """Node representations; the rows of atoms a view removed in place (``node_alive`` 0)
        are computed but read by nothing: no bond, BatchNorm statistics or pooling."""
        h = self.atoms(data)
        alive = getattr(data, "node_alive", None)
        structure = bond_structure(data.edge_index, data.edge_attr, h.shape[0], self.vocab, h.dtype, alive)
        segments = getattr(data, "_segments", None)  # two views in one batch: normalised apart
        last = len(self.convs) - 1
        for i, (conv, bn) in enumerate(zip(self.convs, self.bns)):
            h = bn(conv(h, data.edge_index, data.edge_attr, structure), segments, alive)
            if i < last:
                h = F.relu(h)
            if self.dropout > 0:
                h = F.dropout(h, self.dropout, training=self.training)
        return h


#: the pooling of each readout of :data:`autogcl.choices.READOUTS` (the scaled sum divides the
#: sum by the readout's scale)
POOLS = {READOUT_MEAN: global_mean_pool, READOUT_SUM: global_add_pool, READOUT_SCALED_SUM: global_add_pool}


def check_readout(readout: str) -> str:
    """``readout`` if it is one of :data:`autogcl.choices.READOUTS`, else a :class:`ConfigError`."""
    return check_choice("readout", readout, READOUTS)


def readout_scale_of(readout: str, scale: float | None) -> float | None:
    """The scaled sum's divisor (a positive number, else a :class:`ConfigError`); ``None`` for
    the other readouts, which have none."""
    if check_readout(readout) != READOUT_SCALED_SUM:
        return None
    if not (isinstance(scale, numbers.Real) and math.isfinite(scale) and scale > 0):
        raise ConfigError(f"readout {READOUT_SCALED_SUM!r} needs a positive scale (e.g. the training molecules' "
                          f"mean atom count), got {scale!r}")
    return float(scale)


class MolEncoder(nn.Module):
    """Graph embedding: mean pool (or, ``readout="sum"``, sum; ``"scaled_sum"``, sum divided by
    ``readout_scale``) of :class:`MolGNN` node representations (``out_dim``). The readout has no
    weights: an encoder file fits any."""

    segment_norm = True  #: reads two views in one batch (``ContrastModel.encode_pair``)

    def __init__(self, vocab, dim: int = 300, num_layers: int = 5, dropout: float = 0.0,
                 readout: str = READOUT_MEAN, readout_scale: float | None = None):
        super().__init__()
        self.gnn = MolGNN(vocab, dim, num_layers, dropout)
        self.out_dim = dim
        self.readout_scale = readout_scale_of(readout, readout_scale)
        self.readout = readout

    def forward(self, data) -> torch.Tensor:
        h = self.gnn(data)
        alive = getattr(data, "node_alive", None)
        size = int(data.num_graphs)
        if alive is None:
            pooled = POOLS[self.readout](h, data.batch, size=size)
        else:  # the atoms in the view only
            pooled = global_add_pool(h * alive.to(h.dtype).view(-1, 1), data.batch, size=size)
            if self.readout == READOUT_MEAN:
                pooled = pooled / global_add_pool(alive.to(h.dtype).view(-1, 1), data.batch, size=size).clamp_min(1.0)
        return pooled / self.readout_scale if self.readout_scale is not None else pooled

    def embed(self, loader) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Graph embeddings (eval mode) and labels of every graph the loader yields."""
        return embed(self, loader)

    def config(self) -> dict:
        return {"dim": self.gnn.dim, "num_layers": len(self.gnn.convs), "vocab": dict(self.gnn.vocab)}


class MolPredictor(nn.Module):
    """Fine-tuning model: encoder (dropout inside the GNN, ``readout`` pooling, ``readout_scale``
    for the scaled sum) and one linear output per task."""

    def __init__(self, num_tasks: int, vocab, dim: int = 300, num_layers: int = 5, dropout: float = 0.5,
                 readout: str = READOUT_MEAN, readout_scale: float | None = None):
        super().__init__()
        self.encoder = MolEncoder(vocab, dim, num_layers, dropout, readout, readout_scale)
        self.head = nn.Linear(dim, num_tasks)

    def forward(self, data) -> torch.Tensor:
        return self.head(self.encoder(data))


class MolNodeScorer(nn.Module):
    """The molecule view generator's scorer: a small :class:`MolGNN` and a linear layer to
    one logit per operation (hidden 128, as the released code)."""

    def __init__(self, num_ops: int, vocab, hidden: int = 128, num_layers: int = 2):
        super().__init__()
        self.gnn = MolGNN(vocab, hidden, num_layers)
        self.out = nn.Linear(hidden, num_ops)

    def forward(self, data) -> torch.Tensor:
        return self.out(F.relu(self.gnn(data)))

    @staticmethod
    def grouped(scorers, data) -> torch.Tensor | None:
        """Several scorers' logits in one pass (:func:`grouped_scores`)."""
        return grouped_scores(scorers, data)


def grouped_scores(scorers, data) -> torch.Tensor | None:
    """The logits of several :class:`MolNodeScorer` of one shape on one batch in a single pass of
    stacked channels (``nodes x len(scorers) x ops``), or ``None`` where they cannot be grouped
    (shapes, BatchNorm settings, dropout or a data-parallel synced BatchNorm differ). Each
    layer's weights are stacked block-diagonally at every call, so every scorer keeps its own
    parameters, buffers and state dict, and gets the gradients its own pass would give; the
    BatchNorm running statistics are updated as by its own pass. Equal to each scorer's own
    logits to float rounding (a block-diagonal product adds exact zeros to the same terms)."""
    gnns = [s.gnn for s in scorers]
    g0 = gnns[0]
    if len(scorers) < 2 or any(type(s) is not MolNodeScorer for s in scorers):
        return None
    bns = [bn for g in gnns for bn in g.bns]
    if any(g.dim != g0.dim or len(g.convs) != len(g0.convs) or g.dropout > 0 or g.vocab != g0.vocab for g in gnns) \
            or any(s.out.out_features != scorers[0].out.out_features for s in scorers) \
            or any(type(bn) is not SegmentBatchNorm or bn.synced or bn.momentum is None or not bn.track_running_stats or not bn.affine
                   or bn.eps != g0.bns[0].eps or bn.momentum != g0.bns[0].momentum or bn.training != g0.training
                   for bn in bns):
        return None
    x = data.x

    def stack(tensors):
        return torch.cat(tensors, -1)

    h = stack([g.atoms.atom.weight for g in gnns]).index_select(0, x[:, 0]) \
        + stack([g.atoms.chirality.weight for g in gnns]).index_select(0, x[:, 1])
    alive = getattr(data, "node_alive", None)  # padding (pad_batch): out of every sum and statistic
    structure = bond_structure(data.edge_index, data.edge_attr, h.shape[0], g0.vocab, h.dtype, alive)
    last = len(g0.convs) - 1
    for i in range(last + 1):
        convs = [g.convs[i] for g in gnns]
        table = torch.cat([stack([c.bond.weight for c in convs]), stack([c.direction.weight for c in convs])])
        agg = structure.add_neighbour_sum(torch.addmm(h, structure.counts, table), h)
        h = F.relu(_block_linear([c.mlp[0] for c in convs], agg))
        h = _grouped_batch_norm([g.bns[i] for g in gnns], _block_linear([c.mlp[2] for c in convs], h), alive)
        if i < last:
            h = F.relu(h)
    logits = _block_linear([s.out for s in scorers], F.relu(h))
    return logits.view(logits.shape[0], len(scorers), -1)


def _block_linear(layers, x: torch.Tensor) -> torch.Tensor:
    """``nn.Linear`` layers applied side by side to the consecutive column blocks of ``x``."""
    weight = torch.block_diag(*[layer.weight for layer in layers])
    return torch.addmm(torch.cat([layer.bias for layer in layers]), x, weight.t())


def _grouped_batch_norm(bns, h: torch.Tensor, alive: torch.Tensor | None = None) -> torch.Tensor:
    """BatchNorm layers of one setting applied side by side to the column blocks of ``h``, each
    updating its own running statistics (as :class:`SegmentBatchNorm` without segments; with
    ``alive``, over the rows of weight 1)."""
    bn0 = bns[0]
    mean = torch.cat([bn.running_mean for bn in bns])
    var = torch.cat([bn.running_var for bn in bns])
    weight, bias = torch.cat([bn.weight for bn in bns]), torch.cat([bn.bias for bn in bns])
    if alive is not None and bn0.training:
        return _grouped_weighted_batch_norm(bns, h, alive, mean, var, weight, bias)
    stats = bn0.training and h.shape[0] > 1  # one row: the running statistics, unchanged (RowBatchNorm)
    out = F.batch_norm(h, mean, var, weight, bias, stats, bn0.momentum if stats else 0.0, bn0.eps)
    if stats:
        with torch.no_grad():
            for bn, m, v in zip(bns, mean.split(bn0.num_features), var.split(bn0.num_features)):
                bn.num_batches_tracked.add_(1)
                bn.running_mean.copy_(m)
                bn.running_var.copy_(v)
    return out


def _grouped_weighted_batch_norm(bns, h, alive, mean, var, weight, bias) -> torch.Tensor:
    """:func:`_grouped_batch_norm` in training over the rows of ``alive`` 1 only, chosen on the
    device (one such row: the running statistics, unchanged, as RowBatchNorm). The statistics in
    float32 under autocast, as BatchNorm's own; the output in ``h``'s type."""
    bn0 = bns[0]
    out_dtype = h.dtype
    if h.dtype in (torch.float16, torch.bfloat16):
        h = h.float()
    w = alive.to(h.dtype).view(-1, 1)
    count = w.sum()
    n = count.clamp_min(1.0)
    batch_mean = (h * w).sum(0) / n
    centred = h - batch_mean
    batch_var = (centred * centred * w).sum(0) / n
    single = count <= 1.0
    use_mean = torch.where(single, mean.to(h.dtype), batch_mean)
    use_var = torch.where(single, var.to(h.dtype), batch_var)
    out = (h - use_mean) * (torch.rsqrt(use_var + bn0.eps) * weight) + bias
    with torch.no_grad():
        m = torch.where(single, 0.0, bn0.momentum).to(mean.dtype)
        new_mean = mean.lerp(batch_mean.to(mean.dtype), m)
        new_var = var.lerp((batch_var * (n / (n - 1).clamp_min(1.0))).to(var.dtype), m)
        for bn, nm, nv in zip(bns, new_mean.split(bn0.num_features), new_var.split(bn0.num_features)):
            bn.num_batches_tracked.add_((~single).to(bn.num_batches_tracked.dtype))
            bn.running_mean.copy_(nm)
            bn.running_var.copy_(nv)
    return out.to(out_dtype)


ENCODER_FORMAT = "autogcl-molecule-encoder-1"


def save_encoder(encoder: MolEncoder, path, meta: dict, half: bool = False) -> None:
    """Write a pre-trained encoder file: weights (and their digest), architecture and how it was made.

    ``half`` stores the floating-point weights as float16 (half the size, for shipping);
    :func:`load_encoder` gives float32 back either way."""
    from ..atomic import atomic_save, with_digest

    state = {k: (v.half() if half and v.is_floating_point() else v)
             for k, v in encoder.state_dict().items()}
    atomic_save(with_digest({"format": ENCODER_FORMAT, "encoder": encoder.config(), "state_dict": state,
                             "meta": meta}), path)


def load_encoder(path) -> tuple[dict, dict, dict]:
    """``(state_dict, architecture, meta)`` of an encoder file, with clear errors (its weights
    checked against their digest)."""
    from pathlib import Path

    from ..atomic import check_weights
    from ..errors import DataError

    path = Path(path)
    if path.is_dir():
        hint = " (name its encoder.pt)" if (path / "encoder.pt").is_file() else ""
        raise DataError(f"{path}: a folder, not a checkpoint file{hint}")
    if not path.is_file():
        raise DataError(f"{path}: no such checkpoint")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)  # plain tensors and dicts only
    except Exception as exc:  # torch raises many types for a damaged file
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""  # torch's messages run to paragraphs
        raise DataError(f"{path}: not a readable checkpoint ({type(exc).__name__}: {first})") from exc
    if not isinstance(blob, dict) or blob.get("format") != ENCODER_FORMAT:
        raise DataError(f"{path}: not an autogcl molecule encoder (expected format {ENCODER_FORMAT}; "
                        "use the encoder.pt of an `autogcl transfer pretrain` run)")
    missing = [k for k, kind in (("state_dict", dict), ("encoder", dict)) if not isinstance(blob.get(k), kind)]
    arch = blob.get("encoder") or {}
    if not missing and not all(isinstance(arch.get(k), int) and arch[k] > 0 for k in ("dim", "num_layers")):
        missing.append("encoder dim and num_layers")
    if missing or not all(isinstance(v, torch.Tensor) for v in blob["state_dict"].values()):
        has = ", ".join(sorted(map(str, blob))) or "nothing"
        raise DataError(f"{path}: a damaged molecule encoder (no {', '.join(missing) or 'tensors in state_dict'}; "
                        f"it holds {has}); use the encoder.pt of an `autogcl transfer pretrain` run")
    state = {k: (v.float() if v.is_floating_point() else v) for k, v in blob["state_dict"].items()}
    _check_shapes(path, state, arch)  # another architecture first: the clearer answer
    check_weights(blob, path)  # a tensor damaged on disk: refused by name
    return state, arch, blob.get("meta", {})


def _check_shapes(path, state: dict, arch: dict) -> None:
    """A :class:`DataError` naming the first weight whose shape is not the one of the
    architecture the file records (``load_state_dict`` would say "size mismatch")."""
    from ..data.molecules import VOCAB
    from ..errors import DataError

    try:
        expected = MolEncoder(arch.get("vocab", VOCAB), arch["dim"], arch["num_layers"]).state_dict()
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"{path}: a damaged molecule encoder (its architecture {arch} cannot be built: {exc})") from exc
    for name, value in state.items():
        if name in expected and tuple(value.shape) != tuple(expected[name].shape):
            raise DataError(f"{path} does not fit the molecule GIN it describes (dim {arch['dim']}, "
                            f"{arch['num_layers']} layers): {name} has shape {tuple(value.shape)}, the model's is "
                            f"{tuple(expected[name].shape)}")
