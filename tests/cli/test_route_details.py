"""`cosolve solve --json` carries route details, stop times, a summary and units, and
`--routes` prints a per-route table; figures recomputed here from the file's coordinates."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from cli.main import app
from tests.conftest import DATA

runner = CliRunner()

#: A 5-node CVRPTW where a vehicle serving 3 arrives before its window opens and waits.
FIVE: dict[str, Any] = {
    "problem": "cvrptw", "name": "five", "distance": "EUC_2D",
    "coords": [[0, 0], [10, 0], [0, 10], [20, 0], [10, 10]],
    "demands": [0, 3, 3, 3, 2], "capacity": 9,
    "time_windows": [[0, 100], [0, 15], [0, 50], [28, 40], [40, 60]],
    "service_times": [0, 5, 5, 2, 3],
}


def _nint(a: list[float], b: list[float]) -> int:
    return math.floor(math.dist(a, b) + 0.5)


def _times(inst: dict[str, Any], route: list[int]) -> tuple[list[tuple[int, ...]], int]:
    """(arrival, start, departure) per stop and the return, simulated here."""
    coords, windows, service = inst["coords"], inst["time_windows"], inst["service_times"]
    t, here, stops = windows[0][0], 0, []
    for node in route:
        t += _nint(coords[here], coords[node])
        start = max(t, windows[node][0])
        stops.append((t, start, start + service[node]))
        t, here = start + service[node], node
    return stops, t + _nint(coords[here], coords[0])


def test_solve_json_carries_details_recomputed_here(tmp_path: Path) -> None:
    path = tmp_path / "five.json"
    path.write_text(json.dumps(FIVE))
    result = runner.invoke(app, ["solve", str(path), "--solver", "nearest_neighbor",
                                 "--time-limit", "0.5", "--json"])
    assert result.exit_code == 0, result.stderr
    solution = json.loads(result.stdout)["solution"]
    assert solution["feasible"]
    total = 0
    for route, detail in zip(solution["routes"], solution["route_details"], strict=True):
        stops, back = _times(FIVE, route)
        assert [(s["arrival"], s["start"], s["departure"]) for s in detail["schedule"]] == stops
        assert [s["node"] for s in detail["schedule"]] == route
        assert [s["waiting"] for s in detail["schedule"]] == [b - a for a, b, _ in stops]
        assert detail["end"] == detail["duration"] == back
        assert detail["load"] == sum(FIVE["demands"][v] for v in route)
        total += back
    assert solution["summary"]["total_duration"] == total
    assert solution["summary"]["total_distance"] == solution["cost"]
    assert "rounded to the nearest integer" in solution["units"]["distance"]


def test_routes_table_caps_its_rows() -> None:
    """X-n101-k25 by nearest neighbour takes 26 routes: 25 rows, then one "… 1 more"."""
    result = runner.invoke(app, ["solve", str(DATA / "X-n101-k25.vrp"), "--solver",
                                 "nearest_neighbor", "--time-limit", "0.5", "--routes"],
                           env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "load / cap." in out and "waiting" not in out
    rows = [line for line in out.splitlines() if line.startswith("│")]
    body = json.loads(runner.invoke(app, [
        "solve", str(DATA / "X-n101-k25.vrp"), "--solver", "nearest_neighbor",
        "--time-limit", "0.5", "--json"]).stdout)["solution"]
    shown = len(body["routes"]) - 25
    assert shown > 0 and f"… {shown} more" in out
    assert len(rows) == 25 + 2  # the routes shown, the "more" line and the totals
    first = body["route_details"][0]
    assert f"{first['load']} / 206" in rows[0]
    assert f"{body['summary']['total_distance']:,.0f}" in rows[-1]


def test_routes_table_with_windows_shows_waiting(tmp_path: Path) -> None:
    path = tmp_path / "five.json"
    path.write_text(json.dumps(FIVE))
    result = runner.invoke(app, ["solve", str(path), "--solver", "pyvrp", "--time-limit",
                                 "0.3", "--routes"], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.stderr
    assert "waiting" in result.stdout and "total" in result.stdout
