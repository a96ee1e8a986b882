"""Regenerate every table of the README and docs/ from the committed run folders, in place
between the markers ``<!-- autogcl:begin NAME -->`` / ``<!-- autogcl:end NAME -->``
(the tables: ``scripts/docs/docsgen/``; the manifest of cells: ``autogcl/protocols/manifest.py``), and
check that no result figure is typed by hand in the prose (``scripts/docs/docsgen/figures.py``).

    python scripts/docs/docs.py            # rewrite the documents whose tables changed
    python scripts/docs/docs.py --check    # exit 1 (and show a diff) when a committed document differs,
                                      # or a figure in the prose comes from no committed file
    python scripts/docs/docs.py --root DIR # another checkout
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts" / "docs"))  # docsgen
sys.path.insert(0, str(REPO / "scripts" / "studies"))  # compare_runs, which a table reads

from autogcl.atomic import atomic_write_text  # noqa: E402
from autogcl.errors import AutoGCLError  # noqa: E402
from docsgen import check_figures, regenerate  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 when a document is stale or a "
                                                        "figure is typed by hand")
    p.add_argument("--root", type=Path, default=REPO, help="the repository root")
    args = p.parse_args(argv)
    try:
        docs = regenerate(args.root)
    except AutoGCLError as exc:
        print(f"docs.py: error: {exc}", file=sys.stderr)
        return 2
    stale = [d for d, (old, new) in docs.items() if old != new]
    figures = check_figures(args.root, {d: new for d, (_, new) in docs.items()})
    for problem in figures:
        print(f"docs.py: {problem}", file=sys.stderr)
    if figures:
        print(f"docs.py: {len(figures)} figure(s) in the prose come from no committed file", file=sys.stderr)
    if args.check:
        for d in stale:
            old, new = docs[d]
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True), d, d + " (regenerated)"))
        if stale:
            print(f"docs.py: {len(stale)} document(s) differ from their regeneration: {', '.join(stale)}; "
                  "run python scripts/docs/docs.py", file=sys.stderr)
        if stale or figures:
            return 1
        print(f"docs.py: {len(docs)} documents match their regeneration; no figure typed by hand")
        return 0
    for d in stale:
        atomic_write_text(args.root / d, docs[d][1])
        print(f"rewrote {d}")
    return 1 if figures else 0


if __name__ == "__main__":
    sys.exit(main())
