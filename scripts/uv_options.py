"""pip's index settings (pip.conf and PIP_* variables, as ``pip config list`` prints them) as uv's
options, one per line, for scripts/setup.sh: uv reads neither pip's files nor its variables."""

from __future__ import annotations

import shlex
import subprocess
import sys

#: pip's settings that choose where packages come from, and uv's option for each
FLAGS = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
         "constraint": "--constraint"}


def uv_options(listing: str) -> list[str]:
    """The uv options of a ``pip config list`` listing (``section.key='value'`` lines; a value may
    hold several whitespace-separated items), each (option, item) once, in the listing's order."""
    out, seen = [], set()
    for line in listing.splitlines():
        key, _, value = line.partition("=")
        flag = FLAGS.get(key.strip().rsplit(".", 1)[-1])
        if flag is None:
            continue
        for item in (v for part in shlex.split(value) for v in part.split()):
            if (flag, item) not in seen:
                seen.add((flag, item))
                out += [flag, item]
    return out


if __name__ == "__main__":
    listing = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                             check=True).stdout
    print("\n".join(uv_options(listing)))
