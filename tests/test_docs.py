"""Every python example of docs/api.md runs as written (from the repository root)."""

import re

import pytest

from tests.conftest import REPO

DOC = REPO / "docs" / "api.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_the_guide_has_examples():
    assert len(BLOCKS) >= 9


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_api_example_runs(index, data_root, monkeypatch, capsys):
    code = BLOCKS[index].replace("../shared/data", str(data_root))
    monkeypatch.chdir(REPO)
    exec(compile(code, f"{DOC.name} example {index + 1}", "exec"), {"__name__": f"docs_example_{index}"})
    assert capsys.readouterr().out.strip(), "every example prints what it shows"

