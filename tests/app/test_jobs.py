"""Jobs end to end on real uvicorn servers: submit, follow the event stream, fetch the
solution, cancel, survive a kill -9, run on Ray, batches, and every bad upload."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import random
import signal
import socket
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from solvers.routing.io.formats import parse_instance_bytes
from solvers.routing.solution import build_solution
from tests.app.conftest import _free_port, _running, uvicorn_server
from tests.app.helpers import assert_problem
from tests.conftest import DATA, OPTIMA


def _wait(api: httpx.Client, job_id: str, until: tuple[str, ...], timeout: float = 60.0,
          check: Any = None) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = api.get(f"/v1/jobs/{job_id}").json()
        if job["state"] in until and (check is None or check(job)):
            return job
        time.sleep(0.2)
    pytest.fail(f"job {job_id} did not reach {until} within {timeout} s: {job}")


def _submit_file(api: httpx.Client, path: Path, **fields: Any) -> httpx.Response:
    return api.post("/v1/jobs", files={"file": (path.name, path.read_bytes())},
                    data={k: str(v) for k, v in fields.items()})


def _events(api: httpx.Client, job_id: str) -> list[tuple[str, dict[str, Any]]]:
    """Read the whole SSE stream of a job: (event, data) pairs."""
    events: list[tuple[str, dict[str, Any]]] = []
    with api.stream("GET", f"/v1/jobs/{job_id}/events") as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        kind = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                kind = line[len("event: "):]
            elif line.startswith("data: ") and kind:
                events.append((kind, json.loads(line[len("data: "):])))
                if kind == "end":
                    break
    return events


def test_json_job_streams_progress_and_serves_the_solution(api: httpx.Client) -> None:
    rng = random.Random(7)
    coords = [[rng.random(), rng.random()] for _ in range(200)]
    response = api.post("/v1/jobs", json={"problem": "tsp", "instance": {"coords": coords},
                                          "solver": "ortools", "time_limit": 1.5})
    assert response.status_code == 202, response.text
    job = response.json()
    assert response.headers["location"] == f"/v1/jobs/{job['id']}"
    assert job["state"] in ("queued", "running") and job["nodes"] == 200
    assert job["links"]["events"].endswith("/events") and job["max_vehicles"] is None
    assert job["max_solutions"] is None

    events = _events(api, job["id"])
    kinds = [k for k, _ in events]
    assert kinds[-1] == "end" and "progress" in kinds
    running = [d for k, d in events if d["state"] == "running"]
    assert any(d["progress"]["best_cost"] for d in running)
    final = events[-1][1]
    assert final["state"] == "succeeded" and final["feasible"]

    solution = api.get(f"/v1/jobs/{job['id']}/solution").json()
    inst = parse_instance_bytes(json.dumps({"problem": "tsp", "coords": coords}).encode(),
                                "x.json")
    checked = build_solution(inst, solution["routes"], solver="check", wall_time=0)
    assert checked.feasible and checked.cost == pytest.approx(final["cost"])
    # the documented shape (before: it had an empty schema), every field of it
    from app.schemas.jobs import JobSolution

    assert set(solution) <= set(JobSolution.model_fields)
    assert JobSolution.model_validate(solution).tour == solution["routes"][0]
    tour = api.get(f"/v1/jobs/{job['id']}/solution", params={"format": "tour"})
    assert tour.status_code == 200 and "TOUR_SECTION" in tour.text
    assert_problem(api.get(f"/v1/jobs/{job['id']}/solution", params={"format": "pdf"}), 422)
    # CVRPLIB's .sol would list node 0 as if it were a depot
    assert_problem(api.get(f"/v1/jobs/{job['id']}/solution", params={"format": "sol"}), 422,
                   field="format")


def test_cvrp_file_job_and_sol_format(api: httpx.Client) -> None:
    response = _submit_file(api, DATA / "X-n101-k25.vrp", solver="pyvrp", time_limit=2)
    assert response.status_code == 202, response.text
    job = _wait(api, response.json()["id"], ("succeeded",))
    assert job["problem"] == "cvrp" and job["feasible"]
    assert job["cost"] <= OPTIMA["X-n101-k25"] * 1.03
    sol = api.get(f"/v1/jobs/{job['id']}/solution", params={"format": "sol"})
    assert sol.text.startswith("Route #1:") and f"Cost: {int(job['cost'])}" in sol.text
    assert_problem(api.get(f"/v1/jobs/{job['id']}/solution", params={"format": "tour"}), 422,
                   field="format")


def test_100k_node_tsp_file_upload(api: httpx.Client, tmp_path: Path) -> None:
    rng = random.Random(0)
    n = 100_000
    lines = [f"NAME : u100k\nTYPE : TSP\nDIMENSION : {n}\nEDGE_WEIGHT_TYPE : EUC_2D\n"
             "NODE_COORD_SECTION"]
    lines += [f"{i + 1} {rng.randint(0, 10**6)} {rng.randint(0, 10**6)}" for i in range(n)]
    path = tmp_path / "u100k.tsp.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\nEOF\n").encode()))
    t0 = time.monotonic()
    response = _submit_file(api, path, solver="nearest_neighbor", time_limit=5)
    assert response.status_code == 202, response.text
    assert time.monotonic() - t0 < 10
    job = _wait(api, response.json()["id"], ("succeeded",), timeout=90)
    assert job["nodes"] == n and job["feasible"]
    solution = api.get(f"/v1/jobs/{job['id']}/solution").json()
    assert sorted(solution["routes"][0]) == list(range(n))


def test_a_json_job_echoes_its_instances_fleet_cap(api: httpx.Client) -> None:
    instance = {"coords": [[0, 0], [1, 0], [0, 1], [1, 1]], "demands": [0, 1, 1, 1],
                "capacity": 2, "max_vehicles": 2}
    response = api.post("/v1/jobs", json={"problem": "cvrp", "instance": instance,
                                          "solver": "nearest_neighbor", "time_limit": 1})
    assert response.status_code == 202, response.text
    job = _wait(api, response.json()["id"], ("succeeded",), timeout=60)
    assert job["max_vehicles"] == 2 and job["feasible"]


def test_a_file_job_takes_a_fleet_cap(api: httpx.Client) -> None:
    """max_vehicles with an uploaded file: the job keeps the capped instance (as JSON, named
    after the file) and its plan uses at most 26 routes (ils: 27 unconstrained at 2 s); a
    cap on a TSP file or below the demand bound is a 422 naming the field."""
    path = DATA / "X-n101-k25.vrp"
    response = _submit_file(api, path, solver="ils", time_limit=2, max_vehicles=26)
    assert response.status_code == 202, response.text
    assert response.json()["max_vehicles"] == 26  # echoed (before: only the name told)
    job = _wait(api, response.json()["id"], ("succeeded",), timeout=60)
    assert job["filename"] == "X-n101-k25.vrp.json" and job["feasible"]
    assert job["max_vehicles"] == 26
    solution = api.get(f"/v1/jobs/{job['id']}/solution").json()
    assert len([r for r in solution["routes"] if r]) <= 26
    assert sorted(v for r in solution["routes"] for v in r) == list(range(1, 101))
    for name, fleet, words in (("berlin52.tsp", 2, "CVRP and CVRPTW"),
                               ("X-n101-k25.vrp", 20, "at least 25")):
        response = _submit_file(api, DATA / name, solver="ils", time_limit=1,
                                max_vehicles=fleet)
        assert response.status_code == 422, response.text
        body = response.json()
        assert body["field"] == "max_vehicles" and words in body["detail"], body


def test_a_polynet_job_with_a_budget_in_solutions_repeats_itself(api: httpx.Client) -> None:
    """max_solutions reaches a job's solver (jobs refused it as an unknown field, so a
    reproducible polynet run could not be a job): the same 20-node TSP with the same seed and
    budget (the greedy pass and a sampling round), once as a JSON job and once as an uploaded
    file, decodes the same solutions long before its time limit; the status and the
    solution's stats echo the budget."""
    rng = random.Random(20)
    coords = [[rng.uniform(0, 100), rng.uniform(0, 100)] for _ in range(20)]
    options = {"solver": "polynet", "time_limit": 30, "seed": 3, "max_solutions": 1536}
    response = api.post("/v1/jobs", json={"problem": "tsp", "instance": {"coords": coords},
                                          **options})
    assert response.status_code == 202, response.text
    assert response.json()["max_solutions"] == 1536
    upload = api.post("/v1/jobs", files={"file": ("r20.json", json.dumps(
        {"problem": "tsp", "coords": coords}).encode())},
        data={k: str(v) for k, v in options.items()})
    assert upload.status_code == 202, upload.text
    jobs = [_wait(api, r.json()["id"], ("succeeded",), timeout=60) for r in (response, upload)]
    solutions = [api.get(f"/v1/jobs/{job['id']}/solution").json() for job in jobs]
    for job, solution in zip(jobs, solutions, strict=True):
        assert job["max_solutions"] == 1536 and job["feasible"]
        assert solution["stats"]["max_solutions"] == 1536
        assert solution["stats"]["solutions"] == 1536
        assert solution["wall_time"] < 15  # the budget, not the 30 s time limit, ended it
    assert jobs[0]["cost"] == jobs[1]["cost"]
    assert solutions[0]["routes"] == solutions[1]["routes"]
    assert solutions[0]["stats"]["winner"] == solutions[1]["stats"]["winner"]


