"""What ``scripts/docs/docs.py`` renders and checks, outside the installed package: the generated
tables (:mod:`.tables`, from the manifest :mod:`autogcl.protocols.manifest` and the committed run
folders), the engine's benchmark pages and goals (:mod:`.perf`), the queue (:mod:`.queue`), and
the rule that no result figure is typed into the prose by hand (:mod:`.figures`)."""

from .figures import check_figures
from .tables import TABLES, regenerate

__all__ = ["TABLES", "check_figures", "regenerate"]
