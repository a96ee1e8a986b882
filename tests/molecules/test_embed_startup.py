"""``autogcl embed`` of a small SMILES file imports only what it needs (issue 59): scikit-learn
(a second of start-up on the 2-core machine) is imported by the scores that use it, never by
embedding."""

from __future__ import annotations

import subprocess
import sys


def test_embedding_smiles_imports_no_scikit_learn(tmp_path):
    smi = tmp_path / "few.smi"
    smi.write_text("CCO\nc1ccccc1O\nCC(=O)O\n")
    code = ("import sys; from autogcl.cli import main; "
            f"rc = main(['embed', {str(smi)!r}, '--out', {str(tmp_path / 'z.npy')!r}]); "
            "print('sklearn' in sys.modules, rc)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    assert out.stdout.split()[-2:] == ["False", "0"], out.stdout + out.stderr
    assert (tmp_path / "z.npy").is_file()
