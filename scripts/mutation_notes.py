"""Write docs/results/mutation/survivors.md from a run of scripts/mutation.sh: every mutant
that no selection test killed, each with the note that says why it does not change what is
selected. A survivor that no note covers is listed as UNREVIEWED and the script exits 1.

    python scripts/mutation_notes.py [runs/mutation]

Notes are kept per function (the function's mutants do not touch selection at all), and per
pattern of the mutated line within a function that also selects (e.g. the text of an error
message). The counts come from ``mutmut results --all true`` in the run's work folder.
"""

from __future__ import annotations

import ast
import difflib
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "results" / "mutation" / "survivors.md"

TRAINING = ("trains the model (what the epochs score), not the rule that picks among the epochs: every epoch's "
            "scores reach the selection unchanged, and the selection tests script those scores")
#: function (mutmut's name without the package) -> why none of its mutants changes what is selected
FUNCTION_NOTES = {
    "eval.svm._numpy": "converts the embeddings to NumPy; the mutants take np.asarray for a tensor, which gives the "
                       "same array for the CPU tensors the protocols pass (embed returns CPU tensors)",
    "eval.svm._available_memory": "how many SVM processes fit in memory: the numbers do not depend on the process "
                                  "count (tests/eval/test_svm_parallel.py)",
    "eval.svm.auto_jobs": "how many SVM processes to start: the numbers do not depend on the process count "
                          "(tests/eval/test_svm_parallel.py)",
    "protocols.semi.build": "composes a row's model, optimiser and strategy: it " + TRAINING,
    "protocols.semi.plan": "validates the options, makes the folds' splits (data/splits.py decides which graphs are "
                           "in each part) and the units; no score is read",
    "protocols.semi.run_sweep": "hands the units to the executor (resume, progress, damaged-unit handling)",
    "protocols.transfer.load_dataset": "reads the molecules (which data), not how an epoch is picked",
    "protocols.transfer.build_model": "builds the predictor and loads the encoder: it " + TRAINING,
    "protocols.transfer.unscored_tasks": "logs and records which tasks a part cannot score; roc_auc skips them on "
                                         "its own (tested)",
    "protocols.transfer.prepare_split": "makes, checks and caches the scaffold split (which molecules are in each "
                                        "part) and records the dataset; no score is read",
    "protocols.transfer.plan": "validates the options and lays out the units and the split; no score is read",
    "protocols.transfer.run_sweep": "hands the units to the executor (resume, progress, damaged-unit handling)",
    "protocols.transfer._pretraining": "copies the encoder's pre-training record into summary.json (metadata)",
    "protocols.configs.dataset_names": "parses --dataset (which datasets run)",
    "protocols.grid._parse_value": "parses one --grid value (which configurations exist, not which is chosen)",
    "protocols.grid.parse_grid": "parses --grid into points (which configurations exist, not which is chosen); "
                                 "tested in tests/protocols/test_grid.py",
    "protocols.grid.point_name": "the folder name of a grid point",
    "protocols.grid.expand": "turns grid points into configurations (which configurations exist)",
    "protocols.grid.grid_out": "where a grid point's runs are written",
}
#: (function, regex over the mutated lines) -> note, for functions that also select
PATTERN_NOTES = [
    (r".*", r"raise \w+\(|log\.(info|warning|debug)\(|^[-+] +f?\"[^\"]*\"\)?$|Error\(None\)",
     "the text of an error or log message: no figure is selected from input that raises"),
    (r"eval\.svm\.select_epoch|protocols\.(semi|transfer)\.select", r"criterion",
     "the wording of a criterion's label: it still names the same rule (the tests check that `val`'s names no test "
     "score), and the choice is unchanged"),
    (r"protocols\.grid\.grid_report", r"\"\|---|\"\| configuration|Chosen by|\"###|mark = ",
     "the table's display text (heading, separator, the mark beside unchosen rows); the record's `chosen` and the "
     "mark of the chosen row are tested"),
    (r"eval\.svm\.svm_evaluate", r"n_jobs|Parallel\(", "how many processes compute the fits: the serial and "
     "parallel paths give the same numbers (both tested against GridSearchCV)"),
    (r"eval\.svm\.(svm_evaluate|svm_protocol|_outer_fold)", r"^[-+].*(folds: int|inner_folds: int|seed: int|n_jobs: "
     r"int)\s*=", "a default of an argument every caller passes (the protocols pass their configuration's values; "
     "the defaults themselves are tested)"),
    (r"eval\.svm\.svm_protocol", r"n_jobs|, \) for e", "how many processes compute the fits: the numbers do not "
     "depend on it"),
    (r".*", r"dtype=None|astype\(None\)|dtype=float\)|dtype=torch\.long\)", "an explicit dtype dropped: NumPy "
     "and torch infer the same float64/int64 type from the values passed here (equivalent)"),
    (r".*", r"reshape\(-2\)", "NumPy reads any negative size as 'the rest' (equivalent)"),
    (r"eval\.metrics\.roc_auc|protocols\.grid\.grid_report", r"\((aucs|scores\.size)\) or True",
     "the other branch gives the same value: the mean of no scores is NaN, as the fallback (equivalent; "
     "NumPy warns)"),
    (r"eval\.svm\.svm_evaluate", r"len\(counts\) < 2", "a check of bad input (one class, fewer graphs than "
     "folds): such data then fails in scikit-learn or runs with folds of one graph; no selection rule changes"),
    (r"protocols\.semi\.run_fold", r"eval_l = .*loader\(getattr\(split, k\), (None|True)\)",
     "the order in which the evaluation loaders give the graphs: an accuracy does not depend on it (equivalent)"),
    (r"protocols\.semi\.run_fold", r"accuracy\(strat\.model, ld, (None)?\)",
     "the device argument of the accuracy: None keeps the batches where they are, the CPU in these runs "
     "(equivalent there)"),
    (r"protocols\.transfer\.select", r"if v is not None:", "only whether a warning is logged"),
    (r"protocols\.semi\.run_fold", r"train_data = |row_fields|unlink",
     "training of the unit: which data a row trains on, the phase of the pre-training rows, the removal of a "
     "finished checkpoint; it " + TRAINING + " (a wrong key fails with KeyError)"),
    (r"protocols\.(semi\.run_fold|transfer\.run_unit|(semi|transfer)\.make_summary)",
     r"\"protocol\": |dataset\.json|^[-+]\s+\"(XX)?[a-z_]+(XX)?\": |\"(XX\w+XX|[A-Z_]+)\":|runtime|encoder_meta|pretrain_config|tasks_scored|"
     r"split_sizes|\"sizes\"|eval_time_s|train_time_s|time_s|\"pretrained\"|\"checkpoint\"",
     "a metadata field of result.json or summary.json (sizes, times, runtime, encoder record, tag): the figures, "
     "`selection` and `selections` are tested, and no selection reads the others"),
    (r"protocols\.(semi\.run_fold|transfer\.run_unit)", r"engine|device|runtime|seed_everything|GraphLoader|"
     r"drop_last|shuffle|generator|batch_size|indices|checkpoint|ckpt|Trainer\(|desc|show_progress|save_emb|save_at|"
     r"embeddings|np\.savez|unlink|store|train_data|train_l|labeled_l|all_l|pre_trainer|strat\.to|\.fit\(|"
     r"row_fields|phase|extra|t0|perf_counter|adam\(|weight_decay|build_model|build\(|\"train\"|\"joint\"",
     "training of the unit: it " + TRAINING + " (the selection tests run a row without pre-training, so the "
     "pre-training path is exercised by tests/protocols)"),
]


