"""Each folder's public names are in its __all__ and resolve; docs/api.md covers every name
of autogcl.__all__."""

import importlib
import pkgutil
import re

import autogcl
from tests.conftest import REPO

PACKAGES = ["autogcl"] + [f"autogcl.{m.name}" for m in pkgutil.iter_modules(autogcl.__path__) if m.ispkg]


def test_every_package_lists_its_public_names_and_they_resolve():
    assert {"autogcl.api", "autogcl.augment", "autogcl.eval", "autogcl.models", "autogcl.data"} <= set(PACKAGES)
    for name in PACKAGES:
        module = importlib.import_module(name)
        assert isinstance(getattr(module, "__all__", None), list) and module.__all__, name
        for public in module.__all__:
            value = getattr(module, public, None)
            if value is None:  # a submodule listed by name
                value = importlib.import_module(f"{name}.{public}")
            assert value is not None, f"{name}.{public}"


def test_the_guide_covers_every_public_name():
    doc = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    missing = [n for n in autogcl.__all__ if not re.search(rf"`[^`]*\b{re.escape(n)}\b[^`]*`", doc)]
    assert not missing, f"docs/api.md does not mention {missing}"
