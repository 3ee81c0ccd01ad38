"""``mulligan simulate``: the command's main() over the C++ fleet simulator.
Exact numbers on a scenario small enough to work out by hand; the files'
columns; seed reproducibility (same seed, same bytes); bad fields refused
with their name; plots skipped without matplotlib."""

from __future__ import annotations

import csv
import json
import sys
from typing import Any

import pytest

from mulligan._cli.main import main
from mulligan._simulate import builtin_scenarios, load_scenario, run

COLUMNS = [
    "mode", "clients", "calls", "attempts", "amplification", "completion_s", "p50_ms", "p99_ms",
    "successes", "give_ups", "budget_stops", "throttled", "circuit_open", "outage_attempts",
    "overloaded", "last_overload_s", "hedges", "hedges_won", "extra_load_pct",
]

# 3 clients, slot 10 ms, exponential backoff from 100 ms, no jitter: client 0
# wins slot 0 (answer at 10 ms); 1 and 2 retry at 110 ms, 1 wins (120 ms); 2
# retries at 120 + 200 = 320 ms and wins (330 ms). 6 attempts, 0.330 s.
TINY = {
    "name": "tiny",
    "service": {"model": "occ", "slot": "10ms"},
    "clients": {"count": 3},
    "modes": [{"name": "none", "policy": {"max_attempts": 10, "base_delay": "100ms",
                                          "multiplier": 2, "jitter": "none"}}],
}


def _write(tmp_path: Any, scenario: dict[str, Any]) -> str:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(scenario))
    return str(path)


def test_tiny_scenario_by_hand(tmp_path: Any, capsys: Any) -> None:
    out = tmp_path / "out"
    assert main(["simulate", _write(tmp_path, TINY), "--out", str(out)]) == 0
    with open(out / "results.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == COLUMNS
    assert rows[1] == ["none", "3", "3", "6", "2.0000", "0.330", "120.000", "330.000", "3", "0",
                       "0", "0", "0", "0", "0", "-1.000", "0", "0", "0.000"]
    report = json.loads((out / "results.json").read_text())
    assert report["scenario"] == "tiny" and report["model"] == "occ"
    assert report["clients"] == 3
    assert list(report["modes"][0]) == COLUMNS
    assert report["modes"][0]["attempts"] == 6
    assert report["modes"][0]["completion_s"] == 0.33
    printed = capsys.readouterr().out
    assert "| none" in printed and "results.csv" in printed


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Any) -> None:
    outs = []
    for name, seed in (("a", "5"), ("b", "5"), ("c", "6")):
        out = tmp_path / name
        assert main(["simulate", "occ", "--clients", "30", "--seed", seed, "--out", str(out)]) == 0
        outs.append(((out / "results.csv").read_bytes(), (out / "results.json").read_bytes()))
    assert outs[0] == outs[1]
    assert outs[0][0] != outs[2][0] and outs[0][1] != outs[2][1]
    assert json.loads(outs[0][1])["seed"] == 5


def test_default_scenario_reproduces_the_aws_ranking() -> None:
    text, source = load_scenario(None)
    report = run(text, source).report
    calls = {m["mode"]: m["attempts"] for m in report["modes"]}
    assert report["clients"] == 50
    # 50 writers in lockstep without jitter: 50 + 49 + ... + 1 attempts.
    assert calls["no jitter"] == 1275
    assert calls["full jitter"] < calls["equal jitter"] < calls["no jitter"]
    assert calls["decorrelated jitter"] < calls["equal jitter"]
    assert all(m["successes"] == 50 for m in report["modes"])


def test_outage_budgets_cut_the_storm() -> None:
    assert builtin_scenarios() == ["hedging", "occ", "outage"]
    text, source = load_scenario("outage")
    report = run(text, source, clients=1000).report
    modes = {m["mode"]: m for m in report["modes"]}
    assert report["model"] == "capacity"
    storm = modes["full jitter"]["outage_attempts"]
    assert modes["full jitter"]["calls"] == 15000
    for gated in ("token bucket", "aws quota", "ratio 20%", "throttle", "breaker"):
        assert modes[gated]["outage_attempts"] < storm, gated
    assert modes["token bucket"]["budget_stops"] > 0
    assert modes["throttle"]["throttled"] > 0
    assert modes["breaker"]["circuit_open"] > 0


