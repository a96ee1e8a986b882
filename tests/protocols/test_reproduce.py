"""``autogcl reproduce --missing``: the manifest's missing cells run through the protocols' own
commands, land in their committed folders, and a second call has nothing left to do."""

import json

from autogcl.cli import main
from autogcl.protocols.paper import CELLS, Cell, missing, reproduce

CHEAP = Cell("unsupervised", ("MUTAG", "autogcl"), ("docs/results/summaries/tiny/MUTAG-autogcl",),
             "runs/tiny/unsupervised/MUTAG-autogcl",
             "autogcl unsupervised --dataset MUTAG --method autogcl --seeds 1 --epochs 1 --eval-epochs 1 "
             "--data-root ../shared/data --out runs/tiny/unsupervised --resume --no-progress", seeds=1)


def test_a_missing_cell_runs_and_is_published_once(tmp_path, data_root):
    lines = []
    assert reproduce([CHEAP], tmp_path, data_root=str(data_root), dry_run=True, echo=lines.append) == []
    assert "--data-root " + str(data_root) in lines[0] and "--resume" not in lines[0]
    assert not (tmp_path / "runs").exists()  # a dry run runs nothing

    calls = []

    def run(argv):
        calls.append(argv)
        return main(argv)

    done = reproduce([CHEAP], tmp_path, data_root=str(data_root), extra=["--executor", "serial"], resume=True,
                     run=run, echo=lines.append)
    assert done == [CHEAP] and len(calls) == 1 and "--resume" in calls[0]
    summary = json.loads((tmp_path / CHEAP.runs[0] / "summary.json").read_text())
    assert summary["dataset"] == "MUTAG" and summary["n_seeds"] == 1
    unit = tmp_path / "docs/results/units/tiny/MUTAG-autogcl/seed0"
    assert sorted(p.name for p in unit.iterdir()) == ["config.json", "metrics.csv", "result.json"]  # no checkpoints
    assert missing([CHEAP], tmp_path) == []
    assert reproduce([CHEAP], tmp_path, run=run, echo=lines.append) == [] and len(calls) == 1  # nothing left


def test_cells_sharing_a_command_run_it_once(tmp_path):
    ablation = [c for c in CELLS if c.label[0] == "NCI1" and c.label[1].startswith("node_drop")]
    assert len(ablation) == 6
    calls = []
    reproduce(ablation, tmp_path, run=lambda argv: calls.append(argv) or 0, echo=lambda _: None)
    assert len(calls) == 1 and calls[0][:2] == ["ablate", "graphcl-aug"]


def test_the_cli_lists_the_gpu_queue(capsys):
    assert main(["reproduce", "--missing", "--dry-run", "--compute", "gpu", "--data-root", "/mirror"]) == 0
    out = capsys.readouterr().out
    assert "autogcl semi --dataset COLLAB --row joint" in out and "--data-root /mirror" in out
    assert "ablate" not in out  # a CPU cell
    assert main(["reproduce", "--dry-run"]) == 2  # nothing named to run
