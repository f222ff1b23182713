"""The VRP solvers' registry and the one way to solve a VROOM document: solve, check, explain.

Each entry says which parts of the model its solver takes (``features``); a problem using a
part a solver lacks is refused by name before anything runs, never solved with that part
dropped. Every plan is checked by ``check.py``: an infeasible one is our bug, raised as
``CheckFailedError``, never returned.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from solvers.contract import Budget, ProgressCallback
from solvers.errors import CheckFailedError, ProblemMismatchError, UnknownSolverError
from solvers.routing.vrp import ils as ils_solver
from solvers.routing.vrp import ortools as ortools_solver
from solvers.routing.vrp import pyvrp as pyvrp_solver
from solvers.routing.vrp import vroom as vroom_solver
from solvers.routing.vrp import warmstart as warmstart_solver
from solvers.routing.vrp.check import VrpCheck, check_plan
from solvers.routing.vrp.model import VrpProblem
from solvers.routing.vrp.output import to_vroom_output
from solvers.routing.vrp.plan import TaskRef, VrpPlan
from solvers.routing.vrp.reasons import unassigned_reasons

#: Every part of the model a solver may or may not take (see ``features_of``).
FEATURES = frozenset({"time_windows", "shipments", "skills", "breaks", "multi_depot",
                      "heterogeneous", "max_tasks", "max_travel_time", "max_distance",
                      "costs", "priority", "warm_start"})
#: What each feature means (``features_of`` finds them), for listings and refusals.
FEATURE_TEXT = {
    "time_windows": "time windows on tasks, or vehicles' working hours",
    "shipments": "pickup-and-delivery pairs",
    "skills": "tasks that need skills",
    "breaks": "vehicle breaks",
    "multi_depot": "vehicles starting or ending at different places, or open routes",
    "heterogeneous": "vehicles differing in capacity, profile, costs or speed factor",
    "max_tasks": "a limit on a vehicle's tasks",
    "max_travel_time": "a limit on a vehicle's travel time",
    "max_distance": "a limit on a vehicle's distance",
    "costs": "vehicle costs other than the travel time, or a cost matrix",
    "priority": "task priorities",
    "warm_start": "a starting plan in vehicles' steps",
}
#: A solver: ``fn(problem, budget, seed, on_progress) -> VrpPlan``.
VrpSolveFn = Callable[[VrpProblem, Budget, int, ProgressCallback | None], VrpPlan]


@dataclass(frozen=True)
class VrpSolverEntry:
    """A registered VRP solver: its function, a line for listings, the features it takes,
    and optionally ``supports(problem)``, the reason (naming the field) it cannot take a
    problem within those features, or None."""

    name: str
    solve: VrpSolveFn
    description: str
    features: frozenset[str]
    supports: Callable[[VrpProblem], str | None] | None = None


@dataclass(frozen=True)
class VrpResult:
    """A checked answer: the plan, its check, a reason per unassigned task, the solver, the
    time it took and the VROOM output document."""

    plan: VrpPlan
    check: VrpCheck
    reasons: dict[TaskRef, str]
    solver: str
    elapsed_s: float
    output: dict[str, Any] = field(repr=False)


def features_of(problem: VrpProblem) -> frozenset[str]:
    """The parts of the model this problem uses beyond a plain CVRP (one depot, one kind of
    vehicle, amounts in any number of dimensions, service and setup times); ``FEATURE_TEXT``
    says what each means."""
    vs, jobs, ships = problem.vehicles, problem.jobs, problem.shipments
    found = set()
    if any(j.time_windows for j in jobs) or any(v.time_window for v in vs) or any(
            s.pickup.time_windows or s.delivery.time_windows for s in ships):
        found.add("time_windows")
    if ships:
        found.add("shipments")
    if any(j.skills for j in jobs) or any(s.skills for s in ships):
        found.add("skills")
    if any(v.breaks for v in vs):
        found.add("breaks")
    if len({(v.start_index, v.end_index) for v in vs}) > 1 or any(
            v.start_index != v.end_index for v in vs):
        found.add("multi_depot")
    if len({(v.capacity, v.profile, v.costs, v.speed_factor) for v in vs}) > 1:
        found.add("heterogeneous")
    for limit in ("max_tasks", "max_travel_time", "max_distance"):
        if any(getattr(v, limit) is not None for v in vs):
            found.add(limit)
    if any(v.costs.fixed or v.costs.per_hour != 3600 or v.costs.per_km for v in vs) or any(
            m.costs is not None for m in problem.matrices.values()):
        found.add("costs")
    if any(j.priority for j in jobs) or any(s.priority for s in ships):
        found.add("priority")
    if any(v.steps for v in vs):
        found.add("warm_start")
    return frozenset(found)


VRP_SOLVERS: dict[str, VrpSolverEntry] = {
    "vroom": VrpSolverEntry(
        "vroom", vroom_solver.solve_vroom,
        "VROOM (through pyvroom, BSD): the engine users of this format know; takes all of "
        "the model, vehicles' steps as its starting solution (not pinned)", FEATURES,
        vroom_solver.supports),
    "ortools": VrpSolverEntry(
        "ortools", ortools_solver.solve,
        "OR-Tools routing, guided local search: takes all of the model (breaks without "
        "max_load), vehicles' steps as its starting solution (not pinned)",
        ortools_solver.FEATURES, ortools_solver.supports),
    "pyvrp": VrpSolverEntry(
        "pyvrp", pyvrp_solver.solve,
        "PyVRP 0.14's iterated local search: depots, mixed fleets, time windows, shipments, "
        "job pickups and deliveries, costs; no skills, breaks or max_tasks",
        pyvrp_solver.FEATURES, pyvrp_solver.supports),
    "warmstart": VrpSolverEntry(
        "warmstart", warmstart_solver.solve,
        "re-planning from vehicles' steps with the least change: pinned steps kept, new "
        "tasks inserted where they cost least; takes all of the model",
        warmstart_solver.FEATURES, warmstart_solver.supports),
    "ils": VrpSolverEntry(
        "ils", ils_solver.solve,
        "the classical ILS on the CVRP part of the model: one depot, one capacity, jobs "
        "that only deliver or only pick up, coordinates", ils_solver.FEATURES,
        ils_solver.supports),
}


def solver_entry(solver: str) -> VrpSolverEntry:
    """The registered entry, or UnknownSolverError listing the known names."""
    try:
        return VRP_SOLVERS[solver]
    except KeyError:
        raise UnknownSolverError(solver, sorted(VRP_SOLVERS)) from None


def check_supported(problem: VrpProblem, solver: str) -> None:
    """Refuse, by the feature's name, a problem the solver does not take."""
    entry = solver_entry(solver)
    takes = [f"VROOM documents with {', '.join(sorted(entry.features)) or 'no extra features'}"]
    missing = sorted(features_of(problem) - entry.features)
    if missing:
        raise ProblemMismatchError(solver, f"problems with {', '.join(missing)}", takes)
    reason = entry.supports(problem) if entry.supports is not None else None
    if reason is not None:
        raise ProblemMismatchError(solver, f"this problem ({reason})", takes)


def solve_vrp(problem: VrpProblem, solver: str, budget: Budget, seed: int = 0,
              on_progress: ProgressCallback | None = None) -> VrpResult:
    """Solve with a registered solver, check the plan, explain what is unassigned, and
    write VROOM's output document."""
    entry = solver_entry(solver)
    check_supported(problem, solver)
    started = time.perf_counter()
    # nothing to route is an empty plan, not a solver's refusal (VROOM stops on "No task")
    plan = (entry.solve(problem, budget, seed, on_progress) if problem.task_count
            else VrpPlan(()))
    elapsed = time.perf_counter() - started
    check = check_plan(problem, plan)
    if not check.feasible:
        raise CheckFailedError(f"solver {solver!r} returned a plan that fails the check",
                               check.violations)
    reasons = unassigned_reasons(problem, plan)
    output = to_vroom_output(problem, plan, check, reasons, solver, elapsed)
    return VrpResult(plan, check, reasons, solver, elapsed, output)
