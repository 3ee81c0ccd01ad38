"""The fleet simulator behind ``mulligan simulate`` (issue 21).

The simulation itself is the C++ core's (``core/include/mulligan/simulate/``,
through ``mulligan._core.simulate``): the real retry policy, jitter, budgets,
throttling and breakers, stepped in virtual time against a service model.
This module only finds the scenario, hands its text down, and writes what
came back: ``results.csv`` and ``results.json`` (the core's bytes, unchanged),
a PNG plot when matplotlib is importable, and a text table.

.. versionadded:: 0.6.0
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass
from importlib import resources
from typing import Any, Optional

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
    is the parsed JSON (``{"scenario", "model", "seed", "clients", "modes":
    [{...}]}``, the columns of ``results.csv`` per mode)."""

    csv: str
    json: str
    report: dict[str, Any]


def builtin_scenarios() -> list[str]:
    """Names of the scenarios shipped with the package (``occ``: the AWS
    study; ``outage``: a server that goes down for 60 s and recovers)."""
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
    text: str, source: str, *, clients: Optional[int] = None, seed: Optional[int] = None
) -> SimulationResult:
    """Runs a scenario (its JSON text; ``source`` names it in errors), with
    ``clients`` (1 to 1,000,000) and ``seed`` (in [0, 2**64)) replacing the file's.
    Raises ``ValueError`` naming the bad field. Blocks for the run's wall
    time (the GIL is released); the result depends only on the scenario and
    the seed."""
    if seed is not None and not 0 <= seed < 2**64:
        raise ValueError(f"seed must be in [0, 2**64), got {seed}")
    csv_text, json_text = _core.simulate(text, source, clients, seed)
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


def write_plot(result: SimulationResult, out_dir: str) -> Optional[str]:
    """Writes ``results.png`` (bar charts, log scale, of attempts, completion
    time and p99 latency per mode; for the capacity model, attempts during the outage
    too) and returns its path, or ``None`` when matplotlib is not importable
    (``pip install 'mulligan[simulate]'``)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    report = result.report
    modes = report["modes"]
    names = [m["mode"] for m in modes]
    panels = [("attempts", "attempts (total calls)"), ("completion_s", "completion time (s)")]
    if report["model"] == "capacity":
        panels += [("outage_attempts", "attempts during the outage"), ("give_ups", "give-ups")]
    else:
        panels += [("p99_ms", "p99 latency (ms)")]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.2))
    for ax, (column, title) in zip(axes, panels):
        ax.bar(range(len(names)), [m[column] for m in modes], color="#4878a8")
        ax.set_title(title)
        # Log scale: no jitter is orders of magnitude off, and the jittered
        # modes' differences must stay readable.
        ax.set_yscale("log")
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    fig.suptitle(
        f"mulligan simulate: {report['scenario']} ({report['model']}), "
        f"{report['clients']} clients, seed {report['seed']}"
    )
    fig.tight_layout()
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "results.png")
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return path


_TABLE_COLUMNS = {
    "occ": ["attempts", "amplification", "completion_s", "p50_ms", "p99_ms", "successes",
            "give_ups"],
    "capacity": ["attempts", "amplification", "outage_attempts", "overloaded", "successes",
                 "give_ups", "budget_stops", "throttled", "circuit_open", "p99_ms"],
}


def format_table(result: SimulationResult) -> str:
    """Returns the report as an aligned text table (a Markdown table: the
    README pastes it as it is)."""
    report = result.report
    columns = ["mode"] + _TABLE_COLUMNS[report["model"]]
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
