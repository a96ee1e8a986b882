"""Device-resident batching: a dataset held as one set of concatenated tensors with offsets
(as PyTorch Geometric's ``InMemoryDataset`` stores ``data`` and ``slices``), and mini-batches
built by gathering indices on the device, with no per-graph Python object in the loop.

* :class:`GraphStore` holds the graphs (on the CPU, on a GPU when they fit, else in pinned host
  memory) and builds the batch of any list of graph indices: the same tensors as
  ``torch_geometric.data.Batch.from_data_list`` of the same graphs (``x``, ``edge_index``
  incremented, ``edge_attr``, ``y``, ``batch``, ``ptr``, ...).
* :class:`GraphLoader` iterates over a store (or a subset of it) in batches, shuffled with a
  generator exactly as PyTorch's ``DataLoader`` shuffles (the same random numbers are drawn),
  so a training loop that used ``torch_geometric.loader.DataLoader`` gives the same batches.

Float features are checked once, when the store is built (a non-finite value names its graph
and node), so the training loop needs no check per batch.
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor
from torch_geometric.data import Batch, Data, InMemoryDataset

from ..errors import DataError

log = logging.getLogger(__name__)

__all__ = ["GraphLoader", "GraphStore", "as_store", "pad_batch", "pair_batches", "to_device"]

#: per-node weights a view may carry, and their value for a node of a batch without them
NODE_WEIGHTS = {"node_keep": 1.0, "node_mask": 0.0, "node_weight": 1.0, "node_alive": 1.0}

#: share of a GPU's free memory a store may take before it stays in host memory instead
DEVICE_BUDGET = 0.5


@dataclass
class _Segments:
    """One way of cutting the concatenated tensors into graphs (node-level, edge-level, ...):
    the offsets on the CPU (for batch sizes, with no device sync) and on the store's device."""

    ptr_cpu: Tensor  # (graphs + 1,) int64
    ptr: Tensor  # the same on the store's device
    unit: bool  # one row per graph (graph-level attributes such as y): gather by graph index


def _is_index_key(key: str) -> bool:
    """PyG's rule for attributes whose values are node indices (incremented when batched and
    concatenated along the last dimension)."""
    return "index" in key or key == "face"


