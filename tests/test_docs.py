"""Every python example of docs/api.md runs as written (from the repository root)."""

import re

import pytest

from autogcl.paths import child_pythonpath
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



# ------------------------------------------------------------------ generated tables (scripts/docs/docs.py)

import importlib.util  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402


sys.path.insert(0, str(REPO / "scripts" / "docs"))  # scripts/docs/docsgen: the documentation's generators
sys.path.insert(0, str(REPO / "scripts" / "studies"))  # compare_runs, which a table reads


def _docs_script():
    spec = importlib.util.spec_from_file_location("docs_script", REPO / "scripts" / "docs" / "docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def checkout(tmp_path):
    """A copy of what the generator reads and writes: the README, docs/ and the benchmark files."""
    shutil.copy2(REPO / "README.md", tmp_path / "README.md")
    shutil.copytree(REPO / "docs", tmp_path / "docs", ignore=shutil.ignore_patterns("*.png", "*.svg"))
    return tmp_path


def test_committed_docs_match_their_regeneration():
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "docs" / "docs.py"), "--check"], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr


def test_a_doctored_table_fails_the_check_and_is_rewritten(checkout, capsys):
    docs = _docs_script()
    doc = checkout / "docs" / "results.md"
    text = doc.read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| MUTAG | autogcl |"))
    doctored = row.replace(row.split(" | ")[3], "99.99 ± 0.01")  # the val figure, typed by hand
    assert doctored != row
    doc.write_text(text.replace(row, doctored), encoding="utf-8")
    assert docs.main(["--check", "--root", str(checkout)]) == 1
    assert "docs/results.md" in capsys.readouterr().err
    assert docs.main(["--root", str(checkout)]) == 0
    assert docs.main(["--check", "--root", str(checkout)]) == 0
    assert "99.99" not in doc.read_text(encoding="utf-8") and row in doc.read_text(encoding="utf-8")


def test_a_cell_without_its_run_says_not_run_and_names_it(checkout):
    from docsgen import regenerate

    folder = "docs/results/summaries/unsupervised/MUTAG-autogcl"
    shutil.rmtree(checkout / folder)
    readme = regenerate(checkout)["README.md"][1]
    row = next(line for line in readme.splitlines() if line.startswith("| MUTAG | autogcl |"))
    assert "not run" in row and folder in row
    assert "88.91" not in row  # the figure of the removed run is gone with it


def test_a_document_without_its_markers_is_named(checkout):
    from autogcl.errors import DataError
    from docsgen import regenerate

    doc = checkout / "docs" / "results" / "gpu_queue.md"
    doc.write_text(doc.read_text(encoding="utf-8").replace("<!-- autogcl:end queue -->", ""), encoding="utf-8")
    with pytest.raises(DataError, match="gpu_queue.md.*queue"):
        regenerate(checkout)


def _perf(root, name, device, rows, threads=1, date="2026-11-25 12:00", tag=""):
    folder = root / "docs" / "results" / "perf"
    folder.mkdir(parents=True, exist_ok=True)
    doc = {"benchmark": name, "command": f"python benchmarks/engine.py --sections {name}", "machine": "test box",
           "device": device, "threads": threads, "torch": "2.x", "date": date, "rows": rows}
    (folder / f"{name}_{device}{tag}.json").write_text(json.dumps(doc), encoding="utf-8")


