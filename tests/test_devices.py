"""Device resolution and the runtime record (the CUDA paths run on CPU-only machines too)."""

import pytest
import torch

from autogcl.devices import cpu_numerics, resolve_device, runtime_info
from autogcl.errors import ConfigError


def test_cpu_and_auto():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(None) == resolve_device("auto")
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without a GPU")
def test_cuda_without_a_gpu_is_an_error():
    for spec in ("cuda", "cuda:0", "CUDA:1"):
        with pytest.raises(ConfigError, match="sees no CUDA GPU"):
            resolve_device(spec)


def test_unknown_devices_are_errors():
    for spec in ("gpu", "tpu:0", "cpux"):
        with pytest.raises(ConfigError, match="device"):
            resolve_device(spec)


def test_runtime_record():
    info = runtime_info("cpu")
    assert info == {"device": "cpu", "torch_threads": torch.get_num_threads(), "torch": torch.__version__,
                    "cpu_numerics": cpu_numerics()}
    assert cpu_numerics().split("-")[0] == torch.backends.cpu.get_cpu_capability()


def test_an_engine_with_deterministic_kernels_trains_under_them_and_restores_the_setting():
    """``Engine(deterministic=True)`` (``--deterministic``): the fit runs under PyTorch's
    deterministic kernels, the setting before it is back after it, the runtime record says so,
    and on the CPU (deterministic already) the numbers are those of the default engine."""
    import autogcl
    from autogcl.devices import Engine
    from tests.api.test_estimators import path_graph

    graphs = [path_graph(n, feat=5) for n in range(3, 11)]

    def fit(engine):
        torch.manual_seed(0)
        model = autogcl.AutoGCL(5, hidden=8, num_layers=2)
        seen = []
        model.encoder.register_forward_hook(lambda *_: seen.append(torch.are_deterministic_algorithms_enabled()))
        rows = model.fit(graphs, epochs=2, batch_size=4, device=engine, seed=0, progress=False)
        return rows, list(seen), model.embed(graphs)  # the forward passes of the fit, before embed's

    assert not torch.are_deterministic_algorithms_enabled()
    rows, seen, z = fit(Engine("cpu", deterministic=True))
    assert seen and all(seen) and not torch.are_deterministic_algorithms_enabled()
    plain_rows, plain_seen, plain_z = fit("cpu")
    assert plain_seen and not any(plain_seen)
    assert [r["loss"] for r in rows] == pytest.approx([r["loss"] for r in plain_rows], rel=1e-6)
    torch.testing.assert_close(z, plain_z, rtol=1e-5, atol=1e-6)
    model = autogcl.AutoGCL(5, hidden=8, num_layers=2)  # the setting is the fit's, not the model's
    seen = []
    model.encoder.register_forward_hook(lambda *_: seen.append(torch.are_deterministic_algorithms_enabled()))
    model.fit(graphs, epochs=1, batch_size=4, device=Engine("cpu", deterministic=True), seed=0, progress=False)
    first, seen[:] = list(seen), []
    model.fit(graphs, epochs=1, batch_size=4, device="cpu", seed=0, progress=False)
    assert first and all(first) and seen and not any(seen)
    assert runtime_info(Engine("cpu", deterministic=True))["deterministic"] is True
    assert "deterministic" not in runtime_info(Engine("cpu"))


def _flags_of(module):
    """The deterministic-algorithms setting at each forward of ``module`` (a list that fills)."""
    seen = []
    module.register_forward_hook(lambda *_: seen.append(torch.are_deterministic_algorithms_enabled()))
    return seen