class GraphStore:
    """Graphs as concatenated tensors with offsets; :meth:`batch` gathers any of them.

    Build one with :meth:`from_dataset` (a PyG in-memory dataset or a subset of one, a list of
    ``Data``, a ``Batch``) or from ``(data, slices)`` as ``InMemoryDataset`` stores them.
    Tensor attributes are node-level, edge-level or graph-level; other attributes (strings,
    lists) are gathered on the host.
    """

    def __init__(self, data: Data, slices: dict[str, Tensor], num_graphs: int | None = None, name: str = ""):
        self.name = name
        self.device = self.target = torch.device("cpu")
        self.pinned = False
        self._tensors: dict[str, Tensor] = {}
        self._other: dict[str, list] = {}
        self._key_seg: dict[str, int] = {}
        self._segs: list[_Segments] = []
        if num_graphs is None:
            num_graphs = max((len(s) - 1 for s in slices.values()), default=0)
        self.num_graphs = int(num_graphs)
        seg_of: dict[tuple, int] = {}
        for key, value in data.to_dict().items():
            if key in ("num_nodes", "_num_nodes"):  # graphs without x: PyG's own count (no tensor to batch)
                continue
            if key not in slices:
                raise DataError(f"{name or 'dataset'}: attribute {key!r} has no slices; cannot batch it")
            s = slices[key].to(torch.long).cpu()
            if len(s) != self.num_graphs + 1:
                raise DataError(f"{name or 'dataset'}: attribute {key!r} has offsets for {len(s) - 1} graphs, "
                                f"expected {self.num_graphs}")
            if not isinstance(value, Tensor):  # one value per graph (e.g. a SMILES string)
                self._other[key] = list(value)
                if len(self._other[key]) != self.num_graphs:
                    raise DataError(f"{name or 'dataset'}: attribute {key!r} has {len(self._other[key])} values "
                                    f"for {self.num_graphs} graphs")
                continue
            if value.is_sparse:
                raise DataError(f"{name or 'dataset'}: attribute {key!r} is a sparse tensor; GraphStore "
                                "batches dense tensors only")
            sig = tuple(s.tolist())
            if sig not in seg_of:
                counts = s[1:] - s[:-1]
                unit = bool(self.num_graphs) and bool((counts == 1).all())
                seg_of[sig] = len(self._segs)
                self._segs.append(_Segments(s, s, unit))
            self._key_seg[key] = seg_of[sig]
            self._tensors[key] = value
        if "x" in self._tensors:
            self._node_seg = self._key_seg["x"]
        else:
            idx_keys = [k for k in self._tensors if _is_index_key(k)]
            raise DataError(f"{name or 'dataset'}: graphs without node features (x) cannot be batched on the "
                            f"device{' (they have ' + ', '.join(idx_keys) + ')' if idx_keys else ''}; give them "
                            "features first, e.g. with autogcl.NodeFeatures('deg+odeg100')")
        for key in self._tensors:
            if _is_index_key(key) and self._tensors[key].dim() != 2:
                raise DataError(f"{name or 'dataset'}: {key} must be a 2 x E tensor, got shape "
                                f"{tuple(self._tensors[key].shape)}")
        self._check_features()

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_dataset(cls, dataset, name: str | None = None) -> GraphStore:
        """The store of a PyG in-memory dataset (without copying its tensors; a subset such as
        ``dataset[idx]`` keeps only its graphs), a sequence of ``Data`` or a ``Batch``."""
        if isinstance(dataset, GraphStore):
            return dataset
        label = name or getattr(dataset, "name", None) or type(dataset).__name__
        if isinstance(dataset, Batch):
            dataset = dataset.to_data_list()
        if isinstance(dataset, Data):
            dataset = [dataset]
        if (isinstance(dataset, InMemoryDataset) and dataset.transform is None
                and getattr(dataset, "_data", None) is not None and dataset.slices is not None):
            store = cls(dataset._data, dataset.slices, None, label)
            indices = dataset._indices
            if indices is not None:
                idx = indices if isinstance(indices, Tensor) else torch.as_tensor(list(indices), dtype=torch.long)
                store = store.subset(idx)
            return store
        if not isinstance(dataset, Sequence) and not hasattr(dataset, "__getitem__"):
            raise DataError(f"expected a PyG dataset or a sequence of Data, got {type(dataset).__name__}")
        graphs = [dataset[i] for i in range(len(dataset))]
        if not graphs:
            raise DataError(f"{label}: no graphs given (an empty dataset)")
        try:
            data, slices = InMemoryDataset.collate(graphs)
        except (KeyError, RuntimeError, TypeError, ValueError) as exc:
            raise DataError(f"{label}: the graphs cannot be batched together ({type(exc).__name__}: {exc}); "
                            "every graph needs the same attributes with matching shapes") from exc
        if slices is None:  # one graph: collate returns it as it is
            slices = {}
            for key, value in graphs[0].to_dict().items():
                size = value.size(graphs[0].__cat_dim__(key, value)) if isinstance(value, Tensor) else 1
                slices[key] = torch.tensor([0, size])
        return cls(data, slices, len(graphs), label)

    def node_counts(self) -> Tensor:
        """How many nodes each graph has (int64, on the CPU)."""
        ptr = self._segs[self._node_seg].ptr_cpu
        return ptr[1:] - ptr[:-1]

    def subset(self, idx: Tensor) -> GraphStore:
        """A store of the graphs ``idx`` only (in that order), its tensors copied."""
        idx = torch.as_tensor(idx, dtype=torch.long).cpu().view(-1)
        raw, cache = self._gather(idx)
        data = Data(**{k: v.cpu() for k, v in raw.items()}, **{k: [self._other[k][i] for i in idx.tolist()]
                                                               for k in self._other})
        slices = {k: cache[self._key_seg[k]][3].cpu() for k in self._tensors}
        for k in self._other:
            slices[k] = torch.arange(len(idx) + 1)
        out = GraphStore(data, slices, len(idx), self.name)
        return out.to(self.target) if self.device.type != "cpu" or self.pinned else out

    def with_graph_values(self, key: str, values: Tensor) -> GraphStore:
        """The same graphs with the graph-level attribute ``key`` (e.g. ``y``) set to ``values``,
        one row per graph; every other tensor is shared, not copied."""
        values = torch.as_tensor(values)
        if values.dim() == 0 or values.shape[0] != self.num_graphs:
            raise DataError(f"{self.name or 'dataset'}: {key} needs one value per graph ({self.num_graphs}), got "
                            f"shape {tuple(values.shape)}")
        out = copy.copy(self)
        out._segs = [_Segments(seg.ptr_cpu, seg.ptr, seg.unit) for seg in self._segs]  # moved with `out` alone
        out._key_seg = dict(self._key_seg)
        unit = next((i for i, seg in enumerate(out._segs) if seg.unit), None)
        if unit is None:
            ptr = torch.arange(self.num_graphs + 1)
            out._segs.append(_Segments(ptr, ptr.pin_memory() if self.pinned else ptr.to(self.device), True))
            unit = len(out._segs) - 1
        out._key_seg[key] = unit
        values = values.pin_memory() if self.pinned else values.to(self.device)
        out._tensors = {**self._tensors, key: values}
        return out

    def _check_features(self) -> None:
        """A non-finite node or edge feature is an error naming its graph and row."""
        for key, what in (("x", "node"), ("edge_attr", "edge")):
            value = self._tensors.get(key)
            if value is None or not torch.is_floating_point(value) or not value.numel():
                continue
            bad_rows = ~torch.isfinite(value).view(value.shape[0], -1).all(1)
            if bool(bad_rows.any()):
                row = int(bad_rows.nonzero()[0])
                ptr = self._segs[self._key_seg[key]].ptr_cpu
                graph = int(torch.searchsorted(ptr, torch.tensor([row]), right=True)[0]) - 1
                raise DataError(f"{self.name or 'dataset'}: graph {graph} has a non-finite {what} feature "
                                f"({what} {row - int(ptr[graph])} of that graph)")

    # ------------------------------------------------------------------ devices
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self._tensors.values())

    def to(self, device, budget: float = DEVICE_BUDGET) -> GraphStore:
        """The store on ``device`` (in place; returns itself). When it would take more than
        ``budget`` of a GPU's free memory, it stays in pinned host memory instead and each batch
        is copied over when it is built (said in the log)."""
        device = torch.device(device)
        if device == self.device or (device.type == "cuda" and self.device.type == "cuda"
                                     and (device.index or 0) == (self.device.index or 0)):
            return self
        if device.type == "cuda":
            free, _ = torch.cuda.mem_get_info(device)
            if self.nbytes() > budget * free:
                if not self.pinned:
                    log.warning("%s: %.0f MB of graphs do not fit in %.0f%% of the %.0f MB free on %s; keeping them "
                                "in pinned host memory and copying each batch over", self.name or "dataset",
                                self.nbytes() / 2**20, 100 * budget, free / 2**20, device)
                    self._move(torch.device("cpu"), pin=True)
                self.target = device
                return self
        self._move(device, pin=False)
        return self

    def _move(self, device: torch.device, pin: bool) -> None:
        move = (lambda t: t.pin_memory()) if pin else (lambda t: t.to(device))
        self._tensors = {k: move(v) for k, v in self._tensors.items()}
        for s in self._segs:
            s.ptr = s.ptr_cpu.pin_memory() if pin else s.ptr_cpu.to(device)
        self.device, self.pinned = device, pin
        self.target = device

    # ------------------------------------------------------------------ batches
    def __len__(self) -> int:
        return self.num_graphs

    @property
    def num_features(self) -> int:
        x = self._tensors["x"]
        return 1 if x.dim() == 1 else int(x.shape[1])

    def _segments_of(self, idx: Tensor, seg_id: int, idx_dev: Tensor | None = None):
        """For the graphs ``idx`` (CPU): ``(gather index, segment of each row, total rows,
        offsets of the batch)`` of one segmentation, computed on the store's device."""
        seg = self._segs[seg_id]
        counts_cpu = seg.ptr_cpu[idx + 1] - seg.ptr_cpu[idx]
        total = int(counts_cpu.sum())
        dev = seg.ptr.device
        idx_dev = idx.to(dev, non_blocking=True) if idx_dev is None else idx_dev
        if seg.unit:
            ptr = torch.arange(len(idx) + 1, device=dev)
            return seg.ptr[idx_dev], None, total, ptr
        counts = counts_cpu.to(dev, non_blocking=True)
        ptr = torch.zeros(len(idx) + 1, dtype=torch.long, device=dev)
        torch.cumsum(counts, 0, out=ptr[1:])
        owner = torch.repeat_interleave(torch.arange(len(idx), device=dev), counts, output_size=total)
        gather = torch.arange(total, device=dev) + (seg.ptr[idx_dev] - ptr[:-1])[owner]
        return gather, owner, total, ptr

    def _gather(self, idx: Tensor):
        """The rows of graphs ``idx`` of every tensor attribute (index attributes still local to
        their graph) and each segmentation's ``(gather, owner, total, offsets)``."""
        dev = self._segs[0].ptr.device
        idx_dev = idx.to(dev, non_blocking=True)
        cache = {sid: self._segments_of(idx, sid, idx_dev) for sid in set(self._key_seg.values())}
        raw = {}
        for key, value in self._tensors.items():
            gather = cache[self._key_seg[key]][0]
            raw[key] = value.index_select(-1 if _is_index_key(key) else 0, gather)
        return raw, cache

    def batch(self, idx) -> Batch:
        """The batch of graphs ``idx`` (a CPU tensor or sequence of graph indices), as
        ``Batch.from_data_list`` of the same graphs would build it, on the store's device (or,
        for a store in pinned host memory, copied to its target device)."""
        idx = torch.as_tensor(idx, dtype=torch.long)
        if idx.device.type != "cpu":
            idx = idx.cpu()
        n = len(idx)
        if n == 0:
            raise DataError("an empty batch (no graph index given)")
        raw, cache = self._gather(idx)
        _, node_owner, _, node_ptr = cache[self._node_seg]
        starts = node_ptr[:-1]
        slice_dict, inc_dict = {}, {}
        for key in self._tensors:
            _, owner, _, ptr = cache[self._key_seg[key]]
            slice_dict[key] = ptr
            if _is_index_key(key):
                raw[key] = raw[key] + (starts if owner is None else starts[owner])
                inc_dict[key] = starts
            else:
                inc_dict[key] = None
        for key, values in self._other.items():
            raw[key] = [values[i] for i in idx.tolist()]
            slice_dict[key] = torch.arange(n + 1)
            inc_dict[key] = None
        batch_vec = node_owner if node_owner is not None else torch.arange(n, device=node_ptr.device)
        b = Batch(_base_cls=Data, **raw, batch=batch_vec, ptr=node_ptr)
        b._num_graphs = n
        b._slice_dict = slice_dict
        b._inc_dict = inc_dict
        if self.pinned:
            b = b.to(self.target, non_blocking=True)
        return b

    def __repr__(self) -> str:
        where = f"pinned host memory -> {self.target}" if self.pinned else str(self.device)
        return f"GraphStore({self.name or 'graphs'}: {self.num_graphs} graphs, {self.nbytes() / 2**20:.1f} MB on {where})"