def test_goals_read_the_benchmark_files(checkout):
    from docsgen.perf import GOALS

    shutil.rmtree(checkout / "docs" / "results" / "perf", ignore_errors=True)  # only this test's files

    goal = {g.name: g for g in GOALS}
    dd = goal["DD AutoGCL epoch on a GPU, s"]
    base = goal["CPU full-size throughput against b434260 (2 threads), median molecules/s"]
    assert dd.measure(checkout)[2] == "not measured"
    _perf(checkout, "tu_epochs", "cpu", [  # a CPU file is not a GPU's
        {"code": "this", "dataset": "DD", "method": "autogcl", "s_per_epoch": 0.1}])
    assert dd.measure(checkout)[2] == "not measured"
    _perf(checkout, "tu_epochs", "cuda", [
        {"code": "this", "dataset": "DD", "method": "autogcl", "s_per_epoch": 0.15},
        {"code": "baseline", "dataset": "DD", "method": "autogcl", "s_per_epoch": 0.35},
        {"code": "this", "dataset": "NCI1", "method": "autogcl", "s_per_epoch": 0.9}])
    _perf(checkout, "pretrain_throughput", "cpu", [
        {"code": "this", "width": 300, "precision": "fp32", "compile": False, "molecules_per_s": 90.0},
        {"code": "baseline", "width": 300, "precision": "fp32", "compile": False, "molecules_per_s": 100.0},
        {"code": "this", "width": 8, "precision": "fp32", "compile": False, "cpu_step_ms_vs_baseline": 0.5}],
          threads=2)
    # the width-8 goal is set at one thread: a file measured at two is not read for it
    width8 = goal["CPU pre-training step at width 8 against b434260 (1 thread, process CPU time), median of the "
                  "paired window ratios"]
    assert width8.measure(checkout)[2] == "not measured"
    value, limit, status = dd.measure(checkout)
    assert status == "reached" and value.startswith("0.15") and limit == "<= 0.2"  # neither baseline nor NCI1 read
    value, limit, status = base.measure(checkout)
    assert status == "missing" and limit == ">= 100"
    from docsgen import regenerate

    page = regenerate(checkout)["docs/performance.md"][1]
    assert "test box" in page and "python benchmarks/engine.py --sections tu_epochs" in page
    assert "| DD AutoGCL epoch on a GPU, s | 0.15" in page
    # a newer file decides, even when an older one (first by name) measured a better figure
    _perf(checkout, "tu_epochs", "cuda", [{"code": "this", "dataset": "DD", "method": "autogcl", "s_per_epoch": 0.3}],
          date="2026-11-26 23:14", tag="-z")
    value, _, status = dd.measure(checkout)
    assert status == "missing" and value.startswith("0.3 ") and "tu_epochs_cuda-z.json" in value


def test_the_size_study_pages_match_their_regeneration(tmp_path):
    """transfer_sizes.md and sizes_pooled.md are written by scripts/studies/transfer_sizes.py from the
    committed summaries: regenerated into a copy, every table and difference is the same (the
    encoder paths of the last section depend on where the repository lies, so they are left out)."""
    results = tmp_path / "results"
    shutil.copytree(REPO / "docs" / "results", results, ignore=shutil.ignore_patterns("*.png", "*.svg", "units"))
    script = str(REPO / "scripts" / "studies" / "transfer_sizes.py")
    env = {**os.environ, "PYTHONPATH": child_pythonpath(REPO), "MPLBACKEND": "Agg"}
    out = subprocess.run([sys.executable, script, "--results", str(results), "report"], capture_output=True, text=True,
                         env=env)
    assert out.returncode == 0, out.stderr[-2000:]

    def body(text):
        return text.split("\nEncoders fine-tuned")[0]

    committed = (REPO / "docs" / "results" / "transfer_sizes.md").read_text(encoding="utf-8")
    assert body((results / "transfer_sizes.md").read_text(encoding="utf-8")) == body(committed)
    pooled = tmp_path / "pooled.md"
    out = subprocess.run([sys.executable, script, "pool", str(results), str(results / "sizes_gpu"), "--out", str(pooled)],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    committed = (REPO / "docs" / "results" / "sizes_pooled.md").read_text(encoding="utf-8")
    assert pooled.read_text(encoding="utf-8").splitlines()[1:] == committed.splitlines()[1:]


def test_the_loss_form_table_matches_its_regeneration():
    """loss_forms.md's paired table is scripts/studies/compare_runs.py over the committed summaries of both forms."""
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "studies" / "compare_runs.py"),
                          "docs/results/summaries/unsupervised", "docs/results/summaries/lossforms/unsupervised",
                          "--labels", "paper,released"], capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": child_pythonpath(REPO)})
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [line for line in out.stdout.splitlines() if (line.startswith("| ") and "-autogcl" in line) or "pooled" in line]
    assert len(rows) >= 8
    committed = (REPO / "docs" / "results" / "loss_forms.md").read_text(encoding="utf-8").splitlines()
    assert [r for r in rows if r not in committed] == []


