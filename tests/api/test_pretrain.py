"""The public molecule pre-training entry point (autogcl.api.pretrain): ``autogcl transfer
pretrain`` gives the numbers of the library call; the options default to the command's; an
interrupted fit continues from its checkpoint folder; bad options are ConfigErrors."""

from __future__ import annotations


import pytest
import torch

from autogcl import seeding
from autogcl.api.pretrain import MoleculePretrainer, pretrain_molecules
from autogcl.errors import ConfigError, DataError

SMALL = {"epochs": 2, "batch_size": 16, "chunk_size": 40, "dim": 16, "num_layers": 2, "gen_hidden": 8}


def test_the_defaults_are_the_commands():
    from autogcl.protocols.configs import PretrainConfig

    assert MoleculePretrainer().get_params() == PretrainConfig().pretrainer_options()


@pytest.mark.parametrize("method", ["autogcl", "graphcl"])
def test_the_command_line_gives_the_numbers_of_the_library_call(corpus, tmp_path, method):
    from autogcl.cli import main

    flags = [f"--{k.replace('_', '-')}={v}" for k, v in SMALL.items()]
    rc = main(["transfer", "pretrain", "--corpus", str(corpus), "--method", method, *flags, "--workers", "1",
               "--no-progress", "--out", str(tmp_path / "cli")])
    assert rc == 0
    cli = torch.load(tmp_path / "cli" / "encoder.pt", weights_only=True)["state_dict"]
    enc = pretrain_molecules(corpus, tmp_path / "lib", method=method, workers=1, show_progress=False, **SMALL)
    lib = enc.encoder.state_dict()
    assert cli.keys() == lib.keys() and all(torch.equal(cli[k], lib[k]) for k in cli)  # same ops: bit-exact
    assert enc.meta["epochs"] == 2 and enc.meta["corpus"]["molecules"] == 80 and not enc.training
    assert enc.meta["pretrain_options"]["method"] == method


def test_an_interrupted_fit_continues_from_its_checkpoint_folder(corpus, tmp_path, monkeypatch):
    from autogcl.data.corpus import MoleculeCorpus

    whole = pretrain_molecules(corpus, None, workers=1, show_progress=False, **SMALL)
    load, calls = MoleculeCorpus.load, []

    def flaky(self, i):
        calls.append(i)
        if len(calls) == 4:  # inside epoch 2, after its first chunk
            raise KeyboardInterrupt
        return load(self, i)

    monkeypatch.setattr(MoleculeCorpus, "load", flaky)
    with pytest.raises(KeyboardInterrupt):
        MoleculePretrainer(**SMALL).fit(corpus, tmp_path / "ck", workers=1, show_progress=False)
    monkeypatch.setattr(MoleculeCorpus, "load", load)
    again, seen = MoleculePretrainer(**SMALL), []
    enc = again.fit(corpus, tmp_path / "ck", workers=1, show_progress=False,
                    on_epoch=lambda rows, encoder: seen.append(len(rows)))
    assert seen == [2] and len(again.history) == 2 and not again.stopped_early
    a, b = whole.encoder.state_dict(), enc.encoder.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)  # one process; the resumed fit replays the same operations


