"""VROOM documents over HTTP, on the suite's real uvicorn server: the document posted as it
is, VROOM's output read back and checked here (every task once, loads within capacity,
service inside its window), GeoJSON, a comparison, a job, the catalogue, and bad input as a
422 naming VROOM's field while the server keeps serving."""

from __future__ import annotations

import copy
import io
import json
import time
import zipfile
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.app.conftest import STRICT_LIMITS
from tests.app.helpers import assert_problem

SOLVE = "/v1/routing/vrp/solve"
COMPARE = "/v1/routing/vrp/compare"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vrp_request.json"

#: Two vehicles from location 0, four jobs, a 2-D capacity, travel times as a matrix.
MATRIX_DOC: dict[str, Any] = {
    "vehicles": [
        {"id": 1, "start_index": 0, "end_index": 0, "capacity": [4, 2]},
        {"id": 2, "start_index": 0, "end_index": 0, "capacity": [4, 2]},
    ],
    "jobs": [
        {"id": 10, "location_index": 1, "delivery": [2, 1], "service": 5},
        {"id": 11, "location_index": 2, "delivery": [2, 0], "time_windows": [[0, 100]]},
        {"id": 12, "location_index": 3, "delivery": [1, 1]},
        {"id": 13, "location_index": 4, "pickup": [1, 0]},
    ],
    "matrices": {"car": {"durations": [
        [0, 10, 20, 15, 12],
        [10, 0, 12, 20, 18],
        [20, 12, 0, 9, 25],
        [15, 20, 9, 0, 14],
        [12, 18, 25, 14, 0],
    ]}},
}


def _example() -> dict[str, Any]:
    return json.loads(EXAMPLE.read_text())


def _task_ids(doc: dict[str, Any]) -> list[tuple[str, int]]:
    ids = [("job", j["id"]) for j in doc.get("jobs", [])]
    for s in doc.get("shipments", []):
        ids += [("pickup", s["pickup"]["id"]), ("delivery", s["delivery"]["id"])]
    return sorted(ids)


def _check_answer(doc: dict[str, Any], answer: dict[str, Any]) -> None:
    """The answer read against the document here, not by the server's checker: each task
    once, in a route or unassigned; each step's load within its vehicle's capacity; each job
    served inside one of its windows; the summary the sum of the routes."""
    assert answer["code"] == 0
    served = [(step["type"], step["id"]) for route in answer["routes"]
              for step in route["steps"] if step["type"] in ("job", "pickup", "delivery")]
    unassigned = [(u["type"], u["id"]) for u in answer["unassigned"]]
    assert sorted(served + unassigned) == _task_ids(doc)
    vehicles = {v["id"]: v for v in doc["vehicles"]}
    jobs = {j["id"]: j for j in doc.get("jobs", [])}
    for route in answer["routes"]:
        capacity = vehicles[route["vehicle"]].get("capacity")
        for step in route["steps"]:
            if capacity is not None and "load" in step:
                assert all(x <= c for x, c in zip(step["load"], capacity, strict=True)), step
            if step["type"] == "job" and jobs[step["id"]].get("time_windows"):
                start = step["arrival"] + step.get("waiting_time", 0)
                assert any(a <= start <= b for a, b in jobs[step["id"]]["time_windows"]), step
    assert answer["summary"]["cost"] == sum(r["cost"] for r in answer["routes"])
    assert answer["summary"]["unassigned"] == len(answer["unassigned"])
    check = answer["cosolve"]["check"]
    assert check["feasible"] is True and check["violations"] == []


def test_solve_posts_the_document_as_it_is(api: httpx.Client) -> None:
    response = api.post(SOLVE, params={"solver": "vroom", "time_limit": 1}, json=MATRIX_DOC)
    assert response.status_code == 200, response.text
    answer = response.json()
    _check_answer(MATRIX_DOC, answer)
    assert answer["unassigned"] == []
    assert answer["cosolve"]["solver"] == "vroom"
    assert answer["cosolve"]["distance_model"] == "matrix"