# ------------------------------------------------------------------ figures typed by hand (docsgen.figures)

DD = "docs/results/summaries/unsupervised/DD-autogcl"


def _problems(text, root=REPO):
    from docsgen.figures import check_document

    return check_document(root, "docs/example.md", text)


def test_a_figure_typed_into_the_prose_fails_the_check(checkout, capsys):
    docs = _docs_script()
    page = checkout / "docs" / "tutorial.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nOn MUTAG it reaches 91.23 ± 0.45 in 2.5 h.\n",
                    encoding="utf-8")
    assert docs.main(["--check", "--root", str(checkout)]) == 1
    err = capsys.readouterr().err
    assert "docs/tutorial.md" in err and "figure 91.23 typed by hand" in err and "figure 2.5 typed by hand" in err


def test_the_readmes_beside_docs_are_checked_too(tmp_path):
    """The shipped encoders' README (the evidence for which one ships) and the benchmarks' are
    read by users as docs are: a figure typed there fails the check, a marked one passes."""
    from docsgen.figures import check_figures, documents

    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("autogcl\n")
    for folder in ("pretrained", "benchmarks"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "README.md").write_text("Its val is higher by +7.23 ± 2.15 on ClinTox.\n")
    assert documents(tmp_path) == ["README.md", "pretrained/README.md", "benchmarks/README.md"]
    problems = check_figures(tmp_path)
    assert {p.split(":")[0] for p in problems} == {"pretrained/README.md", "benchmarks/README.md"}
    (tmp_path / "pooled.json").write_text('{"clintox": [7.23, 2.15]}')
    (tmp_path / "pretrained" / "README.md").write_text("Higher by +7.23 ± 2.15 <!-- from: pooled.json -->.\n")
    assert [p.split(":")[0] for p in check_figures(tmp_path)] == ["benchmarks/README.md"] * 2


@pytest.mark.parametrize("text", [
    "Training took 3,847 s per seed.", "about 2.5 h on two cores", "15,431 molecules/s on an H100",
    "it scores 59.5% held out", "a step is 2.8x faster", "the loss reaches 0.018", "from 77.54 to 76.92",
    "gives 89.47 ± 0.75 `val`"])
def test_result_figures_are_found(text):
    assert _problems(text), text


@pytest.mark.parametrize("text", [
    "30 epochs, batch 128, lr 0.001", "waits up to 2 seconds", "p < 0.05 in neither check", "10% labels",
    "seeds 0-4 and 5 folds", "torch 2.13.0", "`--budget 540` (about nine minutes)", "1.58 M SMILES",
    "the paper's 88.64 ± 1.08 on MUTAG", "published 75.16"])
def test_settings_counts_and_the_papers_figures_are_not_result_figures(text):
    assert _problems(text) == [], text


def test_a_marked_figure_must_be_in_the_file_it_names(tmp_path):
    (tmp_path / DD).mkdir(parents=True)  # a summary of its own: a rerun of the committed one moves its figures
    (tmp_path / DD / "summary.json").write_text('{"val": {"mean": 0.7720, "std": 0.0069}}')
    assert _problems(f"DD gives 77.20 ± 0.69 under `val` <!-- from: {DD}/summary.json -->.", tmp_path) == []
    assert _problems(f"DD gives 77.20 ± 0.69\nunder `val` <!-- from: {DD} -->.", tmp_path) == []  # a folder: its JSON
    wrong = _problems(f"DD gives 77.21 ± 0.69 under `val` <!-- from: {DD}/summary.json -->.", tmp_path)
    assert len(wrong) == 1 and "figure 77.21 is not in" in wrong[0]
    gone = _problems("DD gives 77.20 ± 0.69 <!-- from: docs/results/summaries/none/summary.json -->.", tmp_path)
    assert any("names no committed file" in p for p in gone)
    # a marker covers the figures before it in its paragraph, not those after it
    after = _problems(f"<!-- from: {DD} --> DD gives 77.20 ± 0.69.", tmp_path)
    assert len(after) == 2 and "typed by hand" in after[0]
    # the paper's figure as a pair: a mean with another std is no quote
    assert _problems("the paper's 88.64 ± 0.36") != []


