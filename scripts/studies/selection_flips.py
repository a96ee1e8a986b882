"""Flip each selection rule by hand (val picks by test, test_max by validation, the reported
figure taken from the other selection, the grid choosing by test, ties to the last) and check
that tests/selection then fails; the source is restored after each flip. A hand-written
complement to mutmut (scripts/studies/mutation.sh), outside CI:

    PYTHONPATH=. OMP_NUM_THREADS=1 python scripts/studies/selection_flips.py
"""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
#: (name, file, the rule's code, the flipped code)
FLIPS = [
 ("svm select_epoch val by test", "autogcl/eval/svm.py", 'e_val = max(epochs, key=lambda e: evals[e]["val_acc"])', 'e_val = max(epochs, key=lambda e: evals[e]["test_acc"])'),
 ("svm select_epoch test_max by val", "autogcl/eval/svm.py", 'e_max = max(epochs, key=lambda e: evals[e]["test_acc"])', 'e_max = max(epochs, key=lambda e: evals[e]["val_acc"])'),
 ("svm C grid by test fold", "autogcl/eval/svm.py", '    best, val = _choose(scores, cs)\n    return {"C": cs[best]', '    best, val = _choose([np.asarray(_fit_predict(d2, _gamma(x[train]), train, test, y, cs))], cs)\n    return {"C": cs[best]'),
 ("semi select val by test", "autogcl/protocols/semi.py", 'best_val = max(rows, key=lambda r: r["val_acc"])', 'best_val = max(rows, key=lambda r: r["test_acc"])'),
 ("semi select test_max by val", "autogcl/protocols/semi.py", 'best_test = max(rows, key=lambda r: r["test_acc"])', 'best_test = max(rows, key=lambda r: r.get("val_acc", r["test_acc"]))'),
 ("semi reports the other selection", "autogcl/protocols/semi.py", '"acc": sel[cfg.select]["acc"]', '"acc": sel["test_max"]["acc"]'),
 ("transfer select val by test", "autogcl/protocols/transfer.py", 'v, t = best("val_auc"), best("test_auc")', 'v, t = best("test_auc"), best("test_auc")'),
 ("transfer reports the other selection", "autogcl/protocols/transfer.py", '"auc": sel[cfg.select]["auc"]', '"auc": sel["test_max"]["auc"]'),
 ("unsupervised reports the other selection", "autogcl/protocols/unsupervised.py", '"acc": sel[cfg.select]["acc"]', '"acc": sel["test_max"]["acc"]'),
 ("grid chooses by test", "autogcl/protocols/grid.py", 'chosen = max(valid, key=lambda r: r["validation_score"])', 'chosen = max(valid, key=lambda r: r["val"]["mean"])'),
 ("grid score reads test figure", "autogcl/protocols/grid.py", 'get("score", math.nan)', 'get("acc", math.nan)'),
 ("semi select last best on ties", "autogcl/protocols/semi.py", 'best_val = max(rows, key=lambda r: r["val_acc"])', 'best_val = max(reversed(rows), key=lambda r: r["val_acc"])'),
]


def main() -> int:
    missed = 0
    for name, path, old, new in FLIPS:
        p = ROOT / path
        src = p.read_text()
        assert src.count(old) == 1, (name, src.count(old))
        p.write_text(src.replace(old, new))
        try:
            r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/selection",
                                "--ignore=tests/selection/test_nci1_outlier.py"],  # not a selection test
                               capture_output=True, text=True, cwd=ROOT)
        finally:
            p.write_text(src)
        failed = [line.split("::")[-1].split(" ")[0] for line in r.stdout.splitlines() if line.startswith("FAILED")]
        missed += r.returncode == 0
        print(f"{name}: {'caught' if r.returncode else 'NOT CAUGHT'} by {len(failed)} test(s): {', '.join(failed)}",
              flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
