"""Routes to a faster CPU pre-training step at width 8 that were measured and not kept: each is
a prototype here (not in the library), timed against the library's own (eager) step in one
process, the two alternating window by window.

    python benchmarks/cpu_routes.py --data-root ../shared/data [--routes compile onednn padded]
        [--windows 6 --steps 30] [--tag cpu-shared] [--note ...]

Writes ``docs/results/perf/cpu_routes_<tag>.json`` (the shape ``scripts/docs/docs.py`` renders): per
route the median process CPU milliseconds of a step with it and without it, and the median of
the paired window ratios (``cpu_step_ms_vs_eager``: below 1 is faster), every window kept,
and how far the route's step is from the eager one (``loss_abs_diff``, ``grad_max_abs_diff``;
``tolerance``: :data:`LOSS_TOL` and :data:`GRAD_TOL`, within which it is the same step).
Steps: transfer pre-training (batch 256, the first ``--molecules`` MOSES molecules), width 8,
the method's own view draws, batching included, 1 torch thread.

Routes:

* ``compile``: ``torch.compile(dynamic=True)`` (inductor, C++ on the CPU) of each molecule GIN
  layer's dense part (the MLP, the two views' BatchNorms, ReLU) in the encoder's pass over two
  views; the sparse neighbour sum stays eager (the compiler does not take sparse tensors).
  ``warmup_s``: the wall seconds of the first steps, compilation included (inductor's cache in
  a fresh folder, so the compilation is a cold one).
* ``onednn``: the products with a result narrower than 16 columns by oneDNN's dense linear
  kernel (``mkldnn._linear_pointwise``, faster than MKL's on one fixed shape), rows padded to a
  multiple of 256 (oneDNN builds a kernel per shape).
* ``wgrad``: the weight gradient of the GIN MLPs' first layer (8 to 16) as ``x.T @ grad`` (a
  result of 16 columns) instead of ``grad.T @ x`` (8 columns), by giving ``addmm`` the weight's
  transpose as a contiguous copy.
* ``fused``: the bond messages folded into the first MLP layer: ``(I + A)(x W1.T) + counts
  (T W1.T) + b1`` instead of ``(x + counts T + A x) W1.T + b1`` (``A`` the adjacency, ``T`` the
  stacked bond tables), so that the bond-message product and its gradient have 16-column
  results instead of 8 (the sparse sum then reads 16 columns).
* ``segbn``: the encoder's BatchNorm over two views as one autograd operation (each segment's
  ``native_batch_norm`` writing into one output, and its backward into one gradient) instead of
  split, one BatchNorm per view and cat.
* ``transposed``: those products computed in the other orientation, ``(w @ x.T).T`` made
  contiguous (the BLAS's long dimension then is the rows of the result, where MKL is several
  times faster on 8 columns than in the row-major form), the input gradient likewise, and the
  weight gradient in the orientation with the wider result.
* ``padded``: those products with the narrow side padded with zeros to 16 columns (MKL is
  several times slower on a result with 8 columns than with 16), and the weight gradient in
  the orientation with the wider result.
* ``rowgroup``: the products with a result narrower than 16 columns (the MLP's second layer,
  the first layer's input gradient, the bond messages ``counts @ table``) on rows taken ``r``
  at a time: the ``N x k`` input read as ``N/r x rk`` (a view) times ``r`` copies of the weight
  on a block diagonal is the ``N x n`` result written row-major (a view), so MKL runs its
  16-column kernel without a copy of the activations (``padded`` and ``transposed`` copy
  them); the weight gradients in the orientation with the wider result.
* ``native``: each molecule GIN layer as one autograd operation whose forward and backward
  are numba kernels over tiles of rows (``native_gin.py``): the neighbour sum, bond messages
  and hidden units stay in the first caches, only the layer's output is written, and the
  backward recomputes them from the layer's input. Needs numba.
* ``nativebn``: ``native`` through ``MolGNN.forward``, with each BatchNorm (every view's rows
  with their own statistics) and the ReLU after it one numba operation too.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))


def _narrow_function(product):
    """An autograd linear whose products with a narrow result go through ``product(a, w, bias)``
    (``a @ w.T + bias``), the weight gradient in the orientation with the wider result."""
    import torch
    import torch.nn.functional as F

    class Narrow(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, bias):
            ctx.save_for_backward(x, weight)
            return product(x, weight, bias) if weight.shape[0] < 16 else F.linear(x, weight, bias)

        @staticmethod
        def backward(ctx, grad):
            x, weight = ctx.saved_tensors
            grad = grad.contiguous()
            gx = product(grad, weight.t(), None) if weight.shape[1] < 16 else grad @ weight
            gw = (x.t() @ grad).t() if weight.shape[1] < weight.shape[0] else grad.t() @ x
            return gx, gw, grad.sum(0)

    def linear(x, weight, bias):
        return Narrow.apply(x, weight, bias) if min(weight.shape) < 16 else F.linear(x, weight, bias)

    return linear


def _onednn(x, weight, bias):
    import torch
    import torch.nn.functional as F

    n = x.shape[0]
    pad = -n % 256
    x = F.pad(x, (0, 0, 0, pad)) if pad else x.contiguous()
    out = torch.ops.mkldnn._linear_pointwise(x, weight.contiguous(), bias, "none", [], "")
    return out[:n] if pad else out


def _padded(x, weight, bias):
    import torch.nn.functional as F

    k = weight.shape[0]
    w = F.pad(weight, (0, 0, 0, 16 - k))
    out = F.linear(x, w, None if bias is None else F.pad(bias, (0, 16 - k)))
    return out[:, :k].contiguous()


def _transposed(x, weight, bias):
    import torch

    out = torch.mm(weight, x.t()) if bias is None else torch.addmm(bias.view(-1, 1), weight, x.t())
    return out.t().contiguous()


def _rowgroup(x, weight, bias):
    """``x @ weight.T + bias`` with a result narrower than 16 columns computed on rows taken
    ``r`` at a time: ``x`` read as ``N/r x r*k`` (a view) times ``r`` copies of ``weight.T`` on
    a block diagonal gives ``N/r x r*n``, which is the ``N x n`` result row-major (a view): MKL's
    fast kernel (at least 16 result columns) without copying the activations. The last
    ``N mod r`` rows apart."""
    import torch

    x = x.contiguous()
    n, k = weight.shape
    r = -(-16 // n)
    rows = x.shape[0]
    m = rows - rows % r
    out = x.new_empty(rows, n)
    w = weight.t()
    big = torch.block_diag(*[w] * r)
    grouped = x[:m].view(m // r, r * k)
    if bias is None:
        torch.mm(grouped, big, out=out[:m].view(m // r, r * n))
    else:
        torch.addmm(bias.repeat(r), grouped, big, out=out[:m].view(m // r, r * n))
    if m < rows:
        if bias is None:
            torch.mm(x[m:], w, out=out[m:])
        else:
            torch.addmm(bias, x[m:], w, out=out[m:])
    return out


def _rowgroup_conv_forward():
    """``BondGINConv.forward`` with the MLP's narrow products and the bond messages
    (``counts @ table``, 8 columns) by :func:`_rowgroup`."""
    import torch

    class Messages(torch.autograd.Function):
        @staticmethod
        def forward(ctx, base, counts, table):
            ctx.save_for_backward(counts)
            out = _rowgroup(counts, table.t(), None)
            return out.add_(base)

        @staticmethod
        def backward(ctx, grad):
            (counts,) = ctx.saved_tensors
            return grad, None, counts.t() @ grad

    return _conv_forward(_narrow_function(_rowgroup), Messages.apply)


def _conv_forward(linear, messages=None):
    """``BondGINConv.forward`` with its MLP's two products by ``linear`` (and the bond messages
    ``base + counts @ table`` by ``messages``, default ``torch.addmm``)."""
    import torch
    import torch.nn.functional as F

    from autogcl.models import mol_gin

    messages = messages or torch.addmm

    def forward(self, x, edge_index, edge_attr, structure=None):
        structure = structure or mol_gin.bond_structure(edge_index, edge_attr, x.shape[0], self.vocab, x.dtype)
        agg = messages(x, structure.counts, torch.cat([self.bond.weight, self.direction.weight]))
        agg = structure.add_neighbour_sum(agg, x)
        first, last = self.mlp[0], self.mlp[2]
        return linear(F.relu(linear(agg, first.weight, first.bias)), last.weight, last.bias)

    return forward


def _compiled_gnn_forward():
    """``MolGNN.forward`` with each layer's dense part compiled, on a batch of two views."""
    import torch
    import torch.nn.functional as F

    from autogcl.models import mol_gin

    eager = mol_gin.MolGNN.forward

    def dense(agg, w1, b1, w2, b2, bn_w, bn_b, mean, var, n0: int, relu: bool):
        h = F.linear(F.relu(F.linear(agg, w1, b1)), w2, b2)
        h = torch.cat([F.batch_norm(h[:n0], mean, var, bn_w, bn_b, True, 0.1, 1e-5),
                       F.batch_norm(h[n0:], mean, var, bn_w, bn_b, True, 0.1, 1e-5)])
        return F.relu(h) if relu else h

    compiled = torch.compile(dense, dynamic=True)

    def forward(self, data):
        segments = getattr(data, "_segments", None)
        if segments is None or len(segments) != 2 or self.dropout > 0:
            return eager(self, data)
        h = self.atoms(data)
        structure = mol_gin.bond_structure(data.edge_index, data.edge_attr, h.shape[0], self.vocab, h.dtype)
        last = len(self.convs) - 1
        for i, (conv, bn) in enumerate(zip(self.convs, self.bns)):
            agg = torch.addmm(h, structure.counts, torch.cat([conv.bond.weight, conv.direction.weight]))
            agg = structure.add_neighbour_sum(agg, h)
            h = compiled(agg, conv.mlp[0].weight, conv.mlp[0].bias, conv.mlp[2].weight, conv.mlp[2].bias,
                         bn.weight, bn.bias, bn.running_mean, bn.running_var, segments[0], i < last)
        return h

    return forward


