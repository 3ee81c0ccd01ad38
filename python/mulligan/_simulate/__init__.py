"""The fleet simulator behind ``mulligan simulate`` (issue 21).

The simulation itself is the C++ core's (``core/include/mulligan/simulate/``,
through ``mulligan._core.simulate``): the real retry policy, jitter, budgets,
throttling and breakers, stepped in virtual time against a service model.
This module only finds the scenario, hands its text down, and writes what
came back: ``results.csv`` and ``results.json`` (the core's bytes, unchanged),
a PNG plot when matplotlib is importable, and a text table. A sweep (0.6)
runs the scenario once per client count: one row per (clients, mode).

.. versionadded:: 0.6.0
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass
from importlib import resources
from typing import Any, Optional, Sequence

from .. import _core

__all__ = [
    "SimulationResult",
    "builtin_scenarios",
    "format_table",
    "load_scenario",
    "run",
    "write_plot",
    "write_results",
]

DEFAULT_SCENARIO = "occ"


@dataclass(frozen=True)
class SimulationResult:
    """One run: ``csv`` and ``json`` are the core's report texts; ``report``
    is the parsed JSON (``{"scenario", "model", "seed", "clients" (or "sweep":
    the counts of a sweep), "modes": [{...}]}``, the columns of
    ``results.csv`` per mode, or per (clients, mode) for a sweep)."""

    csv: str
    json: str
    report: dict[str, Any]


def builtin_scenarios() -> list[str]:
    """Names of the scenarios shipped with the package (``occ``: the AWS
    study; ``outage``: a server that goes down for 60 s and recovers;
    ``hedging``: a server with a latency tail, without and with hedges)."""
    folder = resources.files(__package__).joinpath("scenarios")
    return sorted(p.name[: -len(".json")] for p in folder.iterdir() if p.name.endswith(".json"))


def load_scenario(name_or_path: Optional[str]) -> tuple[str, str]:
    """Returns ``(text, source)`` of a scenario: a file path, or the name of a
    shipped scenario (``None``: ``occ``). Raises ``FileNotFoundError`` naming
    both possibilities when neither exists."""
    name = name_or_path or DEFAULT_SCENARIO
    if os.path.exists(name):
        with open(name, encoding="utf-8") as f:
            return f.read(), name
    if name in builtin_scenarios():
        path = resources.files(__package__).joinpath("scenarios", name + ".json")
        return path.read_text(encoding="utf-8"), name + ".json (built in)"
    raise FileNotFoundError(
        f"no scenario file {name!r}, and no built-in scenario of that name "
        f"(built in: {', '.join(builtin_scenarios())})"
    )


def run(
    text: str,
    source: str,
    *,
    clients: Optional[int] = None,
    seed: Optional[int] = None,
    sweep: Optional[Sequence[int]] = None,
) -> SimulationResult:
    """Runs a scenario (its JSON text; ``source`` names it in errors), with
    ``clients`` (1 to 1,000,000) and ``seed`` (in [0, 2**64)) replacing the file's.
    ``sweep`` (added in 0.6: client counts, each 1 to 1,000,000, none twice;
    not with ``clients``) replaces the file's "sweep" and runs the scenario
    once per count, in that order. Raises ``ValueError`` naming the bad
    field. Blocks for the run's wall time (the GIL is released); the result
    depends only on the scenario and the seed."""
    if seed is not None and not 0 <= seed < 2**64:
        raise ValueError(f"seed must be in [0, 2**64), got {seed}")
    counts = list(sweep) if sweep is not None else []
    if sweep is not None and not counts:
        raise ValueError("sweep: expected at least one client count, got none")
    for i, n in enumerate(counts):
        if isinstance(n, bool) or not isinstance(n, int):  # the range is the core's check
            raise ValueError(f"sweep[{i}]: must be an integer in [1, 1000000], got {n!r}")
    csv_text, json_text = _core.simulate(text, source, clients, seed, counts)
    return SimulationResult(csv=csv_text, json=json_text, report=json.loads(json_text))


def write_results(result: SimulationResult, out_dir: str) -> list[str]:
    """Writes ``results.csv`` and ``results.json`` into ``out_dir`` (made if
    missing) and returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for name, text in (("results.csv", result.csv), ("results.json", result.json)):
        path = os.path.join(out_dir, name)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        paths.append(path)
    return paths


