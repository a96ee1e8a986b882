"""Result tables: our mean ± std under each selection beside the published figure."""

from __future__ import annotations

from . import published


def unsupervised_table(summaries: list[dict]) -> str:
    """Markdown table of unsupervised sweep summaries."""
    lines = [
        "| dataset | method | seeds | val (ours) | test_max (ours) | published (test_max) |",
        "|---|---|---|---|---|---|",
    ]
    for s in summaries:
        pub = published.UNSUPERVISED.get((s["method"], s["dataset"])) if s["method"] == "autogcl" or \
            s["config"].get("aug") == "random4" else None
        lines.append(
            f"| {s['dataset']} | {s['tag'].split('-', 1)[1] if '-' in s['tag'] else s['method']} | "
            f"{s['n_seeds']} | {s['val']['mean']:.2f} ± {s['val']['std']:.2f} | "
            f"{s['test_max']['mean']:.2f} ± {s['test_max']['std']:.2f} | {published.fmt(pub)} |"
        )
    return "\n".join(lines)
