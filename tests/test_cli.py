"""The command line is generated from the configs; its top-level help loads no torch."""

import subprocess
import sys

from autogcl.cli import HELP, build_parser


def test_top_level_help_lists_every_command_without_importing_torch():
    code = ("import sys\nfrom autogcl.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit as e:\n"
            "    assert e.code == 0\nassert 'torch' not in sys.modules, 'torch imported'\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    for name in HELP:
        assert name in out.stdout


def test_only_the_invoked_command_is_built():
    def built(parser):
        sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        return {name for name, p in sub.choices.items() if len(p._actions) > 1}

    assert built(build_parser(["-v", "semi", "--help"])) == {"semi"}
    assert built(build_parser()) == set(HELP)