def _panels(report: dict[str, Any]) -> list[tuple[str, str]]:
    """The columns plotted for a report's model: (column, title)."""
    if report["model"] == "tail":
        return [("p50_ms", "p50 latency (ms)"), ("p99_ms", "p99 latency (ms)"),
                ("extra_load_pct", "extra load of the hedges (%)")]
    panels = [("attempts", "attempts (total calls)"), ("completion_s", "completion time (s)")]
    if report["model"] == "capacity":
        return panels + [("outage_attempts", "attempts during the outage"), ("give_ups", "give-ups")]
    return panels + [("p99_ms", "p99 latency (ms)")]


def write_plot(result: SimulationResult, out_dir: str) -> Optional[str]:
    """Writes ``results.png`` and returns its path, or ``None`` when
    matplotlib is not importable (``pip install 'mulligan[simulate]'``). One
    run: bar charts, log scale, per mode (attempts, completion time and p99
    latency; for the capacity model, attempts during the outage and give-ups;
    for the tail model, p50 and p99 latency and the hedges' extra load). A
    sweep: the same columns as lines against the client count (log axes),
    one line per mode."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    report = result.report
    modes = report["modes"]
    panels = _panels(report)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.2))
    if "sweep" in report:
        _plot_sweep(axes, panels, modes)
        who = "clients " + ", ".join(str(n) for n in report["sweep"])
    else:
        _plot_bars(axes, panels, modes)
        who = f"{report['clients']} clients"
    fig.suptitle(
        f"mulligan simulate: {report['scenario']} ({report['model']}), {who}, seed {report['seed']}"
    )
    fig.tight_layout()
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "results.png")
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return path


def _plot_bars(axes: Any, panels: list[tuple[str, str]], modes: list[dict[str, Any]]) -> None:
    names = [m["mode"] for m in modes]
    for ax, (column, title) in zip(axes, panels):
        values = [m[column] for m in modes]
        ax.bar(range(len(names)), values, color="#4878a8")
        ax.set_title(title)
        # Log scale: no jitter is orders of magnitude off, and the jittered
        # modes' differences must stay readable; symlog when a bar is 0.
        if all(v > 0 for v in values):
            ax.set_yscale("log")
        else:
            ax.set_yscale("symlog")
            ax.set_ylim(bottom=0)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)


def _plot_sweep(axes: Any, panels: list[tuple[str, str]], modes: list[dict[str, Any]]) -> None:
    names = list(dict.fromkeys(m["mode"] for m in modes))
    for ax, (column, title) in zip(axes, panels):
        for name in names:
            rows = sorted((m["clients"], m[column]) for m in modes if m["mode"] == name)
            ax.plot([r[0] for r in rows], [r[1] for r in rows], marker="o", label=name)
        ax.set_title(title)
        ax.set_xscale("log")
        ax.set_yscale("symlog")  # zeros (no hedges, no give-ups) stay drawable
        ax.set_ylim(bottom=0)
        ax.set_xlabel("clients")
    axes[0].legend(fontsize=7)


_TABLE_COLUMNS = {
    "occ": ["attempts", "amplification", "completion_s", "p50_ms", "p99_ms", "successes",
            "give_ups"],
    "capacity": ["attempts", "amplification", "outage_attempts", "overloaded", "successes",
                 "give_ups", "budget_stops", "throttled", "circuit_open", "p99_ms"],
    "tail": ["attempts", "hedges", "extra_load_pct", "hedges_won", "p50_ms", "p99_ms",
             "successes", "give_ups"],
}
_HEDGE_COLUMNS = ["hedges", "extra_load_pct", "hedges_won"]


def format_table(result: SimulationResult) -> str:
    """Returns the report as an aligned text table (a Markdown table: the
    README pastes it as it is). A sweep's table has a ``clients`` column;
    the hedging columns show for the tail model, or when a mode hedged."""
    report = result.report
    columns = ["mode"] + (["clients"] if "sweep" in report else []) + _TABLE_COLUMNS[report["model"]]
    if any(m["hedges"] for m in report["modes"]):
        columns += [c for c in _HEDGE_COLUMNS if c not in columns]
    # The CSV's text, so the table shows the files' fixed decimals.
    records = list(csv.DictReader(io.StringIO(result.csv)))
    rows = [[r[c] for c in columns] for r in records]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(cells, widths))
        ) + " |"

    out = [line(columns), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in rows]
    return "\n".join(out)
