import json

from autogcl.protocols.report import collect, render, semi_table, unsupervised_table


def summ(**kw):
    base = {"val": {"mean": 70.0, "std": 1.0}, "test_max": {"mean": 72.5, "std": 0.5}, "n_seeds": 1}
    base.update(kw)
    return base


def test_unsupervised_table_shows_both_selections_and_published():
    s = summ(protocol="unsupervised", dataset="PROTEINS", method="autogcl", tag="PROTEINS-autogcl",
             config={"aug": "random4"})
    g = summ(protocol="unsupervised", dataset="PROTEINS", method="graphcl", tag="PROTEINS-graphcl-node_drop",
             config={"aug": "node_drop"})
    table = unsupervised_table([s, g])
    assert "| PROTEINS | autogcl | 1 | 70.00 ± 1.00 | 72.50 ± 0.50 | 75.80 ± 0.36 |" in table
    assert "| PROTEINS | graphcl-node_drop | 1 | 70.00 ± 1.00 | 72.50 ± 0.50 | - |" in table  # not random4


def test_semi_table_rows_by_datasets_in_paper_order():
    rows = [summ(protocol="semi", dataset=d, row=r, n_folds=10) for d in ("PROTEINS", "NCI1")
            for r in ("joint", "labeled")]
    rows.append(summ(protocol="semi", dataset="NCI1", row="naive", n_folds=4))
    table = semi_table(rows).splitlines()
    assert table[0] == ("| row | NCI1 val | NCI1 test_max | NCI1 published | PROTEINS val | "
                        "PROTEINS test_max | PROTEINS published |")
    assert [line.split("|")[1].strip() for line in table[2:]] == ["labeled", "naive", "joint"]
    assert "| labeled | 70.00 ± 1.00 | 72.50 ± 0.50 | 75.16 ± 2.07 |" in table[2]
    assert "(4 folds)" in table[3] and table[3].endswith("| - | - | - |")


def test_semi_table_warns_when_two_runs_share_a_cell(caplog):
    a = summ(protocol="semi", dataset="NCI1", row="labeled", n_folds=10, config={"lr": 0.01, "split": "val_fold"})
    b = summ(protocol="semi", dataset="NCI1", row="labeled", n_folds=10, config={"lr": 0.001})
    c = summ(protocol="semi", dataset="NCI1", row="labeled", n_folds=10, config={"split": "released"})
    with caplog.at_level("WARNING", logger="autogcl"):
        table = semi_table([a, b, c])
    assert "two labeled summaries on NCI1 (options differing: lr, split)" in caplog.text
    assert "labeled (released split)" not in caplog.text  # a row of its own
    assert [line.split("|")[1].strip() for line in table.splitlines()[2:]] == ["labeled", "labeled (released split)"]


def test_collect_finds_each_summary_once(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps(
            summ(protocol="semi", dataset="MUTAG", row="labeled", n_folds=10, tag=name)))
    found = collect([tmp_path, tmp_path / "a"])
    assert sorted(s["tag"] for s in found) == ["a", "b"]
    assert "## Semi-supervised" in render(found) and "## Unsupervised" not in render(found)
    assert render([]) == "no finished runs (summary.json) found"


def test_unsupervised_table_names_options_set_away_from_their_default():
    from autogcl.protocols.configs import UnsupervisedConfig

    paper = UnsupervisedConfig(dataset="MUTAG").to_dict()
    released = UnsupervisedConfig(dataset="MUTAG", sim_loss="mse", cl_variant="released", select="test_max").to_dict()
    short = UnsupervisedConfig(dataset="MUTAG", method="graphcl", aug="node_drop", epochs=5).to_dict()
    rows = [summ(protocol="unsupervised", dataset="MUTAG", method=c["method"], config=c,
                 tag="MUTAG-" + c["method"] + ("-" + c["aug"] if c["method"] == "graphcl" else ""))
            for c in (paper, released, short)]
    names = [line.split("|")[2].strip() for line in unsupervised_table(rows).splitlines()[2:]]
    # the selection and the augmentation (already in the tag) are not options of the run's form;
    # eval_epochs follows --epochs, so only epochs is named
    assert names == ["autogcl", "autogcl (cl_variant=released, sim_loss=mse)", "graphcl-node_drop (epochs=5)"]
