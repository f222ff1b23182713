"""cosolve.Client against a real server (the suite's shared uvicorn): every call goes over
HTTP, and every figure it returns is checked against the library's own instance code."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from cosolve import (
    Client,
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    Solution,
    TSPInstance,
    VrpAnswer,
    load_instance,
)
from cosolve.responses import JobStatus

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def client(server_url: str) -> Iterator[Client]:
    with Client(server_url, api_key="test-key", timeout=60) as api:
        yield api


def test_solvers_say_what_runs_here(client: Client) -> None:
    solvers = {s.name: s for s in client.solvers()}
    assert {"nearest_neighbor", "ils", "ortools", "pyvrp"} <= set(solvers)
    assert solvers["ils"].available and "tsp" in solvers["ils"].problems
    assert all("cvrp" in s.problems for s in client.solvers(problem="cvrp"))
    with pytest.raises(InvalidRequestError) as err:
        client.solvers(problem="knapsack")
    assert err.value.status == 422 and err.value.field == "problem"
    assert "knapsack" in err.value.detail


def test_solve_a_file_and_an_instance(client: Client) -> None:
    answer = client.solve(DATA / "eil51.tsp", "ils", time_limit=0.3, seed=1)
    instance = load_instance(DATA / "eil51.tsp")
    assert answer.problem == "tsp" and answer.instance == "eil51" and answer.feasible
    assert sorted(answer.tour) == list(range(51))
    assert answer.cost == pytest.approx(instance.cost(answer.routes))
    assert answer.raw["seed"] == 1 and answer.nodes == 51
    solution = answer.to_solution()
    assert isinstance(solution, Solution) and "eil51 by ils" in repr(solution)

    x101 = load_instance(DATA / "X-n101-k25.vrp")  # a library instance goes as JSON
    plan = client.solve(x101, "nearest_neighbor", time_limit=0.3, max_vehicles=30)
    assert plan.problem == "cvrp" and plan.feasible and len(plan.routes) <= 30
    assert sorted(v for r in plan.routes for v in r) == list(range(1, 101))
    assert plan.cost == pytest.approx(x101.cost(plan.routes))


def test_refusals_are_typed_problems(client: Client) -> None:
    square = {"coords": [[0, 0], [0, 1], [1, 1], [1, 0]]}
    with pytest.raises(NotFoundError) as err:
        client.solve(square, "no-such-solver", time_limit=0.2)
    assert err.value.status == 404 and err.value.field == "solver"
    with pytest.raises(InvalidRequestError) as bad:
        client.solve({"coords": [[0, 0], [1, "x"], [2, 2]]}, "ils", time_limit=0.2)
    assert bad.value.status == 422 and bad.value.field.startswith("instance.coords")
    assert bad.value.title and bad.value.detail and bad.value.errors
    with pytest.raises(NotFoundError) as missing:
        client.job("0" * 32).status()
    assert missing.value.field == "job_id"


def test_compare_with_a_known_solution(client: Client) -> None:
    result = client.compare(DATA / "X-n101-k25.vrp", ["nearest_neighbor", "ils"],
                            time_limit=0.3, reference=DATA / "X-n101-k25.sol", svg=True)
    assert result.reference == pytest.approx(27591) and result.nodes == 101
    instance = load_instance(DATA / "X-n101-k25.vrp")
    for row in result.rows:
        assert row.feasible and row.routes and row.svg and row.svg.startswith("<svg")
        assert row.cost == pytest.approx(instance.cost(row.routes))
        assert row.gap_to_reference == pytest.approx(100 * (row.cost / 27591 - 1))
    best = min(result.rows, key=lambda r: r.cost or float("inf"))
    assert result.best_solver == best.solver
    assert result.row("ils").solver == "ils" and "best: " in str(result)
    # a library instance with a reference file goes as an upload of its JSON form
    again = client.compare(instance, "nearest_neighbor", time_limit=0.3,
                           reference=DATA / "X-n101-k25.sol")
    assert again.row("nearest_neighbor").cost == result.row("nearest_neighbor").cost


def test_job_events_solution_and_files(client: Client) -> None:
    job = client.submit(DATA / "berlin52.tsp", "ils", time_limit=0.5,
                        reference_file=DATA / "berlin52.opt.tour")
    events = list(job.events())
    assert events[-1].event == "end" and all(e.event == "progress" for e in events[:-1])
    final = events[-1].status
    assert isinstance(final, JobStatus) and final.state == "succeeded" and final.final
    assert job.wait(timeout=5).state == "succeeded"
    solution = job.solution()
    instance = load_instance(DATA / "berlin52.tsp")
    assert solution.feasible and not solution.partial
    assert solution.cost == pytest.approx(instance.cost(solution.routes)) == final.cost
    assert final.gap_percent == pytest.approx(100 * (solution.cost / 7542 - 1))
    tour = job.solution_file()
    assert "TOUR_SECTION" in tour and tour.rstrip().endswith("EOF")
    with pytest.raises(InvalidRequestError) as err:
        job.solution_file("sol")
    assert err.value.field == "format"
    assert job.cancel().state == "succeeded"  # a finished job stays as it was


def test_cancel_keeps_the_best_so_far(client: Client) -> None:
    instance = TSPInstance(name="ring", coords=[[i % 17, i * 7 % 23] for i in range(120)])
    job = client.submit(instance, "ils", time_limit=30)
    with pytest.raises(ConflictError) as err:
        job.solution()
    assert err.value.status == 409
    for event in job.events():  # cancel once the solver has reported a cost
        if event.status and event.status.progress.best_cost is not None:
            break
    assert job.cancel().cancel_requested
    status = job.wait(timeout=20)
    assert status.state == "cancelled" and status.progress.elapsed < 20
    partial = job.solution()
    assert partial.partial and partial.feasible
    assert partial.cost == pytest.approx(instance.cost(partial.routes))


def test_batch_of_files_with_a_reference(client: Client) -> None:
    batch = client.submit_batch([DATA / "eil51.tsp", DATA / "eil51.opt.tour",
                                 DATA / "berlin52.tsp"], "nearest_neighbor", time_limit=0.2)
    status = batch.wait(timeout=60)
    assert status.done and status.summary["solved"] == 2
    rows = {r.filename: r for r in status.results}
    assert set(rows) == {"eil51.tsp", "berlin52.tsp"}
    assert rows["eil51.tsp"].reference == 426
    assert rows["eil51.tsp"].gap_percent == pytest.approx(100 * (rows["eil51.tsp"].cost / 426
                                                                   - 1))
    assert rows["berlin52.tsp"].gap_percent is None
    assert "# Batch" in batch.markdown()
    tours = [job.solution_file("tour") for job in batch.jobs()]
    assert all("TOUR_SECTION" in t for t in tours)


VRP_DOCUMENT = Path(__file__).resolve().parents[2] / "examples" / "vrp_request.json"


def _tasks_of(answer: VrpAnswer) -> list[tuple[str, int]]:
    return [(step["type"], step["id"]) for route in answer.routes for step in route["steps"]
            if step["type"] in ("job", "pickup", "delivery")]


def test_vroom_document_solved_compared_and_as_a_job(client: Client) -> None:
    document = json.loads(VRP_DOCUMENT.read_text())
    answer = client.solve_vrp(VRP_DOCUMENT, "ortools", time_limit=1, geojson=True)
    assert answer.solver == "ortools" and answer.feasible and not answer.violations
    assert answer.cost == sum(route["cost"] for route in answer.routes)
    served = {task_id for kind, task_id in _tasks_of(answer) if kind == "job"}
    left = {task["id"] for task in answer.unassigned if task["type"] == "job"}
    assert served | left == {job["id"] for job in document["jobs"]} and not served & left
    assert all(task["reason"] for task in answer.unassigned)
    assert answer.geojson and answer.geojson["type"] == "FeatureCollection"

    result = client.compare_vrp(document, ["vroom", "ortools"], time_limit=1)
    assert [row["solver"] for row in result.rows] == ["vroom", "ortools"]
    assert result.best_solver in ("vroom", "ortools")
    best = result.row(result.best_solver).get("solution")
    assert best is not None and best.feasible and best.cost == result.row(
        result.best_solver)["cost"]

    job = client.submit_vrp(document, "vroom", time_limit=1)
    assert job.wait(timeout=60).state == "succeeded"
    solved = job.vrp_solution()
    assert solved.solver == "vroom" and solved.feasible
    with pytest.raises(TypeError, match="vrp_solution"):
        job.solution()


def test_vroom_document_refusals_name_the_field(client: Client) -> None:
    document = json.loads(VRP_DOCUMENT.read_text())
    document["vehicles"][0]["capacity"] = [-1]
    with pytest.raises(InvalidRequestError) as err:
        client.solve_vrp(document, "vroom", time_limit=1)
    assert err.value.status == 422 and "capacity" in (err.value.field or err.value.detail)
    with pytest.raises(NotFoundError) as missing:  # a routing solver, not a VROOM one
        client.solve_vrp(VRP_DOCUMENT, "nearest_neighbor", time_limit=1)
    assert missing.value.field == "solver" and "vroom" in missing.value.detail