def test_a_page_given_as_the_source_holds_only_the_figures_of_its_generated_blocks(tmp_path):
    """A page's prose may quote a figure that its regenerated table no longer gives: naming the
    page as the source then fails, as naming a rerun summary does; a page a script writes whole
    holds all its numbers."""
    from docsgen import figures

    page = tmp_path / "docs" / "results" / "forms.md"
    page.parent.mkdir(parents=True)
    page.write_text("<!-- autogcl:begin forms -->\n| pooled | +0.04 ± 1.52 |\n<!-- autogcl:end forms -->\n\n"
                    "Pooled, the difference is +0.08 ± 1.54 <!-- from: docs/results/forms.md -->.\n")
    figures._NUMBERS.clear()
    quoted = "The pooled difference is {} <!-- from: docs/results/forms.md -->."
    assert _problems(quoted.format("+0.04 ± 1.52"), tmp_path) == []
    stale = _problems(quoted.format("+0.08 ± 1.54"), tmp_path)  # only in the page's own prose
    assert len(stale) == 2 and "figure 0.08 is not in docs/results/forms.md" in stale[0]
    whole = tmp_path / "docs" / "results" / "sizes.md"
    whole.write_text("<!-- generated by scripts/studies/transfer_sizes.py report -->\n\nBBBP gains 1.84 points.\n")
    assert _problems("BBBP gains 1.84 points <!-- from: docs/results/sizes.md -->.", tmp_path) == []


def test_a_cited_file_holding_a_commit_hash_is_read(tmp_path):
    """A file cited for a figure may hold a commit hash: the digits inside it (``8e109`` in
    ``...b850d1b8e109a16``, once a number too long to round) are no number, so the check neither
    crashes nor finds a figure there; the file's own figures are still found."""
    from decimal import Decimal

    from docsgen.figures import holds

    f = tmp_path / "provenance.json"
    f.write_text('{"commit": "b43426088c0a7e7b663fc3865b850d1b8e109a16", "mean": 0.7385, "seed0": 3.5}')
    assert holds(f, Decimal("73.85"), 2, 1.0) and holds(f, Decimal("3.5"), 1, 1.0)
    assert not holds(f, Decimal("73.86"), 2, 1.0)
    assert not holds(f, Decimal("3865"), 0, 1.0) and not holds(f, Decimal("0"), 0, 1.0)  # in the hash, "seed0"


def test_a_region_not_reproducible_must_say_so():
    body = "| run | val |\n|---|---|\n| a | 70.12 ± 1.63 |\n"
    said = ("<!-- figures: not reproducible -->\n*Not reproducible from committed files: never committed.*\n\n"
            + body + "<!-- figures: end -->\n")
    assert _problems(said) == []
    silent = "<!-- figures: not reproducible -->\n" + body + "<!-- figures: end -->\n"
    assert any("must begin with a line saying" in p for p in _problems(silent))
    assert any("without" in p for p in _problems(said.replace("<!-- figures: end -->\n", "")))


