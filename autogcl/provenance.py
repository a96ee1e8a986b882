"""Which code made a result: the commit of the checkout that runs (:func:`code_commit`), recorded
in every finished unit's ``result.json`` (:func:`commit_label`) and read back when it is
published (:func:`unit_commit`). No torch."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def _given() -> tuple[str, bool] | None:
    """(commit, dirty) that ``AUTOGCL_COMMIT`` names, read when asked; None when it is unset."""
    given = os.environ.get("AUTOGCL_COMMIT", "").strip()
    return (given, given.endswith("+dirty")) if given else None


def code_commit(root: Path | None = None) -> tuple[str | None, bool]:
    """(commit, dirty) of the code that runs: ``AUTOGCL_COMMIT`` when set (a copy without its
    git folder, e.g. a lent GPU machine), else ``git rev-parse HEAD`` in the checkout holding this
    package (``root``: another checkout); (None, False) when unknown."""
    given = _given()
    if given:
        return given
    root = Path(__file__).resolve().parents[1] if root is None else root
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=20)
        if head.returncode:
            return None, False
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "autogcl"], cwd=root,
                               capture_output=True, text=True, timeout=20).stdout.strip() != ""
        return head.stdout.strip(), dirty
    except (OSError, subprocess.SubprocessError):
        return None, False


#: (commit, dirty) of the checkout when this process imported autogcl: the code that runs, even
#: when the checkout moves on (a commit, an edit) before a long run's results are written
LOADED = code_commit()


def commit_label() -> str | None:
    """The commit that runs as one string, ``+dirty`` when the package's files differed from it
    (what a unit's ``result.json`` records as ``code_commit``); None when unknown. That is
    ``AUTOGCL_COMMIT`` when set, else the checkout as this process imported it (:data:`LOADED`),
    not as it is when the result is written."""
    commit, dirty = _given() or LOADED
    if not commit:
        return None
    return commit if not dirty or commit.endswith("+dirty") else commit + "+dirty"


def unit_commit(result: dict) -> tuple[str, bool] | None:
    """(commit, dirty) from a finished unit's ``result.json`` (:func:`commit_label`); None when
    it records none (units of older code)."""
    label = result.get("code_commit") if isinstance(result, dict) else None
    if not isinstance(label, str) or not label:
        return None
    return label.removesuffix("+dirty"), label.endswith("+dirty")