def run(work: Path, *args) -> str:
    return subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=work, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL).stdout


def diffs(work: Path) -> dict[str, list[str]]:
    """mutant name -> its changed lines, from mutmut's mutated sources (each mutant is a copy
    of its function, ``x_<name>__mutmut_<n>``, beside the original, ``..._orig``)."""
    out: dict[str, list[str]] = {}
    for path in sorted((work / "mutants").rglob("*.py")):
        src = path.read_text()
        src_lines = src.splitlines()
        module = ".".join(path.relative_to(work / "mutants").with_suffix("").parts)
        funcs = {}
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.FunctionDef) and "__mutmut_" in node.name:
                base, _, n = node.name.rpartition("__mutmut_")
                text = [line.replace(node.name, base + "__mutmut") for line in src_lines[node.lineno - 1:node.end_lineno]]
                funcs.setdefault(base, {})[n] = text
        for base, versions in funcs.items():
            orig = versions.get("orig", [])
            for n, lines in versions.items():
                if n != "orig":
                    out[f"{module}.{base}__mutmut_{n}"] = [
                        d for d in difflib.ndiff(orig, lines) if d[:2] in ("- ", "+ ")]
    return out


def function_of(mutant: str) -> str:
    """``autogcl.eval.svm.x__numpy__mutmut_3`` -> ``eval.svm._numpy``."""
    mod, _, fn = mutant.removeprefix("autogcl.").rpartition(".")
    return f"{mod}.{re.sub(r'__mutmut_[0-9]+$', '', fn)[2:]}"


