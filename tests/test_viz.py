"""The figure commands write non-empty PNG and SVG files from a tiny real run."""

import pytest

from autogcl.cli import main


@pytest.fixture(scope="module")
def tiny_semi(tmp_path_factory):
    from .conftest import DATA_ROOT

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