def _wgrad_forward():
    import torch
    import torch.nn.functional as F

    from autogcl.models import mol_gin

    def forward(self, x, edge_index, edge_attr, structure=None):
        structure = structure or mol_gin.bond_structure(edge_index, edge_attr, x.shape[0], self.vocab, x.dtype)
        agg = torch.addmm(x, structure.counts, torch.cat([self.bond.weight, self.direction.weight]))
        agg = structure.add_neighbour_sum(agg, x)
        first, last = self.mlp[0], self.mlp[2]
        h = F.relu(torch.addmm(first.bias, agg, first.weight.t().contiguous()))
        return torch.addmm(last.bias, h, last.weight.t())

    return forward


def _fused_forward():
    import torch
    import torch.nn.functional as F

    from autogcl.models import mol_gin

    def forward(self, x, edge_index, edge_attr, structure=None):
        structure = structure or mol_gin.bond_structure(edge_index, edge_attr, x.shape[0], self.vocab, x.dtype)
        first, last = self.mlp[0], self.mlp[2]
        w1 = first.weight.t().contiguous()  # contiguous: the weight gradient as x.T @ grad (16 columns)
        xw = x @ w1
        table = torch.cat([self.bond.weight, self.direction.weight])
        base = torch.addmm(first.bias, structure.counts, table @ w1) + xw
        h = F.relu(structure.add_neighbour_sum(base, xw))
        return torch.addmm(last.bias, h, last.weight.t())

    return forward


