"""Route details, stop times, summaries and units over HTTP (solve, compare, a job's solution),
recomputed here from the instance, not by the server; ISO 8601 times in job and batch
documents; the OpenAPI document describes the new fields as typed models."""

from __future__ import annotations

import json
import math
import time
from datetime import datetime
from typing import Any

import httpx

from tests.app.helpers import nint_distance

#: A vehicle serving 3 after 1 arrives at 25, before 3's window opens at 28, and waits.
FIVE: dict[str, Any] = {
    "name": "five", "distance": "EUC_2D",
    "coords": [[0, 0], [10, 0], [0, 10], [20, 0], [10, 10]],
    "demands": [0, 3, 3, 3, 2], "capacity": 9, "ids": [100, 101, 102, 103, 104],
    "time_windows": [[0, 100], [0, 15], [0, 50], [28, 40], [40, 60]],
    "service_times": [0, 5, 5, 2, 3],
}


def _expected_route(inst: dict[str, Any], route: list[int]) -> dict[str, Any]:
    """A route's figures simulated here: leave when the depot opens, wait for windows."""
    coords, windows = inst["coords"], inst.get("time_windows")
    service = inst.get("service_times") or [0] * len(coords)
    t = windows[0][0] if windows else 0
    here, distance, schedule = 0, 0, []
    for node in route:
        leg = nint_distance(coords[here], coords[node])
        distance += leg
        arrival = t + leg
        start = max(arrival, windows[node][0]) if windows else arrival
        schedule.append({"node": node, "id": inst["ids"][node], "arrival": arrival,
                         "waiting": start - arrival, "start": start,
                         "departure": start + service[node]})
        t, here = start + service[node], node
    distance += nint_distance(coords[here], coords[0])
    return {"distance": distance, "end": t + nint_distance(coords[here], coords[0]),
            "load": sum(inst["demands"][v] for v in route), "schedule": schedule}


def _assert_details(inst: dict[str, Any], body: dict[str, Any]) -> None:
    total_waiting = 0
    for k, (route, got) in enumerate(zip(body["routes"], body["route_details"], strict=True)):
        want = _expected_route(inst, route)
        assert got["route"] == k and got["stops"] == len(route)
        assert (got["load"], got["capacity"]) == (want["load"], inst["capacity"])
        assert got["distance"] == want["distance"]
        assert got["schedule"] == want["schedule"]
        assert got["duration"] == got["end"] == want["end"]
        assert got["duration"] == got["distance"] + got["service"] + got["waiting"]
        total_waiting += got["waiting"]
    summary = body["summary"]
    assert summary["total_distance"] == body["cost"]
    assert summary["total_waiting"] == total_waiting
    assert summary["vehicles_used"] == sum(1 for r in body["routes"] if r)


def test_a_cvrptw_solve_answers_with_stop_times(api: httpx.Client) -> None:
    response = api.post("/v1/routing/cvrptw/solve", json={
        "instance": FIVE, "solver": "pyvrp", "time_limit": 0.5})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["feasible"]
    _assert_details(FIVE, body)
    # the best plan serves 1, 3 and 4 on one route: 3 minutes waiting at node 3
    assert body["summary"]["total_waiting"] == 3
    assert body["units"]["scale"] == 1 and "nearest integer" in body["units"]["distance"]


def test_a_compare_row_carries_them_too(api: httpx.Client) -> None:
    response = api.post("/v1/routing/cvrptw/compare", json={
        "instance": FIVE, "solvers": ["nearest_neighbor", "pyvrp"], "time_limit": 0.3})
    assert response.status_code == 200, response.text
    for row in response.json()["rows"]:
        _assert_details(FIVE, row)


def test_a_tsp_and_a_cvrp_solve(api: httpx.Client) -> None:
    coords = [[0, 0], [0, 3], [4, 3], [4, 0]]
    body = api.post("/v1/routing/tsp/solve", json={
        "instance": {"coords": coords}, "solver": "nearest_neighbor", "time_limit": 0.2}).json()
    (tour,) = body["route_details"]
    assert tour["distance"] == tour["duration"] == 14 and tour["load"] is None
    assert tour["schedule"] is None and body["summary"]["total_waiting"] is None
    assert body["units"]["distance"].startswith("the coordinates' units")
    cvrp = {"coords": coords, "distance": "EUC_2D", "demands": [0, 2, 2, 2], "capacity": 4,
            "ids": [7, 8, 9, 10]}
    body = api.post("/v1/routing/cvrp/solve", json={
        "instance": cvrp, "solver": "ortools", "time_limit": 0.3}).json()
    for route, got in zip(body["routes"], body["route_details"], strict=True):
        want = _expected_route(cvrp, route)
        assert (got["distance"], got["load"]) == (want["distance"], want["load"])
        assert got["duration"] == got["distance"]
    assert body["summary"]["total_load"] == 6


def test_a_job_answers_with_details_and_iso_times(api: httpx.Client) -> None:
    response = api.post("/v1/jobs", json={"problem": "cvrptw", "instance": FIVE,
                                          "solver": "nearest_neighbor", "time_limit": 0.2})
    assert response.status_code == 202, response.text
    job_id = response.json()["id"]
    deadline = time.monotonic() + 60
    while (job := api.get(f"/v1/jobs/{job_id}").json())["state"] not in ("succeeded",
                                                                          "failed"):
        assert time.monotonic() < deadline, job
        time.sleep(0.2)
    assert job["state"] == "succeeded", job
    for name in ("created", "started", "finished", "expires"):
        if job[f"{name}_at"] is None:
            assert job[name] is None
            continue
        stamp = datetime.fromisoformat(job[name])
        assert stamp.utcoffset() is not None and stamp.utcoffset().total_seconds() == 0
        assert math.isclose(stamp.timestamp(), job[f"{name}_at"], abs_tol=1e-3)
    solution = api.get(f"/v1/jobs/{job_id}/solution").json()
    _assert_details(FIVE, solution)


def test_a_batch_gives_its_creation_in_iso(api: httpx.Client) -> None:
    files = {"files": ("five.json", json.dumps({"problem": "cvrptw", **FIVE}))}
    response = api.post("/v1/batches", files=files,
                        data={"solver": "nearest_neighbor", "time_limit": "0.2"})
    assert response.status_code == 202, response.text
    batch = response.json()
    stamp = datetime.fromisoformat(batch["created"])
    assert math.isclose(stamp.timestamp(), batch["created_at"], abs_tol=1e-3)


def test_openapi_types_the_details(api: httpx.Client) -> None:
    schemas = api.get("/openapi.json").json()["components"]["schemas"]
    for response in ("CVRPTWSolveResponse", "CompareRow", "JobSolution"):
        props = schemas[response]["properties"]
        assert "RouteDetail" in str(props["route_details"]), response
        assert "RoutingSummary" in str(props["summary"]) and "RoutingUnits" in str(props["units"])
    assert set(schemas["StopTimes"]["properties"]) >= {"arrival", "waiting", "start",
                                                       "departure"}
    assert schemas["JobStatus"]["properties"]["created"]["type"] == "string"
    assert "created" in schemas["BatchStatus"]["properties"]