def test_a_budget_in_solutions_is_refused_as_a_solve_refuses_it(api: httpx.Client) -> None:
    """As POST /v1/routing/*/solve: a solver without a budget in solutions (ortools), or a
    budget out of bounds, is a 422 naming max_solutions, for a JSON job, an upload and a
    batch alike (they answered "Extra inputs are not permitted" before)."""
    coords = [[0, 0], [3, 0], [3, 4], [0, 4]]
    square = ("square.json", json.dumps({"problem": "tsp", "coords": coords}).encode())
    refused = [
        api.post("/v1/jobs", json={"problem": "tsp", "instance": {"coords": coords},
                                   "solver": "ortools", "max_solutions": 10}),
        api.post("/v1/jobs", files={"file": square},
                 data={"solver": "ortools", "max_solutions": "10"}),
        api.post("/v1/batches", files=[("files", square)],
                 data={"solver": "ortools", "max_solutions": "10"}),
    ]
    for response in refused:
        body = assert_problem(response, 422, field="max_solutions")
        assert "takes a time limit only" in body["detail"] and "polynet" in body["detail"]
    for budget, words in ((0, "greater than or equal to 1"),
                          (10_000_001, "less than or equal to 10000000")):
        out_of_bounds = [
            api.post("/v1/jobs", json={"problem": "tsp", "instance": {"coords": coords},
                                       "solver": "polynet", "max_solutions": budget}),
            api.post("/v1/jobs", files={"file": square},
                     data={"solver": "polynet", "max_solutions": str(budget)}),
            api.post("/v1/batches", files=[("files", square)],
                     data={"solver": "polynet", "max_solutions": str(budget)}),
        ]
        for response in out_of_bounds:
            body = assert_problem(response, 422, field="max_solutions")
            assert words in body["detail"], body



def test_an_upload_names_its_solver_faults_before_parsing_the_file(api: httpx.Client) -> None:
    """An upload's budget in solutions was checked after its file was parsed, so a broken
    file hid it (a JSON job names the budget first); a solver that takes no budget, or one
    that does not solve the problem the form gives, is now named before the file is read."""
    broken = ("broken.tsp", b"NAME: broken\nTYPE: TSP\nDIMENSION: 3\nNODE_COORD_SECTION\n1 0\n")
    response = api.post("/v1/jobs", files={"file": broken},
                        data={"solver": "ortools", "max_solutions": "10"})
    assert "takes a time limit only" in assert_problem(response, 422,
                                                       field="max_solutions")["detail"]
    response = api.post("/v1/jobs", files={"file": broken},
                        data={"solver": "ils", "problem": "cvrptw"})
    assert "does not solve cvrptw" in assert_problem(response, 422, field="solver")["detail"]
    # without those faults, the file's own fault is named
    assert_problem(api.post("/v1/jobs", files={"file": broken}, data={"solver": "ortools"}),
                   422, field="file")