def to_device(batch, device: torch.device | None):
    """``batch`` on ``device`` (a no-op when it is there already, as a :class:`GraphLoader`'s
    batches are, or when ``device`` is None)."""
    if device is None:
        return batch
    ref = getattr(batch, "edge_index", None)
    if ref is None:
        ref = getattr(batch, "x", None)
    if isinstance(ref, Tensor) and ref.device.type == device.type and (
            device.index is None or ref.device.index == device.index):
        return batch
    return batch.to(device)


def pad_batch(batch, multiple: int):
    """``batch`` padded with atoms and bonds that no model reads, to sizes that are multiples
    of ``multiple`` atoms and ``2 * multiple`` bonds, so that a training step sees a few shapes
    only (size buckets: what CUDA graphs and compilation for static shapes need).

    Padding atoms (at least one) belong to the last graph with ``node_alive`` 0, which the
    molecule encoder and view generators read as "not there" (no bond sum, BatchNorm statistic,
    pooling, forced keep or similarity loss reads them: :mod:`autogcl.models.mol_gin`); padding
    bonds are self-loops of the first padding atom. The graphs' own tensors come first,
    unchanged. Sizes are read from the tensors' shapes: nothing waits for the device."""
    if multiple < 1:
        raise DataError(f"pad_batch: the size bucket must be at least 1 atom, got {multiple}")
    keys = set(batch.keys())
    node_keys = {"x", "batch"} | (keys & set(NODE_WEIGHTS))
    known = node_keys | {"edge_index", "edge_attr", "ptr", "y"}
    if keys - known:
        raise DataError(f"pad_batch pads molecule batches (x, edge_index, edge_attr, per-atom weights); this batch "
                        f"also has {sorted(keys - known)}")
    n, e = int(batch.x.shape[0]), int(batch.edge_index.shape[1])
    extra_n = math.ceil((n + 1) / multiple) * multiple - n
    extra_e = math.ceil(max(e, 1) / (2 * multiple)) * 2 * multiple - e
    out = copy.copy(batch)
    for name in ("_slice_dict", "_inc_dict"):  # its graphs cannot be taken apart again (to_data_list refuses)
        if hasattr(out, name):
            delattr(out, name)
    out.x = torch.cat([batch.x, batch.x.new_zeros((extra_n, *batch.x.shape[1:]))])
    out.batch = torch.cat([batch.batch, batch.batch.new_full((extra_n,), int(batch.num_graphs) - 1)])
    alive = batch.node_alive if "node_alive" in keys else batch.x.new_ones(n, dtype=torch.float32)
    out.node_alive = torch.cat([alive, alive.new_zeros(extra_n)])
    for key in keys & (set(NODE_WEIGHTS) - {"node_alive"}):
        value = batch[key]
        out[key] = torch.cat([value, value.new_full((extra_n,), NODE_WEIGHTS[key])])
    out.edge_index = torch.cat([batch.edge_index, batch.edge_index.new_full((2, extra_e), n)], 1)
    if "edge_attr" in keys:
        out.edge_attr = torch.cat([batch.edge_attr, batch.edge_attr.new_zeros((extra_e, *batch.edge_attr.shape[1:]))])
    if "ptr" in keys:
        out.ptr = batch.ptr.clone()
        out.ptr[-1] = n + extra_n
    return out


