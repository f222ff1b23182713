"""Several kick searches at once (``parallel.run_threads``): each keeps every customer and
the capacity, the deadline holds, reports only fall, a cancel keeps the best, and ils's
setting picks one search or several."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from solvers.contract import Budget
from solvers.routing.generate import random_cvrp
from solvers.routing.problem import CVRPInstance
from tests.solvers.routing.classical.test_descent import _random_plan, _valid


@pytest.fixture(scope="module", autouse=True)
def _compiled() -> None:
    from solvers.routing.classical.warmup import warm_up

    warm_up()  # numba compiles on first use: not inside the timed parts


def _instance(seed: int) -> CVRPInstance:
    xy, dem, cap = random_cvrp(np.random.default_rng(seed), 150)
    return CVRPInstance(coords=xy, demands=dem, capacity=cap)


def test_two_searches_return_a_valid_shorter_plan_within_the_deadline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two threads, exchanging every slice: the plan holds every customer once within the
    capacity, is shorter than the start, both searches kicked, the shortest lengths heard
    never rise and the deadline holds."""
    from solvers.routing.classical import kicks, parallel

    monkeypatch.setattr(parallel, "EXCHANGE_SLICES", 1)
    searches: list[kicks._Search] = []
    real = parallel.run_threads

    def spy(first: kicks._Search, *args: object) -> tuple[kicks._Search, int]:
        searches.append(first)
        return real(first, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(kicks, "run_threads", spy)
    inst = _instance(0)
    plan = _random_plan(inst, np.random.default_rng(0))
    heard: list[float] = []
    t0 = time.perf_counter()
    routes, kept = kicks.cvrp_kicks(inst, plan, t0 + 0.4, 0, threads=2, slice_seconds=0.05,
                                    on_slice=lambda length, _: heard.append(length))
    assert time.perf_counter() - t0 < 0.4 + 0.1
    assert searches and kept > 0 and _valid(inst, routes)
    assert inst.cost(routes) < inst.cost(plan)
    assert len(heard) >= 3 and heard == sorted(heard, reverse=True)
    assert inst.cost(routes) <= heard[-1] + 1e-6


def cancelled_after(seconds: float, seed: int) -> None:
    """Two searches told to run 30 s and cancelled after ``seconds``: they stop within 2 s
    and return a valid plan shorter than the start (also ``test_regions``'s check)."""
    from solvers.routing.classical.kicks import cvrp_kicks

    inst = _instance(seed)
    plan = _random_plan(inst, np.random.default_rng(seed))
    stop = threading.Event()
    timer = threading.Timer(seconds, stop.set)
    timer.start()
    t0 = time.perf_counter()
    routes, _ = cvrp_kicks(inst, plan, t0 + 30.0, 1, threads=2, slice_seconds=0.05,
                           cancelled=stop.is_set)
    assert time.perf_counter() - t0 < 2.0
    assert _valid(inst, routes) and inst.cost(routes) < inst.cost(plan)


def test_a_cancel_stops_the_searches_and_keeps_the_best() -> None:
    cancelled_after(0.2, 1)


@pytest.mark.parametrize(("setting", "threads"), [("1", 1), ("2", 2)])
def test_ils_runs_as_many_searches_as_its_setting(monkeypatch: pytest.MonkeyPatch,
                                                  setting: str, threads: int) -> None:
    from solvers.routing.classical.ils import ILSSolver

    monkeypatch.setenv("COSOLVE_ILS_THREADS", setting)
    inst = _instance(2)
    sol = ILSSolver().solve(inst, Budget(0.5, 0))
    assert sol.feasible and sol.stats["threads"] == threads
    assert ILSSolver(threads=1).solve(inst, Budget(0.3, 0)).stats["threads"] == 1


def test_the_setting_is_checked() -> None:
    from solvers.tuning import TUNING, tuning_problem

    assert "COSOLVE_ILS_THREADS" in TUNING
    assert tuning_problem("COSOLVE_ILS_THREADS", "auto") is None
    assert tuning_problem("COSOLVE_ILS_THREADS", "3") is None
    assert "COSOLVE_ILS_THREADS" in (tuning_problem("COSOLVE_ILS_THREADS", "0") or "")
    assert "COSOLVE_ILS_THREADS" in (tuning_problem("COSOLVE_ILS_THREADS", "two") or "")


def test_a_search_adopts_a_plan_of_another_number_of_route_slots() -> None:
    """A search held to fewer route slots and one with more exchange plans: the adopting
    search's arrays are rebuilt (spare slots empty), its length is the plan's, and it kicks
    on from there keeping every customer and the capacity."""
    from solvers.routing.classical import kicks, moves

    inst = _instance(3)
    plan = moves.Plan(inst, _random_plan(inst, np.random.default_rng(3)), moves.NEIGHBOURS)
    customers = np.arange(1, inst.n, dtype=np.int64)
    wide = kicks._Search(plan, customers, np.random.default_rng(0), 20, 10.0, (1.0, 0.01),
                         time.perf_counter(), 1.0)
    narrow = wide.twin(np.random.default_rng(1), plan.routes())
    wider = wide.twin(np.random.default_rng(2), [*plan.routes(), [], []])
    assert narrow.plan.count == plan.count and wider.plan.count == plan.count + 2
    for search in (narrow, wider):
        for _ in range(20):
            search.step(time.perf_counter())
    narrow.adopt(wider)  # its plan fits narrow's slots once the empty ones are dropped
    for search in (narrow, wider):
        p = search.plan
        assert _valid(inst, p.routes())
        assert moves.plan_length(p.succ, p.n, p.count, p.xy, p.mat, p.conv, p.depot) == (
            pytest.approx(search.total))
    assert narrow.total == pytest.approx(wider.best_total)
    assert narrow.best_routes() == wider.best_routes() <= narrow.plan.count
    wider.adopt(narrow)
    assert wider.plan.count == plan.count + 2 and _valid(inst, wider.plan.routes())
    for _ in range(20):
        narrow.step(time.perf_counter())
    assert _valid(inst, narrow.finish())


def test_fewer_routes_reaches_the_fewest_the_demand_allows() -> None:
    """ils's second search starts from as few routes as the demand allows; a plan already
    that small gets None."""
    import math

    from solvers.routing.classical.ils import _fewer_routes

    inst = _instance(4)
    fewest = math.ceil(sum(inst.demands) / inst.capacity)
    halves = [half for r in _random_plan(inst, np.random.default_rng(4))
              for half in (r[:len(r) // 2], r[len(r) // 2:]) if half]
    assert len(halves) > fewest
    fewer = _fewer_routes(inst, time.perf_counter() + 5.0, 0)
    out = fewer(halves)
    assert out is not None and len(out) <= fewest and _valid(inst, out)
    assert fewer(out) is None


def test_twins_copy_the_plan_as_it_stood_not_as_it_is_kicked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The twins are made on the pool's threads while the first search kicks its arrays in
    place, GIL released: a twin that copied them then got a torn plan (a customer in no
    route, or a route closed on its own start), and its kicks looped forever. Here the first
    search's plan is torn for a moment in every step; each twin must still hold every
    customer."""
    from solvers.routing.classical import kicks, moves, parallel

    inst = _instance(5)
    plan = moves.Plan(inst, _random_plan(inst, np.random.default_rng(5)), moves.NEIGHBOURS)
    first = kicks._Search(plan, np.arange(1, inst.n, dtype=np.int64),
                          np.random.default_rng(0), 20, 10.0, (1.0, 0.01),
                          time.perf_counter(), 1.0)
    kick = first.step
    starts = np.arange(plan.n, plan.n + plan.count)

    def tearing_step(now: float) -> None:
        succ = first.plan.succ
        held = succ[starts].copy()
        succ[starts] = starts + plan.count  # every route empty, as a kick might leave it
        time.sleep(0.02)  # the pool's threads run meanwhile, as beside a numba kernel
        succ[starts] = held
        kick(now)

    first.step = tearing_step  # type: ignore[method-assign]
    whole: list[bool] = []
    real_twin = kicks._Search.twin

    def checked_twin(self: kicks._Search, *args: object) -> kicks._Search:
        time.sleep(0.005)  # made once the first search is inside a step
        twin = real_twin(self, *args)  # type: ignore[arg-type]
        whole.append(_valid(inst, twin.plan.routes()))
        assert whole[-1], "a twin copied a torn plan"  # raised here, not left to loop
        return twin

    monkeypatch.setattr(kicks._Search, "twin", checked_twin)
    best, _ = parallel.run_threads(first, 3, 0, time.perf_counter() + 0.3, 0.05, None, None)
    assert whole == [True, True]
    assert _valid(inst, best.finish())
