"""The queue page (``docs/results/gpu_queue.md``): every cell of the manifest that is not done,
the GPU's first, with the estimated time of one of its units on a GPU (what a budgeted
``autogcl reproduce --budget`` window reads)."""

from __future__ import annotations

from pathlib import Path

from autogcl.protocols.paper import CELLS, unit_seconds


def queue_block(root: Path) -> str:
    """Every cell that is not done: the GPU queue first, then what fits the CPU machine."""
    lines = ["| where | protocol | cell | state | committed run folder | one unit on a GPU (estimate) | command |",
             "|---|---|---|---|---|---|---|"]
    seen = set()
    for compute in ("gpu", "cpu"):
        for c in CELLS:
            st = c.status(root)
            if c.compute != compute or st == "done":
                continue
            hit = c.found(root)
            state = "not run" if hit is None else f"partial: {c.count(hit[1])} of {c.seeds} (`{hit[0]}`)"
            est = unit_seconds(c, root, "cuda")
            guess = "no committed estimate" if est is None else f"{est[0]:,.0f} s (`{est[1]}`)"
            cmd = "same command as above" if c.command in seen else f"`{c.command}`"
            seen.add(c.command)
            lines.append(f"| {compute} | {c.protocol} | {' / '.join(c.label)} | {state} | `{c.runs[0]}` | {guess} "
                         f"| {cmd} |")
    return "\n".join(lines)