@pytest.mark.heavy
def test_100k_node_tsp_job_with_sil(api: httpx.Client, tmp_path: Path) -> None:
    """The headline path: a 100K-node file, SIL's reconstruction as a job, a checked tour no
    longer than its random-insertion start, within the time limit."""
    rng = random.Random(1)
    n = 100_000
    lines = [f"NAME : s100k\nTYPE : TSP\nDIMENSION : {n}\nEDGE_WEIGHT_TYPE : EUC_2D\n"
             "NODE_COORD_SECTION"]
    lines += [f"{i + 1} {rng.randint(0, 10**6)} {rng.randint(0, 10**6)}" for i in range(n)]
    path = tmp_path / "s100k.tsp"
    path.write_text("\n".join(lines) + "\nEOF\n")
    response = _submit_file(api, path, solver="sil", time_limit=8)
    assert response.status_code == 202, response.text
    job = _wait(api, response.json()["id"], ("succeeded",), timeout=120)
    assert job["nodes"] == n and job["feasible"] and job["solver"] == "sil"
    solution = api.get(f"/v1/jobs/{job['id']}/solution").json()
    assert sorted(solution["routes"][0]) == list(range(n))
    assert solution["cost"] <= solution["stats"]["start_length"] * (1 + 1e-6) + n
    assert solution["wall_time"] <= 8 * 1.15


def test_cancel_keeps_the_best_solution_so_far(api: httpx.Client) -> None:
    response = _submit_file(api, DATA / "X-n101-k25.vrp", solver="pyvrp", time_limit=120)
    job_id = response.json()["id"]
    _wait(api, job_id, ("running",), check=lambda j: j["progress"]["best_cost"] is not None)
    t0 = time.monotonic()
    cancelled = api.delete(f"/v1/jobs/{job_id}")
    assert cancelled.status_code == 202 and cancelled.json()["cancel_requested"]
    job = _wait(api, job_id, ("cancelled",), timeout=20)
    assert time.monotonic() - t0 < 10
    assert job["partial"] and job["feasible"] and job["cost"] is not None
    solution = api.get(f"/v1/jobs/{job_id}/solution").json()
    assert solution["partial"] is True and solution["feasible"]
    # Cancelling a finished job changes nothing.
    assert api.delete(f"/v1/jobs/{job_id}").json()["state"] == "cancelled"


def test_job_list_is_paged(api: httpx.Client) -> None:
    ids = [_submit_file(api, DATA / "eil51.tsp", solver="nearest_neighbor",
                        time_limit=1).json()["id"] for _ in range(3)]
    for job_id in ids:
        _wait(api, job_id, ("succeeded",))
    page = api.get("/v1/jobs", params={"limit": 2}).json()
    assert len(page["jobs"]) == 2 and page["total"] >= 3 and page["limit"] == 2
    later = api.get("/v1/jobs", params={"limit": 2, "offset": 2}).json()
    assert not {j["id"] for j in page["jobs"]} & {j["id"] for j in later["jobs"]}
    done = api.get("/v1/jobs", params={"state": "succeeded", "limit": 500}).json()
    assert set(ids) <= {j["id"] for j in done["jobs"]}
    assert_problem(api.get("/v1/jobs", params={"limit": 0}), 422)


