"""A routing solution and how one is built: routes, a cost recomputed by the instance's
own code, and the violations the independent checker finds."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from solvers.routing.check import check_solution
from solvers.routing.problem import Instance, RoutingInstance


@dataclass
class Solution:
    """A routing solution with its cost recomputed by the instance and independently checked.

    ``routes`` holds 0-based node indices. For a TSP it is one closed tour; for a CVRP each
    route lists customers in visiting order, the depot at both ends left implicit.
    """

    problem: str
    instance_name: str
    routes: list[list[int]]
    cost: float
    distance: str
    feasible: bool
    violations: list[str]
    solver: str
    wall_time: float
    stats: dict[str, Any] = field(default_factory=dict)
    #: what ``--solver auto`` picked and why (``solvers.routing.auto.Choice.to_dict``), when
    #: the solver was chosen by it
    auto: dict[str, Any] | None = None

    @property
    def tour(self) -> list[int]:
        if self.problem != "tsp":
            raise AttributeError("only a TSP solution has a tour")
        return self.routes[0]

    def __repr__(self) -> str:
        """One readable line, as a notebook or a REPL prints it: solver, instance, checked
        cost, routes and feasibility (or the first violation). The dataclass's own repr
        listed every node of every route."""
        if self.problem == "tsp":
            shape = f"{sum(len(r) for r in self.routes)}-node tour"
        else:
            count = sum(1 for r in self.routes if r)
            shape = f"{count} route{'' if count == 1 else 's'}"
        if self.feasible:
            verdict = "feasible"
        else:
            first = self.violations[0] if self.violations else "no reason recorded"
            more = len(self.violations) - 1
            verdict = f"INFEASIBLE: {first}" + (f" (+{more} more)" if more > 0 else "")
        return (f"<Solution {self.problem.upper()} {self.instance_name} by {self.solver}: "
                f"cost {format_number(self.cost)} ({self.distance}), {shape}, {verdict}, "
                f"{self.wall_time:.2f} s>")


def build_solution(
    instance: Instance,
    routes: list[list[int]],
    *,
    solver: str,
    wall_time: float,
    stats: dict[str, Any] | None = None,
) -> Solution:
    """Wrap a solver's routes: recompute the cost and run the independent checker."""
    routes = [[int(v) for v in r] for r in routes]
    violations = check_solution(instance, routes)
    try:
        ok = not violations or _indices_ok(instance, routes)
        cost = instance.cost(routes) if ok else math.nan
    except Exception:
        cost = math.nan
    return Solution(
        problem=instance.problem,
        instance_name=instance.name,
        routes=routes,
        cost=float(cost),
        distance=instance.distance,
        feasible=not violations,
        violations=violations,
        solver=solver,
        wall_time=float(wall_time),
        stats=dict(stats or {}),
    )


def _indices_ok(instance: RoutingInstance, routes: list[list[int]]) -> bool:
    return all(0 <= v < instance.n for r in routes for v in r) and len(routes) > 0


def format_number(value: float) -> str:
    """A cost as people read it: whole numbers in full (5828660, not 5.82866e+06), others to
    four decimals, and "n/a" for the NaN of an unusable plan."""
    if not math.isfinite(value):
        return "n/a"
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{value:.0f}"
    return f"{value:.4f}".rstrip("0").rstrip(".")