def test_a_signal_inside_a_chunk_keeps_its_finished_steps_and_none_is_trained_again(corpus, tmp_path, monkeypatch):
    """SIGTERM in the middle of a chunk (a GPU window's budget) writes the checkpoint of the last
    finished step: the resumed fit trains only the steps left, and ends with the weights of an
    unbroken fit. 80 molecules in batches of 8: 2 chunks of 5 steps, 2 epochs, 20 steps."""
    import math
    import os
    import signal

    from autogcl.errors import Preempted

    opts = {**SMALL, "batch_size": 8}
    calls, stop_at = [], []
    build = MoleculePretrainer.build_strategy

    def counting(self):
        strategy = build(self)
        step = strategy.step

        def counted(batch, epoch, i):
            calls.append(epoch)
            out = step(batch, epoch, i)
            if len(calls) in stop_at:  # noted during step 7; the fit stops before step 8
                os.kill(os.getpid(), signal.SIGTERM)
            return out

        strategy.step = counted
        return strategy

    monkeypatch.setattr(MoleculePretrainer, "build_strategy", counting)
    whole = MoleculePretrainer(**opts)
    ref = whole.fit(corpus, tmp_path / "whole", workers=1, show_progress=False)
    assert len(calls) == 20
    calls.clear()
    stop_at.append(7)
    with pytest.raises(Preempted, match=r"stopped by SIGTERM after epoch 0 \(pretrain autogcl, after step 2 of chunk 2 "
                                        r"of epoch 1; checkpoint .*checkpoint\.pt\)"):
        MoleculePretrainer(**opts).fit(corpus, tmp_path / "ck", workers=1, show_progress=False)
    assert len(calls) == 7
    calls.clear()
    stop_at.clear()
    again = MoleculePretrainer(**opts)
    enc = again.fit(corpus, tmp_path / "ck", workers=1, show_progress=False)
    assert len(calls) == 13  # 20 - 7: no step trained twice, none left out
    a, b = ref.encoder.state_dict(), enc.encoder.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)  # one process, the same operations: bit-exact
    assert [(r["molecules"], r["steps"]) for r in again.history] == [(r["molecules"], r["steps"]) for r in whole.history]
    # the stopped chunk's mean loss is summed in two parts: equal up to float rounding
    for r, w in zip(again.history, whole.history):
        assert math.isclose(r["loss"], w["loss"], rel_tol=1e-9)


@pytest.mark.parametrize("options, match", [({"method": "simclr"}, "unknown method 'simclr'; choose from autogcl"),
                                            ({"sim_loss": "l2"}, "sim_loss"), ({"batch_size": 1}, "batch_size"),
                                            ({"chunk_size": 1}, "chunk_size"), ({"lr": 0}, "lr")])
def test_bad_options_are_config_errors(options, match):
    with pytest.raises(ConfigError, match=match):
        MoleculePretrainer(**options)


def test_a_missing_corpus_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="no such SMILES file"):
        MoleculePretrainer().fit(tmp_path / "none.csv")
    with pytest.raises(DataError, match="the corpus must be the path of a SMILES file .* got a list; write a list"):
        MoleculePretrainer().fit(["CCO", "CCCC"])
    with pytest.raises(ConfigError, match="progress=False and show_progress=True disagree"):
        MoleculePretrainer().fit(tmp_path / "none.csv", progress=False, show_progress=True)


def test_deterministic_kernels_reach_the_chunked_trainer(corpus, tmp_path, monkeypatch):
    """``transfer pretrain --deterministic`` trains its chunks under PyTorch's deterministic
    kernels (the setting is restored after), and the run's record says so."""
    import contextlib
    import json

    import autogcl.train.pretrain as chunked
    from autogcl.cli import main

    asked, real = [], chunked.deterministic_kernels

    @contextlib.contextmanager
    def spy(on=True):
        with real(on):
            asked.append((on, torch.are_deterministic_algorithms_enabled()))
            yield

    monkeypatch.setattr(chunked, "deterministic_kernels", spy)
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in {**SMALL, "epochs": 1}.items()]
    assert main(["transfer", "pretrain", "--corpus", str(corpus), *flags, "--workers", "1", "--deterministic",
                 "--device", "cpu", "--no-progress", "--out", str(tmp_path / "O")]) == 0
    assert asked == [(True, True)] and not torch.are_deterministic_algorithms_enabled()
    result = json.loads((tmp_path / "O" / "result.json").read_text())
    assert result["runtime"]["deterministic"] is True


