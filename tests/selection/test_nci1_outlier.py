"""The NCI1 outlier note (docs/results/nci1_outlier.md) is what its committed result files
generate: no number in it is typed by hand."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_note_is_its_regeneration():
    r = subprocess.run([sys.executable, "scripts/studies/nci1_outlier.py", "--check"], cwd=ROOT, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    text = (ROOT / "docs" / "results" / "nci1_outlier.md").read_text()
    assert "std over seeds" in text and "n pairs" in text  # every ± says what it is over
