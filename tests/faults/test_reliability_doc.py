"""docs/reliability.md's fault matrix stays true: every test it names exists, and every fault
test under tests/faults/ is named in it."""

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "reliability.md"


def named_tests() -> list[tuple[str, str]]:
    """``(file, test)`` of each row's test cell in the fault matrix."""
    rows = [line for line in DOC.read_text().splitlines() if line.startswith("| ") and "`tests/" in line]
    return [m.groups() for line in rows for m in re.finditer(r"`(tests/[\w/]+\.py)::(test_\w+)`", line)]


def defined_tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.name.startswith("test_")}


def test_every_test_the_matrix_names_exists():
    named = named_tests()
    assert len(named) >= 30
    missing = [f"{f}::{t}" for f, t in named if not (REPO / f).is_file() or t not in defined_tests(REPO / f)]
    assert missing == [], f"docs/reliability.md names tests that do not exist: {missing}"


def test_every_fault_test_is_in_the_matrix():
    named = set(named_tests())
    here = Path(__file__).parent
    unnamed = [f"{p.relative_to(REPO)}::{t}" for p in sorted(here.glob("test_*.py")) if p.name != Path(__file__).name
               for t in sorted(defined_tests(p)) if (str(p.relative_to(REPO)), t) not in named]
    assert unnamed == [], f"fault tests missing from docs/reliability.md: {unnamed}"