def pair_batches(a, b):
    """One batch holding the graphs of ``a`` then those of ``b`` (two views of a mini-batch),
    for an encoder to read both in one pass; ``None`` when they cannot be joined (other
    attributes than node features, bonds and per-node weights). The result's private
    ``_segments`` (node counts of ``a`` and ``b``) tells segment-aware layers
    (:class:`autogcl.models.norm.SegmentBatchNorm`) where each view's nodes are."""
    na, nb = int(a.x.shape[0]), int(b.x.shape[0])
    ga, gb = int(a.num_graphs), int(b.num_graphs)
    keys_a, keys_b = set(a.keys()), set(b.keys())
    joinable = {"x", "edge_index", "edge_attr", "batch", "ptr", "y"} | set(NODE_WEIGHTS)
    if (keys_a | keys_b) - joinable or ("edge_attr" in keys_a) != ("edge_attr" in keys_b) \
            or a.x.dtype != b.x.dtype or a.x.shape[1:] != b.x.shape[1:]:
        return None
    out = {"x": torch.cat([a.x, b.x]), "edge_index": torch.cat([a.edge_index, b.edge_index + na], 1),
           "batch": torch.cat([a.batch, b.batch + ga])}
    if "edge_attr" in keys_a:
        out["edge_attr"] = torch.cat([a.edge_attr, b.edge_attr])
    for key, default in NODE_WEIGHTS.items():
        if key in keys_a or key in keys_b:
            va = a[key] if key in keys_a else a.x.new_full((na,), default, dtype=torch.float32)
            vb = b[key] if key in keys_b else b.x.new_full((nb,), default, dtype=torch.float32)
            out[key] = torch.cat([va, vb])
    pair = Batch(_base_cls=Data, **out)
    pair._num_graphs = ga + gb
    pair._segments = (na, nb)
    return pair


