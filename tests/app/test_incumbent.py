"""GET /v1/jobs/{id}/incumbent: a running job's best plan so far, checked as every answer,
only for its own key, none before the solver's first, and 409 once the job is final.

In-process app with its job service started by hand (as tests/app/test_security.py); the
OR-Tools job really runs in the local executor on X-n176-k26 for 4 s.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from fastapi.testclient import TestClient

from app.concurrency import SOLVE_THREADS
from app.main import create_app
from jobs.service import JobService
from jobs.settings import Settings
from solvers.routing.io.formats import load_instance
from solvers.routing.solution import build_solution
from tests.app.helpers import assert_problem
from tests.conftest import DATA

KEY_A = "a-key-of-client-a-0123456789"
KEY_B = "b-key-of-client-b-0123456789"
AUTH_A = {"Authorization": f"Bearer {KEY_A}"}
AUTH_B = {"Authorization": f"Bearer {KEY_B}"}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(data_dir=tmp_path / "data", api_keys=f"{KEY_A},{KEY_B}")
    app = create_app(settings)
    service = JobService(settings)
    service.start()
    app.state.jobs = service
    app.state.stopping = threading.Event()
    app.state.solve_limiter = anyio.CapacityLimiter(SOLVE_THREADS)
    try:
        yield TestClient(app)
    finally:
        service.stop()


def test_a_running_job_serves_its_checked_incumbent_to_its_own_key(
        client: TestClient) -> None:
    path = DATA / "X-n176-k26.vrp"
    submitted = client.post("/v1/jobs", headers=AUTH_A, files={
        "file": (path.name, path.read_bytes())}, data={"solver": "ortools", "time_limit": "4"})
    assert submitted.status_code == 202, submitted.text
    job_id = submitted.json()["id"]
    url = f"/v1/jobs/{job_id}/incumbent"
    first = client.get(url, headers=AUTH_A)  # queued or starting: no plan yet
    assert_problem(first, 404, "job_id")
    assert first.json()["type"].endswith("no-incumbent")
    instance = load_instance(path)
    seen = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        r = client.get(url, headers=AUTH_A)
        if r.status_code == 409:  # final
            break
        if r.status_code == 200:
            seen.append(r.json())
            assert_problem(client.get(url, headers=AUTH_B), 404, "job_id")  # not B's job
        else:
            assert_problem(r, 404, "job_id")
        time.sleep(0.1)
    assert seen, "no incumbent was served while the job ran"
    for plan in seen:
        assert plan["partial"] is True and plan["state"] == "running"
        assert plan["id"] == job_id and plan["solver"] == "ortools"
        ours = build_solution(instance, plan["routes"], solver="x", wall_time=0)
        assert ours.feasible and plan["feasible"] is True and plan["violations"] == []
        assert plan["cost"] == pytest.approx(ours.cost)
        assert plan["solver_cost"] == pytest.approx(ours.cost)
    final = client.get(f"/v1/jobs/{job_id}", headers=AUTH_A).json()
    assert final["state"] == "succeeded"
    assert final["cost"] <= min(p["cost"] for p in seen) + 1e-9
    done = client.get(url, headers=AUTH_A)
    assert_problem(done, 409, "job_id")
    assert done.json()["state"] == "succeeded"
