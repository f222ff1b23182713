"""Why each unassigned task is unassigned, found by trying to insert it.

The question users of routing tools ask most is "why was this job left out?". The answer here
comes from the checker, not from a solver: the task (a shipment: its pickup and delivery
together) is tried at every position of every vehicle's route, an unused vehicle included,
and the rule broken by the closest try is the reason. So the reason holds whichever solver
made the plan.
"""

from __future__ import annotations

from collections.abc import Iterator

from solvers.routing.vrp.check import check_route
from solvers.routing.vrp.model import DURATION_FACTOR, VrpProblem
from solvers.routing.vrp.plan import TaskRef, VrpPlan, task_location

#: Reason codes, most telling first: when the closest try breaks several rules, the first
#: of these names it.
REASONS = ("skills", "unreachable", "capacity", "time_window", "break", "max_tasks",
           "max_travel_time", "max_distance", "insertable")
#: What each code means, for documentation and the answer's readers.
REASON_TEXT = {
    "skills": "no vehicle has all the skills the task needs",
    "unreachable": "no vehicle can go to the task and back within its working hours or "
                   "travel limits, even with nothing else to do",
    "capacity": "every insertion overloads the vehicle",
    "time_window": "every insertion misses a time window (the task's, another task's or the "
                   "vehicle's)",
    "break": "every insertion leaves a break without a slot (or above its max_load)",
    "max_tasks": "every route that could take it is at its max_tasks",
    "max_travel_time": "every insertion exceeds the vehicle's max_travel_time",
    "max_distance": "every insertion exceeds the vehicle's max_distance",
    "insertable": "the task fits a route: the solver left it out (its time limit, or a "
                  "cheaper plan without it)",
}
#: Tries per task before the closest so far gives the reason, so that a large plan with many
#: unassigned shipments is answered in bounded time.
MAX_TRIALS = 4000


def _skills(problem: VrpProblem, ref: TaskRef) -> frozenset[int]:
    if ref.kind == "job":
        return problem.jobs[ref.index].skills
    return problem.shipments[ref.index].skills


def _lone_travel(problem: VrpProblem, v: int, place: int) -> tuple[int, int]:
    """Scaled travel time and distance of the vehicle going to ``place`` and back alone."""
    vehicle = problem.vehicles[v]
    legs = [(a, b) for a, b in ((vehicle.start_index, place), (place, vehicle.end_index))
            if a is not None and b is not None]
    time = sum(problem.duration(vehicle.profile, a, b) for a, b in legs)
    return (time * vehicle.travel_factor,
            sum(problem.distance(vehicle.profile, a, b) for a, b in legs))


def _reachable(problem: VrpProblem, v: int, places: list[int]) -> bool:
    """Whether vehicle ``v`` can reach every place of the task alone within its shift,
    max_travel_time and max_distance (travel only, no waiting or service)."""
    vehicle = problem.vehicles[v]
    for place in places:
        time, distance = _lone_travel(problem, v, place)
        if vehicle.time_window is not None and (
                time > (vehicle.time_window[1] - vehicle.time_window[0]) * DURATION_FACTOR):
            return False
        if vehicle.max_travel_time is not None and time > vehicle.max_travel_time * DURATION_FACTOR:
            return False
        if vehicle.max_distance is not None and distance > vehicle.max_distance:
            return False
    return True


def _tries(base: list[TaskRef], task: list[TaskRef]) -> Iterator[list[TaskRef]]:
    """The route ``base`` with the task inserted at every position (a shipment's delivery at
    every position after its pickup)."""
    n = len(base)
    if len(task) == 1:
        for i in range(n + 1):
            yield base[:i] + task + base[i:]
        return
    for i in range(n + 1):
        for j in range(i, n + 1):
            yield [*base[:i], task[0], *base[i:j], task[1], *base[j:]]


def _reason(problem: VrpProblem, routes: dict[int, list[TaskRef]], task: list[TaskRef]) -> str:
    skills = _skills(problem, task[0])
    eligible = [v for v, vehicle in enumerate(problem.vehicles) if skills <= vehicle.skills]
    if not eligible:
        return "skills"
    places = [task_location(problem, r) for r in task]
    eligible = [v for v in eligible if _reachable(problem, v, places)]
    if not eligible:
        return "unreachable"
    best: tuple[int, int] | None = None
    trials = 0
    for v in eligible:
        vehicle = problem.vehicles[v]
        base = routes.get(v)
        if base is None:  # an unused vehicle: its breaks, in the order of their windows
            order = sorted(range(len(vehicle.breaks)),
                           key=lambda b: vehicle.breaks[b].time_windows or ((0, 0),))
            base = [TaskRef("break", b) for b in order]
        for steps in _tries(base, task):
            codes = {x.code for x in check_route(problem, v, steps, late_start=False).violations}
            if not codes:
                return "insertable"
            rank = min(REASONS.index(c) if c in REASONS else len(REASONS) for c in codes)
            score = (len(codes), rank)
            if best is None or score < best:
                best = score
            trials += 1
            if trials >= MAX_TRIALS:
                break
        if trials >= MAX_TRIALS:
            break
    assert best is not None
    return REASONS[best[1]] if best[1] < len(REASONS) else "time_window"


def unassigned_reasons(problem: VrpProblem, plan: VrpPlan) -> dict[TaskRef, str]:
    """A reason code (one of ``REASONS``) for every unassigned task of the plan; both halves
    of a shipment get the shipment's."""
    routes = {r.vehicle_index: list(r.steps) for r in plan.routes}
    reasons: dict[TaskRef, str] = {}
    for ref in plan.unassigned:
        if ref in reasons:
            continue
        if ref.kind == "job":
            reasons[ref] = _reason(problem, routes, [ref])
            continue
        pair = [TaskRef("pickup", ref.index), TaskRef("delivery", ref.index)]
        code = _reason(problem, routes, pair)
        for half in pair:
            if half in plan.unassigned:
                reasons[half] = code
    return reasons
