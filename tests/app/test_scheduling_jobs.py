"""Scheduling simulations as jobs (``POST /v1/scheduling/simulate/jobs``): the same answer as
the synchronous endpoint, progress in workflows, cancel; and the synchronous size cap."""

from __future__ import annotations

import time
from typing import Any

import httpx

from tests.app.helpers import assert_problem
from tests.app.test_jobs import _events, _wait

SIMULATE = "/v1/scheduling/simulate"
JOBS = "/v1/scheduling/simulate/jobs"
#: Timing fields differ between two runs of the same simulation.
_TIMINGS = ("wall_time", "latency_p50_ms", "latency_p95_ms")


def _without_timings(doc: dict[str, Any]) -> dict[str, Any]:
    return {**doc, "rows": [{k: v for k, v in row.items() if k not in _TIMINGS}
                            for row in doc["rows"]]}


def test_simulation_job_gives_the_synchronous_answer(api: httpx.Client) -> None:
    body = {"generator": {"tasks": 30, "seed": 1}, "pool": "3x2", "workflows_count": 40,
            "policies": ["heft", "eft"], "seed": 2}
    sync = api.post(SIMULATE, json=body)
    assert sync.status_code == 200, sync.text
    r = api.post(JOBS, json=body)
    assert r.status_code == 202, r.text
    job = r.json()
    assert r.headers["location"] == f"/v1/jobs/{job['id']}"
    assert job["problem"] == "scheduling" and job["solver"] == "heft,eft"
    events = _events(api, job["id"])
    assert events[-1][0] == "end" and events[-1][1]["state"] == "succeeded", events[-1]
    done = _wait(api, job["id"], ("succeeded",))
    # progress counts the workflows of every policy: 2 × 40
    assert done["progress"]["iterations"] == 80, done["progress"]
    assert "80/80 workflows" in done["progress"]["message"]
    answer = api.get(f"/v1/jobs/{job['id']}/solution")
    assert answer.status_code == 200, answer.text
    assert _without_timings(answer.json()) == _without_timings(sync.json())
    assert done["cost"] == min(row["mean_flowtime"] for row in sync.json()["rows"])
    # a routing drawing of a simulation is refused, naming the field
    assert_problem(api.get(f"/v1/jobs/{job['id']}/solution?format=svg"), 422, "format")


def test_oversized_synchronous_simulation_points_to_the_job_endpoint(api: httpx.Client) -> None:
    body = {"workflows_count": 5000, "policies": ["goodrl", "heft"]}
    problem = assert_problem(api.post(SIMULATE, json=body), 413, "workflows_count")
    assert f"POST {JOBS}" in problem["detail"], problem
    assert problem["estimated_seconds"] > problem["limit"]


def test_simulation_job_cancels(api: httpx.Client) -> None:
    body = {"workflows_count": 20000, "policies": ["heft", "eft", "peft"], "pool": "5x5"}
    r = api.post(JOBS, json=body)
    assert r.status_code == 202, r.text
    job_id = r.json()["id"]
    _wait(api, job_id, ("running",), check=lambda j: (j["progress"]["iterations"] or 0) > 0)
    started = time.monotonic()
    assert api.delete(f"/v1/jobs/{job_id}").status_code == 202
    job = _wait(api, job_id, ("cancelled", "succeeded", "failed"))
    assert job["state"] == "cancelled" and time.monotonic() - started < 10, job
    assert job["progress"]["iterations"] < 60000
    assert_problem(api.get(f"/v1/jobs/{job_id}/solution"), 404, "job_id")


def test_an_overloaded_pool_is_a_warning_in_the_answer(api: httpx.Client) -> None:
    # generated classic shapes at the whole capacity of a 3x2 pool, then at a fifth of a 6x4's
    heavy = api.post(SIMULATE, json={"pool": "3x2", "rates": [7.7], "workflows_count": 45,
                                     "policies": ["heft"]})
    assert heavy.status_code == 200, heavy.text
    warnings = heavy.json()["warnings"]
    assert "pool-overloaded" in {w["code"] for w in warnings}, warnings
    assert all(w["policies"] == ["heft"] and w["detail"] for w in warnings)
    light = api.post(SIMULATE, json={"pool": "6x4", "rates": [5], "workflows_count": 45,
                                     "policies": ["heft"]})
    assert light.status_code == 200 and light.json()["warnings"] == [], light.text
