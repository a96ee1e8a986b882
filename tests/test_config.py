"""Options defined once: config validation from Python, and the CLI generated from the configs."""

import argparse

import pytest

from autogcl.cli import build_parser
from autogcl.config import RunOptions, add_options, from_args
from autogcl.errors import ConfigError
from autogcl.protocols.pretrain import PretrainConfig
from autogcl.protocols.semi import SemiConfig
from autogcl.protocols.transfer import FinetuneConfig
from autogcl.protocols.unsupervised import UnsupervisedConfig
from autogcl.protocols.views import ViewsConfig


def test_config_defaults_work_from_python():
    assert UnsupervisedConfig(epochs=5).eval_epochs == [5]
    assert UnsupervisedConfig(epochs=25).eval_epochs == [10, 20]
    assert UnsupervisedConfig().eval_epochs == [10, 20, 30]
    assert SemiConfig(dataset="DD").batch_size == 64


@pytest.mark.parametrize("cls,kwargs,name", [
    (UnsupervisedConfig, {"epochs": 0}, "--epochs"),
    (UnsupervisedConfig, {"lr": -1.0}, "--lr"),
    (UnsupervisedConfig, {"batch_size": 1}, "--batch-size"),
    (UnsupervisedConfig, {"tau": 0.0}, "--tau"),
    (UnsupervisedConfig, {"aug_ratio": 1.0}, "--aug-ratio"),
    (UnsupervisedConfig, {"eval_epochs": [40]}, "--eval-epochs"),
    (SemiConfig, {"label_rate": 0.0}, "--label-rate"),
    (SemiConfig, {"lam": -1.0}, "--lambda"),
    (SemiConfig, {"pretrain_epochs": -1}, "--pretrain-epochs"),
    (FinetuneConfig, {"dropout": 1.0}, "--dropout"),
    (PretrainConfig, {"batch_size": 1}, "--batch-size"),
    (RunOptions, {"seeds": 0}, "--seeds"),
    (RunOptions, {"first_seed": -1}, "--first-seed"),
    (RunOptions, {"jobs": 0}, "--jobs"),
    (RunOptions, {"device": "tpu"}, "device"),
    (RunOptions, {"executor": "dask"}, "--executor"),
    (RunOptions, {"executor": "ray", "cpus_per_unit": 0.0}, "--cpus-per-unit"),
    (RunOptions, {"executor": "ray", "gpus_per_unit": -1.0}, "--gpus-per-unit"),
])
def test_out_of_range_options_name_the_option(cls, kwargs, name):
    with pytest.raises(ConfigError, match=name):
        cls(**kwargs)


def _subparser(parser, *path):
    for name in path:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[name]
    return parser


@pytest.mark.parametrize("path,cls", [
    (("unsupervised",), UnsupervisedConfig), (("semi",), SemiConfig),
    (("transfer", "pretrain"), PretrainConfig), (("transfer", "finetune"), FinetuneConfig),
    (("visualize", "views"), ViewsConfig),
])
def test_cli_defaults_are_the_config_defaults(path, cls):
    sub = _subparser(build_parser(), *path)
    args = sub.parse_args([])
    assert from_args(cls, args) == cls()
    assert {"device", "data_root", "out"} <= set(vars(args))


def test_generated_options_parse_lists_and_negated_flags():
    p = argparse.ArgumentParser()
    add_options(p, UnsupervisedConfig)
    add_options(p, PretrainConfig, only=["add_mask"])
    args = p.parse_args(["--eval-epochs", "2,4", "--no-mask", "--method", "graphcl"])
    assert args.eval_epochs == [2, 4] and args.add_mask is False and args.method == "graphcl"
    with pytest.raises(SystemExit):
        p.parse_args(["--eval-epochs", "2,x"])


def test_run_options_of_the_executors(caplog):
    serial = RunOptions(ray_address="auto", gpus_per_unit=1.0)  # Ray-only options: warned and dropped
    assert serial.ray_address is None and serial.gpus_per_unit == 0.0
    assert "do(es) not apply to --executor serial" in caplog.text
    assert RunOptions(jobs=4).unit_jobs == 4  # serial: every core the process has
    assert RunOptions(jobs=4, cpus_per_unit=1).unit_jobs == 1  # a unit never starts more processes than its CPUs
    assert RunOptions(executor="serial", cpus_per_unit=1).make_executor().cpus_per_unit == 1


