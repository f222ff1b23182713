"""``solver: "auto"`` through the API (solve, jobs) and batches of mixed problem kinds with a
solver per kind and totals per kind."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import numpy as np

from solvers.routing.generate import random_cvrptw
from solvers.routing.io.documents import instance_to_dict
from solvers.routing.io.formats import parse_instance_bytes
from solvers.routing.problem import CVRPInstance, TSPInstance
from tests.app.helpers import assert_problem

_RNG = np.random.default_rng(7)
_COORDS = _RNG.random((9, 2)).round(4)
#: 8 customers with a fleet cap: auto picks ils, which answers at once (exact under 14)
CAPPED = {"coords": _COORDS.tolist(), "demands": [0, 3, 2, 4, 1, 2, 3, 2, 1],
          "capacity": 8, "max_vehicles": 3}


def _wait_job(api: httpx.Client, job_id: str, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    job = api.get(f"/v1/jobs/{job_id}").json()
    while job["state"] not in ("succeeded", "failed", "cancelled") and (
            time.monotonic() < deadline):
        time.sleep(0.2)
        job = api.get(f"/v1/jobs/{job_id}").json()
    return job


def test_solve_with_auto_says_which_solver_and_why(api: httpx.Client) -> None:
    response = api.post("/v1/routing/cvrp/solve", json={
        "instance": CAPPED, "solver": "auto", "time_limit": 0.5})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["solver"] == body["auto"]["picked"] == "ils"
    assert "fleet cap" in body["auto"]["band"] and "results/fleet.md" in body["auto"]["reason"]
    assert body["feasible"] and body["auto"]["order"][0] == "ils"
    # a named solver's answer has no auto block
    named = api.post("/v1/routing/cvrp/solve", json={
        "instance": CAPPED, "solver": "nearest_neighbor", "time_limit": 0.5}).json()
    assert named.get("auto") is None
    # auto may pick a solver that counts no solutions: a budget in solutions is refused
    assert_problem(api.post("/v1/routing/cvrp/solve", json={
        "instance": CAPPED, "solver": "auto", "time_limit": 0.5, "max_solutions": 10}),
        422, field="max_solutions")


def test_compare_takes_auto_in_its_list(api: httpx.Client) -> None:
    response = api.post("/v1/routing/cvrp/compare", json={
        "instance": CAPPED, "solvers": ["auto", "nearest_neighbor"], "time_limit": 0.3})
    assert response.status_code == 200, response.text
    rows = {row["solver"]: row for row in response.json()["rows"]}
    assert rows["auto"]["auto"]["picked"] == "ils" and rows["nearest_neighbor"]["auto"] is None


def test_a_job_with_auto_carries_the_choice_in_its_solution(api: httpx.Client) -> None:
    response = api.post("/v1/jobs", json={"problem": "cvrp", "instance": CAPPED,
                                          "solver": "auto", "time_limit": 0.5})
    assert response.status_code == 202, response.text
    job = _wait_job(api, response.json()["id"])
    assert job["state"] == "succeeded", job
    solution = api.get(f"/v1/jobs/{job['id']}/solution").json()
    assert solution["solver"] == solution["auto"]["picked"] == "ils"


def _tiny_files() -> list[tuple[str, tuple[str, bytes]]]:
    rng = np.random.default_rng(11)
    coords = rng.random((8, 2))
    tsp = TSPInstance(coords=coords)
    cvrp = CVRPInstance(coords=coords, demands=np.r_[0, rng.integers(1, 4, 7)], capacity=6)
    cvrptw = random_cvrptw(rng, 8)[0]
    return [("files", (f"{name}.json", json.dumps({"problem": inst.problem,
                                                    **instance_to_dict(inst)}).encode()))
            for name, inst in (("a_tsp", tsp), ("b_cvrp", cvrp), ("c_cvrptw", cvrptw))]


def test_a_mixed_batch_takes_a_solver_per_problem_and_totals_per_kind(
        api: httpx.Client) -> None:
    files = _tiny_files()
    response = api.post("/v1/batches", files=files, data={
        "solver": "tsp=ils, cvrp=nearest_neighbor, cvrptw=auto", "time_limit": "0.3"})
    assert response.status_code == 202, response.text
    batch = response.json()
    assert batch["solver"] == "tsp=ils,cvrp=nearest_neighbor,cvrptw=auto"
    deadline = time.monotonic() + 60
    while not batch["done"] and time.monotonic() < deadline:
        time.sleep(0.3)
        batch = api.get(f"/v1/batches/{batch['id']}").json()
    summary = batch["summary"]
    assert summary["succeeded"] == 3 and summary["solved"] == 3, batch
    # never a sum of a TSP's length and a CVRP's cost: one total per kind
    assert summary["total_cost"] is None
    costs = {r["filename"]: r["cost"] for r in batch["results"]}
    by_kind = summary["by_problem"]
    assert list(by_kind) == ["tsp", "cvrp", "cvrptw"]
    for kind, name in (("tsp", "a_tsp.json"), ("cvrp", "b_cvrp.json"),
                       ("cvrptw", "c_cvrptw.json")):
        assert by_kind[kind]["files"] == by_kind[kind]["solved"] == 1
        # the cost the independent checker gives the stored plan, not a copied figure
        data = next(blob for filename, blob in (part for _, part in files)
                    if filename == name)
        instance = parse_instance_bytes(data, name)
        result = next(r for r in batch["results"] if r["filename"] == name)
        plan = api.get(f"/v1/jobs/{result['job_id']}/solution").json()
        assert by_kind[kind]["total_cost"] == costs[name]
        assert instance.cost(plan["routes"]) == costs[name]
    table = api.get(f"/v1/batches/{batch['id']}", params={"format": "md"}).text
    assert "total cost per problem: TSP" in table
    # a kind the per-kind form leaves out is rejected, naming the field's fix
    partial = api.post("/v1/batches", files=files, data={"solver": "tsp=ils",
                                                          "time_limit": "0.3"}).json()
    assert partial["summary"]["rejected"] == 2
    assert "add cvrp=NAME" in partial["rejected"][0]["error"]
    assert_problem(api.post("/v1/batches", files=files, data={"solver": "tsp=ils,vrp=ils"}),
                   422, field="solver")
    assert_problem(api.post("/v1/batches", files=files, data={"solver": "cvrptw=ils"}),
                   422, field="solver")
    assert_problem(api.post("/v1/batches", files=files, data={"solver": "tsp=nope"}), 404,
                   field="solver")
