"""GET /metrics: Prometheus text with requests by route template and status, latency
histograms, solver seconds (in requests and jobs), jobs by state, queue depth, warm-up."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from app.main import create_app
from app.settings import Settings
from jobs.lifecycle import JobMonitor
from jobs.store import JobStore
from tests.app.conftest import wait_until_warm

SQUARE = [[0.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 0.0]]


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample by (name, labels): parsed by the client library's own parser, so the
    text is valid exposition format."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _value(samples: dict, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """One app for the module (each warms every solver up): tests read their own series."""
    with TestClient(create_app(Settings(data_dir=tmp_path_factory.mktemp("jobs")))) as test:
        wait_until_warm(test)
        yield test


def test_the_real_warm_up_warmed_every_available_solver(client: TestClient) -> None:
    snapshot = client.app.state.warm_up.snapshot()  # type: ignore[attr-defined]
    assert {"nearest_neighbor", "ortools", "goodrl"} <= {i["name"] for i in snapshot["items"]}
    assert all(i["state"] == "ready" for i in snapshot["items"]), snapshot
    assert client.get("/readyz").status_code == 200


def test_requests_are_counted_by_route_template_and_status(client: TestClient) -> None:
    for job_id in ("aaa", "bbb"):
        assert client.get(f"/v1/jobs/{job_id}").status_code == 404
    assert client.get("/no/such/page").status_code == 404
    assert client.get("/healthz").status_code == 200
    assert client.request("BREW", "/healthz").status_code == 405
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = _samples(response.text)
    jobs = _value(samples, "cosolve_http_requests_total", route="/v1/jobs/{job_id}",
                  method="GET", status="404")
    assert jobs == 2.0  # one series for both ids: the template, not the path
    assert _value(samples, "cosolve_http_requests_total", route="unmatched", method="GET",
                  status="404") == 1.0
    assert _value(samples, "cosolve_http_request_duration_seconds_count", route="/healthz",
                  method="GET") == 1.0
    assert _value(samples, "cosolve_http_request_duration_seconds_bucket", route="/healthz",
                  method="GET", le="+Inf") == 1.0
    # any method a client makes up is one series, "other"
    assert _value(samples, "cosolve_http_requests_total", route="/healthz", method="other",
                  status="405") == 1.0
    assert _value(samples, "cosolve_warm_up_done") == 1.0
    assert _value(samples, "cosolve_jobs_queue_depth") == 0.0
    assert _value(samples, "cosolve_jobs", state="failed") == 0.0


def test_solver_seconds_from_solves_and_comparisons(client: TestClient) -> None:
    solved = client.post("/v1/routing/tsp/solve", json={"instance": {"coords": SQUARE},
                                                        "solver": "nearest_neighbor"})
    assert solved.status_code == 200, solved.text
    compared = client.post("/v1/routing/tsp/compare", json={
        "instance": {"coords": SQUARE}, "solvers": ["nearest_neighbor", "pyvrp"],
        "time_limit": 1})
    assert compared.status_code == 200, compared.text
    samples = _samples(client.get("/metrics").text)
    assert _value(samples, "cosolve_solver_seconds_count", solver="nearest_neighbor",
                  source="request") == 2.0
    assert _value(samples, "cosolve_solver_seconds_count", solver="pyvrp",
                  source="request") == 1.0
    took = _value(samples, "cosolve_solver_seconds_sum", solver="pyvrp", source="request")
    row = next(r for r in compared.json()["rows"] if r["solver"] == "pyvrp")
    assert took == pytest.approx(row["wall_time"])


def test_a_jobs_end_is_observed_with_its_solver_time(client: TestClient) -> None:
    """The job monitor's end (as a finished job in the store) reaches the metrics."""
    service = client.app.state.jobs  # type: ignore[attr-defined]
    store: JobStore = service.store
    job = store.create(problem="tsp", solver="sil", time_limit=5, seed=0,
                       filename="a.json", data=b"{}", nodes=4)
    monitor = JobMonitor(store, 30.0, on_end=client.app.state.metrics.observe_job)  # type: ignore[attr-defined]
    monitor.watch(job)
    assert store.mark_running(job.id, job.attempt)
    time.sleep(0.05)
    store.finish(job.id, job.attempt, state="succeeded", cost=4.0, feasible=True,
                 message="solved", ttl_s=60)
    monitor.look()
    samples = _samples(client.get("/metrics").text)
    assert _value(samples, "cosolve_solver_seconds_count", solver="sil", source="job") == 1.0
    assert _value(samples, "cosolve_solver_seconds_sum", solver="sil", source="job") >= 0.05
    assert _value(samples, "cosolve_jobs", state="succeeded") == 1.0


def test_each_app_has_its_own_registry(tmp_path: Path) -> None:
    """Two apps in one process: the global registry would refuse the second's metrics."""
    first, second = (create_app(Settings(data_dir=tmp_path / name)) for name in "ab")
    assert first.state.metrics.registry is not second.state.metrics.registry
    with TestClient(first) as client:
        client.get("/healthz")
        assert "cosolve_http_requests_total" in client.get("/metrics").text


def test_metrics_are_in_the_openapi_document(client: TestClient) -> None:
    operation = client.get("/openapi.json").json()["paths"]["/metrics"]["get"]
    assert "text/plain; version=0.0.4; charset=utf-8" in operation["responses"]["200"]["content"]
