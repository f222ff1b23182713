"""CVRPTW over HTTP: JSON and Solomon-file solves and comparisons, jobs, and bad windows
refused with the field at fault. Costs and schedules are recomputed here, not by the server."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.app.helpers import assert_problem, nint_distance

SOLOMON = Path(__file__).resolve().parents[1] / "data" / "solomon"
C101 = SOLOMON / "C101.100.10.vrptw"
C101_BEST = 8273  # LKH-3's tour: FLOOR_2D on coordinates × SCALE 10

#: Depot (0,0) open [0, 50]; 1 at (10,0) [0, 15] serving 5; 2 at (0,10) [0, 50] serving 5;
#: 3 at (20,0) [28, 30]. Driving 3 before 1 is late at 1.
TINY: dict[str, Any] = {
    "name": "tiny-tw",
    "coords": [[0, 0], [10, 0], [0, 10], [20, 0]],
    "distance": "EUC_2D",
    "demands": [0, 3, 3, 3],
    "capacity": 9,
    "max_vehicles": 2,
    "time_windows": [[0, 50], [0, 15], [0, 50], [28, 30]],
    "service_times": [0, 5, 5, 0],
}


def _on_time(instance: dict[str, Any], routes: list[list[int]], dist: Any) -> bool:
    """Every route's schedule, simulated here: wait for windows, start by their latest, be
    back at the depot by its latest."""
    windows, service = instance["time_windows"], instance["service_times"]
    for route in routes:
        t, cur = windows[0][0], 0
        for node in route:
            t += dist(cur, node)
            if t > windows[node][1]:
                return False
            t = max(t, windows[node][0]) + service[node]
            cur = node
        if t + dist(cur, 0) > windows[0][1]:
            return False
    return True


def _euc(coords: list[list[float]]) -> Any:
    return lambda a, b: nint_distance(coords[a], coords[b])


def _total(routes: list[list[int]], dist: Any) -> float:
    return sum(sum(dist(a, b) for a, b in zip([0, *r], [*r, 0], strict=True)) for r in routes)


@pytest.mark.parametrize("solver", ["ortools", "pyvrp", "nearest_neighbor", "reld"])
def test_cvrptw_json_solve(api: httpx.Client, solver: str) -> None:
    response = api.post("/v1/routing/cvrptw/solve", json={
        "instance": TINY, "solver": solver, "time_limit": 1, "seed": 2})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["problem"], body["instance"], body["nodes"]) == ("cvrptw", "tiny-tw", 4)
    assert body["feasible"] is True and body["violations"] == []
    routes = body["routes"]
    assert sorted(v for r in routes for v in r) == [1, 2, 3] and len(routes) <= 2
    dist = _euc(TINY["coords"])
    assert _on_time(TINY, routes, dist)
    assert body["cost"] == _total(routes, dist)
    if solver != "nearest_neighbor":
        assert body["cost"] == 60  # [[1, 3], [2]]: the only on-time plan of this length


def test_solomon_file_upload(api: httpx.Client) -> None:
    response = api.post("/v1/routing/cvrptw/solve",
                        files={"file": (C101.name, C101.read_bytes(), "text/plain")},
                        data={"solver": "pyvrp", "time_limit": "1.5"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["instance"], body["nodes"], body["distance"]) == ("C101", 101, "FLOOR_2D")
    assert body["feasible"] is True
    # Recompute from the file itself: SCALE 10, FLOOR_2D, windows and service × 10.
    lines = C101.read_text().splitlines()
    start = lines.index("NODE_COORD_SECTION") + 1
    coords = [[10 * float(v) for v in line.split()[1:]] for line in lines[start:start + 101]]
    start = lines.index("TIME_WINDOW_SECTION") + 1
    windows = [[10 * float(v) for v in line.split()[1:]] for line in lines[start:start + 101]]
    instance = {"time_windows": windows, "service_times": [0] + [900] * 100}

    def dist(a: int, b: int) -> int:
        return math.floor(math.dist(coords[a], coords[b]))

    assert _on_time(instance, body["routes"], dist)
    assert body["cost"] == _total(body["routes"], dist)
    assert C101_BEST <= body["cost"] <= 1.02 * C101_BEST


def test_cvrptw_compare(api: httpx.Client) -> None:
    response = api.post("/v1/routing/cvrptw/compare", json={
        "instance": TINY, "solvers": ["nearest_neighbor", "ortools"], "time_limit": 0.5,
        "reference": 60, "svg": True})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["problem"] == "cvrptw" and body["distance"] == "EUC_2D"
    rows = {row["solver"]: row for row in body["rows"]}
    assert rows["ortools"]["feasible"] and rows["ortools"]["gap_to_reference"] == 0
    assert rows["nearest_neighbor"]["feasible"]
    assert rows["ortools"]["svg"].startswith("<svg")


def test_cvrptw_job_with_sol_format(api: httpx.Client) -> None:
    response = api.post("/v1/jobs", json={"problem": "cvrptw", "instance": TINY,
                                          "solver": "pyvrp", "time_limit": 1})
    assert response.status_code == 202, response.text
    job_id = response.json()["id"]
    deadline = time.monotonic() + 60
    while (job := api.get(f"/v1/jobs/{job_id}").json())["state"] not in (
            "succeeded", "failed") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert job["state"] == "succeeded" and job["problem"] == "cvrptw" and job["feasible"]
    sol = api.get(f"/v1/jobs/{job_id}/solution", params={"format": "sol"})
    assert sol.status_code == 200 and "Cost: 60" in sol.text


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"time_windows": [[0, 50], [20, 15], [0, 50], [28, 30]]}, "instance.time_windows[1]"),
        ({"time_windows": [[0, 50], [0, 15], [0, 50], [0, 19]]}, "instance.time_windows[3]"),
        ({"service_times": [0, -5, 5, 0]}, "instance.service_times[1]"),
        ({"time_windows": [[0, 50], [0, 15]]}, "instance.time_windows"),
    ],
)
def test_bad_windows_are_422_naming_the_field(api: httpx.Client, change: dict[str, Any],
                                             field: str) -> None:
    response = api.post("/v1/routing/cvrptw/solve", json={
        "instance": {**TINY, **change}, "solver": "ortools", "time_limit": 1})
    assert_problem(response, 422, field=field)


def test_missing_windows_and_wrong_solver_and_wrong_endpoint(api: httpx.Client) -> None:
    no_windows = {k: v for k, v in TINY.items() if k != "time_windows"}
    body = assert_problem(api.post("/v1/routing/cvrptw/solve", json={"instance": no_windows}),
                          422)
    assert "time_windows" in body["detail"]
    assert_problem(api.post("/v1/routing/cvrptw/solve",
                            json={"instance": TINY, "solver": "sil"}), 422, field="solver")
    # A CVRPTW file is not a CVRP: the endpoint says where to post it.
    assert_problem(api.post("/v1/routing/cvrp/solve",
                            files={"file": (C101.name, C101.read_bytes())}), 422, field="file")
