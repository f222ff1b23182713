"""app.quotas: per-client limits (solves at once, jobs, solver seconds per hour) answer 429
with Retry-After, and a free solving thread goes to the client with the fewest running."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from fastapi.testclient import TestClient

from app.errors import ApiError
from app.quotas import FairUse
from app.security import Principal
from jobs.settings import Settings
from jobs.store import JobStore
from tests.app.helpers import assert_problem
from tests.app.test_security import AUTH_A, AUTH_B, KEY_A, KEY_B, TSP, make_client

__all__ = ["make_client"]  # the fixture, shared with the key tests

AppFactory = Callable[..., TestClient]
SOLVE = {"instance": TSP["instance"], "solver": "nearest_neighbor", "time_limit": 1}


def _fair(threads: int, **settings: float) -> FairUse:
    return FairUse(Settings(**settings), threads)  # type: ignore[arg-type]


def test_a_free_thread_goes_to_the_client_with_fewest_running() -> None:
    fair = _fair(2, max_client_solves=10, max_client_running_solves=10)
    order: list[str] = []

    async def main() -> None:
        await fair.acquire("a")
        await fair.acquire("a")  # a holds both threads

        async def wait(owner: str) -> None:
            await fair.acquire(owner)
            order.append(owner)

        async with anyio.create_task_group() as tg:
            for owner in ("a", "a", "b"):  # a's two queued first, then b's one
                tg.start_soon(wait, owner)
                await anyio.sleep(0.01)
            assert fair.snapshot() == {"busy": 2, "waiting": 3}
            fair.release("a")  # b has none running: it goes first, ahead of a's queue
            await anyio.sleep(0.01)
            assert order == ["b"]
            fair.release("a")
            fair.release("b")
        assert order == ["b", "a", "a"]
        fair.release("a")
        fair.release("a")
        assert fair.snapshot() == {"busy": 0, "waiting": 0}

    anyio.run(main)


def test_a_client_runs_its_share_and_the_rest_waits_in_order() -> None:
    fair = _fair(10, max_client_solves=5, max_client_running_solves=2)
    started: list[int] = []

    async def main() -> None:
        async def solve(i: int) -> None:
            await fair.acquire("a")
            started.append(i)

        async with anyio.create_task_group() as tg:
            for i in range(4):
                tg.start_soon(solve, i)
                await anyio.sleep(0.01)
            assert started == [0, 1]  # threads are free, but a runs its share only
            await fair.acquire("b")  # another client starts at once
            assert fair.snapshot() == {"busy": 3, "waiting": 2}
            fair.release("a")
            await anyio.sleep(0.01)
            assert started == [0, 1, 2]
            fair.release("b")
            fair.release("a")
        assert started == [0, 1, 2, 3]

    anyio.run(main)


def test_past_its_solves_a_client_gets_a_429_and_a_cancelled_wait_gives_its_turn_back() -> None:
    fair = _fair(1, max_client_solves=2)

    async def main() -> None:
        await fair.acquire("a")
        with anyio.move_on_after(0.05):  # waits for the busy thread, then its client leaves
            await fair.acquire("a")
        assert fair.snapshot() == {"busy": 1, "waiting": 0}
        async with anyio.create_task_group() as tg:
            tg.start_soon(fair.acquire, "a")
            await anyio.sleep(0.01)
            with pytest.raises(ApiError) as info:
                await fair.acquire("a")  # a third at once
            assert info.value.status == 429 and info.value.headers["Retry-After"]
            assert info.value.extra == {"active": 2, "limit": 2}
            fair.release("a")
        fair.release("a")

    anyio.run(main)


def test_solver_seconds_of_the_last_hour_with_jobs(tmp_path: Path) -> None:
    fair = _fair(4, max_client_solver_s_per_hour=10)
    store = JobStore(tmp_path)
    a, b = Principal("key:a", keyed=True), Principal("key:b", keyed=True)
    fair.charge("key:a", 6.0)
    fair.check_seconds(a, store)  # 6 of 10
    job = store.create(problem="tsp", solver="ortools", time_limit=5, seed=0,
                       filename="a.json", data=b"{}", nodes=3, owner="key:a")
    store.mark_running(job.id, 0)
    store.report_progress(job.id, 0, 4.5, 1, None, "")
    with pytest.raises(ApiError) as info:
        fair.check_seconds(a, store)  # 6 in requests + 4.5 in a running job
    assert info.value.status == 429 and info.value.kind == "solver-time-quota"
    # the solve's 6 s leave the window in an hour, the running job's only when it ends
    assert 3500 <= int(info.value.headers["Retry-After"]) <= 3600
    fair.check_seconds(b, store)  # another client is untouched


def test_the_api_answers_429_past_a_clients_solver_seconds(make_client: AppFactory) -> None:
    client = make_client(api_keys=f"{KEY_A},{KEY_B}", max_client_solver_s_per_hour=1e-6)
    assert client.post("/v1/routing/tsp/solve", json=SOLVE, headers=AUTH_A).status_code == 200
    refused = client.post("/v1/routing/tsp/solve", json=SOLVE, headers=AUTH_A)
    body = assert_problem(refused, 429)
    assert "COSOLVE_MAX_CLIENT_SOLVER_S_PER_HOUR" in body["detail"]
    assert int(refused.headers["retry-after"]) > 0
    assert_problem(client.post("/v1/jobs", json=TSP, headers=AUTH_A), 429)  # jobs too
    assert client.post("/v1/routing/tsp/solve", json=SOLVE, headers=AUTH_B).status_code == 200


def test_the_api_answers_429_past_a_clients_jobs(make_client: AppFactory) -> None:
    client = make_client(api_keys=f"{KEY_A},{KEY_B}", max_client_jobs=1)
    files = [("files", (f"s{i}.json", json.dumps({"problem": "tsp",
                                                    "coords": TSP["instance"]["coords"]})))
             for i in range(2)]
    refused = client.post("/v1/batches", files=files, data={"solver": "nearest_neighbor"},
                          headers=AUTH_A)
    body = assert_problem(refused, 429)
    assert "COSOLVE_MAX_CLIENT_JOBS" in body["detail"] and body["limit"] == 1
    assert refused.headers["retry-after"] == "30"
    ok = client.post("/v1/batches", files=files[:1], data={"solver": "nearest_neighbor"},
                     headers=AUTH_B)
    assert ok.status_code == 202, ok.text
    deadline = time.monotonic() + 60  # b's one job ends; b may then submit another
    while client.app.state.jobs.store.count_active() and time.monotonic() < deadline:  # type: ignore[attr-defined]
        time.sleep(0.1)
    assert client.post("/v1/jobs", json=TSP, headers=AUTH_B).status_code == 202


def test_a_client_past_its_open_sessions_gets_a_429_others_do_not(
        make_client: AppFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, only the server-wide cap (256) held: one key could open every session and
    lock the others out for the hour an idle session takes to expire."""
    from app.routers import scheduling

    client = make_client(api_keys=f"{KEY_A},{KEY_B}", max_client_sessions=2)
    sessions = "/v1/scheduling/sessions"
    made: list[tuple[str, dict[str, str]]] = []
    try:
        for _ in range(2):
            r = client.post(sessions, json={"pool": "1x2"}, headers=AUTH_A)
            assert r.status_code == 201, r.text
            made.append((r.headers["location"], AUTH_A))
        refused = client.post(sessions, json={"pool": "1x2"}, headers=AUTH_A)
        body = assert_problem(refused, 429)
        assert "COSOLVE_MAX_CLIENT_SESSIONS" in body["detail"] and body["limit"] == 2
        wait = int(refused.headers["retry-after"])
        assert 0 < wait <= scheduling.SESSION_IDLE_S and f"expires in {wait} s" in body["detail"]
        r = client.post(sessions, json={"pool": "1x2"}, headers=AUTH_B)  # b is untouched
        assert r.status_code == 201, r.text
        made.append((r.headers["location"], AUTH_B))
        # the server-wide cap still holds, whoever asks
        monkeypatch.setattr(scheduling, "MAX_SESSIONS", len(scheduling._sessions))
        body = assert_problem(client.post(sessions, json={"pool": "1x2"}, headers=AUTH_B), 429)
        assert "sessions are open" in body["detail"] and "CLIENT" not in body["detail"]
        monkeypatch.undo()
        location, auth = made.pop(0)  # a ends one: a may open another
        assert client.delete(location, headers=auth).status_code == 204
        r = client.post(sessions, json={"pool": "1x2"}, headers=AUTH_A)
        assert r.status_code == 201, r.text
        made.append((r.headers["location"], AUTH_A))
    finally:
        for location, auth in made:
            client.delete(location, headers=auth)


def test_without_keys_the_session_cap_is_per_address(make_client: AppFactory) -> None:
    client = make_client(max_client_sessions=1)
    r = client.post("/v1/scheduling/sessions", json={"pool": "1x2"})
    assert r.status_code == 201, r.text
    try:
        body = assert_problem(client.post("/v1/scheduling/sessions", json={"pool": "1x2"}), 429)
        assert body["limit"] == 1
    finally:
        client.delete(r.headers["location"])