def test_what_runs_after_a_deterministic_fit_runs_under_its_kernels_too():
    """Settling, embeddings and predictions after a fit with ``Engine(deterministic=True)`` run
    under PyTorch's deterministic kernels (on a GPU, the scatter-adds of the embeddings would
    otherwise add in any order); after a plain fit they do not, unless the call's own device is
    such an engine; the earlier setting is back after each call."""
    import autogcl
    from autogcl.devices import Engine
    from tests.api.test_estimators import path_graph

    graphs = [path_graph(n, feat=5) for n in range(3, 11)]
    det = Engine("cpu", deterministic=True)
    torch.manual_seed(0)
    model = autogcl.AutoGCL(5, hidden=8, num_layers=2)
    seen = _flags_of(model.encoder)
    model.fit(graphs, epochs=1, batch_size=4, device=det, seed=0, progress=False)
    seen.clear()
    model.embed(graphs)
    assert seen and all(seen) and not torch.are_deterministic_algorithms_enabled()
    model.fit(graphs, epochs=1, batch_size=4, device="cpu", seed=0, progress=False)  # the last fit's setting
    seen.clear()
    model.embed(graphs)
    assert seen and not any(seen)
    model.embed(graphs, device=det)  # the call's own engine
    assert seen[-1] and not torch.are_deterministic_algorithms_enabled()

    labels = torch.tensor([0, 1] * 4)
    for engine, want in ((det, True), ("cpu", False)):
        torch.manual_seed(0)
        semi = autogcl.SemiSupervised(5, 2, hidden=8, num_layers=2, gen_hidden=8, batch_size=4)
        seen = _flags_of(semi.classifier)
        semi.fit(graphs, labels, epochs=1, pretrain_epochs=0, device=engine, seed=0, progress=False)
        seen.clear()
        semi.settle(graphs)
        settled = list(seen)
        seen.clear()
        semi.predict(graphs)
        semi.embed(graphs)
        assert settled and seen and set(settled + seen) == {want}, engine
        assert not torch.are_deterministic_algorithms_enabled()


def test_a_molecule_predictor_predicts_under_the_kernels_of_its_fine_tuning(monkeypatch):
    """``MoleculeEncoder.finetune(device=Engine(deterministic=True))``: the settling after the fit
    and the predictor's predictions and scores run under deterministic kernels; a plain
    fine-tuning's do not."""
    pytest.importorskip("rdkit", reason="molecules need RDKit (pip install rdkit)")
    from autogcl.devices import Engine
    from autogcl.molecules import MoleculeEncoder

    import autogcl.models.norm as norm  # finetune imports it from there when it runs

    settles = []
    own = norm.settle_batchnorm
    monkeypatch.setattr(norm, "settle_batchnorm", lambda *a, **k: (
        settles.append(torch.are_deterministic_algorithms_enabled()), own(*a, **k))[1])
    smiles = ["CCO", "c1ccccc1O", "CC(=O)Nc1ccccc1", "CCN(CC)CC", "OCC(O)CO", "C1CCCCC1"]
    y = [0, 1, 0, 1, 1, 0]
    for engine, want in ((Engine("cpu", deterministic=True), True), ("cpu", False)):
        settles.clear()
        torch.manual_seed(0)
        encoder = MoleculeEncoder(dim=4, num_layers=1)
        pred = encoder.finetune(smiles, y, epochs=1, batch_size=3, seed=0, progress=False, device=engine,
                                bn_stats="settled")
        assert pred.deterministic is want
        assert settles and set(settles) == {want}, engine  # each epoch's (in the fit) and the last one's
        seen = _flags_of(pred.model)
        pred.predict(smiles)
        pred.score(smiles, y)
        assert seen and set(seen) == {want}, engine
        assert not torch.are_deterministic_algorithms_enabled()


def test_deterministic_is_a_run_option_of_every_training_command(capsys):
    from autogcl.cli import main
    from autogcl.config import RunOptions
    from autogcl.devices import Engine

    assert RunOptions(deterministic=True, device="cpu").engine == Engine("cpu", "fp32", False, True)
    for command in (["unsupervised"], ["semi"], ["transfer", "pretrain"], ["transfer", "finetune"]):
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        assert "--deterministic" in capsys.readouterr().out, command


def test_the_suite_hides_the_gpu_from_a_test_not_marked_cuda():
    """conftest's _hide_cuda: on a GPU machine too, the suite checks the CPU's numbers."""
    import os

    assert os.environ["CUDA_VISIBLE_DEVICES"] == "" and not torch.cuda.is_available()
    assert torch.cuda.device_count() == 0 and not torch.cuda.is_initialized()
    assert resolve_device("auto") == torch.device("cpu")


@pytest.mark.cuda
def test_a_test_marked_cuda_sees_the_machine_as_it_is():
    import os

    from tests.conftest import CUDA, VISIBLE

    assert os.environ.get("CUDA_VISIBLE_DEVICES") == VISIBLE and torch.cuda.is_available() == CUDA
    assert resolve_device("auto").type == ("cuda" if CUDA else "cpu")