def note_for(mutant: str, lines: list[str]) -> str | None:
    fn = function_of(mutant)
    if fn in FUNCTION_NOTES:
        return FUNCTION_NOTES[fn]
    minus = [x[2:] for x in lines if x.startswith("- ")]
    plus = [x[2:] for x in lines if x.startswith("+ ")]
    if minus and [x.lower() for x in minus] == [x.lower() for x in plus]:
        return ("the letter case of a text (a message, a heading or a criterion's label): what is selected does not "
                "depend on it")
    changed = "\n".join(lines)
    for fn_re, line_re, note in PATTERN_NOTES:
        if re.fullmatch(fn_re, fn) and re.search(line_re, changed, re.M):
            return note
    return None


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0]) if argv else ROOT / "runs" / "mutation"
    work = out / "work"
    status = dict(line.strip().rsplit(": ", 1) for line in run(work, "results", "--all", "true").splitlines()
                  if ": " in line and line.strip().startswith("autogcl."))
    counts = Counter(status.values())
    changed = diffs(work)
    survivors = sorted((m for m, s in status.items() if s in ("survived", "no tests")),
                       key=lambda m: (function_of(m), int(m.rsplit("_", 1)[1])))
    by_note: dict[str, list[str]] = {}
    unreviewed = []
    for m in survivors:
        note = note_for(m, changed.get(m, []))
        if note is None:
            unreviewed.append(m)
        else:
            by_note.setdefault(note, []).append(m)
    lines = ["# Surviving mutants of the selection code", "",
             "<!-- generated by scripts/mutation_notes.py from a run of scripts/mutation.sh -->", "",
             "`bash scripts/mutation.sh` runs mutmut over `eval/svm.py`, `protocols/semi.py`, `protocols/transfer.py`, "
             "`protocols/grid.py` and `eval/metrics.py` against the selection tests alone (`tests/selection`). "
             "A survivor is a mutant those tests did not kill (`survived`), or one in a function they never call "
             "(`no tests`); other tests of the suite may still kill it. Each is listed below under the reason it "
             "does not change what is selected: which epoch, C or configuration a rule picks from given scores, "
             "and which figure is reported under which rule.", "",
             "The statuses are mutmut's last for each mutant: a full run (about 20 minutes with 2 processes on a "
             "shared 2-core machine), then `bash scripts/mutation.sh NAME...` over the survivors of the selection "
             "functions once tests were added for them. A full run with the final tests would kill the same or more "
             "(tests were only added).", "",
             "| mutmut status | mutants |", "|---|---:|"]
    lines += [f"| {k} | {v} |" for k, v in sorted(counts.items())]
    lines += ["", f"Survivors: {len(survivors)}; without a note: {len(unreviewed)}.", ""]
    if unreviewed:
        lines += ["## UNREVIEWED (no note yet)", ""] + [f"- `{m}` ({status[m]}): `{' / '.join(changed.get(m, []))}`"
                                                      for m in unreviewed] + [""]
    for note, ms in by_note.items():
        fns = Counter(function_of(m) for m in ms)
        lines += [f"## {note[0].upper() + note[1:]}", "", "Functions: " + ", ".join(f"`{f}` ({n})" for f, n in
                                                                                    fns.items()), ""]
        for m in ms:
            diff = " / ".join(s.strip() for s in changed.get(m, [])) or "(diff not recorded)"
            lines.append(f"- `{m.removeprefix('autogcl.')}` ({status[m]}): `{diff[:160]}`")
        lines.append("")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines))
    print(f"wrote {OUT.relative_to(ROOT)}: {len(survivors)} survivors, {len(unreviewed)} without a note")
    return 1 if unreviewed else 0


if __name__ == "__main__":
    sys.exit(main())
