"""PolyNet behind the routing endpoints: TSP as JSON and a CVRPLIB file, checked here."""

from __future__ import annotations

import random
from pathlib import Path

import httpx
import pytest

from tests.app.helpers import tour_length
from tests.conftest import OPTIMA


def test_tsp_json_solve_with_polynet(api: httpx.Client) -> None:
    rng = random.Random(5)
    coords = [[rng.uniform(0, 100), rng.uniform(0, 100)] for _ in range(40)]
    response = api.post("/v1/routing/tsp/solve", json={
        "instance": {"name": "random40", "coords": coords},
        "solver": "polynet", "time_limit": 1.0, "seed": 2,
    })
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["solver"], body["nodes"], body["seed"]) == ("polynet", 40, 2)
    assert body["feasible"] is True and sorted(body["tour"]) == list(range(40))
    assert body["cost"] == pytest.approx(tour_length(coords, body["tour"]), rel=1e-9)
    winner = body["stats"]["winner"]
    assert 0 <= winner["strategy"] < body["stats"]["strategies"]
    assert body["wall_time"] <= 1.5  # a shared 2-core machine: passes are timed, not exact


def test_cvrp_file_solve_with_polynet(api: httpx.Client, data_dir: Path) -> None:
    data = (data_dir / "X-n101-k25.vrp").read_bytes()
    response = api.post("/v1/routing/cvrp/solve", files={"file": ("X-n101-k25.vrp", data)},
                        data={"solver": "polynet", "time_limit": "2"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["feasible"] and body["solver"] == "polynet"
    assert body["stats"]["passes"] >= 1 and body["wall_time"] <= 2.2
    assert body["stats"]["winner"]["mode"] in ("greedy", "sample")
    assert body["cost"] < 1.5 * OPTIMA["X-n101-k25"]


def test_a_budget_in_solutions(api: httpx.Client, data_dir: Path) -> None:
    """max_solutions: PolyNet stops after that many decoded solutions (no reconstruction),
    long before a generous time limit; a solver without a solution budget refuses it."""
    data = (data_dir / "X-n101-k25.vrp").read_bytes()
    response = api.post("/v1/routing/cvrp/solve", files={"file": ("X-n101-k25.vrp", data)},
                        data={"solver": "polynet", "time_limit": "30", "max_solutions": "256"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["feasible"] and body["stats"]["solutions"] == 256
    assert body["stats"]["max_solutions"] == 256 and "reconstruction" not in body["stats"]
    assert body["wall_time"] < 15
    coords = [[0, 0], [3, 0], [3, 4], [0, 4]]
    refused = api.post("/v1/routing/tsp/solve", json={
        "instance": {"coords": coords}, "solver": "ortools", "max_solutions": 10})
    assert refused.status_code == 422 and refused.json()["field"] == "max_solutions"
    zero = api.post("/v1/routing/tsp/solve", json={
        "instance": {"coords": coords}, "solver": "polynet", "max_solutions": 0})
    assert zero.status_code == 422 and zero.json()["field"] == "max_solutions"
    listed = {s["name"]: s for s in api.get("/v1/solvers").json()["solvers"]}
    assert listed["polynet"]["solution_budget"] and not listed["ortools"]["solution_budget"]


def test_polynet_is_listed_with_its_problems(api: httpx.Client) -> None:
    response = api.get("/v1/solvers")
    assert response.status_code == 200, response.text
    entry = {s["name"]: s for s in response.json()["solvers"]}["polynet"]
    assert set(entry["problems"]) == {"tsp", "cvrp", "cvrptw"} and entry["available"] is True


def test_cvrptw_json_solve_with_polynet(api: httpx.Client) -> None:
    """Time windows: the schedule is simulated here, not trusted from the server."""
    from tests.app.test_cvrptw import TINY, _euc, _on_time, _total

    response = api.post("/v1/routing/cvrptw/solve", json={
        "instance": TINY, "solver": "polynet", "time_limit": 1.0})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["feasible"] is True and body["solver"] == "polynet"
    dist = _euc(TINY["coords"])
    assert sorted(v for r in body["routes"] for v in r) == [1, 2, 3]
    assert len(body["routes"]) <= TINY["max_vehicles"]
    assert _on_time(TINY, body["routes"], dist)
    assert body["cost"] == _total(body["routes"], dist) == 60  # optimal (else 74: [1, 2], [3])


def test_cvrptw_solomon_file_with_polynet(api: httpx.Client) -> None:
    from tests.app.test_cvrptw import C101

    response = api.post("/v1/routing/cvrptw/solve",
                        files={"file": (C101.name, C101.read_bytes(), "text/plain")},
                        data={"solver": "polynet", "time_limit": "2"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["feasible"] is True, body["violations"]
    assert body["stats"]["winner"]["mode"] in ("greedy", "sample")
    assert body["wall_time"] <= 2.5
