"""In-process checks of what a real server cannot be made to show: registry entries that the
built-in solvers do not provide (TSP-only, unavailable), explicit settings, and a crash.

Registry entries are added with ``monkeypatch`` so they vanish after each test; they wrap the
real nearest-neighbour solver, nothing is mocked.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI

from app.main import create_app
from app.settings import Settings
from solvers import catalog, contract
from solvers.routing.classical.construct import NearestNeighbourSolver
from tests.app.conftest import wait_until_warm
from tests.app.helpers import assert_problem

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # Starlette's notice about its test client's transport
    from fastapi.testclient import TestClient

SQUARE = [[0, 0], [0, 1], [1, 1], [1, 0]]
SMALL_CVRP = {"coords": SQUARE, "demands": [0, 1, 1, 1], "capacity": 3}


def _register(monkeypatch: pytest.MonkeyPatch, spec: contract.SolverSpec) -> str:
    catalog.all_specs()  # load the built-in entries first, so ours is not registered twice
    monkeypatch.setitem(catalog._REGISTRY, spec.name, spec)
    return spec.name


@pytest.fixture
def tsp_only_solver(monkeypatch: pytest.MonkeyPatch) -> str:
    """No built-in solver is TSP-only; this entry is the nearest-neighbour solver, TSP only."""
    return _register(monkeypatch, contract.SolverSpec(
        name="tsp_only_nearest_neighbor", family="routing", problems=("tsp",),
        description="nearest neighbour, TSP only", factory=NearestNeighbourSolver))


@pytest.fixture
def unavailable_solver(monkeypatch: pytest.MonkeyPatch) -> str:
    """A registered solver that reports it cannot run here, as a neural one without weights."""
    return _register(monkeypatch, contract.SolverSpec(
        name="needs_missing_weights", family="routing", problems=("tsp", "cvrp"),
        description="stands for a neural solver whose checkpoint is absent",
        factory=NearestNeighbourSolver, needs_weights=True, kind="neural",
        availability=lambda: "checkpoint weights/demo.pt is missing; run training first"))


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app()) as test_client:
        wait_until_warm(test_client)  # solving requests get a 503 while the solvers warm up
        yield test_client


def test_solver_problem_mismatch(client: TestClient, tsp_only_solver: str) -> None:
    response = client.post("/v1/routing/cvrp/solve",
                           json={"instance": SMALL_CVRP, "solver": tsp_only_solver})
    body = assert_problem(response, 422, field="solver")
    assert "tsp" in body["detail"]
    response = client.post("/v1/routing/cvrp/compare", json={
        "instance": SMALL_CVRP, "solvers": ["nearest_neighbor", tsp_only_solver]})
    assert_problem(response, 422, field="solvers[1]")
    ok = client.post("/v1/routing/tsp/solve",
                     json={"instance": {"coords": SQUARE}, "solver": tsp_only_solver})
    assert ok.status_code == 200 and ok.json()["feasible"]


def test_unavailable_solver(client: TestClient, unavailable_solver: str) -> None:
    response = client.post("/v1/routing/tsp/solve",
                           json={"instance": {"coords": SQUARE}, "solver": unavailable_solver})
    body = assert_problem(response, 503, field="solver")
    assert "run training first" in body["detail"] and "/v1/solvers" in body["detail"]
    listed = {s["name"]: s for s in client.get("/v1/solvers").json()["solvers"]}
    assert listed[unavailable_solver]["available"] is False
    assert "missing" in listed[unavailable_solver]["unavailable_reason"]
    # In a comparison an unavailable solver is a row with an error, not a failed request.
    rows = client.post("/v1/routing/tsp/compare", json={
        "instance": {"coords": SQUARE}, "solvers": ["nearest_neighbor", unavailable_solver],
    }).json()["rows"]
    assert rows[0]["feasible"] and rows[0]["error"] is None
    assert rows[1]["cost"] is None and "unavailable" in rows[1]["error"]
    # a comparison of unavailable solvers only is refused as a solve of one is
    only = client.post("/v1/routing/tsp/compare", json={
        "instance": {"coords": SQUARE}, "solvers": [unavailable_solver]})
    assert "run training first" in assert_problem(only, 503, field="solvers")["detail"]


def test_explicit_settings_win_over_the_environment() -> None:
    app = create_app(Settings(max_sync_nodes=3, max_time_limit=2, default_time_limit=1))
    with TestClient(app) as client:
        wait_until_warm(client)
        too_big = client.post("/v1/routing/tsp/solve", json={"instance": {"coords": SQUARE}})
        assert_problem(too_big, 413, field="instance")
        too_long = client.post("/v1/routing/tsp/solve", json={
            "instance": {"coords": SQUARE[:3]}, "time_limit": 3})
        assert_problem(too_long, 422, field="time_limit")


def test_inconsistent_settings_fail_at_start() -> None:
    with pytest.raises(ValueError, match="default_time_limit"):
        Settings(max_time_limit=5, default_time_limit=10)
    # jobs take the same default (before: every job without a time_limit was refused)
    with pytest.raises(ValueError, match="max_job_time_limit"):
        Settings(max_job_time_limit=5)


@pytest.mark.parametrize(("field", "value"), [
    ("max_time_limit", float("inf")),  # a 500 from OR-Tools' overflowing duration
    ("max_job_time_limit", 1e30),
    ("purge_interval_s", 1e10),  # killed the expiry thread: no job ever expired
    ("purge_interval_s", 1e-6),  # a busy loop on a core
    ("data_dir", ""),  # the job store in the working directory
])
def test_settings_out_of_their_range_fail_at_start(field: str, value: object) -> None:
    """Configuration: these values were accepted and failed later, or quietly."""
    with pytest.raises(ValueError, match=field):
        Settings(**{field: value})


@pytest.mark.parametrize("device", ["gpu", "cuda:", "CPU", ""])
def test_a_device_setting_that_names_no_device_is_refused(device: str) -> None:
    with pytest.raises(ValueError, match="device"):
        Settings(device=device)


def test_a_missing_gpu_fails_the_start_not_a_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """COSOLVE_DEVICE=cuda on a machine where torch sees no GPU: the server does not start
    (the error says why) instead of failing every neural request later."""
    import torch

    from solvers.device import torch_device_name

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    torch_device_name.cache_clear()
    try:
        app = create_app(Settings(device="cuda"))
        with pytest.raises(RuntimeError, match="COSOLVE_DEVICE: 'cuda' was asked for, but "
                           "torch sees no CUDA GPU"), TestClient(app):
            pass
    finally:
        torch_device_name.cache_clear()


def test_unexpected_error_is_a_500_problem_without_traceback() -> None:
    app: FastAPI = create_app()

    @app.get("/crash")
    def crash() -> None:
        raise RuntimeError("secret internal state")

    with TestClient(app, raise_server_exceptions=False) as client:
        body = assert_problem(client.get("/crash"), 500)
    assert "secret" not in body["detail"] and "Traceback" not in body["detail"]


def test_a_problem_without_its_checkpoint_is_refused_when_submitted(
        client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """QA walk-through: with weights/reld_tsp.pt gone, reld stayed 'available', a TSP job
    was accepted (202) and then failed. Availability is now also per problem."""
    name = _register(monkeypatch, contract.SolverSpec(
        name="tsp_weights_missing", family="routing", problems=("tsp", "cvrp"),
        description="stands for a neural solver whose TSP checkpoint is absent",
        factory=NearestNeighbourSolver, needs_weights=True, kind="neural",
        problem_availability=lambda p: "weights/demo_tsp.pt is missing" if p == "tsp" else None))
    job = client.post("/v1/jobs", json={"problem": "tsp", "instance": {"coords": SQUARE},
                                        "solver": name, "time_limit": 1})
    assert "demo_tsp.pt" in assert_problem(job, 503, field="solver")["detail"]
    by_problem = {p: {s["name"]: s for s in client.get(f"/v1/solvers?problem={p}").json()[
        "solvers"]}[name] for p in ("tsp", "cvrp")}
    assert by_problem["tsp"]["available"] is False
    assert "demo_tsp.pt" in by_problem["tsp"]["unavailable_reason"]
    assert by_problem["cvrp"]["available"] is True
    ok = client.post("/v1/routing/cvrp/solve", json={"instance": SMALL_CVRP, "solver": name})
    assert ok.status_code == 200, ok.text


def test_our_info_lines_reach_stderr_under_a_bare_uvicorn(monkeypatch, capsys) -> None:
    """uvicorn configures only its own loggers: the start-up lines ("warming up", "ready", jobs
    re-queued) went nowhere under `make serve`. With no logging set up, the app shows them in
    uvicorn's style; where the host set logging up, it adds nothing."""
    import logging

    from app.main import _show_our_log

    root, ours = logging.getLogger(), logging.getLogger("cosolve")
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(ours, "handlers", [])
    monkeypatch.setattr(ours, "level", logging.NOTSET)
    _show_our_log()
    logging.getLogger("cosolve.api").info("cosolve ready: test")
    assert "INFO:     cosolve ready: test" in capsys.readouterr().err
    _show_our_log()  # once only
    assert len(ours.handlers) == 1
    monkeypatch.setattr(ours, "handlers", [])
    monkeypatch.setattr(root, "handlers", [logging.NullHandler()])
    _show_our_log()
    assert ours.handlers == []


