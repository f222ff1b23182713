"""app.security: API keys on /v1, each key's own jobs, batches and sessions, CORS and the
Host check against DNS rebinding.

The app runs in-process with its job service started by hand (the lifespan's warm-up is not
needed to store and list jobs, and takes minutes on a loaded machine); jobs really run in
the local executor.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient

from app.concurrency import SOLVE_THREADS
from app.main import create_app
from app.security import address_owner, host_name, key_owner
from jobs.service import JobService
from jobs.settings import Settings, read_api_keys
from tests.app.helpers import assert_problem

KEY_A = "a-key-of-client-a-0123456789"
KEY_B = "b-key-of-client-b-0123456789"
AUTH_A = {"Authorization": f"Bearer {KEY_A}"}
AUTH_B = {"Authorization": f"Bearer {KEY_B}"}
TSP = {"problem": "tsp", "solver": "nearest_neighbor", "time_limit": 1,
       "instance": {"coords": [[0, 0], [3, 0], [3, 4], [0, 4], [1, 2]]}}

AppFactory = Callable[..., TestClient]


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[AppFactory]:
    """A TestClient on an app with the given settings and a started job service."""
    services: list[JobService] = []

    def make(base_url: str = "http://testserver", **settings: Any) -> TestClient:
        resolved = Settings(data_dir=tmp_path / f"data{len(services)}", **settings)
        app = create_app(resolved)
        service = JobService(resolved)
        service.start()
        services.append(service)
        app.state.jobs = service
        app.state.stopping = threading.Event()
        app.state.solve_limiter = anyio.CapacityLimiter(SOLVE_THREADS)
        return TestClient(app, base_url=base_url)

    yield make
    for service in services:
        service.stop()


def test_keys_are_read_from_a_list_and_a_file(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.write_text(f"# the team's keys\n{KEY_A}\n\n{KEY_B}  # ci\n")
    assert read_api_keys(f"@{keys}") == {KEY_A, KEY_B}
    assert read_api_keys(f"{KEY_A}, {KEY_B},") == {KEY_A, KEY_B}
    assert read_api_keys(None, keys) == {KEY_A, KEY_B}
    assert read_api_keys(None) == frozenset()
    with pytest.raises(ValueError, match="key 2 of COSOLVE_API_KEYS is not a key"):
        read_api_keys(f"{KEY_A},short")
    with pytest.raises(ValueError, match="cannot read the API key file"):
        read_api_keys(f"@{tmp_path / 'missing'}")
    with pytest.raises(ValueError) as info:  # the message never echoes a key
        read_api_keys("x" * 15)
    assert "x" * 15 not in str(info.value)
    assert key_owner(KEY_A).startswith("key:") and KEY_A not in key_owner(KEY_A)


def test_v1_needs_a_known_key_and_the_rest_stays_open(make_client: AppFactory) -> None:
    client = make_client(api_keys=f"{KEY_A},{KEY_B}")
    for headers in ({}, {"Authorization": "Bearer not-a-key-of-this-server"},
                    {"Authorization": f"Basic {KEY_A}"}, {"Authorization": "Bearer "}):
        r = client.get("/v1/solvers", headers=headers)
        assert_problem(r, 401, "Authorization")
        assert r.headers["www-authenticate"].startswith("Bearer")
    assert_problem(client.post("/v1/jobs", json=TSP), 401)
    assert client.get("/v1/solvers", headers=AUTH_A).status_code == 200
    assert client.get("/v1/solvers", headers={"authorization": f"bearer {KEY_B}"}
                      ).status_code == 200
    for path in ("/healthz", "/openapi.json", "/docs"):
        assert client.get(path).status_code == 200, path
    doc = client.get("/openapi.json").json()
    assert doc["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"
    assert doc["paths"]["/v1/jobs"]["post"]["security"] == [{"apiKey": []}]
    assert "401" in doc["paths"]["/v1/jobs"]["post"]["responses"]
    assert "security" not in doc["paths"]["/healthz"]["get"]


def test_a_key_sees_and_cancels_only_its_own_jobs(make_client: AppFactory) -> None:
    client = make_client(api_keys=f"{KEY_A},{KEY_B}")
    submitted = client.post("/v1/jobs", json=TSP, headers=AUTH_A)
    assert submitted.status_code == 202, submitted.text
    job_id = submitted.json()["id"]
    job = client.app.state.jobs.store.get(job_id)  # type: ignore[attr-defined]
    assert job.owner == key_owner(KEY_A)  # a hash, never the key
    for method, path in (("GET", ""), ("GET", "/solution"), ("GET", "/progress"),
                         ("GET", "/events"), ("DELETE", "")):
        r = client.request(method, f"/v1/jobs/{job_id}{path}", headers=AUTH_B)
        assert_problem(r, 404, "job_id")  # as a job that does not exist: no 403 to probe
    assert client.get("/v1/jobs", headers=AUTH_B).json()["total"] == 0
    mine = client.get("/v1/jobs", headers=AUTH_A).json()
    assert [j["id"] for j in mine["jobs"]] == [job_id]
    assert client.get(f"/v1/jobs/{job_id}", headers=AUTH_A).status_code == 200
    assert client.delete(f"/v1/jobs/{job_id}", headers=AUTH_A).status_code == 202


def test_a_key_sees_and_cancels_only_its_own_batches(make_client: AppFactory) -> None:
    client = make_client(api_keys=f"{KEY_A},{KEY_B}")
    square = ("square.json", json.dumps({"problem": "tsp", "coords": TSP["instance"]["coords"]
                                         }).encode())
    r = client.post("/v1/batches", files=[("files", square)],
                    data={"solver": "nearest_neighbor", "time_limit": "1"}, headers=AUTH_A)
    assert r.status_code == 202, r.text
    batch_id = r.json()["id"]
    assert client.app.state.jobs.store.batch(batch_id)["owner"] == key_owner(KEY_A)  # type: ignore[attr-defined]
    for method, path in (("GET", ""), ("GET", "/results.zip"), ("DELETE", "")):
        assert_problem(client.request(method, f"/v1/batches/{batch_id}{path}", headers=AUTH_B),
                       404, "batch_id")
    assert client.get(f"/v1/jobs?batch_id={batch_id}", headers=AUTH_B).json()["total"] == 0
    assert client.get(f"/v1/batches/{batch_id}", headers=AUTH_A).status_code == 200
    assert client.delete(f"/v1/batches/{batch_id}", headers=AUTH_A).status_code == 202


def test_a_key_sees_only_its_own_scheduling_sessions(make_client: AppFactory) -> None:
    client = make_client(api_keys=f"{KEY_A},{KEY_B}")
    r = client.post("/v1/scheduling/sessions", json={"pool": "1x2", "policy": "heft"},
                    headers=AUTH_A)
    assert r.status_code == 201, r.text
    session = f"/v1/scheduling/sessions/{r.json()['id']}"
    assert_problem(client.get(session, headers=AUTH_B), 404, "session_id")
    assert_problem(client.post(f"{session}/events", json={"events": []}, headers=AUTH_B),
                   404, "session_id")
    assert_problem(client.delete(session, headers=AUTH_B), 404, "session_id")
    assert client.get(session, headers=AUTH_A).status_code == 200
    assert client.delete(session, headers=AUTH_A).status_code == 204


def test_without_keys_every_client_sees_every_job(make_client: AppFactory) -> None:
    client = make_client()
    job_id = client.post("/v1/jobs", json=TSP).json()["id"]
    # the owner is the address (for its quotas), and nothing is hidden
    assert client.app.state.jobs.store.get(job_id).owner == address_owner("testclient")  # type: ignore[attr-defined]
    assert client.get("/v1/jobs").json()["total"] == 1
    assert client.get(f"/v1/jobs/{job_id}", headers=AUTH_A).status_code == 200
    assert "securitySchemes" not in client.get("/openapi.json").json()["components"]


def test_the_host_check_on_loopback(make_client: AppFactory) -> None:
    client = make_client(base_url="http://127.0.0.1:8000", allowed_hosts="solver.lan")
    for host in ("127.0.0.1:8000", "localhost", "LOCALHOST:9", "[::1]:8000", "solver.lan:80"):
        assert client.get("/healthz", headers={"host": host}).status_code == 200, host
    for host in ("attacker.example", "attacker.example:8000", "127.0.0.1.nip.io"):
        r = client.get("/v1/solvers", headers={"host": host})
        assert_problem(r, 421, "Host")
        assert "DNS rebinding" in r.json()["detail"]
    # a server bound to another address has no name to guard (its keys guard it)
    remote = make_client(base_url="http://10.1.2.3:8000")
    assert remote.get("/healthz", headers={"host": "cosolve.example"}).status_code == 200
    assert host_name("[::1]:8000") == "[::1]" and host_name("Example.COM.") == "example.com"


def test_cors_is_off_unless_origins_are_set(make_client: AppFactory) -> None:
    preflight = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization,content-type"}
    closed = make_client()
    r = closed.get("/v1/solvers", headers={"Origin": "https://app.example"})
    assert "access-control-allow-origin" not in r.headers
    assert "access-control-allow-origin" not in closed.options(
        "/v1/jobs", headers=preflight).headers
    opened = make_client(cors_origins="https://app.example", api_keys=KEY_A)
    r = opened.options("/v1/jobs", headers=preflight)  # a preflight carries no key
    assert r.status_code == 200
    assert r.headers["access-control-allow-origin"] == "https://app.example"
    assert "authorization" in r.headers["access-control-allow-headers"].lower()
    r = opened.get("/v1/solvers", headers={"Origin": "https://app.example", **AUTH_A})
    assert r.headers["access-control-allow-origin"] == "https://app.example"
    other = opened.get("/v1/solvers", headers={"Origin": "https://evil.example", **AUTH_A})
    assert "access-control-allow-origin" not in other.headers