def _segment_norm_forward():
    """``SegmentBatchNorm.forward`` with two or more segments as one autograd operation."""
    import torch
    from torch.ops import aten

    from autogcl.models import norm

    class Segments(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, weight, bias, mean, var, sizes, momentum, eps):
            out, stats, start = torch.empty_like(x), [], 0
            for n in sizes:
                part = slice(start, start + n)
                m, inv = x.new_empty(x.shape[1]), x.new_empty(x.shape[1])
                aten.native_batch_norm.out(x[part], weight, bias, mean, var, True, momentum, eps, out=out[part],
                                           save_mean=m, save_invstd=inv)
                stats += [m, inv]
                start += n
            ctx.save_for_backward(x, weight, mean, var, *stats)
            ctx.sizes, ctx.eps = sizes, eps
            return out

        @staticmethod
        def backward(ctx, grad):
            x, weight, mean, var, *stats = ctx.saved_tensors
            grad, gx, gw, gb, start = grad.contiguous(), torch.empty_like(x), 0.0, 0.0, 0
            for i, n in enumerate(ctx.sizes):
                part = slice(start, start + n)
                a, w, b = aten.native_batch_norm_backward(grad[part], x[part], weight, mean, var, stats[2 * i],
                                                          stats[2 * i + 1], True, ctx.eps, [True, True, True])
                gx[part] = a
                gw, gb, start = gw + w, gb + b, start + n
            return gx, gw, gb, None, None, None, None, None

    eager = norm.SegmentBatchNorm.forward

    def forward(self, x, segments=None, alive=None):
        if segments is None or len(segments) == 1 or not self.training or self.synced or min(segments) < 2 \
                or self.momentum is None or alive is not None:
            return eager(self, x, segments, alive)
        self.num_batches_tracked.add_(len(segments))
        return Segments.apply(x, self.weight, self.bias, self.running_mean, self.running_var, tuple(segments),
                              self.momentum, self.eps)

    return forward


