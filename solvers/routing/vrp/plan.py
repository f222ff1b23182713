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


def starting_plan(problem: VrpProblem) -> dict[int, list[TaskRef]]:
    """The tasks of each vehicle's starting plan (``vehicles[].steps``), by vehicle index."""
    kinds = {"job": problem.job_index, "pickup": problem.pickup_index,
             "delivery": problem.delivery_index}
    plans: dict[int, list[TaskRef]] = {}
    for v, vehicle in enumerate(problem.vehicles):
        refs = [TaskRef(s.type, kinds[s.type][s.id]) for s in vehicle.steps if s.type in kinds]
        if refs:
            plans[v] = refs
    return plans


def _kept_in_order(before: list[TaskRef], after: list[TaskRef]) -> set[TaskRef]:
    """The most tasks of ``before`` that ``after`` keeps in the same order (a longest common
    subsequence): the others are the fewest that must have moved."""
    n, m = len(before), len(after)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            table[i][j] = (table[i + 1][j + 1] + 1 if before[i] == after[j]
                           else max(table[i + 1][j], table[i][j + 1]))
    kept, i, j = set(), 0, 0
    while i < n and j < m:
        if before[i] == after[j]:
            kept.add(before[i])
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return kept


def moved_tasks(problem: VrpProblem, plan: VrpPlan) -> list[dict[str, object]]:
    """The tasks of the starting plan that the answer moved: to another vehicle, out of the
    plan, or out of their order on their vehicle (the fewest such: all but a longest run
    kept in order). Empty when the document has no starting plan."""
    before = starting_plan(problem)
    if not before:
        return []
    vehicle_of = {s: r.vehicle_index for r in plan.routes for s in r.steps if s.kind != "break"}
    moved: list[dict[str, object]] = []
    for v, refs in before.items():
        route = next((r.steps for r in plan.routes if r.vehicle_index == v), ())
        kept = _kept_in_order(refs, [s for s in route if s.kind != "break"])
        for ref in refs:
            if ref in kept:
                continue
            now = vehicle_of.get(ref)
            moved.append({"type": ref.kind, "id": task_id(problem, ref),
                          "from_vehicle": problem.vehicles[v].id,
                          "to_vehicle": None if now is None else problem.vehicles[now].id})
    return moved
