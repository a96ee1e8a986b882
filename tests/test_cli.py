"""The command line is generated from the configs; no help page loads torch."""

import subprocess
import sys

import pytest

from autogcl.cli import HELP, build_parser

COMMANDS = ["unsupervised", "semi", "ablate", "report", "transfer", "transfer pretrain", "transfer finetune",
            "visualize", "visualize views", "visualize curves", "visualize tsne"]


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
