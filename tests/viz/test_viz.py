"""The figure commands write non-empty PNG and SVG files from a tiny real run."""

import pytest

from autogcl.cli import main


@pytest.fixture(scope="module")
def tiny_semi(tmp_path_factory):
    from tests.conftest import DATA_ROOT

    if not (DATA_ROOT / "TU" / "MUTAG").is_dir():
        pytest.skip("offline data mirror not found")
    out = tmp_path_factory.mktemp("semi")
    assert main(["semi", "--dataset", "MUTAG", "--row", "naive,joint", "--epochs", "2",
                 "--pretrain-epochs", "1", "--fold-limit", "1", "--save-embeddings", "0,2",
                 "--data-root", str(DATA_ROOT), "--out", str(out), "--no-progress"]) == 0
    return out


def nonempty_image(path):
    return path.is_file() and path.stat().st_size > 5000


def test_curves_overlay_two_runs(tiny_semi, tmp_path):
    out = tmp_path / "curves.png"
    assert main(["visualize", "curves", str(tiny_semi / "MUTAG-naive"), str(tiny_semi / "MUTAG-joint"),
                 "--labels", "naive,joint", "--out", str(out)]) == 0
    assert nonempty_image(out) and nonempty_image(out.with_suffix(".svg"))
    assert main(["visualize", "curves", str(tiny_semi / "MUTAG-naive"), "--phase", "pretrain",
                 "--out", str(tmp_path / "pre.png")]) == 0
    assert nonempty_image(tmp_path / "pre.png")


def test_tsne_of_saved_embeddings(tiny_semi, tmp_path):
    fold = tiny_semi / "MUTAG-joint" / "seed0" / "fold0"
    assert sorted(p.name for p in fold.glob("embeddings_*")) == ["embeddings_epoch0.npz", "embeddings_epoch2.npz"]
    out = tmp_path / "tsne.png"
    assert main(["visualize", "tsne", str(fold), "--epochs", "0,2", "--out", str(out)]) == 0
    assert nonempty_image(out)


def test_figure_errors_are_clear(tiny_semi, tmp_path, capsys):
    assert main(["visualize", "tsne", str(tiny_semi / "MUTAG-naive" / "seed0"), "--out", str(tmp_path / "x.png")]) == 2
    assert "has no embeddings_epoch" in capsys.readouterr().err
    assert main(["visualize", "curves", str(tmp_path / "nope")]) == 2
    assert "no such run folder" in capsys.readouterr().err