def test_bad_job_submissions(api: httpx.Client, tmp_path: Path) -> None:
    truncated = gzip.compress((DATA / "eil51.tsp").read_bytes())[:60]
    assert_problem(api.post("/v1/jobs", files={"file": ("eil51.tsp.gz", truncated)}), 422,
                   field="file")
    assert_problem(api.post("/v1/jobs", files={"file": ("eil51.txt", b"hello")}), 422,
                   field="file")
    geo = b"NAME: a\nTYPE: TSP\nEDGE_WEIGHT_TYPE: XRAY1\n"
    assert_problem(api.post("/v1/jobs", files={"file": ("a.tsp", geo)}), 422,
                   field="file.EDGE_WEIGHT_TYPE")
    assert_problem(_submit_file(api, DATA / "eil51.tsp", solver="nope"), 404, field="solver")
    assert_problem(_submit_file(api, DATA / "eil51.tsp", time_limit=10**6), 422,
                   field="time_limit")
    assert_problem(_submit_file(api, DATA / "eil51.tsp", problem="cvrp"), 422, field="problem")
    assert_problem(api.post("/v1/jobs", json={"problem": "knapsack", "instance": {}}), 422,
                   field="problem")
    assert_problem(api.post("/v1/jobs", json={"problem": "tsp", "instance": {
        "coords": [[0, 0], [1, "x"], [2, 2]]}}), 422)
    assert_problem(api.post("/v1/jobs", content=b"x", headers={"content-type": "text/plain"}),
                   415)
    # a solver that reads coordinates, on a matrix: refused at once (was queued, then failed)
    matrix = [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    assert_problem(api.post("/v1/jobs", json={"problem": "tsp", "solver": "ils", "instance": {
        "distance_matrix": matrix}}), 422, field="instance.coords")
    assert_problem(api.post("/v1/jobs", data={"solver": "reld"}, files={"file": (
        "m.json", json.dumps({"problem": "tsp", "distance_matrix": matrix}))}), 422,
        field="file.coords")
    assert_problem(api.get("/v1/jobs/doesnotexist"), 404, field="job_id")
    assert_problem(api.get("/v1/jobs/doesnotexist/solution"), 404, field="job_id")
    assert_problem(api.delete("/v1/jobs/doesnotexist"), 404, field="job_id")


def test_solution_of_a_running_job_is_a_409(api: httpx.Client) -> None:
    job_id = _submit_file(api, DATA / "X-n101-k25.vrp", solver="ortools",
                          time_limit=3).json()["id"]
    body = assert_problem(api.get(f"/v1/jobs/{job_id}/solution"), 409, field="job_id")
    assert body["state"] in ("queued", "running")
    _wait(api, job_id, ("succeeded",))


def test_oversized_upload_and_full_queue(strict_api: httpx.Client) -> None:
    big = b"x" * 70_000  # the strict server takes 64 KiB bodies
    assert_problem(strict_api.post("/v1/jobs", files={"file": ("big.tsp", big)}), 413)
    first = _submit_file(strict_api, DATA / "X-n101-k25.vrp", solver="ortools", time_limit=3)
    assert first.status_code == 202, first.text
    second = _submit_file(strict_api, DATA / "eil51.tsp", solver="nearest_neighbor")
    body = assert_problem(second, 429)
    assert second.headers["retry-after"] and body["limit"] == 1
    # a batch larger than the whole queue would never fit: a 413 on files, not a 429 to
    # retry forever
    files = [("files", (name, (DATA / name).read_bytes())) for name in ("eil51.tsp",
                                                                         "berlin52.tsp")]
    body = assert_problem(strict_api.post("/v1/batches", files=files,
                                          data={"solver": "nearest_neighbor"}), 413,
                          field="files")
    assert body["limit"] == 1 and body["files"] == 2 and "split it" in body["detail"]
    _wait(strict_api, first.json()["id"], ("succeeded",))


def _wait_batch(api: httpx.Client, batch: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
    """The batch's status once every job is final (or the timeout passed)."""
    deadline = time.monotonic() + timeout
    while not batch["done"] and time.monotonic() < deadline:
        time.sleep(0.3)
        batch = api.get(f"/v1/batches/{batch['id']}").json()
    return batch


def test_batch_of_files_and_an_archive(api: httpx.Client) -> None:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("inner/berlin52.tsp", (DATA / "berlin52.tsp").read_bytes())
        zf.writestr("broken.tsp", b"NAME: b\nTYPE: TSP\nEDGE_WEIGHT_TYPE: XRAY1\n")
        # same base name as a file beside the archive: its result could not be told apart
        zf.writestr("again/eil51.tsp", (DATA / "eil51.tsp").read_bytes())
        # an unreadable file does not claim its name: the good one of that name runs (QA)
        zf.writestr("old/square.tsp", b"broken")
        zf.writestr("new/square.tsp", b"NAME: s\nTYPE: TSP\nDIMENSION: 4\nEDGE_WEIGHT_TYPE: "
                    b"EUC_2D\nNODE_COORD_SECTION\n1 0 0\n2 1 0\n3 1 1\n4 0 1\nEOF\n")
    files = [("files", ("eil51.tsp", (DATA / "eil51.tsp").read_bytes())),
             ("files", ("X-n101-k25.vrp", (DATA / "X-n101-k25.vrp").read_bytes())),
             ("files", ("more.zip", archive.getvalue()))]
    response = api.post("/v1/batches", files=files,
                        data={"solver": "nearest_neighbor", "time_limit": "1"})
    assert response.status_code == 202, response.text
    batch = response.json()
    assert response.headers["location"] == f"/v1/batches/{batch['id']}"  # as a job's 202
    # every file counts, the refused ones too, as `cosolve batch` counts them
    assert batch["summary"]["files"] == 7 and batch["summary"]["rejected"] == 3
    assert batch["max_vehicles"] is None and batch["max_solutions"] is None
    assert [r["filename"] for r in batch["rejected"]] == ["broken.tsp", "again/eil51.tsp",
                                                           "old/square.tsp"]
    assert "EDGE_WEIGHT_TYPE" in batch["rejected"][0]["error"]
    assert "same name" not in batch["rejected"][0]["error"]
    assert "(eil51.tsp) gives its results the same name, eil51.*" in batch["rejected"][1]["error"]
    batch = _wait_batch(api, batch)
    assert batch["done"] and batch["summary"]["succeeded"] == 4
    costs = {r["filename"]: r["cost"] for r in batch["results"]}
    assert costs["square.tsp"] == pytest.approx(4.0)
    assert costs["eil51.tsp"] >= OPTIMA["eil51"] and costs["berlin52.tsp"] >= OPTIMA["berlin52"]
    # TSP lengths and a CVRP's cost are summed per kind, never together
    assert batch["summary"]["total_cost"] is None
    by_kind = batch["summary"]["by_problem"]
    assert by_kind["cvrp"]["total_cost"] == costs["X-n101-k25.vrp"]
    assert by_kind["tsp"]["total_cost"] == pytest.approx(
        sum(c for name, c in costs.items() if name.endswith(".tsp")))
    assert by_kind["tsp"]["solved"] == 3 and by_kind["cvrp"]["solved"] == 1
    table = api.get(f"/v1/batches/{batch['id']}", params={"format": "md"})
    assert table.headers["content-type"].startswith("text/markdown")
    assert "| eil51.tsp | 51 | succeeded |" in table.text and "| broken.tsp |" in table.text
    assert_problem(api.get("/v1/batches/nope"), 404, field="batch_id")
    assert_problem(api.post("/v1/batches", files=[("files", ("x.zip", b"not a zip"))]), 422,
                   field="files")
    hidden = io.BytesIO()
    with zipfile.ZipFile(hidden, "w") as zf:  # a macOS zip's resource fork, a dot file
        zf.writestr("__MACOSX/._a.tsp", b"\x00\x05\x16\x07")
        zf.writestr("__MACOSX/b.tsp", b"\x00")
        zf.writestr(".hidden.tsp", (DATA / "eil51.tsp").read_bytes())
    body = assert_problem(api.post("/v1/batches", files=[("files", ("x.zip", hidden.getvalue()))]),
                          422, field="files")
    assert "no files to solve" in body["detail"]  # was "no file of the batch could be read: "


def test_a_batch_caps_the_fleet_of_every_cvrp_file(api: httpx.Client) -> None:
    """max_vehicles reaches each CVRP file of a batch (ils: 27 routes on X-n101-k25 at 2 s
    unconstrained, here at most 26); a TSP file in the same batch is rejected, naming it."""
    files = [("files", ("X-n101-k25.vrp", (DATA / "X-n101-k25.vrp").read_bytes())),
             ("files", ("berlin52.tsp", (DATA / "berlin52.tsp").read_bytes()))]
    response = api.post("/v1/batches", files=files,
                        data={"solver": "ils", "time_limit": "2", "max_vehicles": "26"})
    assert response.status_code == 202, response.text
    batch = response.json()
    assert [r["filename"] for r in batch["rejected"]] == ["berlin52.tsp"]
    assert "max_vehicles" in batch["rejected"][0]["error"]
    assert batch["max_vehicles"] == 26  # the batch says what its files were given
    batch = _wait_batch(api, batch)
    assert batch["done"] and batch["summary"]["succeeded"] == 1
    table = api.get(f"/v1/batches/{batch['id']}", params={"format": "md"}).text
    assert "at most 26 vehicles" in table
    # (batch_id was not a filter of /v1/jobs and was ignored: this read the newest job of all)
    jobs = api.get("/v1/jobs", params={"batch_id": batch["id"]}).json()
    assert jobs["total"] == 1 and jobs["jobs"][0]["batch_id"] == batch["id"]
    job_id = jobs["jobs"][0]["id"]
    solution = api.get(f"/v1/jobs/{job_id}/solution").json()
    assert len([r for r in solution["routes"] if r]) <= 26


def test_a_batch_gives_every_file_its_budget_in_solutions(api: httpx.Client) -> None:
    """max_solutions reaches each file of a batch (polynet stops after 64 solutions, long
    before its 30 s time limit), and the batch, its jobs and its markdown table echo it."""
    files = [("files", (name, (DATA / name).read_bytes()))
             for name in ("eil51.tsp", "X-n101-k25.vrp")]
    response = api.post("/v1/batches", files=files, data={
        "solver": "polynet", "time_limit": "30", "seed": "1", "max_solutions": "64"})
    assert response.status_code == 202, response.text
    batch = response.json()
    assert batch["max_solutions"] == 64 and batch["summary"]["rejected"] == 0
    batch = _wait_batch(api, batch)
    assert batch["done"] and batch["summary"]["succeeded"] == 2
    assert batch["max_solutions"] == 64
    assert all(r["wall_time"] < 15 for r in batch["results"])
    table = api.get(f"/v1/batches/{batch['id']}", params={"format": "md"}).text
    assert "at most 64 solutions" in table
    jobs = api.get("/v1/jobs", params={"batch_id": batch["id"]}).json()["jobs"]
    assert len(jobs) == 2 and all(job["max_solutions"] == 64 for job in jobs)
    for job in jobs:
        stats = api.get(f"/v1/jobs/{job['id']}/solution").json()["stats"]
        assert stats["solutions"] == 64 and stats["max_solutions"] == 64


def test_a_batch_row_with_dropped_customers_says_so_and_stays_out_of_the_total(
        api: httpx.Client) -> None:
    """OR-Tools under a fleet of 12 on R101 (20 in the file) drops customers: its plan is
    infeasible. The batch listed it as a plain success with its cost in total_cost, where
    `cosolve batch` says 'infeasible: ...' and leaves it out."""
    solomon = DATA / "solomon"
    files = [("files", (name, (solomon / name).read_bytes()))
             for name in ("R101.100.20.vrptw", "C201.100.3.vrptw")]
    response = api.post("/v1/batches", files=files,
                        data={"solver": "ortools", "time_limit": "1", "max_vehicles": "12"})
    assert response.status_code == 202, response.text
    batch = _wait_batch(api, response.json())
    rows = {r["filename"]: r for r in batch["results"]}
    r101, c201 = rows["R101.100.20.vrptw.json"], rows["C201.100.3.vrptw.json"]
    assert r101["state"] == "succeeded" and r101["feasible"] is False
    assert r101["error"].startswith("infeasible: ") and "never visited" in r101["error"]
    assert c201["feasible"] is True and c201["error"] is None
    assert batch["summary"]["total_cost"] == c201["cost"]
    # a solved count beside succeeded (before: "2 succeeded" for one usable plan), and
    # the solver's own time (it counted parsing and warm-up: 1.89 s for a 0.5 s solve)
    assert batch["summary"]["solved"] == 1 and batch["summary"]["succeeded"] == 2
    assert all(0 < r["wall_time"] <= 1.2 for r in batch["results"]), batch["results"]
    table = api.get(f"/v1/batches/{batch['id']}", params={"format": "md"}).text
    assert "infeasible: " in table and "1 solved (feasible), 2 succeeded" in table


def test_batch_options_wrong_for_every_file_name_their_field(api: httpx.Client) -> None:
    """An unknown solver or a time limit above the jobs' maximum was reported as 'no file of
    the batch could be read' on ``files``."""
    files = [("files", ("eil51.tsp", (DATA / "eil51.tsp").read_bytes()))]
    body = assert_problem(api.post("/v1/batches", files=files, data={"solver": "lkh9"}), 404,
                          field="solver")
    # the routing solvers (before: the min-cost-flow solvers were listed too)
    assert "ortools" in body["detail"] and "ortools_mcf" not in body["detail"]
    body = assert_problem(api.post("/v1/batches", files=files, data={"solver": "ortools_mcf"}),
                          422, field="solver")
    assert "does not solve routing" in body["detail"]
    assert_problem(api.post("/v1/batches", files=files,
                            data={"solver": "ortools", "time_limit": "99999"}), 422,
                   field="time_limit")


def test_sol_of_a_cvrp_whose_depot_is_not_first(api: httpx.Client) -> None:
    """CVRPLIB's .sol keeps 0 for the depot: with the depot at index 2, customers 0 and 1 are
    written as 1 and 2 (they were written as 0 and 1, and 0 reads as the depot)."""
    instance = {"coords": [[0, 0], [0, 1], [1, 1], [1, 0], [2, 2]], "demands": [1, 1, 0, 3, 1],
                "capacity": 5, "depot": 2}
    response = api.post("/v1/jobs", json={"problem": "cvrp", "instance": instance,
                                          "solver": "nearest_neighbor", "time_limit": 1})
    assert response.status_code == 202, response.text
    job = _wait(api, response.json()["id"], ("succeeded",))
    routes = api.get(f"/v1/jobs/{job['id']}/solution").json()["routes"]
    sol = api.get(f"/v1/jobs/{job['id']}/solution", params={"format": "sol"}).text
    written = [[int(v) for v in line.split(":")[1].split()] for line in sol.splitlines()
               if line.startswith("Route")]
    assert written == [[v + 1 if v < 2 else v for v in r] for r in routes if r]
    assert all(0 not in r for r in written)


@pytest.fixture()
def persistent_dir() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="cosolve-restart-") as d:
        yield d


@pytest.mark.heavy
def test_job_survives_kill_9_of_the_server(persistent_dir: str) -> None:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("COSOLVE_")}
    env["COSOLVE_DATA_DIR"] = persistent_dir
    with _running(env, port, kill=True) as url, httpx.Client(base_url=url, timeout=30) as api:
        job_id = _submit_file(api, DATA / "X-n101-k25.vrp", solver="ortools",
                              time_limit=6).json()["id"]
        _wait(api, job_id, ("running",))
        workers = _server_children(port)
        assert workers, "the job should run in a worker process"
    # The server was killed with SIGKILL mid-job: its orphaned worker exits by itself...
    _gone, alive = psutil.wait_procs(workers, timeout=10)
    assert not alive, f"orphaned workers still running: {alive}"
    # ...and a new server on the same store runs the job again to the end.
    with _running(env, port) as url, httpx.Client(base_url=url, timeout=30) as api:
        job = _wait(api, job_id, ("succeeded",), timeout=60)
        assert job["feasible"] and job["cost"] <= OPTIMA["X-n101-k25"] * 1.10
        assert job["attempt"] == 1
        workers = _server_children(port)
    # A normal stop (SIGTERM) ends the workers too.
    _gone, alive = psutil.wait_procs(workers, timeout=10)
    assert not alive