@pytest.mark.parametrize(
    "change, fragment",
    [
        ({"clients": {"cuont": 3}}, 'clients.cuont: unknown field, did you mean "count"?'),
        ({"service": {"model": "occ", "slot": -1}}, "service.slot"),
        ({"modes": [{"name": "x", "policy": {"jitter": "ful"}}]}, "modes[0].policy.jitter"),
        ({"modes": [{"name": "x", "budget": {"kind": "tokens"}}]}, "modes[0].budget.kind"),
    ],
)
def test_bad_field_is_named(tmp_path: Any, capsys: Any, change: dict[str, Any],
                            fragment: str) -> None:
    scenario = dict(TINY, **change)
    assert main(["simulate", _write(tmp_path, scenario), "--out", str(tmp_path)]) == 2
    assert fragment in capsys.readouterr().err
    assert not (tmp_path / "results.csv").exists()


def test_bad_options(tmp_path: Any, capsys: Any) -> None:
    assert main(["simulate", "occ", "--clients", "0", "--out", str(tmp_path)]) == 2
    assert "clients must be in [1, 1000000], got 0" in capsys.readouterr().err
    assert main(["simulate", "occ", "--seed", "-1", "--out", str(tmp_path)]) == 2
    assert "seed must be in [0, 2**64), got -1" in capsys.readouterr().err
    # Past the engine's 64 bits: the same usage error, not a binding traceback.
    assert main(["simulate", "occ", "--seed", str(2**64), "--out", str(tmp_path)]) == 2
    assert "seed must be in [0, 2**64), got 18446744073709551616" in capsys.readouterr().err
    assert main(["simulate", str(tmp_path / "missing.json"), "--out", str(tmp_path)]) == 2
    assert "no built-in scenario" in capsys.readouterr().err
    with pytest.raises(ValueError, match="invalid JSON"):
        run("{", "x.json")


def test_plots_skipped_without_matplotlib(tmp_path: Any, capsys: Any, monkeypatch: Any) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import raises ImportError
    assert main(["simulate", _write(tmp_path, TINY), "--out", str(tmp_path / "o")]) == 0
    assert "plots skipped: matplotlib is not installed" in capsys.readouterr().out
    assert not (tmp_path / "o" / "results.png").exists()
    assert (tmp_path / "o" / "results.csv").exists()