def test_a_gpu_unit_on_ray_must_ask_for_a_gpu(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(ConfigError, match="--device cuda with --executor ray needs --gpus-per-unit"):
        RunOptions(executor="ray", device="cuda")
    assert RunOptions(executor="ray", device="cuda", gpus_per_unit=0.5).gpus_per_unit == 0.5


def test_grid_option_takes_several_values_and_repeats():
    p = argparse.ArgumentParser()
    add_options(p, RunOptions, only=["grid"])
    args = p.parse_args(["--grid", "lr=0.1,0.01", "tau=0.2", "--grid", "lam=1,2"])
    assert args.grid == ["lr=0.1,0.01", "tau=0.2", "lam=1,2"]
    assert p.parse_args([]).grid is None


def test_the_released_losses_are_options_of_pre_training_too():
    """--cl-variant on `autogcl transfer pretrain` (the released code's NT-Xent), checked like
    every choice; an option defaulting to None whose help says what it becomes shows no
    "(default: None)"."""
    argv = ["transfer", "pretrain", "--sim-loss", "mse", "--cl-variant", "released"]
    cfg = from_args(PretrainConfig, build_parser(argv).parse_args(argv))
    assert (cfg.sim_loss, cfg.cl_variant) == ("mse", "released")
    assert (PretrainConfig().sim_loss, PretrainConfig().cl_variant) == ("none", "simclr")  # the paper's form
    with pytest.raises(ConfigError, match="--cl-variant"):
        PretrainConfig(cl_variant="bogus")
    sub = build_parser(["unsupervised"])._subparsers._group_actions[0].choices["unsupervised"]
    text = " ".join(sub.format_help().split())
    entry = text.split("options:")[1].split("--tau TAU ")[1].split(" --")[0]
    assert "default 0.5 autogcl" in entry and "None" not in entry, entry


def _bad_options():
    """(what is built, the text its ConfigError must hold) for a sample of bad option values."""
    import autogcl
    from autogcl.data.molecules import VOCAB
    from autogcl.data.splits import semi_splits
    from autogcl.models.mol_gin import MolGNN
    from autogcl.models.relpos import RelPosConv

    return [(lambda: autogcl.AutoGCL(4, 8, 2, view_sampling="twice"), "'twice'"),
            (lambda: autogcl.GraphCL(4, 8, 2, views="aug-orig"), "'aug-orig'"),
            (lambda: autogcl.SemiSupervised(4, 2, 8, 2, dropped="hide"),
             "unknown dropped 'hide'; choose from isolate, remove"),
            (lambda: semi_splits([0, 1] * 10, split="relased"), "unknown split 'relased'"),
            (lambda: RelPosConv(4, 8, aggr="sum"), "'sum'"),
            (lambda: MolGNN(VOCAB, num_layers=0), "num_layers=0")]


def test_a_bad_option_value_is_a_config_error_naming_it():
    for make, text in _bad_options():
        with pytest.raises(ConfigError, match=text):
            make()


@pytest.mark.parametrize("argv,message", [
    (["unsupervised", "--dataset", "MUTAG", "--grid", "view_sampling=twice"],
     "unknown view sampling 'twice' (--view-sampling); choose from replacement, generated"),
    (["semi", "--dataset", "MUTAG", "--row", "joint", "--grid", "dropped=hide"],
     "unknown dropped 'hide' (--dropped); choose from isolate, remove"),
    (["semi", "--dataset", "MUTAG", "--row", "nonsense"], "unknown row 'nonsense'"),
])
def test_a_bad_option_value_on_the_command_line_exits_2_naming_it(argv, message, tmp_path, capsys):
    from autogcl.cli import main

    assert main([*argv, "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"autogcl: error: {message}" in err, err
    assert not (tmp_path / "out").exists()  # refused before anything was written or read