def _server_children(port: int) -> list[psutil.Process]:
    """The worker processes of the uvicorn server listening on ``port``."""
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if "uvicorn" in " ".join(cmdline) and str(port) in cmdline:
            return proc.children(recursive=True)
    return []


def test_connecting_to_ray_keeps_the_servers_signal_handlers() -> None:
    """ray.init installs its own SIGTERM handler (SystemExit raised wherever the event loop
    is); under uvicorn that was at times swallowed by a transport and the server ignored
    SIGTERM until killed (test-suite sweep). The server's handlers must survive it."""
    ray = pytest.importorskip("ray")
    from jobs.executors import _connect_ray

    def ours(signum: int, frame: object) -> None:
        """Stands for uvicorn's handler."""

    before = signal.signal(signal.SIGTERM, ours)
    try:
        _connect_ray(ray, None)
        assert signal.getsignal(signal.SIGTERM) is ours
    finally:
        ray.shutdown()
        signal.signal(signal.SIGTERM, before)


@pytest.mark.heavy
def test_ray_executor_runs_the_same_job() -> None:
    # a TSP: on X-n101-k25, whose fleet is tight, OR-Tools with both cores busy found no
    # first solution in 2 s and the test needed 5 s
    pytest.importorskip("ray")
    with uvicorn_server({"COSOLVE_EXECUTOR": "ray"}) as url, \
            httpx.Client(base_url=url, timeout=30) as api:
        job_id = _submit_file(api, DATA / "berlin52.tsp", solver="ortools",
                              time_limit=3).json()["id"]
        live = []  # the plans /incumbent served while the job ran on Ray
        deadline = time.monotonic() + 90
        while api.get(f"/v1/jobs/{job_id}").json()["state"] in ("queued", "running"):
            assert time.monotonic() < deadline
            answer = api.get(f"/v1/jobs/{job_id}/incumbent")
            if answer.status_code == 200:
                live.append(answer.json())
            time.sleep(0.1)
        assert live and all(p["partial"] and p["feasible"] for p in live)
        job = _wait(api, job_id, ("succeeded",), timeout=90)
        assert job["feasible"] and job["progress"]["best_cost"] == job["cost"]
        assert len(api.get(f"/v1/jobs/{job_id}/progress").json()["points"]) >= 1
        assert api.get(f"/v1/jobs/{job_id}/solution").json()["feasible"]
        stopping = time.monotonic()
    # SIGTERM stops it (2-3 s for Ray to shut down); ray.init had replaced the server's
    # handler, and the server ignored SIGTERM until killed after 10 s (test-suite sweep)
    assert time.monotonic() - stopping < 9


