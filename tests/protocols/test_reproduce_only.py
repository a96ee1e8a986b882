"""``autogcl reproduce --only PATTERN`` that matches no cell is an error naming the pattern and
the cells (issue 59), not "every listed cell is done" and exit 0."""

from __future__ import annotations

import pytest

from autogcl.cli import main
from autogcl.errors import ConfigError
from autogcl.protocols.manifest import CELLS, select


def test_a_pattern_that_matches_no_cell_is_an_error_naming_it_and_the_cells(tmp_path, capsys):
    rc = main(["reproduce", "--missing", "--only", "trasnfer / bbbp", "--root", str(tmp_path), "--dry-run"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "--only 'trasnfer / bbbp' matches no cell; the cells: " in err and "transfer / bbbp / none" in err
    assert err.count("\n") == 1


def test_every_text_of_only_must_match_a_cell():
    with pytest.raises(ConfigError, match="--only 'nothing' matches no cell on gpu"):
        select(CELLS, "gpu", "transfer / hiv,nothing")
    assert select(CELLS, "gpu", "transfer / hiv")  # a text that matches selects as before