def test_a_second_fit_without_its_checkpoint_folder_trains_a_new_encoder(corpus, tmp_path):
    """docs/api.md: MoleculePretrainer.fit trains a new encoder each call (the same seed: the same
    weights, bit-exact on one process), unless it is given the checkpoint folder of an earlier fit,
    which it continues up to ``epochs`` in all."""
    p = MoleculePretrainer(**SMALL)
    first = p.fit(corpus, tmp_path / "ck", workers=1, progress=False)
    second = p.fit(corpus, None, workers=1, progress=False)
    a, b = first.encoder.state_dict(), second.encoder.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a) and len(p.history) == 2
    # the earlier fit's folder, with epochs raised: one epoch more, from where the first one ended
    longer = MoleculePretrainer(**{**SMALL, "epochs": 3})
    seen = []
    more = longer.fit(corpus, tmp_path / "ck", workers=1, progress=False,
                      on_epoch=lambda rows, encoder: seen.append(len(rows)))
    whole = MoleculePretrainer(**{**SMALL, "epochs": 3}).fit(corpus, None, workers=1, progress=False)
    c, d = more.encoder.state_dict(), whole.encoder.state_dict()
    assert seen == [3] and all(torch.equal(c[k], d[k]) for k in c)


def test_a_fit_with_atoms_removed_in_place_trains_the_encoder_of_removal(corpus, tmp_path):
    """Through the estimator users call: ``static_views=True`` pre-trains with the losses of the
    default route, epoch by epoch, to float rounding (relative 1e-4). The weights agree less
    closely: an Adam step moves a weight by about ``lr`` whatever the size of its gradient, so a
    gradient that is 0 in exact arithmetic (a bias before a BatchNorm, a unit that ReLU shuts)
    turns rounding into steps of ``lr``, and one element of the embeddings can move by a few per
    cent of the largest. So the embeddings are compared as wholes: the two routes' difference is
    under 3% of the distance training moved them from the initial encoder's (measured on
    2026-12-07: 0.98% at one torch thread, 0.82% at two; the default route with ``lr`` 10% larger
    is 6.4% and 5.7% away, so the check tells that apart). An element-wise bound of 16 ``lr``
    relative to the largest held at two threads (1.2%) and failed at one (2.2%)."""
    small = {"epochs": 2, "batch_size": 16, "chunk_size": 40, "dim": 16, "num_layers": 2, "gen_hidden": 8}
    fits = {}
    for static in (False, True):
        p = MoleculePretrainer(**small, static_views=static)
        enc = p.fit(corpus, tmp_path / str(static), workers=1, progress=False)
        fits[static] = (p.history, enc)
    (h0, e0), (h1, e1) = fits[False], fits[True]
    assert [r["steps"] for r in h0] == [r["steps"] for r in h1] == [4, 4]
    for a, b in zip(h0, h1):
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-4)
    seeding.seed_everything(0)  # the weights both fits start from (fit seeds, then builds)
    init = MoleculePretrainer(**small).build_strategy().model.encoder
    batch = _molecules()
    with torch.no_grad():
        z0, z1, zi = e0.encoder(batch), e1.encoder(batch), init(batch)
    assert float((z1 - z0).norm()) < 0.03 * float((z0 - zi).norm())
    assert e1.meta["pretrain_options"]["static_views"] is True


def test_a_fit_on_padded_batches_takes_the_step_of_the_batches(corpus, tmp_path):
    """``pad_atoms`` through the estimator: the first step's loss on batches padded to 64 atoms
    is that of the same batches unpadded, to float rounding (on a CPU the real atoms' Gumbel
    noise is the same draw; later steps draw from a stream the padding has moved on)."""
    small = {"epochs": 1, "batch_size": 16, "chunk_size": 40, "dim": 16, "num_layers": 2, "gen_hidden": 8,
             "static_views": True}
    losses = []
    for pad in (None, 64):
        p = MoleculePretrainer(**small, pad_atoms=pad)
        p.fit(corpus, tmp_path / str(pad), workers=1, progress=False, max_steps=1)
        assert p.stopped_early and p.history[0]["steps"] == 1
        losses.append(p.history[0]["loss"])
    assert losses[1] == pytest.approx(losses[0], rel=1e-4)


def _molecules():
    from torch_geometric.data import Batch

    from autogcl.data.molecules import smiles_to_graph

    return Batch.from_data_list([smiles_to_graph(s) for s in ["CCO", "c1ccccc1", "CC(=O)N", "OCC(O)CO"]])
