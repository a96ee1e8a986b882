"""The command line is generated from the configs; no help page loads torch."""

import subprocess
import sys

import pytest

from autogcl.cli import HELP, build_parser

COMMANDS = ["unsupervised", "semi", "ablate", "report", "transfer", "transfer pretrain", "transfer finetune",
            "visualize", "visualize views", "visualize curves", "visualize tsne", "reproduce", "tune"]


def test_top_level_help_lists_every_command_without_importing_torch():
    code = ("import sys\nfrom autogcl.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit as e:\n"
            "    assert e.code == 0\nassert 'torch' not in sys.modules, 'torch imported'\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    for name in HELP:
        assert name in out.stdout


def test_every_command_help_imports_no_torch_numpy_or_sklearn():
    # one process for all: each help page built from scratch, then the modules checked
    code = ("import sys\nfrom autogcl.cli import main\nheavy = ('torch', 'numpy', 'sklearn', 'torch_geometric')\n"
            f"for cmd in {COMMANDS!r}:\n"
            "    try:\n        main(cmd.split() + ['--help'])\n    except SystemExit as e:\n"
            "        assert e.code == 0, cmd\n"
            "    loaded = [m for m in heavy if m in sys.modules]\n"
            "    assert not loaded, f'{cmd} --help imported {loaded}'\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("usage: autogcl") == len(COMMANDS)


@pytest.mark.parametrize("module", ["unsupervised", "semi", "ablation", "pretrain", "transfer", "views"])
def test_protocol_modules_reexport_their_config(module):
    import importlib

    from autogcl.protocols import configs

    mod = importlib.import_module(f"autogcl.protocols.{module}")
    names = [n for n in vars(mod) if n.endswith("Config") and n != "Config"]
    assert names and all(getattr(mod, n) is getattr(configs, n) for n in names)


def test_only_the_invoked_command_is_built():
    def built(parser):
        sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        return {name for name, p in sub.choices.items() if len(p._actions) > 1}

    assert built(build_parser(["-v", "semi", "--help"])) == {"semi"}
    assert built(build_parser()) == set(HELP)


@pytest.mark.parametrize("checkpoint, tag", [
    ("runs/pretrain/autogcl-moses200k/encoder.pt", "autogcl-moses200k"),  # a pre-training run folder
    ("pretrained/autogcl-moses200k.pt", "autogcl-moses200k"),  # a file of its own: its stem
    ("my-encoder.pt", "my-encoder"),
    ("/encoder.pt", "encoder"),  # no run folder to name it after
])
def test_finetune_results_are_named_after_the_checkpoint(checkpoint, tag):
    from autogcl.protocols.configs import checkpoint_tag

    assert checkpoint_tag(checkpoint) == tag


def test_the_grid_example_in_the_help_parses_for_every_protocol():
    import re
    from dataclasses import fields

    from autogcl.config import RunOptions
    from autogcl.protocols.configs import FinetuneConfig, SemiConfig, UnsupervisedConfig
    from autogcl.protocols.grid import parse_grid

    help_text = next(f.metadata["help"] for f in fields(RunOptions) if f.name == "grid")
    example = re.search(r"e\.g\. --grid (.+?);", help_text).group(1).split()
    for cls in (UnsupervisedConfig, SemiConfig, FinetuneConfig):
        points = parse_grid(cls, example)
        assert len(points) == 4, cls.__name__
