"""The one shape of a protocol: plan its units, run one unit, select an epoch, summarise, and
print. Each sweep protocol (unsupervised, semi, transfer fine-tuning, the ablation) is a
:class:`Protocol`; the command line runs every one of them through one handler
(:func:`autogcl.cli.cmd_protocol`), which takes the lock of every sweep a command writes before
any data is read or anything heavy imported, then :meth:`~Protocol.load`, :meth:`~Protocol.plan`
and the units through :func:`autogcl.units.run_sweeps`, then :meth:`~Protocol.table` and
:meth:`~Protocol.report`. What the command line asks for, and the names of the sweeps it locks,
come from the protocol's config class (torch-free:
:class:`autogcl.protocols.configs.SweepConfig` ``from_command`` and ``lock_key``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import Config, RunOptions

if TYPE_CHECKING:
    from ..units import Sweep, Unit

__all__ = ["Protocol"]


class Protocol:
    """A protocol: what it runs (``config``, one per sweep), what one unit is (``unit``: seed or
    fold), and the steps below. ``name`` is the command and the summaries' ``protocol``."""

    name: str = ""
    #: its config class (a :class:`autogcl.protocols.configs.SweepConfig`)
    config: type[Config] = Config
    #: what one unit of its sweeps is (progress bars, log lines)
    unit: str = "seed"

    # --- the work
    def load(self, configs: list[Config], run: RunOptions) -> tuple[Any, list[Config]]:
        """The data the sweeps share, and the configs with the names the data gave (e.g. the
        dataset's canonical name)."""
        raise NotImplementedError

    def plan(self, cfg: Config, data, out: Path, run: RunOptions) -> list[Sweep]:
        """The units of one config in ``out`` as :class:`autogcl.units.Sweep` objects (one for
        most protocols; the ablation has one per variant): each ``fn`` is :meth:`run_unit`, each
        ``finish`` writes the :meth:`summarize` of its units' results."""
        raise NotImplementedError

    def run_unit(self, unit: Unit, data, **options) -> dict:
        """Train and evaluate one unit (a seed, a fold) and publish it; its result."""
        raise NotImplementedError

    def select(self, records) -> dict:
        """The epoch each selection (``val``, ``test_max``) picks from one unit's evaluations."""
        raise NotImplementedError

    def summarize(self, results: list[dict]) -> dict:
        """Mean ± std (:func:`autogcl.protocols.spread.spread`) of each selection over a
        sweep's unit results."""
        raise NotImplementedError

    # --- what the command prints
    def desc(self, configs: list[Config], data, run: RunOptions) -> str:
        """The progress bar's label."""
        return f"{configs[0].tag} {self.unit}s"

    def title(self, cfg: Config, summary: dict) -> str:
        """A grid report's title for one config."""
        return cfg.tag

    def table(self, summaries: list[dict], configs: list[Config] | None = None) -> str:
        """The table of the sweeps' summaries beside the published figures
        (:func:`autogcl.protocols.report.table`); ``configs``: what the command ran."""
        from .report import table

        return table(self.name, summaries)

    def report(self, configs: list[Config], summaries: list[dict], run: RunOptions) -> str:
        """What the command prints (and writes) after its table (default: the selection and the
        folder)."""
        return f"\nselection reported as the result: {configs[0].select}; results in {Path(run.out)}"
