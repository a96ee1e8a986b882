"""Every command's ``--help`` lists its options by purpose (issue 59): what the command runs,
the data, the run's settings, execution; the groups come from the options' metadata
(``autogcl.config.option(group=...)``), built by ``add_options``."""

from __future__ import annotations

import re

import pytest

from autogcl.cli import main
from autogcl.config import GROUPS

COMMANDS = [["unsupervised"], ["semi"], ["transfer", "finetune"], ["transfer", "pretrain"], ["embed"],
            ["ablate", "graphcl-aug"]]


def sections(argv, capsys) -> dict[str, list[str]]:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    text = capsys.readouterr().out
    out, current = {}, None
    for line in text.splitlines():
        if line in ("options:", "positional arguments:") or (out and re.fullmatch(r"\S.*:", line)):
            current = line[:-1]
            out[current] = []
        elif current and re.match(r"  (-\S+|[A-Z_]+)", line):
            out[current].append(line.split()[0].rstrip(","))
    return out


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_every_option_is_in_a_group_of_its_purpose_in_order(argv, capsys):
    got = sections(argv, capsys)
    assert got.pop("options") == ["-h"]  # nothing else is left ungrouped
    assert list(got) == [g for g in GROUPS if g in got] and "execution" in got


def test_transfer_finetune_help_groups(capsys):
    got = sections(["transfer", "finetune"], capsys)
    assert {"--checkpoint", "--task"} <= set(got["what the command runs"])
    assert {"--dataset", "--csv", "--label-cols", "--data-root"} <= set(got["the data"])
    assert {"--epochs", "--lr", "--seeds"} <= set(got["the run's settings"])
    assert {"--device", "--executor", "--out", "--resume"} <= set(got["execution"])


def test_an_unknown_group_is_refused():
    from autogcl.config import option
    from autogcl.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown help group 'misc'"):
        option(1, "x", group="misc")
