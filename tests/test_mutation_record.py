"""The mutation record of the selection functions (docs/results/mutation/record.json) describes
their code as it is: a listed function whose source hash differs from its entry fails, naming the
command that reruns its mutants; comments, docstrings and every other function do not count.
No mutmut at test time: the hashes come from ``ast`` (scripts/studies/mutation_notes.py)."""

from __future__ import annotations

import ast
import importlib.util
import shutil

import pytest

from tests.conftest import REPO


def _module():
    spec = importlib.util.spec_from_file_location("_mutation_notes", REPO / "scripts" / "studies" / "mutation_notes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


notes = _module()


def test_the_record_covers_every_listed_selection_function_as_it_is():
    problems = notes.stale()
    assert not problems, notes.stale_message(problems)


def test_every_entry_has_a_result_for_each_mutant_and_every_survivor_a_note():
    record = notes.read_record()
    for fn, entry in record["functions"].items():
        assert entry["mutants"] > 0 and sum(entry["results"].values()) == entry["mutants"], fn
        assert "not checked" not in entry["results"], f"{fn}: mutants without a result in the record"
        survivors = sum(entry["results"].get(s, 0) for s in notes.SURVIVING)
        assert len(entry["survivors"]) == survivors, fn
        assert all(notes.function_of(m) == fn for m in entry["survivors"]), fn
    _, missing, moved, gone = notes.check(record, notes.read_notes())
    assert not missing and not moved and not gone, (
        f"docs/results/mutation/notes.tsv: survivors without a note {missing}, noted for another change {moved}, "
        f"notes of no survivor {gone} (python scripts/studies/mutation_notes.py --draft)")


# ------------------------------------------------------------------ the check can fail, and only for a listed function
@pytest.fixture()
def tree(tmp_path):
    """A copy of the listed functions' files, and a record of their hashes as they are."""
    for path in notes.files():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / path, tmp_path / path)
    record = {"functions": {fn: {"hash": h, "commit": "c0ffee"} for fn, h in notes.current_hashes(tmp_path).items()}}
    assert not notes.stale(tmp_path, record)
    return tmp_path, record


def _function(source: str, name: str) -> ast.FunctionDef:
    return next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == name)


def _insert_before_last_statement(path, name: str, line: str) -> None:
    """Put ``line`` (indented as the function's last statement) before that statement."""
    lines = path.read_text().splitlines(keepends=True)
    last = _function("".join(lines), name).body[-1]
    indent = lines[last.lineno - 1][:last.col_offset]
    lines.insert(last.lineno - 1, indent + line + "\n")
    path.write_text("".join(lines))


def test_a_changed_selection_function_is_reported_with_the_command_that_reruns_its_mutants(tree):
    root, record = tree
    fn = "eval.svm.select_epoch"
    _insert_before_last_statement(root / notes.file_of(fn), "select_epoch", "evals = dict(reversed(evals.items()))")
    problems = notes.stale(root, record)
    assert list(problems) == [fn]
    assert "code changed" in problems[fn] and "c0ffee" in problems[fn]
    message = notes.stale_message(problems)
    assert fn in message and "bash scripts/studies/mutation.sh eval.svm.select_epoch" in message


def test_comments_docstrings_and_other_functions_of_the_same_file_leave_the_record_current(tree):
    root, record = tree
    path = root / "autogcl" / "eval" / "svm.py"
    listed = {fn.rpartition(".")[2] for fn in notes.FUNCTIONS if notes.file_of(fn) == "autogcl/eval/svm.py"}
    source = path.read_text()
    other = next(n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name not in listed)
    before = notes.source_hash(source, other)
    _insert_before_last_statement(path, other, "unused = 1  # code of a function outside the list")
    _insert_before_last_statement(path, "select_epoch", "# a comment in a listed function")
    doc = _function(path.read_text(), "select_epoch").body[0]
    lines = path.read_text().splitlines(keepends=True)
    lines[doc.lineno - 1] = lines[doc.lineno - 1].replace('"""', '"""Edited docstring. ', 1)
    path.write_text("".join(lines) + "\n\ndef added_function():\n    return 1\n\nADDED = 2\n")
    assert notes.source_hash(path.read_text(), other) != before  # the edit outside the list did change code
    assert not notes.stale(root, record)
    other_file = root / "autogcl" / "protocols" / "semi.py"
    other_file.write_text(other_file.read_text() + "\n\ndef another():\n    return 3\n")
    assert not notes.stale(root, record)


def test_a_function_missing_from_the_record_or_its_file_or_the_list_is_reported(tree):
    root, record = tree
    del record["functions"]["protocols.semi.select"]
    record["functions"]["protocols.semi.gone"] = {"hash": "0", "commit": "c0ffee"}
    path = root / "autogcl" / "protocols" / "grid.py"
    path.write_text(path.read_text().replace("def validation_score(", "def renamed_score("))
    problems = notes.stale(root, record)
    assert set(problems) == {"protocols.semi.select", "protocols.semi.gone", "protocols.grid.validation_score"}
    assert "no mutation result" in problems["protocols.semi.select"]
    assert "not in FUNCTIONS" in problems["protocols.semi.gone"]
    assert "no top-level function 'validation_score'" in problems["protocols.grid.validation_score"]


def test_the_hash_reads_code_not_comments_formatting_or_the_docstring():
    a = 'def f(x):\n    """Doc."""\n    return max(x, key=abs)\n'
    b = 'def f(x):  # a comment\n    """Another doc."""\n\n    return max(x,\n               key=abs)\n'
    c = 'def f(x):\n    """Doc."""\n    return min(x, key=abs)\n'
    assert notes.source_hash(a, "f") == notes.source_hash(b, "f") != notes.source_hash(c, "f")
    assert notes.source_hash('def f(x):\n    """Doc."""\n', "f") != notes.source_hash("def f(x):\n    return 1\n", "f")
    with pytest.raises(LookupError, match="no top-level function 'g'"):
        notes.source_hash(a, "g")


def test_the_listed_functions_and_their_mutmut_names():
    assert len(set(notes.FUNCTIONS)) == len(notes.FUNCTIONS)
    assert notes.file_of("protocols.transfer._select_regression") == "autogcl/protocols/transfer.py"
    pattern = notes.pattern_of("protocols.transfer._select_regression")
    assert pattern == "autogcl.protocols.transfer.x__select_regression__mutmut_*"
    assert notes.function_of(pattern) == notes.function_of(pattern.replace("*", "12")) == \
        "protocols.transfer._select_regression"
    with pytest.raises(SystemExit, match="not a listed selection function: eval.svm.auto_jobs"):
        notes.patterns(["eval.svm.auto_jobs"])
