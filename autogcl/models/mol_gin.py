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

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import MessagePassing, global_mean_pool
from torch_geometric.utils import add_self_loops

from .embed import embed

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
        h = self.atom(x[:, 0]) + self.chirality(x[:, 1])
        keep = getattr(data, "node_keep", None)
        if keep is not None:
            token = self.atom.weight[self.mask_atom] + self.chirality.weight[0]
            mask = getattr(data, "node_mask", None)
            h = h * keep.view(-1, 1)
            if mask is not None:
                h = h + mask.view(-1, 1) * token
        return h


class BondGINConv(MessagePassing):
    """GIN layer with bond embeddings: ``MLP(sum_j (h_j + e_ij))`` over neighbours and a
    self-loop (bond type ``vocab["self_loop_bond"]``); MLP = Linear(d, 2d) -> ReLU -> Linear(2d, d)."""

    def __init__(self, dim: int, vocab):
        super().__init__(aggr="add")
        vocab = check_vocab(vocab)
        self.self_loop_bond = vocab["self_loop_bond"]
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))
        self.bond = nn.Embedding(vocab["num_bond_types"], dim)
        self.direction = nn.Embedding(vocab["num_bond_dirs"], dim)
        nn.init.xavier_uniform_(self.bond.weight)
        nn.init.xavier_uniform_(self.direction.weight)

    def forward(self, x, edge_index, edge_attr):
        n = x.shape[0]
        loops = torch.zeros(n, 2, dtype=edge_attr.dtype, device=edge_attr.device)
        loops[:, 0] = self.self_loop_bond
        edge_index, _ = add_self_loops(edge_index, num_nodes=n)
        edge_attr = torch.cat([edge_attr, loops], dim=0)
        e = self.bond(edge_attr[:, 0]) + self.direction(edge_attr[:, 1])
        return self.mlp(self.propagate(edge_index, x=x, e=e))

    def message(self, x_j, e):
        return x_j + e


class MolGNN(nn.Module):
    """Node representations: ``num_layers`` x (BondGINConv -> BatchNorm -> ReLU (not after
    the last) -> dropout); JK = last."""

    def __init__(self, vocab, dim: int = 300, num_layers: int = 5, dropout: float = 0.0):
        super().__init__()
        if num_layers < 1:
            raise ValueError("the molecule GIN needs at least one layer")
        self.vocab = check_vocab(vocab)
        self.dim, self.dropout = dim, dropout
        self.atoms = AtomEncoder(dim, vocab)
        self.convs = nn.ModuleList(BondGINConv(dim, vocab) for _ in range(num_layers))
        self.bns = nn.ModuleList(nn.BatchNorm1d(dim) for _ in range(num_layers))

    def forward(self, data) -> torch.Tensor:
        h = self.atoms(data)
        last = len(self.convs) - 1
        for i, (conv, bn) in enumerate(zip(self.convs, self.bns)):
            h = bn(conv(h, data.edge_index, data.edge_attr))
            if i < last:
                h = F.relu(h)
            h = F.dropout(h, self.dropout, training=self.training)
        return h


class MolEncoder(nn.Module):
    """Graph embedding: mean pool of :class:`MolGNN` node representations (``out_dim``)."""

    def __init__(self, vocab, dim: int = 300, num_layers: int = 5, dropout: float = 0.0):
        super().__init__()
        self.gnn = MolGNN(vocab, dim, num_layers, dropout)
        self.out_dim = dim

    def forward(self, data) -> torch.Tensor:
        return global_mean_pool(self.gnn(data), data.batch, size=int(data.num_graphs))

    def embed(self, loader) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Graph embeddings (eval mode) and labels of every graph the loader yields."""
        return embed(self, loader)

    def config(self) -> dict:
        return {"dim": self.gnn.dim, "num_layers": len(self.gnn.convs), "vocab": dict(self.gnn.vocab)}


class MolPredictor(nn.Module):
    """Fine-tuning model: encoder (dropout inside the GNN) and one linear logit per task."""

    def __init__(self, num_tasks: int, vocab, dim: int = 300, num_layers: int = 5, dropout: float = 0.5):
        super().__init__()
        self.encoder = MolEncoder(vocab, dim, num_layers, dropout)
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


ENCODER_FORMAT = "autogcl-molecule-encoder-1"


def save_encoder(encoder: MolEncoder, path, meta: dict, half: bool = False) -> None:
    """Write a pre-trained encoder file: weights, architecture and how it was made.

    ``half`` stores the floating-point weights as float16 (half the size, for shipping);
    :func:`load_encoder` gives float32 back either way."""
    from ..atomic import atomic_save

    state = {k: (v.half() if half and v.is_floating_point() else v)
             for k, v in encoder.state_dict().items()}
    atomic_save({"format": ENCODER_FORMAT, "encoder": encoder.config(), "state_dict": state,
                 "meta": meta}, path)


def load_encoder(path) -> tuple[dict, dict, dict]:
    """``(state_dict, architecture, meta)`` of an encoder file, with clear errors."""
    from pathlib import Path

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
    state = {k: (v.float() if v.is_floating_point() else v) for k, v in blob["state_dict"].items()}
    return state, blob["encoder"], blob.get("meta", {})
