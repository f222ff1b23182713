"""The VRP registry: features, refusals by name, and the check on every answer."""

from __future__ import annotations

import pytest

from solvers.contract import Budget, ProgressCallback
from solvers.errors import CheckFailedError, ProblemMismatchError, UnknownSolverError
from solvers.routing.vrp import solve as vrp_solve
from solvers.routing.vrp.model import VrpProblem
from solvers.routing.vrp.parse import parse_document
from solvers.routing.vrp.plan import RoutePlan, VrpPlan, task_refs
from solvers.routing.vrp.solve import (
    FEATURE_TEXT,
    FEATURES,
    VRP_SOLVERS,
    VrpSolverEntry,
    features_of,
    solve_vrp,
)
from solvers.routing.vrp.vroom import solve_vroom
from tests.solvers.routing.vrp.docs import small_document


def test_features_of_a_document() -> None:
    plain = small_document(jobs=3, windows=False)
    del plain["vehicles"][1]
    del plain["vehicles"][0]["time_window"]  # a shift is a time window too
    assert features_of(parse_document(plain)) == frozenset()
    rich = small_document(jobs=3, shipments=1)
    rich["jobs"][0].update(skills=[1], priority=5)
    rich["vehicles"][0].update(breaks=[{"id": 1}], max_tasks=3, max_travel_time=99,
                               costs={"fixed": 10}, capacity=[20], end_index=1,
                               steps=[{"type": "job", "id": 100}])
    rich["matrices"]["car"]["distances"] = rich["matrices"]["car"]["durations"]
    rich["vehicles"][1]["max_distance"] = 500
    assert features_of(parse_document(rich)) == FEATURES == set(FEATURE_TEXT)


def test_unknown_solver_lists_the_known() -> None:
    with pytest.raises(UnknownSolverError) as err:
        solve_vrp(parse_document(small_document(jobs=2)), "nope", Budget(time_limit=1))
    assert "vroom" in str(err.value) and err.value.field == "solver"


def test_a_solver_lacking_a_feature_is_refused_by_its_name(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.setitem(VRP_SOLVERS, "plain", VrpSolverEntry(
        "plain", solve_vroom, "VROOM restricted to time windows", frozenset({"time_windows"})))
    doc = small_document(jobs=3)
    doc["vehicles"][0]["breaks"] = [{"id": 1}]
    with pytest.raises(ProblemMismatchError) as err:
        solve_vrp(parse_document(doc), "plain", Budget(time_limit=1))
    assert "breaks" in str(err.value) and err.value.field == "solver"
    picky = VrpSolverEntry("picky", solve_vroom, "VROOM without shared places", FEATURES,
                           supports=lambda p: "jobs[1].location_index: shared")
    monkeypatch.setitem(VRP_SOLVERS, "picky", picky)
    with pytest.raises(ProblemMismatchError, match="shared"):
        solve_vrp(parse_document(small_document(jobs=2)), "picky", Budget(time_limit=1))


def _everything_on_the_first_vehicle(problem: VrpProblem, budget: Budget, seed: int,
                                     on_progress: ProgressCallback | None) -> VrpPlan:
    """A real but careless solver: every task on vehicle 0 in document order."""
    return VrpPlan((RoutePlan(0, tuple(task_refs(problem))),))


def test_a_plan_failing_the_check_is_never_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(VRP_SOLVERS, "careless", VrpSolverEntry(
        "careless", _everything_on_the_first_vehicle, "one route", FEATURES))
    with pytest.raises(CheckFailedError) as err:
        solve_vrp(parse_document(small_document(jobs=8, capacity=5)), "careless",
                  Budget(time_limit=1))
    assert any("capacity" in v for v in err.value.violations)


def test_solve_vrp_checks_and_reports_progress() -> None:
    events = []
    result = solve_vrp(parse_document(small_document(jobs=5)), "vroom", Budget(time_limit=5),
                       on_progress=events.append)
    assert result.check.feasible and result.solver == "vroom" and events
    assert result.output["summary"]["routes"] == len(result.plan.routes)
    assert set(vrp_solve.VRP_SOLVERS) >= {"vroom"}


@pytest.mark.parametrize("solver", ["vroom", "ortools", "pyvrp"])
def test_a_document_without_tasks_is_an_empty_plan(solver: str) -> None:
    doc = small_document(jobs=1)
    doc["jobs"] = []
    result = solve_vrp(parse_document(doc), solver, Budget(time_limit=1.0))
    assert result.plan.routes == () and result.plan.unassigned == ()
    assert result.output["summary"]["routes"] == 0 and result.check.feasible