def test_plot_written_with_matplotlib(tmp_path: Any) -> None:
    pytest.importorskip("matplotlib")
    assert main(["simulate", "occ", "--clients", "10", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sweep_one_row_per_clients_and_mode(tmp_path: Any, capsys: Any) -> None:
    # TINY at 1 client (one write at 0: 1 attempt, 10 ms) and at 3 (6 attempts).
    out = tmp_path / "out"
    assert main(["simulate", _write(tmp_path, TINY), "--sweep", "1,3", "--out", str(out)]) == 0
    with open(out / "results.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == COLUMNS
    assert [r[:4] for r in rows[1:]] == [["none", "1", "1", "1"], ["none", "3", "3", "6"]]
    report = json.loads((out / "results.json").read_text())
    assert report["sweep"] == [1, 3] and "clients" not in report
    assert [(m["clients"], m["completion_s"]) for m in report["modes"]] == [(1, 0.01), (3, 0.33)]
    printed = capsys.readouterr().out
    assert "clients 1,3" in printed and "| mode | clients |" in printed


def test_sweep_field_of_the_scenario_and_its_override() -> None:
    text = json.dumps(dict(TINY, sweep=[3, 1]))
    report = run(text, "s.json").report
    assert [m["clients"] for m in report["modes"]] == [3, 1]
    assert [m["clients"] for m in run(text, "s.json", sweep=[1]).report["modes"]] == [1]
    single = run(text, "s.json", clients=3).report
    assert single["clients"] == 3 and "sweep" not in single


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--sweep", "10,0"], "sweep[1]: must be in [1, 1000000], got 0"),
        (["--sweep", "10,10"], "sweep[1]: 10 is listed twice"),
        (["--sweep", "10", "--clients", "5"], "--clients and --sweep cannot be given together"),
    ],
)
def test_bad_sweep(tmp_path: Any, capsys: Any, argv: list[str], fragment: str) -> None:
    assert main(["simulate", "occ", *argv, "--out", str(tmp_path)]) == 2
    assert fragment in capsys.readouterr().err
    assert not (tmp_path / "results.csv").exists()


def test_sweep_that_is_not_a_list_of_counts_is_a_usage_error(tmp_path: Any, capsys: Any) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["simulate", "occ", "--sweep", "10,x", "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "expected client counts separated by commas (10,100,1000), got '10,x'" in (
        capsys.readouterr().err)


def test_bad_sweep_in_the_scenario_is_named() -> None:
    with pytest.raises(ValueError, match=r"s.json: sweep\[0\]: expected an integer"):
        run(json.dumps(dict(TINY, sweep=[0])), "s.json")
    with pytest.raises(ValueError, match=r"sweep\[0\]: must be an integer"):
        run(json.dumps(TINY), "s.json", sweep=[True])


# One client, every request slow (100 ms), two copies 50 ms apart: the hedge
# starts at 50 ms (a second request) and loses to copy 1 at 100 ms.
HEDGED = {
    "service": {"model": "tail", "latency": "1ms", "tail_latency": "100ms", "tail_every": 1},
    "clients": {"count": 1, "calls": 2},
    "modes": [{"name": "hedged", "hedging": {"max_attempts": 2, "hedging_delay": "50ms"}}],
}


def test_hedging_mode_counts_its_hedges(tmp_path: Any, capsys: Any) -> None:
    out = tmp_path / "out"
    assert main(["simulate", _write(tmp_path, HEDGED), "--out", str(out)]) == 0
    mode = json.loads((out / "results.json").read_text())["modes"][0]
    assert (mode["attempts"], mode["hedges"], mode["hedges_won"]) == (4, 2, 0)
    assert (mode["p99_ms"], mode["extra_load_pct"]) == (100.0, 100.0)
    assert "| hedges | extra_load_pct |" in capsys.readouterr().out


def test_bad_hedging_field_is_named(tmp_path: Any, capsys: Any) -> None:
    bad = dict(HEDGED, modes=[{"name": "h", "hedging": {"max_attempts": 2, "delay_quantile": 2}}])
    assert main(["simulate", _write(tmp_path, bad), "--out", str(tmp_path)]) == 2
    assert "modes[0].hedging.delay_quantile: expected a number in (0, 1], got 2" in (
        capsys.readouterr().err)


def test_builtin_hedging_scenario_cuts_the_tail() -> None:
    text, source = load_scenario("hedging")
    modes = {m["mode"]: m for m in run(text, source, clients=200).report["modes"]}
    assert modes["no hedging"]["p99_ms"] == 100.0 and modes["no hedging"]["hedges"] == 0
    assert modes["fixed 10 ms"]["p99_ms"] < 100.0
    assert modes["p95 quantile"]["p99_ms"] < modes["fixed 10 ms"]["p99_ms"]
    assert modes["all at once"]["extra_load_pct"] == 100.0
    assert modes["all at once"]["hedges_won"] > 0  # copy 1 slow, copy 2 fast
    for name in ("fixed 10 ms", "p95 quantile"):
        assert 0 < modes[name]["extra_load_pct"] < 5.0, name
        assert modes[name]["hedges_won"] > 0, name


def test_sweep_plot_written_with_matplotlib(tmp_path: Any) -> None:
    pytest.importorskip("matplotlib")
    assert main(["simulate", "hedging", "--sweep", "10,20", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "results.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_out_that_cannot_hold_the_results_is_refused_before_the_run(
    tmp_path: Any, capsys: Any
) -> None:
    """--out naming a file (or a path under one) is a usage error before the
    simulation runs: no table is printed, nothing is written."""
    taken = tmp_path / "afile"
    taken.write_text("keep me")
    for out in (taken, taken / "sub"):
        assert main(["simulate", "occ", "--clients", "10", "--out", str(out)]) == 2
        captured = capsys.readouterr()
        assert captured.err.startswith(f"mulligan simulate: --out {out}: ")
        assert captured.out == ""
    assert taken.read_text() == "keep me"


def test_a_scenario_too_big_for_memory_is_a_clear_error(tmp_path: Any) -> None:
    """clients.count and clients.calls are each in range, their product (the
    calls kept in flight) is not bounded: under a 1 GiB address-space limit
    the engine's allocation fails at once, and the command says so (exit 1)
    instead of a MemoryError traceback."""
    import subprocess
    import sys

    scenario = dict(TINY, clients={"count": 1000, "calls": 1_000_000})
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "from mulligan._cli.main import main\n"
        f"sys.exit(main(['simulate', {_write(tmp_path, scenario)!r}, '--out', {str(tmp_path)!r}]))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert p.returncode == 1, p.stderr
    assert p.stderr.decode().startswith("mulligan simulate: out of memory: ")
    assert b"Traceback" not in p.stderr