def test_solution_files_for_any_name_and_any_ids(api: httpx.Client) -> None:
    """Regression: a non-Latin-1 upload name made the solution download a 500 (the header),
    and a JSON instance's own ids (here -1, TSPLIB's end marker) went into TOUR_SECTION."""
    from solvers.routing.io.solutions import read_tour

    text = (DATA / "eil51.tsp").read_bytes()
    job = api.post("/v1/jobs", files={"file": ("日本.tsp", text)},
                   data={"solver": "nearest_neighbor", "time_limit": "0.5"}).json()
    _wait(api, job["id"], ("succeeded",))
    tour = api.get(f"/v1/jobs/{job['id']}/solution", params={"format": "tour"})
    assert tour.status_code == 200, tour.text
    disposition = tour.headers["content-disposition"]
    assert "filename*=UTF-8''%E6%97%A5%E6%9C%AC.tour" in disposition
    response = api.post("/v1/jobs", json={
        "problem": "tsp", "instance": {"coords": [[0, 0], [1, 0], [1, 1], [0, 1]],
                                       "ids": [5, -1, 7, 8]},
        "solver": "nearest_neighbor", "time_limit": 0.2})
    job = _wait(api, response.json()["id"], ("succeeded",))
    body = api.get(f"/v1/jobs/{job['id']}/solution", params={"format": "tour"}).text
    path = Path(tempfile.mkdtemp()) / "ids.tour"
    path.write_text(body)
    assert sorted(read_tour(path)) == [0, 1, 2, 3] and "instance order" in body