def as_store(data, device=None) -> GraphStore:
    """The :class:`GraphStore` of ``data`` (built once for a dataset, reused when ``data`` is
    already one), on ``device`` when given."""
    store = data if isinstance(data, GraphStore) else GraphStore.from_dataset(data)
    return store.to(device) if device is not None else store


class GraphLoader:
    """Batches of a :class:`GraphStore` (or of anything :meth:`GraphStore.from_dataset` takes),
    an iterable like PyG's ``DataLoader``.

    Shuffling draws the random numbers PyTorch's ``DataLoader`` draws (a base seed from
    ``generator``, or from torch's global generator without one, then a permutation per pass
    and one more when the pass ends), so the batches, and everything later drawn from the same
    generators, are those of a ``DataLoader`` with the same arguments.

    Args:
        data: the graphs.
        batch_size, shuffle, drop_last, generator: as ``DataLoader``.
        indices: iterate over these graphs of the store only (a subset: a fold, a split part).
        device: where the store lives and batches are built (default: where it is).
        rank, world_size: data-parallel training (:mod:`autogcl.train.distributed`): every
            process draws the same order, and each ``batch_size`` batch is split evenly across
            the ``world_size`` processes (rounded down to a multiple of it); this process gets
            share ``rank``.
    """

    validated = True  #: batches come from a store whose features were checked when it was built

    def __init__(self, data, batch_size: int = 1, shuffle: bool = False, generator: torch.Generator | None = None,
                 drop_last: bool = False, indices=None, device=None, rank: int = 0, world_size: int = 1):
        if batch_size < 1:
            raise DataError(f"batch_size must be at least 1, got {batch_size}")
        if not 0 <= rank < world_size:
            raise DataError(f"rank {rank} is not one of {world_size} processes")
        self.rank, self.world_size = rank, world_size
        self.store = as_store(data, device)
        self.batch_size, self.shuffle, self.drop_last, self.generator = batch_size, shuffle, drop_last, generator
        self.indices = None if indices is None else torch.as_tensor(indices, dtype=torch.long).cpu().view(-1)
        if self.indices is not None and self.indices.numel() and (
                int(self.indices.min()) < 0 or int(self.indices.max()) >= self.store.num_graphs):
            raise DataError(f"indices out of range for {self.store.num_graphs} graphs")

    @property
    def num_graphs(self) -> int:
        return self.store.num_graphs if self.indices is None else int(self.indices.numel())

    def __len__(self) -> int:
        n = self.num_graphs
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    def order(self) -> Tensor:
        """The graph order of one pass (drawing what a ``DataLoader`` draws at its start)."""
        n = self.num_graphs
        torch.empty((), dtype=torch.int64).random_(generator=self.generator)  # DataLoader's base seed
        if self.shuffle:
            gen = self._pass_generator()
            order = torch.randperm(n, generator=gen)
        else:
            order = torch.arange(n)
        return order if self.indices is None else self.indices[order]

    def _pass_generator(self) -> torch.Generator:
        if self.generator is not None:
            return self.generator
        seed = int(torch.empty((), dtype=torch.int64).random_().item())  # RandomSampler without a generator
        self._gen = torch.Generator().manual_seed(seed)
        return self._gen

    def __iter__(self) -> Iterator[Batch]:
        return self.batches()

    def batches(self, start: int = 0) -> Iterator[Batch]:
        """One pass from its batch ``start`` on: the pass draws what a whole one draws and skips
        its first ``start`` batches without building them (a pass stopped after ``start`` steps,
        its generator's state at the start restored, continues with the batches it had left)."""
        order = self.order()
        gen = self.generator if self.generator is not None else getattr(self, "_gen", None)
        parts = order.split(self.batch_size)
        if self.drop_last and parts and len(parts[-1]) < self.batch_size:
            parts = parts[:-1]
        served = 0
        for part in parts:
            if self.world_size > 1:
                share = len(part) // self.world_size
                if share == 0:
                    continue
                part = part[self.rank * share:(self.rank + 1) * share]
            served += 1
            if served > start:
                yield self.store.batch(part)
        if self.shuffle:  # the sampler draws one more permutation when a DataLoader's pass ends
            torch.randperm(self.num_graphs, generator=gen)