def test_views_on_mnist_superpixels(data_root, mnist_root, tmp_path, capsys):
    import json

    out = tmp_path / "views"
    assert main(["visualize", "views", "--data-root", str(data_root), "--limit", "60", "--max-epochs", "1",
                 "--examples", "2", "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "accuracy on generated views" in text and "GraphCL node drop 0.2" in text
    res = json.loads((out / "views.json").read_text())
    assert res == json.loads((out / "result.json").read_text())  # the code commit included
    assert res["epochs"] == 1 and 0 <= res["view_acc"] <= 1 and res["target_reached"] is False
    assert res["config"]["classifier"] == "relpos" and res["config"]["dropped"] == "weight"
    assert [r["phase"] for r in res["history"]] == ["warmup", "joint"] and res["warmup_epochs"] == 1
    shares = res["kept_shares"]
    assert set(shares) == {"AutoGCL view 1", "AutoGCL view 2", "GraphCL node drop 0.2"}
    assert shares["GraphCL node drop 0.2"]["high_intensity_masked"] == 0
    assert 0.75 < shares["GraphCL node drop 0.2"]["all_kept"] < 0.85  # drops 20%, rounded down per graph
    assert nonempty_image(out / "views.png") and nonempty_image(out / "views.svg")


def test_views_on_a_tu_dataset_and_from_a_saved_run(data_root, tmp_path):
    out = tmp_path / "tu"
    assert main(["visualize", "views", "--dataset", "MUTAG", "--data-root", str(data_root), "--limit", "40",
                 "--max-epochs", "1", "--examples", "2", "--out", str(out), "--no-progress"]) == 0
    assert nonempty_image(out / "views.png")
    runs_dir = tmp_path / "uns"
    assert main(["unsupervised", "--dataset", "MUTAG", "--epochs", "1", "--seeds", "1", "--data-root",
                 str(data_root), "--out", str(runs_dir), "--no-progress", "--jobs", "1"]) == 0
    unit = runs_dir / "MUTAG-autogcl" / "seed0"
    assert main(["visualize", "views", "--run", str(unit), "--data-root", str(data_root), "--examples", "2"]) == 0
    assert nonempty_image(unit / "views" / "views.png")


def test_each_run_keeps_its_colour_in_every_panel(tiny_semi, tmp_path):
    """The naive run has no L_cl in its fine-tuning phase: the joint run's L_cl line must
    still be drawn in the joint run's colour."""
    from pathlib import Path

    import matplotlib.pyplot as plt

    from autogcl.viz import curves as C

    seen = {}
    real_savefig = plt.Figure.savefig

    def capture(fig, *a, **k):
        for ax in fig.axes:
            seen[ax.get_title()] = [(line.get_label(), line.get_color()) for line in ax.get_lines()]
        return real_savefig(fig, *a, **k)

    plt.Figure.savefig = capture
    try:
        C.plot_curves([Path(tiny_semi / "MUTAG-naive"), Path(tiny_semi / "MUTAG-joint")], tmp_path / "c.png",
                      ["naive", "joint"])
    finally:
        plt.Figure.savefig = real_savefig
    assert seen[C.TITLES["cl_loss"]] == [("joint", "C1")]
    assert seen[C.TITLES["cls_loss"]] == [("naive", "C0"), ("joint", "C1")]


def test_a_redrawn_figure_has_the_same_bytes(tmp_path):
    """save_figure writes no date and fixed SVG ids: the same figure drawn twice gives the same
    files, so a committed figure changes only where its data does."""
    import matplotlib.pyplot as plt

    from autogcl.viz import save_figure

    def draw(name):
        fig, ax = plt.subplots()
        ax.plot([0, 1, 2], [1.0, 3.0, 2.0], "o-")
        return save_figure(fig, tmp_path / name / "f")

    first, second = draw("a"), draw("b")
    assert [p.suffix for p in first] == [".png", ".svg"]
    assert "<dc:date>" not in first[1].read_text()
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]


def test_views_train_under_deterministic_kernels_when_asked(data_root, tmp_path, monkeypatch):
    """``visualize views --deterministic``, as the training commands take it: the warm-up and the
    joint phase run under PyTorch's deterministic kernels, the setting before it is back after
    it, the run records it, and on the CPU (deterministic already) the numbers are the default's."""
    import json

    import torch

    from autogcl.protocols import views as V

    seen = []
    make = V.make_models

    def spied(*args, **kwargs):
        model, gens = make(*args, **kwargs)
        model.register_forward_hook(lambda *_: seen.append(torch.are_deterministic_algorithms_enabled()))
        return model, gens

    monkeypatch.setattr(V, "make_models", spied)
    common = ["visualize", "views", "--dataset", "MUTAG", "--data-root", str(data_root), "--limit", "40",
              "--max-epochs", "1", "--warmup-epochs", "1", "--examples", "2", "--no-progress"]
    assert main(common + ["--out", str(tmp_path / "plain")]) == 0
    assert seen and not any(seen)
    seen.clear()
    assert main(common + ["--out", str(tmp_path / "det"), "--deterministic"]) == 0
    assert seen and all(seen) and not torch.are_deterministic_algorithms_enabled()
    plain, det = (json.loads((tmp_path / d / "result.json").read_text()) for d in ("plain", "det"))
    assert det["runtime"].get("deterministic") is True and "deterministic" not in plain["runtime"]
    strip = [{k: v for k, v in row.items() if not k.endswith("_s")} for row in plain["history"]]
    assert [{k: v for k, v in row.items() if not k.endswith("_s")} for row in det["history"]] == strip
    assert [r["phase"] for r in det["history"]] == ["warmup", "joint"]