def test_generated_tables_name_the_commit_of_their_runs(checkout):
    from docsgen import regenerate

    for record in (checkout / "docs/results/summaries/unsupervised").glob("*/provenance.json"):
        record.unlink()  # the README's 6 folders as before provenance.json, whichever have been rerun since
    readme = regenerate(checkout)["README.md"][1]
    assert "Code commit(s) of these runs: commit and device not recorded (6 run folders" in readme
    folder = checkout / "docs/results/summaries/unsupervised/MUTAG-autogcl"
    (folder / "provenance.json").write_text(json.dumps({"commit": "abc1234", "devices": ["cpu"]}), encoding="utf-8")
    readme = regenerate(checkout)["README.md"][1]
    assert "`abc1234` on cpu (1 run folder)" in readme and "commit and device not recorded (5 run folders" in readme
    # units of two windows (autogcl.protocols.publishing.publish: unit_commits)
    (folder / "provenance.json").write_text(json.dumps(
        {"commit": "bbb2222", "unit_commits": {"abc1234": 2, "bbb2222": 1}, "devices": ["cuda"]}), encoding="utf-8")
    assert "`abc1234 + bbb2222` on cuda (1 run folder)" in regenerate(checkout)["README.md"][1]
    # units of both devices; a lent GPU's folder from before provenance (summaries/gpu/)
    (folder / "provenance.json").write_text(json.dumps({"commit": "abc1234", "devices": ["cuda:0", "cpu"]}))
    assert "`abc1234` on cpu + cuda (1 run folder)" in regenerate(checkout)["README.md"][1]
    from docsgen.tables import folder_device

    assert folder_device(checkout / "docs/results/summaries/gpu/unsupervised/DD-autogcl") == "cuda"
    assert folder_device(checkout / "docs/results/summaries/unsupervised/DD-autogcl") is None


def test_the_views_table_names_the_commit_of_each_run(checkout):
    """The MNIST views table reads each committed run's result.json: its ``code_commit`` is named
    (short, with its mark of uncommitted changes), and a run without one says so."""
    from docsgen.tables import views_block

    folder = checkout / "docs/results/views_MNIST"
    run = json.loads(sorted(folder.glob("seed*.json"))[0].read_text(encoding="utf-8"))
    shutil.rmtree(folder)
    folder.mkdir()
    (folder / "seed0.json").write_text(json.dumps({**run, "code_commit": "0123456789abcdef0123+dirty"}))
    assert views_block(checkout).endswith("Code commit(s) of these runs: `0123456789ab+`.")
    (folder / "seed1.json").write_text(json.dumps({k: v for k, v in run.items() if k != "code_commit"}))
    assert views_block(checkout).endswith(
        "Code commit(s) of these runs: `0123456789ab+`; commit not recorded (the runs predate it).")
    assert views_block(checkout).count("docs/results/views_MNIST/seed") == 2


def test_a_single_run_shows_no_spread():
    """A cell of one run shows its score and says it has no ± (a std over one run is 0 and means
    nothing); two runs show mean ± std; an undefined selection still says why."""
    from docsgen.tables import _one_or_spread

    assert _one_or_spread({"mean": 62.8956, "std": 0.0, "values": [62.8956]}) == "62.90 (1 run: no ±)"
    assert _one_or_spread({"mean": 70.0, "std": 1.5, "values": [68.5, 71.5]}) == "70.00 ± 1.50"
    assert _one_or_spread({"mean": float("nan"), "std": 0.0, "values": [float("nan")]}) == "not scored (NaN)"
    assert _one_or_spread({"undefined": "no validation split", "values": [1.0]}).startswith("- (no validation")


def test_the_queue_counts_a_cells_committed_units_before_its_summary(tmp_path):
    """A cell run over several sessions has finished units committed before its summary: the
    queue says how many (folds for semi cells), still "not run"; none committed, plain "not run"."""
    from docsgen.queue import queue_block

    from autogcl.protocols.manifest import SEMI_CELLS, units_folder

    dd = next(c for c in SEMI_CELLS if c.label == ("DD", "naive"))
    row = next(line for line in queue_block(tmp_path).splitlines() if "| DD / naive |" in line)
    assert "| not run |" in row
    for fold in (0, 1, 2):
        unit = tmp_path / units_folder(dd.runs[0]) / "seed0" / f"fold{fold}"
        unit.mkdir(parents=True)
        (unit / "result.json").write_text(json.dumps({"time_s": 10.0, "runtime": {"device": "cpu"}}))
    row = next(line for line in queue_block(tmp_path).splitlines() if "| DD / naive |" in line)
    assert "| not run (3 of 10 folds committed as units, no summary yet) |" in row


