"""The port opens at once and the solvers warm up behind it: /healthz answers, /readyz says
what is left, solving requests get a 503 with Retry-After until their family is warm, jobs are
accepted meanwhile. A real cold start (numba's cache empty) is measured under heavy."""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
from fastapi.testclient import TestClient

import app.main as app_main
from app.main import create_app
from app.settings import Settings
from app.startup import WarmItem, WarmUp, named_solvers, solving_family, warm_up_plan
from solvers.catalog import all_specs
from tests.app.conftest import REPO, _free_port, _python
from tests.app.helpers import assert_problem

SQUARE = [[0.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 0.0]]


class _Gate:
    """A warm-up item that ends when the test says so (or fails, if told to)."""

    def __init__(self, fail: bool = False) -> None:
        self.release = threading.Event()
        self.fail = fail

    def __call__(self) -> None:
        assert self.release.wait(30), "never released"
        if self.fail:
            raise RuntimeError("weights unreadable")


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[TestClient, _Gate]]:
    """An app whose routing warm-up waits for the test; flow and scheduling are warm."""
    gate = _Gate()

    def plan(specs: object, device: str, processes: int = 0) -> WarmUp:
        return WarmUp([WarmItem("flowy", "flow", lambda: None),
                       WarmItem("slow_router", "routing", gate),
                       WarmItem("goodrl", "scheduling", lambda: None)])

    monkeypatch.setattr(app_main, "warm_up_plan", plan)
    with TestClient(create_app(Settings(data_dir=tmp_path))) as client:
        yield client, gate
        gate.release.set()


def test_solving_families() -> None:
    assert solving_family("POST", "/v1/routing/cvrp/solve") == "routing"
    assert solving_family("POST", "/v1/routing/tsp/compare") == "routing"
    assert solving_family("POST", "/v1/flow/min-cost") == "flow"
    assert solving_family("POST", "/v1/scheduling/simulate") == "scheduling"
    assert solving_family("POST", "/v1/scheduling/sessions/abc/events") == "scheduling"
    # job submissions are queued at once; reads never wait
    assert solving_family("POST", "/v1/scheduling/simulate/jobs") is None
    assert solving_family("POST", "/v1/jobs") is None
    assert solving_family("GET", "/v1/routing/tsp/solve") is None
    assert solving_family("GET", "/v1/solvers") is None


def test_the_solvers_a_request_names() -> None:
    assert named_solvers(b'{"instance": {}, "solver": "ils"}') == ["ils"]
    assert named_solvers(b'{"solvers": ["ortools", "pyvrp"]}') == ["ortools", "pyvrp"]
    for none_named in (b'{"instance": {}}', b'{"solvers": []}', b'{"solver": 3}', b"[1]",
                       b"not json", b'{"solvers": ["ils", 3]}'):
        assert named_solvers(none_named) is None, none_named


def test_the_quick_families_warm_first() -> None:
    """Flow and scheduling warm in seconds, routing's kernels for minutes on a fresh install:
    flow solves and simulations are not held behind them."""
    plan = warm_up_plan(all_specs(), "cpu")
    families = [item.family for item in plan.items]
    assert families.index("routing") > max(families.index("flow"),
                                           families.index("scheduling"))
    assert families[families.index("routing"):] == ["routing"] * families.count("routing")


def test_probes_and_solves_while_warming_then_ready(held: tuple[TestClient, _Gate]) -> None:
    client, gate = held
    assert client.get("/healthz").status_code == 200
    ready = client.get("/readyz")
    body = assert_problem(ready, 503)
    # in order: the one warming first, then those still to warm
    assert body["type"].endswith("warming-up") and body["warming"] == ["slow_router", "goodrl"]
    assert "warming slow_router" in body["detail"] and "still to warm: goodrl" in body["detail"]
    assert body["warming_seconds"] >= 0
    assert ready.headers["retry-after"] == "5"
    # a request naming no solver waits for its family; one naming a warming solver for it
    solve = client.post("/v1/routing/tsp/solve", json={"instance": {"coords": SQUARE}})
    refused = assert_problem(solve, 503)
    assert refused["type"].endswith("warming-up") and solve.headers["retry-after"] == "5"
    assert "routing" in refused["detail"] and refused["warming"] == ["slow_router"]
    for body in ({"solver": "slow_router"}, {"solvers": ["nearest_neighbor", "slow_router"]},
                 {"solver": "auto"}):
        path = "/v1/routing/tsp/" + ("compare" if "solvers" in body else "solve")
        named = client.post(path, json={"instance": {"coords": SQUARE}, **body})
        assert assert_problem(named, 503)["warming"] == ["slow_router"], body
    upload = client.post("/v1/routing/tsp/solve", files={"file": ("a.tsp", b"x")},
                         data={"solver": "nearest_neighbor"})
    assert assert_problem(upload, 503)["warming"] == ["slow_router"]  # uploads: the family
    # a solver that is warm is served at once, its body read by the gate and handed on
    warm_one = client.post("/v1/routing/tsp/solve", json={"instance": {"coords": SQUARE},
                                                          "solver": "nearest_neighbor"})
    assert warm_one.status_code == 200 and warm_one.json()["solver"] == "nearest_neighbor"
    # a warm family is served; a job is accepted and queued
    flow = client.post("/v1/flow/min-cost", json={"network": {
        "nodes": [1, 2], "supplies": [1, -1], "arcs": [{"tail": 1, "head": 2, "cost": 2}]}})
    assert flow.status_code == 200 and flow.json()["cost"] == 2, flow.text
    job = client.post("/v1/jobs", json={"problem": "tsp", "solver": "nearest_neighbor",
                                        "time_limit": 1, "instance": {"coords": SQUARE}})
    assert job.status_code == 202, job.text
    metrics = client.get("/metrics").text
    assert "cosolve_warm_up_done 0.0" in metrics
    assert 'cosolve_warm_up_items{state="warming"} 1.0' in metrics

    gate.release.set()
    assert client.app.state.warm_up.wait(10)  # type: ignore[attr-defined]
    assert client.get("/readyz").status_code == 200
    solved = client.post("/v1/routing/tsp/solve", json={"instance": {"coords": SQUARE},
                                                        "solver": "nearest_neighbor"})
    assert solved.status_code == 200, solved.text
    assert "cosolve_warm_up_done 1.0" in client.get("/metrics").text


