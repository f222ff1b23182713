"""What a VRP solver returns: the order of tasks per vehicle, and nothing else.

Times, loads and costs are deliberately absent: the checker computes them from the model, so
no solver's own arithmetic (rounding, speed factors, break placement) reaches an answer
unchecked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

from solvers.routing.vrp.model import VrpProblem

TaskKind = Literal["job", "pickup", "delivery", "break"]


class TaskRef(NamedTuple):
    """One step of a route: a job (``index`` into ``problem.jobs``), the pickup or delivery of
    a shipment (``index`` into ``problem.shipments``), or a break (``index`` into the route's
    vehicle's ``breaks``)."""

    kind: TaskKind
    index: int


@dataclass(frozen=True)
class RoutePlan:
    """The steps of one vehicle, in order, without its start and end."""

    vehicle_index: int
    steps: tuple[TaskRef, ...]

    @property
    def task_count(self) -> int:
        """The steps that are tasks (breaks are not)."""
        return sum(1 for s in self.steps if s.kind != "break")


@dataclass(frozen=True)
class VrpPlan:
    """Routes (vehicles without a route are unused) and the tasks left unassigned. A shipment
    left out is listed by both its halves, as VROOM lists it."""

    routes: tuple[RoutePlan, ...]
    unassigned: tuple[TaskRef, ...] = ()


def task_refs(problem: VrpProblem) -> list[TaskRef]:
    """Every task of the problem (not breaks), jobs first, then shipments' pickup and delivery."""
    refs = [TaskRef("job", k) for k in range(len(problem.jobs))]
    for k in range(len(problem.shipments)):
        refs += [TaskRef("pickup", k), TaskRef("delivery", k)]
    return refs


def task_id(problem: VrpProblem, ref: TaskRef, vehicle_index: int | None = None) -> int:
    """The VROOM id of a step (a break's needs its vehicle)."""
    if ref.kind == "job":
        return problem.jobs[ref.index].id
    if ref.kind == "pickup":
        return problem.shipments[ref.index].pickup.id
    if ref.kind == "delivery":
        return problem.shipments[ref.index].delivery.id
    if vehicle_index is None:
        raise ValueError("a break's id needs its vehicle")
    return problem.vehicles[vehicle_index].breaks[ref.index].id


def task_location(problem: VrpProblem, ref: TaskRef) -> int:
    """The location index of a task (not of a break, which has none)."""
    if ref.kind == "job":
        return problem.jobs[ref.index].location_index
    if ref.kind == "pickup":
        return problem.shipments[ref.index].pickup.location_index
    if ref.kind == "delivery":
        return problem.shipments[ref.index].delivery.location_index
    raise ValueError("a break has no location")


def complete_plan(problem: VrpProblem, routes: list[RoutePlan] | tuple[RoutePlan, ...]) -> VrpPlan:
    """A plan of these routes with every task they miss listed as unassigned (empty routes
    dropped), so solvers need not keep that list themselves."""
    kept = tuple(r for r in routes if r.task_count > 0)
    seen = {s for r in kept for s in r.steps if s.kind != "break"}
    return VrpPlan(kept, tuple(t for t in task_refs(problem) if t not in seen))
