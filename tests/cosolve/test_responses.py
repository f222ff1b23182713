"""The client's parts that need no server: the problem details it raises, the server-sent
events it parses, the problem it reads from a file, and the key it sends (a mock transport
stands for the network)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import httpx
import pytest

from cosolve import (
    ApiError,
    Client,
    PayloadTooLargeError,
    RateLimitError,
    ServerUnreachableError,
)
from cosolve.client import _file_problem, _sse

DATA = Path(__file__).resolve().parents[1] / "data"


def _client(handler: object) -> Client:
    return Client("http://cosolve.test", api_key="k-123",
                  transport=httpx.MockTransport(handler))  # type: ignore[arg-type]


def test_problem_details_become_typed_errors() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/v1/jobs":
            return httpx.Response(429, headers={"Retry-After": "30"}, json={
                "type": "urn:cosolve:problem:too-many-jobs", "title": "Too many jobs",
                "status": 429, "detail": "3 jobs queued", "instance": "/v1/jobs"})
        if request.url.path == "/v1/routing/tsp/solve":
            return httpx.Response(413, json={"type": "urn:cosolve:problem:too-large",
                                             "title": "Too large", "status": 413,
                                             "detail": "use a job", "field": "instance",
                                             "nodes": 9000})
        return httpx.Response(502, text="<html><h1>Bad gateway</h1></html>")

    with _client(handler) as api:
        with pytest.raises(RateLimitError) as busy:
            api.submit({"coords": [[0, 0], [1, 0], [0, 1]]}, "ils")
        assert busy.value.retry_after == 30 and busy.value.type.endswith("too-many-jobs")
        assert busy.value.status == 429 and busy.value.detail == "3 jobs queued"
        with pytest.raises(PayloadTooLargeError) as big:
            api.solve({"coords": [[0, 0], [1, 0], [0, 1]]}, "ils")
        assert big.value.field == "instance" and big.value.raw["nodes"] == 9000
        with pytest.raises(ApiError) as proxy:
            api.solvers()
        assert proxy.value.status == 502 and "Bad gateway" in proxy.value.detail
    assert all(r.headers["Authorization"] == "Bearer k-123" for r in seen)
    assert json.loads(seen[0].content)["problem"] == "tsp"  # a job's JSON names its problem


def test_an_unreachable_server_is_said() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with _client(handler) as api, pytest.raises(ServerUnreachableError, match=r"cosolve\.test"):
        api.solvers()


def test_server_sent_events_are_parsed() -> None:
    status = {"id": "j1", "state": "running", "problem": "tsp", "solver": "ils",
              "filename": "a.tsp", "nodes": 5, "time_limit": 1, "seed": 0,
              "created_at": 1.0, "progress": {"best_cost": 12.5}}
    lines = [": keep-alive", "", "event: progress", "id: 7", f"data: {json.dumps(status)}", "",
             "event: shutdown", 'data: {"message":', 'data:  "stopping"}', ""]
    events = list(_sse(iter(lines)))
    assert [e.event for e in events] == ["progress", "shutdown"]
    assert events[0].id == "7" and events[0].status is not None
    assert events[0].status.progress.best_cost == 12.5 and not events[0].status.final
    assert events[1].status is None and events[1].data == {"message": "stopping"}


def test_the_problem_is_read_from_the_file(tmp_path: Path) -> None:
    assert _file_problem("eil51.tsp", (DATA / "eil51.tsp").read_bytes()) == "tsp"
    assert _file_problem("x.vrp", (DATA / "X-n101-k25.vrp").read_bytes()) == "cvrp"
    packed = gzip.compress(b"NAME: a\nTYPE : VRPTW\nDIMENSION: 3\n")
    assert _file_problem("a.vrptw.gz", packed) == "cvrptw"
    assert _file_problem("a.json", b'{"coords": [[0,0]], "demands": [0]}') == "cvrp"
    with pytest.raises(ValueError, match="problem="):
        _file_problem("notes.txt", b"hello")
    with pytest.raises(ValueError, match="ATSP"):
        _file_problem("a.atsp", b"TYPE: ATSP\n")