def test_the_queue_says_why_a_long_unit_waits():
    """A cell whose one unit is estimated longer than a GPU window (MUV, HIV: a seed of tens of
    thousands of molecules) says that the window never starts it; a cell that fits says nothing more.
    The window's length is the script's default budget."""
    from docsgen.queue import queue_block

    from autogcl.protocols.estimates import GPU_WINDOW_S, unit_seconds
    from autogcl.protocols.manifest import CELLS

    script = (REPO / "scripts" / "gpu" / "gpu_window.sh").read_text(encoding="utf-8")
    assert re.search(r'--budget "\$\{BUDGET:-(\d+)\}"', script).group(1) == str(GPU_WINDOW_S)
    rows = {line.split(" | ")[2]: line for line in queue_block(REPO).splitlines()[2:]}
    why = f"longer than a GPU window ({GPU_WINDOW_S} s)"
    longer = shorter = 0
    for c in CELLS:
        label = " / ".join(c.label)
        est = unit_seconds(c, REPO, "cuda")
        if label not in rows or est is None:
            continue
        assert (why in rows[label]) == (est[0] > GPU_WINDOW_S), (label, est)
        longer += est[0] > GPU_WINDOW_S
        shorter += est[0] <= GPU_WINDOW_S
    # both sides of the window among the committed queue's cells (today MUV, HIV, Tox21 and
    # ToxCast above it, the small transfer sets below)
    assert longer and shorter, (longer, shorter)


def test_the_queue_lists_every_other_folder_that_names_no_commit(tmp_path):
    """Beside the stale cells (a done cell of unrecorded code: listed above it, not again), the
    queue lists each committed summary folder that names no commit: a partial cell, a study's
    sweep, with the tables that read it; a folder whose provenance names its commit is not listed."""
    from docsgen.queue import stale_block, unrecorded_block
    from docsgen.tables import Table

    def summary(folder, n, commit=None):
        path = tmp_path / "docs/results/summaries" / folder
        path.mkdir(parents=True)
        score = {"mean": 80.0, "std": 1.0, "values": [80.0] * n}
        (path / "summary.json").write_text(json.dumps({
            "protocol": "unsupervised", "dataset": folder.split("/")[-1].split("-")[0], "method": "autogcl",
            "tag": folder.split("/")[-1], "n_seeds": n, "seeds": list(range(n)), "config": {}, "val": score,
            "test_max": score, "train_time_s": 12.5}))
        if commit:
            (path / "provenance.json").write_text(json.dumps({"commit": commit}))

    summary("unsupervised/MUTAG-autogcl", 5)  # done, unrecorded: the stale list's
    summary("unsupervised/PROTEINS-autogcl", 3)  # partial, unrecorded
    summary("study/unsupervised/NCI1-autogcl", 5)  # a study's sweep, unrecorded
    summary("study/unsupervised/DD-autogcl", 5, commit="abc1234")  # recorded
    tables = [Table("paper", "docs/results.md", str, ("docs/results/summaries/unsupervised",)),
              Table("study", "docs/results/study.md", str, ("docs/results/summaries/study",)),
              Table("queue-unrecorded", "docs/results/gpu_queue.md", str, ("docs/results/summaries",))]
    assert "| unsupervised | MUTAG / autogcl |" in stale_block(tmp_path)
    rows = unrecorded_block(tmp_path, tables).splitlines()[2:-2]
    assert rows == [
        "| `docs/results/summaries/study/unsupervised/NCI1-autogcl` | extra row or study | 5 | 12 s "
        "| docs/results/study.md |",
        "| `docs/results/summaries/unsupervised/PROTEINS-autogcl` | partial cell PROTEINS / autogcl (unsupervised) "
        "| 3 | 12 s | docs/results.md |"]
