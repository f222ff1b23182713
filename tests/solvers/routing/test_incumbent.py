"""ortools and pyvrp publish their incumbent in progress events: the plan behind the
reported best cost (checked here by the independent checker), at most once a second, and
never above the node limit."""

from __future__ import annotations

import importlib
import itertools

import pytest

from solvers.contract import Budget, ProgressEvent
from solvers.routing.problem import CVRPInstance
from solvers.routing.solution import build_solution
from solvers.routing.solve import solve


@pytest.mark.parametrize("solver", ["ortools", "pyvrp"])
def test_published_plans_are_the_reported_best(solver: str, x101: CVRPInstance) -> None:
    events: list[ProgressEvent] = []
    solve(x101, solver, Budget(time_limit=1.5, seed=1), events.append)
    published = [e for e in events if e.routes is not None]
    assert published, [e.message for e in events]
    for event in published:
        plan = build_solution(x101, event.routes or [], solver=solver, wall_time=0)
        assert plan.feasible, plan.violations
        assert plan.cost == pytest.approx(event.best_cost)
    times = [e.elapsed for e in published]
    assert all(b - a >= 0.999 for a, b in itertools.pairwise(times)), times


@pytest.mark.parametrize("solver", ["ortools", "pyvrp"])
def test_no_plan_is_published_above_the_node_limit(
        solver: str, x101: CVRPInstance, monkeypatch: pytest.MonkeyPatch) -> None:
    module = importlib.import_module(f"solvers.routing.baselines.{solver}")
    monkeypatch.setattr(module, "INCUMBENT_MAX_NODES", x101.n - 1)
    events: list[ProgressEvent] = []
    solve(x101, solver, Budget(time_limit=0.5, seed=1), events.append)
    assert events and all(e.routes is None for e in events)


def test_ils_publishes_its_shortest_tour_after_every_slice() -> None:
    from solvers.routing.io.formats import load_instance
    from tests.conftest import DATA

    berlin = load_instance(DATA / "berlin52.tsp")
    events: list[ProgressEvent] = []
    solve(berlin, "ils", Budget(time_limit=2.5, seed=0), events.append)
    published = [e for e in events if e.routes is not None]
    assert published
    for event in published:
        plan = build_solution(berlin, event.routes or [], solver="ils", wall_time=0)
        assert plan.feasible and plan.cost == pytest.approx(event.best_cost)