def test_a_batch_file_part_must_be_named_files(api: httpx.Client) -> None:
    """Regression: /v1/batches took file parts under any name; solve and jobs refuse them."""
    text = (DATA / "eil51.tsp").read_bytes()
    response = api.post("/v1/batches", files={"other": ("eil51.tsp", text)},
                        data={"solver": "nearest_neighbor", "time_limit": "0.2"})
    assert "'files'" in assert_problem(response, 422, field="other")["detail"]


def test_a_batch_is_cancelled_as_a_whole(api: httpx.Client) -> None:
    """DELETE /v1/batches/{id}: queued jobs stop at once, the running one keeps its best so
    far (before: a batch could only be stopped one job at a time)."""
    files = [("files", (name, (DATA / "eil51.tsp").read_bytes()))
             for name in ("a.tsp", "b.tsp", "c.tsp")]
    response = api.post("/v1/batches", files=files,
                        data={"solver": "ortools", "time_limit": "30"})
    assert response.status_code == 202, response.text
    batch = response.json()
    deadline = time.monotonic() + 60
    while not any(r["state"] == "running" for r in batch["results"]):
        assert time.monotonic() < deadline, batch
        time.sleep(0.2)
        batch = api.get(f"/v1/batches/{batch['id']}").json()
    time.sleep(1.0)  # past OR-Tools' first solution
    cancelled = api.delete(f"/v1/batches/{batch['id']}")
    assert cancelled.status_code == 202, cancelled.text
    batch = _wait_batch(api, cancelled.json(), timeout=30)
    assert batch["done"] and batch["summary"]["cancelled"] == 3, batch
    kept = [r for r in batch["results"] if r["cost"] is not None]
    assert len(kept) >= 1 and all(r["partial"] for r in kept)
    again = api.delete(f"/v1/batches/{batch['id']}")  # finished: nothing changes
    assert again.status_code == 202 and again.json()["summary"] == batch["summary"]
    assert_problem(api.delete("/v1/batches/nosuchbatch"), 404, field="batch_id")


_WITH_KNOWN_SOLUTIONS = ("X-n101-k25.vrp", "X-n101-k25.sol", "eil51.tsp", "eil51.opt.tour",
                         "berlin52.tsp")


@pytest.mark.parametrize("upload", ["parts", "zip"])
def test_known_solutions_in_a_batch_give_each_file_a_checked_gap(api: httpx.Client,
                                                                 upload: str) -> None:
    """CVRPLIB's NAME.sol and TSPLIB's NAME.opt.tour uploaded beside their instances (as
    parts, or in the same folder of a zip) are read as known solutions, not rejected as
    unreadable instances: each is checked and costed against its instance, and the batch
    reports the gap to it, as `cosolve batch` does for a folder."""
    if upload == "parts":
        files = [("files", (name, (DATA / name).read_bytes())) for name in _WITH_KNOWN_SOLUTIONS]
    else:
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as zf:
            for name in _WITH_KNOWN_SOLUTIONS:
                zf.writestr(f"set/{name}", (DATA / name).read_bytes())
        files = [("files", ("set.zip", archive.getvalue()))]
    response = api.post("/v1/batches", files=files,
                        data={"solver": "nearest_neighbor", "time_limit": "1"})
    assert response.status_code == 202, response.text
    batch = response.json()
    assert batch["rejected"] == [] and batch["summary"]["files"] == 3
    folder = "set/" if upload == "zip" else ""
    rows = {r["filename"]: r for r in batch["results"]}
    assert rows["X-n101-k25.vrp"]["reference_file"] == f"{folder}X-n101-k25.sol"
    assert rows["eil51.tsp"]["reference_file"] == f"{folder}eil51.opt.tour"
    batch = _wait_batch(api, batch)
    assert batch["done"] and batch["summary"]["solved"] == 3
    rows = {r["filename"]: r for r in batch["results"]}
    for name, known in (("X-n101-k25.vrp", 27591), ("eil51.tsp", 426)):
        assert rows[name]["reference"] == known == OPTIMA[name.split(".")[0]]
        assert rows[name]["gap_percent"] == pytest.approx(100 * (rows[name]["cost"] / known - 1))
    berlin = rows["berlin52.tsp"]
    assert berlin["reference"] is None and berlin["reference_file"] is None
    assert berlin["gap_percent"] is None
    summary = batch["summary"]
    assert summary["with_reference"] == 2 and summary["mean_gap_percent"] == pytest.approx(
        (rows["X-n101-k25.vrp"]["gap_percent"] + rows["eil51.tsp"]["gap_percent"]) / 2)
    table = api.get(f"/v1/batches/{batch['id']}", params={"format": "md"}).text
    assert "| cost | gap to ref. | feasible |" in table
    assert f"| {rows['eil51.tsp']['gap_percent']:+.3f} % |" in table
    assert "| berlin52.tsp | 52 | succeeded |" in table and "to the known solutions of 2 files" \
        in table