def test_a_failed_warm_up_is_not_ready_but_solves_go_on(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    gate = _Gate(fail=True)
    gate.release.set()
    monkeypatch.setattr(app_main, "warm_up_plan",
                        lambda specs, device, processes=0: WarmUp(
                            [WarmItem("broken", "routing", gate)]))
    with TestClient(create_app(Settings(data_dir=tmp_path))) as client:
        assert client.app.state.warm_up.wait(10)  # type: ignore[attr-defined]
        body = assert_problem(client.get("/readyz"), 503)
        assert body["type"].endswith("not-ready")
        assert "broken: RuntimeError: weights unreadable" in body["detail"]
        solved = client.post("/v1/routing/tsp/solve", json={"instance": {"coords": SQUARE},
                                                            "solver": "nearest_neighbor"})
        assert solved.status_code == 200, solved.text


@pytest.mark.heavy
def test_cold_start_opens_the_port_at_once(tmp_path: Path) -> None:
    """A fresh numba cache (a temporary NUMBA_CACHE_DIR): the port answers within seconds,
    while the kernels still compile: /readyz says warming-up with what is left, and a
    routing solve gets 503 with Retry-After (the time to ready is benchmarks.startup's)."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("COSOLVE_")}
    env.update(COSOLVE_DATA_DIR=str(tmp_path / "data"), NUMBA_CACHE_DIR=str(tmp_path / "nb"))
    url = f"http://127.0.0.1:{port}"
    children: list[psutil.Process] = []
    with tempfile.TemporaryFile(mode="w+") as log:
        started = time.monotonic()
        proc = subprocess.Popen([_python(), "-m", "uvicorn", "app.main:app", "--port",
                                 str(port)], cwd=REPO, env=env, stdout=log,
                                stderr=subprocess.STDOUT)
        try:
            opened = _poll(url + "/healthz", started, 60, proc)
            warming = httpx.get(url + "/readyz", timeout=10)
            solve = httpx.post(url + "/v1/routing/cvrp/solve", timeout=10, json={
                "instance": {"coords": SQUARE, "demands": [0, 1, 1, 1], "capacity": 2}})
            named = _poll_solve(url, started, proc)  # ortools: warm within seconds
            # numba compiles some kernels in a child of the server meanwhile
            children = psutil.Process(proc.pid).children(recursive=True)
        finally:
            proc.terminate()
            proc.wait(timeout=20)
        # the server's stop ends the warm-up and that child with it (it compiled on, alone)
        _gone, alive = psutil.wait_procs(children, timeout=20)
        for child in alive:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
        log.seek(0)
        print(f"port open after {opened:.1f} s\n{log.read()}")
    assert not alive, [c.cmdline() for c in alive]
    assert children, "no compiling child: was the cache not cold?"
    assert opened < 30
    body = assert_problem(warming, 503)
    assert body["type"].endswith("warming-up") and "ils" in body["warming"], body
    assert solve.status_code == 503 and solve.headers["retry-after"] == "5"
    assert named.json()["solver"] == "ortools", named.text


def _poll_solve(url: str, started: float, proc: subprocess.Popen[str]) -> httpx.Response:
    """A TSP solve naming ortools, until it is no longer refused as warming (the ils kernels
    still compile meanwhile: the test checks /readyz is still 503 after)."""
    while time.monotonic() - started < 120:
        assert proc.poll() is None, "the server exited"
        answer = httpx.post(url + "/v1/routing/tsp/solve", timeout=30, json={
            "instance": {"coords": SQUARE}, "solver": "ortools", "time_limit": 1})
        if answer.status_code != 503:
            assert answer.status_code == 200, answer.text
            assert httpx.get(url + "/readyz", timeout=10).status_code == 503
            return answer
        time.sleep(0.5)
    raise AssertionError("an ortools solve was refused for 120 s")


def _poll(url: str, started: float, within: float, proc: subprocess.Popen[str]) -> float:
    while time.monotonic() - started < within:
        assert proc.poll() is None, "the server exited"
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return time.monotonic() - started
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} did not answer 200 within {within} s")
