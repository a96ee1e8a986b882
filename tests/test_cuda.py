"""The device paths on a real GPU (skipped where torch sees none; CI has none: the same code
runs on the CPU in every other test). Run with ``pytest tests/test_cuda.py`` on a GPU machine."""

import pytest
import torch
from torch_geometric.loader import DataLoader

import autogcl
from autogcl.seeding import seed_everything
from tests.conftest import CUDA, make_batch

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not CUDA, reason="no CUDA device visible")]


def test_fit_embed_inspect_on_cuda_and_load_on_cpu(tmp_path):
    graphs = make_batch().to_data_list() * 8
    for model in (autogcl.AutoGCL(4, hidden=16, num_layers=2, add_mask=True, features=None),
                  autogcl.GraphCL(4, hidden=16, num_layers=2, features=None)):
        rows = model.fit(graphs, epochs=2, batch_size=8, device="cuda", seed=0, progress=False)
        assert model.device.type == "cuda" and all(r["loss"] == r["loss"] for r in rows)
        z = model.embed(graphs)
        assert z.device.type == "cpu" and z.shape == (32, 32)
        if isinstance(model, autogcl.AutoGCL):
            d, _ = model.inspect(graphs[:4])
            assert d.op.device.type == "cuda"
        back = autogcl.load(model.save(tmp_path / "m.pt"), map_location="cpu")
        assert torch.allclose(back.embed(graphs), z, atol=1e-4)


@pytest.fixture
def deterministic():
    """PyTorch's deterministic kernels (scatter-adds included) for this test alone, as
    ``--deterministic`` sets them (``scripts/gpu/gpu_checks.sh`` sets cuBLAS's workspace before any
    test uses cuBLAS)."""
    from autogcl.devices import deterministic_kernels

    with deterministic_kernels():
        yield


def test_checkpoint_holds_cuda_rng_and_resumes_on_cuda(tmp_path, deterministic):
    def build():
        gen = seed_everything(0)
        model = autogcl.AutoGCL(4, hidden=8, num_layers=2, features=None)
        loader = DataLoader(make_batch().to_data_list() * 4, batch_size=4, shuffle=True, generator=gen)
        return model.make_strategy(), loader, gen

    strat, loader, gen = build()
    ref = autogcl.Trainer(strat, device="cuda", loader_gen=gen, checkpoint=tmp_path / "a.pt",
                          show_progress=False).fit(loader, 2)
    state = torch.load(tmp_path / "a.pt", weights_only=True)
    assert len(state["rng"]["cuda"]) == torch.cuda.device_count()
    strat, loader, gen = build()
    autogcl.Trainer(strat, device="cuda", loader_gen=gen, checkpoint=tmp_path / "b.pt",
                    show_progress=False).fit(loader, 1)
    strat, loader, gen = build()
    rows = autogcl.Trainer(strat, device="cuda", loader_gen=gen, checkpoint=tmp_path / "b.pt",
                           show_progress=False).fit(loader, 2)
    # with deterministic kernels the resumed run is the uninterrupted one, to float rounding (by
    # default CUDA's scatter-adds are not: the two drifted apart by more than 0.1% in 2 epochs on an H100)
    assert [r["loss"] for r in rows] == pytest.approx([r["loss"] for r in ref], rel=1e-6)


def test_deterministic_kernels_make_a_seeded_gpu_fit_repeat_bit_for_bit():
    """``Engine("cuda", deterministic=True)`` (``--deterministic``): two fits of one seed give the
    same losses and embeddings bit for bit (by default CUDA's scatter-adds differ run to run)."""
    from autogcl.devices import Engine

    graphs = make_batch().to_data_list() * 8

    def fit():
        torch.manual_seed(0)  # the initial weights
        model = autogcl.AutoGCL(4, hidden=16, num_layers=2, features=None)
        rows = model.fit(graphs, epochs=2, batch_size=8, device=Engine("cuda", deterministic=True), seed=0,
                         progress=False)
        return [r["loss"] for r in rows], model.encoder.state_dict()

    (a, sa), (b, sb) = fit(), fit()
    assert a == b and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_static_views_on_cuda_give_the_numbers_of_removal_with_no_sync():
    """Atoms removed in place (``static_views``) on the GPU: one pre-training step's loss terms,
    every gradient (generators' included) and every BatchNorm buffer are those of removal (the
    same Gumbel draws: both draw on the batch itself), to float rounding; and a padded step runs
    under CUDA's sync debug mode set to "error", so any synchronization in it fails the test."""
    from autogcl.api.pretrain import MoleculePretrainer
    from autogcl.data.batching import pad_batch
    from tests.models.test_static_views import _same_step, _step, mol_batch

    batch = mol_batch().to("cuda")
    got = {}
    for static in (False, True):
        torch.manual_seed(0)
        strategy = MoleculePretrainer("autogcl", dim=16, num_layers=3, gen_hidden=8, batch_size=8,
                                      static_views=static).build_strategy().to("cuda")
        for m in strategy.modules().values():
            m.train()
        got[static] = _step(strategy, batch, [1, 2])
        if static:  # a second step, padded, with every synchronization an error
            padded = pad_batch(batch, 64)
            torch.cuda.synchronize()
            torch.cuda.set_sync_debug_mode("error")
            try:
                strategy.losses(padded, [1, 2])["loss"].backward()
            finally:
                torch.cuda.set_sync_debug_mode("default")
    _same_step(got[True], got[False])