def test_a_known_solution_that_serves_no_file_is_rejected_with_the_reason(
        api: httpx.Client) -> None:
    """A known solution with no instance of its name (or only one in another folder of the
    archive), and one that is not a solution of its instance (eil51's tour sent as
    kroA100.opt.tour), are listed as rejected with the reason; the files run without a
    reference and the markdown has no gap column."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("a/berlin52.tsp", (DATA / "berlin52.tsp").read_bytes())
        zf.writestr("b/berlin52.opt.tour", (DATA / "berlin52.opt.tour").read_bytes())
    files = [("files", ("X-n101-k25.sol", (DATA / "X-n101-k25.sol").read_bytes())),
             ("files", ("kroA100.tsp.gz", (DATA / "kroA100.tsp.gz").read_bytes())),
             ("files", ("kroA100.opt.tour", (DATA / "eil51.opt.tour").read_bytes())),
             ("files", ("ab.zip", archive.getvalue()))]
    response = api.post("/v1/batches", files=files,
                        data={"solver": "nearest_neighbor", "time_limit": "1"})
    assert response.status_code == 202, response.text
    batch = response.json()
    reasons = {r["filename"]: r["error"] for r in batch["rejected"]}
    assert set(reasons) == {"X-n101-k25.sol", "kroA100.opt.tour", "b/berlin52.opt.tour"}
    assert reasons["X-n101-k25.sol"] == ("a known solution with no instance named "
                                         "X-n101-k25.* in the batch; not read")
    assert reasons["b/berlin52.opt.tour"].startswith("a known solution with no instance named "
                                                     "b/berlin52.*")
    assert reasons["kroA100.opt.tour"].startswith(
        "not used as the reference of kroA100.tsp.gz: kroA100.opt.tour is not a feasible "
        "solution of kroA100")
    assert batch["summary"]["rejected"] == 3 and batch["summary"]["files"] == 5
    assert all(r["reference"] is None for r in batch["results"])
    batch = _wait_batch(api, batch)
    assert batch["summary"]["with_reference"] == 0 and batch["summary"]["mean_gap_percent"] \
        is None
    table = api.get(f"/v1/batches/{batch['id']}", params={"format": "md"}).text
    assert "gap to ref." not in table and "| kroA100.opt.tour | – | rejected |" in table
    # nothing but known solutions: nothing to solve, each named
    body = assert_problem(api.post("/v1/batches", files=files[:1]), 422, field="files")
    assert "X-n101-k25.sol: a known solution with no instance" in body["detail"]


@pytest.mark.heavy
def test_a_bare_uvicorn_stops_at_once_while_a_client_follows_a_job(tmp_path: Path) -> None:
    """uvicorn waits for open responses before it stops, and an events stream stays open
    until its job ends: a bare `uvicorn app.main:app` (no --timeout-graceful-shutdown) took
    21 s to stop for a 25 s job. The stream now ends with a `shutdown` event."""
    import signal
    import subprocess
    import sys
    import threading

    from tests.app.conftest import REPO, _free_port, _wait_until_healthy

    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("COSOLVE_")}
    env["COSOLVE_DATA_DIR"] = str(tmp_path)
    url = f"http://127.0.0.1:{port}"
    lines: list[str] = []
    with tempfile.TemporaryFile(mode="w+") as log:
        proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "app.main:app", "--port",
                                 str(port), "--log-level", "warning"], cwd=REPO, env=env,
                                stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_until_healthy(proc, url, log)
            job = httpx.post(f"{url}/v1/jobs", json={
                "problem": "tsp", "solver": "ortools", "time_limit": 120,
                "instance": {"coords": [[i % 7, i // 7] for i in range(40)]}},
                timeout=30).json()

            def follow() -> None:
                with contextlib.suppress(httpx.HTTPError), httpx.stream(
                        "GET", f"{url}/v1/jobs/{job['id']}/events", timeout=150) as stream:
                    lines.extend(stream.iter_lines())

            follower = threading.Thread(target=follow, daemon=True)
            follower.start()
            time.sleep(3)
            started = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
            assert time.monotonic() - started < 15
            follower.join(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert "event: shutdown" in lines, lines[-5:]


class _RefusingRay:
    """A stand-in for the ``ray`` module whose connect fails."""

    def init(self, **kwargs: object) -> None:
        raise ValueError("needs ray.client")


def test_a_ray_cluster_that_cannot_be_used_stops_the_start_naming_the_address() -> None:
    """Ray's own connect to an address with no cluster waited minutes, and a ray:// address
    without Ray Client was a traceback: the executor probes the address first
    and names it in either refusal."""
    from jobs.executors import _connect_ray

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    started = time.perf_counter()
    with pytest.raises(RuntimeError, match=rf"COSOLVE_RAY_ADDRESS=127\.0\.0\.1:{port}: "
                                           r"nothing answers at 127\.0\.0\.1"):
        _connect_ray(_RefusingRay(), f"127.0.0.1:{port}")
    assert time.perf_counter() - started < 6
    with socket.create_server(("127.0.0.1", 0)) as server:  # something listens: Ray is asked
        address = f"ray://127.0.0.1:{server.getsockname()[1]}"
        with pytest.raises(RuntimeError, match=rf"COSOLVE_RAY_ADDRESS={address}: needs ray\."):
            _connect_ray(_RefusingRay(), address)


def test_a_job_takes_its_known_solution_and_reports_the_gap(api: httpx.Client) -> None:
    """As a compare upload does, a job upload takes the instance's known solution as a second
    part, ``reference_file``: checked and costed when the job is submitted (27,591 for
    X-n101-k25), the status gives the gap once the job succeeds; one that is not a feasible
    solution of the instance is a 422 naming it, and nothing is queued."""
    instance = ("X-n101-k25.vrp", (DATA / "X-n101-k25.vrp").read_bytes())
    known = ("X-n101-k25.sol", (DATA / "X-n101-k25.sol").read_bytes())
    response = api.post("/v1/jobs", files={"file": instance, "reference_file": known},
                        data={"solver": "nearest_neighbor", "time_limit": "1"})
    assert response.status_code == 202, response.text
    submitted = response.json()
    assert submitted["reference"] == OPTIMA["X-n101-k25"] == 27591
    assert submitted["reference_file"] == "X-n101-k25.sol"
    assert submitted["gap_percent"] is None  # not solved yet
    job = _wait(api, submitted["id"], ("succeeded",))
    assert job["gap_percent"] == pytest.approx(100 * (job["cost"] / 27591 - 1))

    total = api.get("/v1/jobs").json()["total"]
    wrong = ("eil51.opt.tour", (DATA / "eil51.opt.tour").read_bytes())
    body = assert_problem(api.post("/v1/jobs", files={"file": instance, "reference_file": wrong},
                                   data={"solver": "nearest_neighbor", "time_limit": "1"}),
                          422, field="reference_file")
    assert "not a feasible solution of X-n101-k25" in body["detail"]
    assert api.get("/v1/jobs").json()["total"] == total