def _native_gin():
    """The :mod:`native_gin` module beside this script (importable whatever ``sys.path`` is)."""
    import importlib.util

    if "native_gin" not in sys.modules:
        spec = importlib.util.spec_from_file_location("native_gin", HERE / "native_gin.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["native_gin"] = module
        spec.loader.exec_module(module)
    return sys.modules["native_gin"]


def native_function(tile: int | None = None):
    """The ``native`` route's autograd operation: one molecule GIN layer, ``(x, table, w1, b1,
    w2, b2, counts, crow, col) -> z``, its forward and backward :mod:`native_gin`'s kernels
    (``table``: the stacked bond tables; ``crow``, ``col``: the incoming-bond adjacency in CSR;
    ``tile``: rows per tile, :data:`native_gin.TILE` unless given). Saves only the layer's input
    and the small tensors."""
    import torch

    native_gin = _native_gin()

    def np_(t):
        return t.detach().numpy()

    class NativeGIN(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, table, w1, b1, w2, b2, counts, crow, col):
            x, w1, w2 = x.contiguous(), w1.contiguous(), w2.contiguous()
            k = native_gin.kernels(x.shape[1], w1.shape[0], counts.shape[1], str(x.dtype).split(".")[-1],
                                   tile or native_gin.TILE)
            out = x.new_empty(x.shape)
            k.forward(np_(x), np_(counts), np_(table), np_(crow), np_(col), np_(w1), np_(b1), np_(w2), np_(b2),
                      np_(out))
            ctx.save_for_backward(x, table, w1, b1, w2, counts, crow, col)
            ctx.kernels = k
            return out

        @staticmethod
        def backward(ctx, gz):
            x, table, w1, b1, w2, counts, crow, col = ctx.saved_tensors
            gx, gtable, gw1, gb1, gw2 = (torch.empty_like(t) for t in (x, table, w1, b1, w2))
            gb2 = x.new_empty(x.shape[1])
            ctx.kernels.backward(np_(x), np_(counts), np_(table), np_(crow), np_(col), np_(w1), np_(b1), np_(w2),
                                 np_(gz.contiguous()), np_(gx), np_(gtable), np_(gw1), np_(gb1), np_(gw2), np_(gb2))
            return gx, gtable, gw1, gb1, gw2, gb2, None, None, None

    return NativeGIN


def native_csr(structure, n: int):
    """``(crow, col)`` of a batch's incoming-bond adjacency (the structure's own CSR when it has
    one, float32 on a CPU; else built, e.g. for float64)."""
    from autogcl.models import mol_gin

    adj = structure.adj
    if adj is None:
        adj = mol_gin._csr(structure.dst, structure.src, n, structure.counts.dtype)
    return adj.crow_indices(), adj.col_indices()


def _native_forward():
    """``BondGINConv.forward`` as one :func:`native_function` operation on a CPU."""
    import torch

    native_gin = _native_gin()
    from autogcl.models import mol_gin

    eager = mol_gin.BondGINConv.forward
    native = native_function()

    def forward(self, x, edge_index, edge_attr, structure=None):
        if x.device.type != "cpu" or x.shape[1] > native_gin.MAX_WIDTH:
            return eager(self, x, edge_index, edge_attr, structure)
        structure = structure or mol_gin.bond_structure(edge_index, edge_attr, x.shape[0], self.vocab, x.dtype)
        first, last = self.mlp[0], self.mlp[2]
        table = torch.cat([self.bond.weight, self.direction.weight])
        return native.apply(x, table, first.weight, first.bias, last.weight, last.bias, structure.counts,
                            *native_csr(structure, x.shape[0]))

    return forward


def native_norm_function():
    """The ``nativebn`` route's BatchNorm (each segment of rows with its own statistics) and
    ReLU as one autograd operation, ``(z, weight, bias, bounds, relu, bn, kernels) -> y``
    (``bounds``: the segments' first rows and the row count; ``bn``: the layer, whose running
    statistics the forward kernel updates segment by segment), forward and backward by
    :mod:`native_gin`'s kernels. Saves the input and each segment's statistics."""
    import torch

    def np_(t):
        return t.detach().numpy()

    class NativeNorm(torch.autograd.Function):
        @staticmethod
        def forward(ctx, z, weight, bias, bounds, relu, bn, kernels):
            segments = bounds.numel() - 1
            mean = torch.empty(segments, z.shape[1], dtype=torch.float64)
            var = torch.empty_like(mean)
            y = torch.empty_like(z)
            kernels.bn_forward(np_(z), np_(bounds), np_(weight), np_(bias), bn.eps, relu, bn.momentum,
                               np_(bn.running_mean), np_(bn.running_var), np_(mean), np_(var), np_(y))
            bn.num_batches_tracked.add_(segments)
            ctx.save_for_backward(z, weight, bias, bounds, mean, var)
            ctx.relu, ctx.eps, ctx.kernels = relu, bn.eps, kernels
            return y

        @staticmethod
        def backward(ctx, gy):
            z, weight, bias, bounds, mean, var = ctx.saved_tensors
            gz = torch.empty_like(z)
            gw = torch.zeros(z.shape[1], dtype=torch.float64)
            gb = torch.zeros_like(gw)
            ctx.kernels.bn_backward(np_(gy.contiguous()), np_(z), np_(bounds), np_(weight), np_(bias), np_(mean),
                                    np_(var), ctx.eps, ctx.relu, np_(gz), np_(gw), np_(gb))
            return gz, gw.to(weight.dtype), gb.to(bias.dtype), None, None, None, None

    return NativeNorm


def _native_gnn_forward():
    """``MolGNN.forward`` with each layer's GIN and BatchNorm (+ ReLU) as :func:`native_function`
    and :func:`native_norm_function` operations, in training on a CPU (else the eager forward)."""
    import torch

    from autogcl.models import mol_gin

    native_gin = _native_gin()
    eager = mol_gin.MolGNN.forward
    conv_op, norm_op = native_function(), native_norm_function()

    def plain(bn) -> bool:
        return not bn.synced and bn.momentum is not None and bn.track_running_stats and bn.affine

    def forward(self, data):
        x = data.x
        if x.device.type != "cpu" or self.dim > native_gin.MAX_WIDTH or self.dropout > 0 or not self.training \
                or not all(plain(bn) for bn in self.bns) or getattr(data, "node_alive", None) is not None:
            return eager(self, data)
        segments = getattr(data, "_segments", None) or (x.shape[0],)
        if min(segments) < 2:
            return eager(self, data)
        h = self.atoms(data)
        structure = mol_gin.bond_structure(data.edge_index, data.edge_attr, h.shape[0], self.vocab, h.dtype)
        csr = native_csr(structure, h.shape[0])
        bounds = torch.tensor([0, *segments], dtype=torch.int64).cumsum(0)
        last = len(self.convs) - 1
        for i, (conv, bn) in enumerate(zip(self.convs, self.bns)):
            first, second = conv.mlp[0], conv.mlp[2]
            table = torch.cat([conv.bond.weight, conv.direction.weight])
            z = conv_op.apply(h, table, first.weight, first.bias, second.weight, second.bias, structure.counts, *csr)
            kernels = native_gin.kernels(z.shape[1], first.weight.shape[0], structure.counts.shape[1],
                                         str(z.dtype).split(".")[-1])
            h = norm_op.apply(z, bn.weight, bn.bias, bounds, i < last, bn, kernels)
        return h

    return forward


def route_patch(name: str):
    """``(module, attribute, replacement)`` of a route."""
    from autogcl.models import mol_gin

    if name == "compile":
        return mol_gin.MolGNN, "forward", _compiled_gnn_forward()
    if name == "onednn":
        return mol_gin.BondGINConv, "forward", _conv_forward(_narrow_function(_onednn))
    if name == "wgrad":
        return mol_gin.BondGINConv, "forward", _wgrad_forward()
    if name == "fused":
        return mol_gin.BondGINConv, "forward", _fused_forward()
    if name == "segbn":
        from autogcl.models import norm

        return norm.SegmentBatchNorm, "forward", _segment_norm_forward()
    if name == "transposed":
        return mol_gin.BondGINConv, "forward", _conv_forward(_narrow_function(_transposed))
    if name == "rowgroup":
        return mol_gin.BondGINConv, "forward", _rowgroup_conv_forward()
    if name == "padded":
        return mol_gin.BondGINConv, "forward", _conv_forward(_narrow_function(_padded))
    if name in ("native", "nativebn"):
        try:
            import numba  # noqa: F401
        except ImportError:
            raise SystemExit(f"route {name} needs numba (pip install numba)") from None
        if name == "nativebn":
            return mol_gin.MolGNN, "forward", _native_gnn_forward()
        return mol_gin.BondGINConv, "forward", _native_forward()
    raise SystemExit(f"unknown route {name}")


def _difference(strategy, batch, owner, attr, eager, patched) -> dict:
    """How far a step's loss and gradients with the route are from the eager step's, on one
    batch contrasting the two generated views (the same random draws)."""
    import torch

    got = []
    for fn in (eager, patched):
        setattr(owner, attr, fn)
        strategy.opt.zero_grad()
        torch.manual_seed(1)
        loss = strategy.losses(batch, [1, 2])["loss"]
        loss.backward()
        got.append((loss.detach(), [p.grad.clone() for m in strategy.modules().values() for p in m.parameters()
                                    if p.grad is not None]))
    strategy.opt.zero_grad()
    (l0, g0), (l1, g1) = got
    return {"loss_abs_diff": float((l0 - l1).abs()),
            "grad_max_abs_diff": max(float((a - b).abs().max()) for a, b in zip(g0, g1)),
            "grad_max_abs": max(float(a.abs().max()) for a in g0)}


def measure(args, name: str) -> tuple[dict, list[dict]]:
    import engine

    spec = {"molecules": args.molecules, "data_root": args.data_root, "corpus": args.corpus, "device": "cpu",
            "chunk_file": None, "width": 8}
    ds = engine._chunk(spec)
    strategy, gen, device = engine._pretrain_strategy(spec)
    it = engine._endless(engine._loader(ds, 256, gen, device)[0], device)
    owner, attr, patched = route_patch(name)
    eager = owner.__dict__[attr]
    for i in range(10):
        strategy.step(next(it), 1, i)
    setattr(owner, attr, patched)
    diff = _difference(strategy, next(it), owner, attr, eager, patched)
    t0 = time.perf_counter()
    for i in range(10):
        strategy.step(next(it), 1, i)
    warmup = time.perf_counter() - t0
    windows = []
    for w in range(args.windows):
        for on in ((True, False) if w % 2 == 0 else (False, True)):
            setattr(owner, attr, patched if on else eager)
            c0 = time.process_time()
            for i in range(args.steps):
                strategy.step(next(it), 1, i)
            windows.append({"route": name, "window": w, "with_route": on,
                            "cpu_step_ms": 1000 * (time.process_time() - c0) / args.steps})
    setattr(owner, attr, eager)
    on = [x["cpu_step_ms"] for x in windows if x["with_route"]]
    off = [x["cpu_step_ms"] for x in windows if not x["with_route"]]
    row = {"route": name, "windows": args.windows, "steps_per_window": args.steps,
           "cpu_step_ms_eager": statistics.median(off), "cpu_step_ms_route": statistics.median(on),
           "cpu_step_ms_vs_eager": statistics.median(a / b for a, b in zip(on, off)),
           "warmup_s": warmup, **diff}
    return row, windows


ROUTES = ("compile", "onednn", "padded", "transposed", "rowgroup", "wgrad", "fused", "segbn", "native", "nativebn")
#: how far a route's step may be from the eager one and still be the same step, its float32
#: sums taken in another order: the loss within LOSS_TOL, and every gradient entry within
#: GRAD_TOL times the largest (``grad_max_abs``); every route of ``cpu_routes_cpu-shared.json``
#: lies within both, ``compile``'s gradients the furthest from the eager ones
LOSS_TOL, GRAD_TOL = 1e-4, 1e-2


def main() -> int:
    import engine

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-root", default=None)
    p.add_argument("--corpus", default="")
    p.add_argument("--molecules", type=int, default=10_000)
    p.add_argument("--routes", nargs="+", default=list(ROUTES), choices=list(ROUTES))
    p.add_argument("--windows", type=int, default=6, help="paired windows per route")
    p.add_argument("--steps", type=int, default=30, help="steps per window")
    p.add_argument("--tag", default="cpu")
    p.add_argument("--note", default="")
    p.add_argument("--out", default=str(REPO / "docs" / "results" / "perf"))
    args = p.parse_args()
    import torch

    torch.set_num_threads(1)
    args.threads, args.device = 1, "cpu"
    rows, windows = [], []
    for name in args.routes:
        row, win = measure(args, name)
        engine.show(row)
        rows.append(row)
        windows += win
    note = ("width 8, batch 256, 1 thread; each route timed in one process against the library's eager step, "
            "their windows alternating; cpu_step_ms: process CPU time per step (batching included); "
            "warmup_s: wall seconds of the first 10 steps with the route (compilation included); "
            "loss_abs_diff, grad_max_abs_diff: the route's step against the eager one on one batch contrasting "
            "both generated views, with the same draws (grad_max_abs: the largest gradient entry, for scale)")
    doc = {"benchmark": "cpu_routes", "command": "python benchmarks/cpu_routes.py " + " ".join(sys.argv[1:]),
           "machine": engine.machine(args), "device": "cpu", "threads": 1, "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": engine.code_commit(), "note": note + (f"; {args.note}" if args.note else ""),
           "tolerance": {"loss_abs_diff": LOSS_TOL, "grad_max_abs_diff_over_grad_max_abs": GRAD_TOL},
           "rows": rows, "windows": windows}
    out = Path(args.out) / f"cpu_routes_{args.tag}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {out}", flush=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    # a cold compilation: inductor's on-disk cache of an earlier run would hide its cost
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="cpu_routes_inductor_")
    raise SystemExit(main())