def test_geojson_draws_routes_and_tasks(api: httpx.Client) -> None:
    doc = _example()
    response = api.post(SOLVE, params={"time_limit": 1, "geometry": "geojson"}, json=doc)
    assert response.status_code == 200, response.text
    answer = response.json()
    _check_answer(doc, answer)
    features = answer["geojson"]["features"]
    assert answer["geojson"]["type"] == "FeatureCollection"
    lines = [f for f in features if f["geometry"]["type"] == "LineString"]
    points = [f for f in features if f["geometry"]["type"] == "Point"]
    assert len(lines) == len(answer["routes"])
    served = sum(1 for r in answer["routes"] for s in r["steps"]
                 if s["type"] in ("job", "pickup", "delivery"))
    assert len([p for p in points if p["properties"].get("type") != "start"
                and p["properties"].get("type") != "end"]) >= served


def test_geojson_needs_coordinates(api: httpx.Client) -> None:
    response = api.post(SOLVE, params={"geometry": "geojson"}, json=MATRIX_DOC)
    assert_problem(response, 422, "geometry")


def _bad(change: Any) -> dict[str, Any]:
    doc = copy.deepcopy(MATRIX_DOC)
    change(doc)
    return doc


BAD_INPUT = {
    "unknown location_index": (
        lambda d: d["jobs"][0].update(location_index=9), "jobs[0].location_index"),
    "matrix not square": (
        lambda d: d["matrices"]["car"]["durations"][1].append(3), "matrices.car.durations[1]"),
    "negative matrix entry": (
        lambda d: d["matrices"]["car"]["durations"][2].__setitem__(1, -4),
        "matrices.car.durations[2][1]"),
    "capacity with fewer dimensions": (
        lambda d: d["vehicles"][1].update(capacity=[4]), "vehicles[1].capacity"),
    "window ending before it starts": (
        lambda d: d["jobs"][1].update(time_windows=[[50, 20]]), "jobs[1].time_windows[0]"),
    "shipment amounts differ": (
        lambda d: d.update(shipments=[{"pickup": {"id": 1, "location_index": 1, "amount": [1, 0]},
                                       "delivery": {"id": 1, "location_index": 2,
                                                    "amount": [2, 0]}}]),
        "shipments[0].delivery.amount"),
    "unsupported field": (
        lambda d: d["jobs"][0].update(setup_per_type={"van": 5}), "jobs[0].setup_per_type"),
    "unknown top-level key": (lambda d: d.update(options={"g": True}), "options"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
def test_bad_input_is_a_422_naming_the_field(api: httpx.Client, case: str) -> None:
    change, field = BAD_INPUT[case]
    response = api.post(SOLVE, params={"time_limit": 1}, json=_bad(change))
    body = assert_problem(response, 422, field)
    assert field in body["detail"]
    assert api.get("/healthz").status_code == 200  # and the server keeps serving


def test_request_mistakes_are_named(api: httpx.Client) -> None:
    assert_problem(api.post(SOLVE, params={"solver": "nope"}, json=MATRIX_DOC), 404, "solver")
    assert_problem(api.post(SOLVE, params={"time_limt": 1}, json=MATRIX_DOC), 422, "time_limt")
    assert_problem(api.post(SOLVE, params={"time_limit": -1}, json=MATRIX_DOC), 422,
                   "time_limit")
    assert_problem(api.post(SOLVE, params={"geometry": "svg"}, json=MATRIX_DOC), 422,
                   "geometry")
    assert_problem(api.post(SOLVE, content=b"[1, 2]",
                            headers={"content-type": "application/json"}), 422, "body")
    assert_problem(api.post(SOLVE, content=b"{", headers={"content-type": "application/json"}),
                   422, "body")
    assert_problem(api.post(SOLVE, content=b"jobs", headers={"content-type": "text/plain"}),
                   415, "content-type")
    assert_problem(api.post("/v1/routing/vrp/solv", json=MATRIX_DOC), 404)


def test_compare_runs_each_solver_at_equal_time(api: httpx.Client) -> None:
    solvers = api.get("/v1/solvers", params={"problem": "vrp"}).json()["solvers"]
    others = [s["name"] for s in solvers if s["available"] and s["name"] != "vroom"]
    names = ["vroom", *others[:1]]
    response = api.post(COMPARE, params={"solvers": ",".join(names), "time_limit": 0.5},
                        json=MATRIX_DOC)
    assert response.status_code == 200, response.text
    body = response.json()
    assert [r["solver"] for r in body["rows"]] == names
    assert body["tasks"] == 4 and body["vehicles"] == 2
    for row in body["rows"]:
        if row["solution"] is not None:
            _check_answer(MATRIX_DOC, row["solution"])
            assert row["cost"] == row["solution"]["summary"]["cost"]
    best = next(r for r in body["rows"] if r["solver"] == body["best_solver"])
    assert best["feasible"] and best["unassigned"] == min(
        r["unassigned"] for r in body["rows"] if r["feasible"])
    assert_problem(api.post(COMPARE, params={"solvers": "vroom,vroom"}, json=MATRIX_DOC),
                   422, "solvers[1]")


def test_catalogue_says_which_solvers_take_documents(api: httpx.Client) -> None:
    listed = {s["name"]: s for s in api.get("/v1/solvers").json()["solvers"]}
    assert listed["vroom"]["problems"] == ["vrp"] and listed["vroom"]["vrp_features"]
    neural = [s for s in listed.values() if s["kind"] == "neural"]
    assert neural and all(s["vrp_features"] is None and "vrp" not in s["problems"]
                          for s in neural)
    only = api.get("/v1/solvers", params={"problem": "vrp"}).json()["solvers"]
    assert {s["name"] for s in only} == {n for n, s in listed.items()
                                         if s["vrp_features"] is not None}
    assert all("vrp" in s["problems"] for s in only)


def _wait(api: httpx.Client, job_id: str, limit: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        job = api.get(f"/v1/jobs/{job_id}").json()
        if job["state"] in ("succeeded", "failed", "cancelled"):
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not finish in {limit:g} s")


def test_a_job_with_a_vroom_document(api: httpx.Client) -> None:
    response = api.post("/v1/jobs", json={"problem": "vrp", "instance": MATRIX_DOC,
                                          "solver": "vroom", "time_limit": 1})
    assert response.status_code == 202, response.text
    job = _wait(api, response.json()["id"])
    assert job["state"] == "succeeded", job
    assert job["problem"] == "vrp" and job["nodes"] == 4 and job["feasible"] is True
    answer = api.get(f"/v1/jobs/{job['id']}/solution").json()
    _check_answer(MATRIX_DOC, answer)
    assert job["cost"] == answer["summary"]["cost"]
    points = api.get(f"/v1/jobs/{job['id']}/progress").json()["points"]
    assert points and points[-1][1] == job["cost"]  # the curve ends at the checked cost
    assert_problem(api.get(f"/v1/jobs/{job['id']}/solution", params={"format": "sol"}),
                   422, "format")
    # a bad document is refused at submission, named under instance
    bad = _bad(BAD_INPUT["unknown location_index"][0])
    assert_problem(api.post("/v1/jobs", json={"problem": "vrp", "instance": bad}), 422,
                   "instance.jobs[0].location_index")


def test_an_uploaded_vroom_file_is_a_vrp_job(api: httpx.Client) -> None:
    files = {"file": ("fleet.json", json.dumps(MATRIX_DOC).encode(), "application/json")}
    response = api.post("/v1/jobs", files=files, data={"solver": "vroom", "time_limit": "1"})
    assert response.status_code == 202, response.text
    job = _wait(api, response.json()["id"])
    assert job["state"] == "succeeded" and job["problem"] == "vrp", job
    _check_answer(MATRIX_DOC, api.get(f"/v1/jobs/{job['id']}/solution").json())


def test_a_batch_of_vroom_documents(api: httpx.Client) -> None:
    other = copy.deepcopy(MATRIX_DOC)
    other["jobs"] = other["jobs"][:2]
    files = [("files", ("a.json", json.dumps(MATRIX_DOC).encode(), "application/json")),
             ("files", ("b.json", json.dumps(other).encode(), "application/json"))]
    response = api.post("/v1/batches", files=files, data={"solver": "vroom", "time_limit": "1"})
    assert response.status_code == 202, response.text
    batch_id = response.json()["id"]
    deadline = time.monotonic() + 60
    while not (status := api.get(f"/v1/batches/{batch_id}").json())["done"]:
        assert time.monotonic() < deadline, status
        time.sleep(0.2)
    assert [(r["filename"], r["state"]) for r in status["results"]] == [
        ("a.json", "succeeded"), ("b.json", "succeeded")]
    for row, doc in zip(status["results"], (MATRIX_DOC, other), strict=True):
        _check_answer(doc, api.get(f"/v1/jobs/{row['job_id']}/solution").json())
    archive = api.get(f"/v1/batches/{batch_id}/results.zip")
    assert archive.status_code == 200
    names = zipfile.ZipFile(io.BytesIO(archive.content)).namelist()
    assert {"solutions/a.json", "solutions/b.json"} <= set(names)


def test_the_docs_table_says_what_each_registered_solver_takes(api: httpx.Client) -> None:
    """docs/vrp.md's table of parts per solver against the catalogue, for every solver the
    table names that is registered."""
    lines = (EXAMPLE.parents[1] / "docs" / "vrp.md").read_text().splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("| Part of the model |"))
    names = [c.strip().strip("`") for c in lines[head].strip("|").split("|")[1:]]
    table: dict[str, set[str]] = {name: set() for name in names}
    for line in lines[head + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        for name, cell in zip(names, cells[1:], strict=True):
            if cell == "yes":
                table[name].add(cells[0].strip("`"))
    listed = {s["name"]: s for s in api.get("/v1/solvers", params={"problem": "vrp"}).json()[
        "solvers"]}
    checked = [name for name in names if name in listed]
    assert "vroom" in checked
    for name in checked:
        assert table[name] == set(listed[name]["vrp_features"]), name


def test_a_solver_lacking_a_part_is_refused_naming_it(api: httpx.Client) -> None:
    """The example uses breaks: a solver that does not take them is a 422 on solver (never a
    plan with the breaks dropped); in a comparison with vroom, a row saying so."""
    listed = api.get("/v1/solvers", params={"problem": "vrp"}).json()["solvers"]
    lacking = [s["name"] for s in listed if "breaks" not in s["vrp_features"]]
    if not lacking:
        pytest.skip("every registered VRP solver takes breaks")
    body = assert_problem(api.post(SOLVE, params={"solver": lacking[0], "time_limit": 1},
                                   json=_example()), 422, "solver")
    assert "breaks" in body["detail"]
    response = api.post(COMPARE, params={"solvers": f"vroom,{lacking[0]}", "time_limit": 0.5},
                        json=_example())
    assert response.status_code == 200, response.text
    rows = {r["solver"]: r for r in response.json()["rows"]}
    assert rows["vroom"]["feasible"] and "breaks" in rows[lacking[0]]["error"]
    assert_problem(api.post(COMPARE, params={"solvers": lacking[0]}, json=_example()), 422,
                   "solvers")


def test_a_running_plan_is_reoptimised_with_pinned_steps(api: httpx.Client) -> None:
    doc = copy.deepcopy(MATRIX_DOC)
    for job in doc["jobs"]:
        job.pop("time_windows", None)
    doc["vehicles"][0]["steps"] = [{"type": "job", "id": 13, "pinned": True},
                                   {"type": "job", "id": 11}]
    response = api.post(SOLVE, params={"solver": "warmstart", "time_limit": 1}, json=doc)
    assert response.status_code == 200, response.text
    answer = response.json()
    _check_answer(doc, answer)
    first = next(r for r in answer["routes"] if r["vehicle"] == 1)
    tasks = [s["id"] for s in first["steps"] if s["type"] == "job"]
    assert 13 in tasks  # pinned: still on its vehicle (new jobs may be inserted around it)
    assert isinstance(answer["cosolve"]["moved"], list)
    body = assert_problem(api.post(SOLVE, params={"solver": "vroom"}, json=doc), 422, "solver")
    assert "vehicles[0].steps[0].pinned" in body["detail"]


def test_a_document_above_the_request_cap_goes_as_a_job(strict_api: httpx.Client) -> None:
    """COSOLVE_MAX_SYNC_NODES counts tasks: above it a 413 that names the job endpoint."""
    cap = int(STRICT_LIMITS["COSOLVE_MAX_SYNC_NODES"])
    doc = {"vehicles": [{"id": 1, "start": [0.0, 0.0]}],
           "jobs": [{"id": k, "location": [0.001 * k, 0.0]} for k in range(cap + 1)]}
    body = assert_problem(strict_api.post(SOLVE, json=doc), 413, "body")
    assert body["nodes"] == cap + 1 and body["limit"] == cap and "/v1/jobs" in body["detail"]