def test_too_many_batch_parts_is_the_413_of_a_batch_too_large(tmp_path: Path) -> None:
    """Regression: more 'files' parts than COSOLVE_MAX_BATCH_FILES was a 422 (the README says
    413, and an archive with too many members is one)."""
    app = create_app(Settings(data_dir=tmp_path, max_batch_files=2))
    with TestClient(app) as client:
        files = [("files", (f"t{i}.tsp", b"x")) for i in range(3)]
        response = client.post("/v1/batches", files=files, data={"solver": "nearest_neighbor"})
        body = assert_problem(response, 413, field="files")
        assert "COSOLVE_MAX_BATCH_FILES" in body["detail"] and body["limit"] == 2


def test_a_too_long_request_advises_a_job_only_where_jobs_may_run_that_long() -> None:
    """Regression: with jobs capped below requests, the 422 advised a job 'up to 1 s' for a
    3 s request."""
    from app.errors import ApiError
    from app.intake.options import request_time_limit

    with pytest.raises(ApiError) as short_jobs:
        request_time_limit(3, Settings(max_time_limit=2, max_job_time_limit=1,
                                       default_time_limit=1))
    assert "POST /v1/jobs" not in short_jobs.value.detail
    with pytest.raises(ApiError) as long_jobs:
        request_time_limit(30, Settings(max_time_limit=20, max_job_time_limit=60))
    assert "POST /v1/jobs, up to 60 s" in long_jobs.value.detail
