"""In-request OR-Tools solves in child processes (``solvers.routing.isolation``): the same
checked answer, progress and cancel as in-process, the interpreter lock left free for the
caller's other threads, and a child that dies replaced."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from solvers.contract import Budget, ProgressEvent
from solvers.errors import InstanceError, NoSolutionError
from solvers.routing import isolation
from solvers.routing.baselines.ortools import ORToolsSolver
from solvers.routing.problem import TSPInstance
from solvers.routing.solve import solve


@pytest.fixture(scope="module")
def pool() -> Iterator[isolation.ChildPool]:
    isolation.start(1, [ORToolsSolver()])
    assert isolation._POOL is not None
    yield isolation._POOL
    isolation.stop()


def _tsp(n: int, seed: int) -> TSPInstance:
    return TSPInstance(coords=np.random.default_rng(seed).random((n, 2)) * 1000)


def _ticks_during(work: object) -> int:
    """How often a thread sleeping 1 ms at a time woke while ``work()`` ran: a thread
    holding the interpreter lock lets it wake only every few milliseconds."""
    stop = threading.Event()
    ticks = [0]

    def tick() -> None:
        while not stop.is_set():
            time.sleep(0.001)
            ticks[0] += 1

    thread = threading.Thread(target=tick)
    thread.start()
    try:
        work()  # type: ignore[operator]
    finally:
        stop.set()
        thread.join()
    return ticks[0]


def test_a_pooled_solve_is_checked_reports_progress_and_frees_the_lock(
        pool: isolation.ChildPool) -> None:
    """The same solver's checked answer and its progress events come back from the child,
    and while it searches, a thread of the caller's runs several times as often as beside
    the same search in-process (measured: about 1,000 against 200 wakes in its second)."""
    inst = _tsp(60, 0)
    events: list[ProgressEvent] = []
    answer: list[object] = []

    def pooled() -> None:
        answer.append(solve(inst, "ortools", Budget(1.0, seed=0), progress=events.append))

    def in_process() -> None:
        isolation._POOL = None  # as a CLI or a job worker runs it
        try:
            solve(inst, "ortools", Budget(1.0, seed=0))
        finally:
            isolation._POOL = pool

    beside_child = _ticks_during(pooled)
    beside_search = _ticks_during(in_process)
    sol = answer[0]
    assert sol.solver == "ortools" and sol.feasible  # type: ignore[attr-defined]
    assert sol.cost == pytest.approx(inst.cost(sol.routes))  # type: ignore[attr-defined]
    assert sorted(sol.routes[0]) == list(range(60))  # type: ignore[attr-defined]
    assert events and all(e.solver == "ortools" for e in events)
    assert beside_child >= 3 * beside_search, (beside_child, beside_search)


def test_a_cancel_reaches_the_child_and_keeps_its_best(pool: isolation.ChildPool) -> None:
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    t0 = time.perf_counter()
    sol = solve(_tsp(80, 1), "ortools", Budget(20.0, cancel=cancel))
    assert time.perf_counter() - t0 < 3.0
    assert sol.feasible and sorted(sol.routes[0]) == list(range(80))


def test_a_child_killed_mid_solve_is_an_error_and_replaced(pool: isolation.ChildPool) -> None:
    pid = pool.workers[0].process.pid
    assert pid is not None
    threading.Timer(0.3, os.kill, (pid, signal.SIGKILL)).start()
    with pytest.raises(isolation.ChildDiedError, match="exit code -9"):
        solve(_tsp(60, 2), "ortools", Budget(5.0))
    assert pool.workers[0].process.pid != pid  # a replacement is starting
    sol = solve(_tsp(30, 3), "ortools", Budget(0.3))  # here, or in it once it is up
    assert sol.feasible
    deadline = time.perf_counter() + 60
    while pool.idle.qsize() < 1 and time.perf_counter() < deadline:
        time.sleep(0.1)
    assert pool.idle.qsize() == 1


def test_with_every_child_busy_a_solve_runs_here_rather_than_wait(
        pool: isolation.ChildPool) -> None:
    """The one child holds a 3 s solve; a 0.2 s solve beside it answers at once, from this
    process, instead of waiting those seconds for the child."""
    long = threading.Thread(target=solve, args=(_tsp(60, 4), "ortools", Budget(3.0)))
    long.start()
    while pool.idle.qsize():
        time.sleep(0.01)
    t0 = time.perf_counter()
    sol = solve(_tsp(30, 5), "ortools", Budget(0.2))
    assert time.perf_counter() - t0 < 1.5 and sol.feasible
    assert pool.idle.qsize() == 0  # the child was still busy: this one ran here
    long.join()


@pytest.mark.parametrize("error", [InstanceError("demands[3]", "must be at least 0"),
                                   NoSolutionError("no plan within the fleet")])
def test_a_solver_error_comes_back_as_itself(error: Exception) -> None:
    """Our errors take other constructor arguments than their args, which pickle would
    pass: they travel as plain data and come back with their class, words and field."""
    back = isolation._rebuilt_error(*isolation._error_state(error))
    assert type(back) is type(error) and str(back) == str(error)
    assert getattr(back, "field", None) == getattr(error, "field", None)


def test_only_the_pooled_solvers_and_only_with_children_go_there(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolation, "_POOL", None)
    isolation.start(0, [ORToolsSolver()])  # COSOLVE_SOLVER_PROCESSES=0
    assert isolation.pool_for("ortools") is None
    monkeypatch.setattr(isolation, "_POOL", object.__new__(isolation.ChildPool))
    isolation._POOL.solvers = frozenset({"ortools"})  # type: ignore[union-attr]
    assert isolation.pool_for("ortools") is isolation._POOL
    assert isolation.pool_for("ils") is None


def test_a_start_cut_short_leaves_no_child_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    """A start that fails (here: too short a wait for the first child; in the server, a
    stop during the warm-up) stops the children it had started, not only the one that
    failed."""
    monkeypatch.setattr(isolation, "START_TIMEOUT_S", 0.05)
    made: list[isolation._Worker] = []
    started = isolation._Worker.__init__

    def record(self: isolation._Worker, *args: object) -> None:
        started(self, *args)  # type: ignore[arg-type]
        made.append(self)

    monkeypatch.setattr(isolation._Worker, "__init__", record)
    with pytest.raises(RuntimeError, match="did not start"):
        isolation.ChildPool(2, [ORToolsSolver()])
    assert len(made) == 2
    assert not any(worker.process.is_alive() for worker in made)
