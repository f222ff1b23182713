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
from solvers.routing.vrp.model import DURATION_FACTOR, Vehicle, VrpProblem
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
#: No time window: a bound beyond any real one, in VROOM's scaled units.
_NO_END = 2**62
#: Full checks per task (positions that the quick conditions do not already rule out); past
#: them the closest try so far gives the reason, so that a large plan with many unassigned
#: shipments is answered in bounded time.
MAX_CHECKS = 400


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


def _max_prefix(loads: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    out, best = [], loads[0]
    for load in loads:
        best = tuple(max(a, b) for a, b in zip(best, load, strict=True))
        out.append(best)
    return out


class _Route:
    """One vehicle's route as an insertion sees it: after each of its steps (0: the start),
    the load, the earliest departure (scaled) and the last place. These give exact
    necessary conditions (capacity, the task's own time windows) that spare the full check
    for most positions: an insertion never makes a step earlier or lighter."""

    def __init__(self, problem: VrpProblem, v: int, steps: list[TaskRef]) -> None:
        self.problem, self.v, self.steps = problem, v, steps
        vehicle = problem.vehicles[v]
        n = len(steps)
        times = check_route(problem, v, steps, late_start=False).steps
        if times:
            self.loads = [t.load for t in times[:n + 1]]
            # after a break, the last task's departure: travel may overlap a break's wait
            self.departs = []
            for t in times[:n + 1]:
                self.departs.append(self.departs[-1] if t.type == "break" else
                                    (t.arrival + t.waiting + t.setup + t.service)
                                    * DURATION_FACTOR)
        else:  # no task yet: only breaks, if any
            opens = (vehicle.time_window or (0, 0))[0] * DURATION_FACTOR
            self.loads = [problem.zero_amount] * (n + 1)
            self.departs = [opens] * (n + 1)
        self.places: list[int | None] = [vehicle.start_index]
        for ref in steps:
            self.places.append(self.places[-1] if ref.kind == "break"
                               else task_location(problem, ref))
        self.before = _max_prefix(self.loads)
        self.after = _max_prefix(self.loads[::-1])[::-1]
        self._latest_after(vehicle)

    def _latest_after(self, vehicle: Vehicle) -> None:
        """For each position, the next task's place (or the end's) and a bound its service
        start cannot exceed: its last window's end, and what the tasks after it leave
        (breaks and setup ignored, so the bound is loose but never wrong)."""
        f = vehicle.travel_factor
        bound = _NO_END if vehicle.time_window is None else vehicle.time_window[1] * DURATION_FACTOR
        place = vehicle.end_index
        self.latest = [0] * (len(self.steps) + 1)
        self.next_place: list[int | None] = [None] * (len(self.steps) + 1)
        for i in range(len(self.steps), -1, -1):
            self.latest[i], self.next_place[i] = bound, place
            ref = self.steps[i - 1] if i else None
            if ref is None or ref.kind == "break":
                continue
            here = task_location(self.problem, ref)
            travel = 0 if place is None else self.problem.duration(vehicle.profile, here, place)
            windows = _windows(self.problem, ref)
            bound = min(windows[-1][1] * DURATION_FACTOR if windows else _NO_END,
                        bound - _service(self.problem, ref) * DURATION_FACTOR - travel * f)
            place = here

    def late(self, i: int, ref: TaskRef, then: bool = True) -> bool:
        """Whether the task, put after step ``i``, surely misses a time window: its own, or
        (``then``) the next task's or the vehicle's end."""
        problem, vehicle = self.problem, self.problem.vehicles[self.v]
        here, there = self.places[i], task_location(problem, ref)
        travel = 0 if here is None else problem.duration(vehicle.profile, here, there)
        start = self.departs[i] + travel * vehicle.travel_factor
        windows = _windows(problem, ref)
        if windows:
            window = next((w for w in windows if start <= w[1] * DURATION_FACTOR), None)
            if window is None:
                return True
            start = max(start, window[0] * DURATION_FACTOR)
        if not then:
            return False
        after = self.next_place[i]
        onward = 0 if after is None else problem.duration(vehicle.profile, there, after)
        return (start + _service(problem, ref) * DURATION_FACTOR
                + onward * vehicle.travel_factor > self.latest[i])


def _service(problem: VrpProblem, ref: TaskRef) -> int:
    if ref.kind == "job":
        return problem.jobs[ref.index].service
    shipment = problem.shipments[ref.index]
    return (shipment.pickup if ref.kind == "pickup" else shipment.delivery).service


def _windows(problem: VrpProblem, ref: TaskRef) -> tuple[tuple[int, int], ...]:
    if ref.kind == "job":
        return problem.jobs[ref.index].time_windows
    shipment = problem.shipments[ref.index]
    return (shipment.pickup if ref.kind == "pickup" else shipment.delivery).time_windows


def _over(load: tuple[int, ...], extra: tuple[int, ...], capacity: tuple[int, ...]) -> bool:
    return any(a + b > c for a, b, c in zip(load, extra, capacity, strict=True))


def _tries(route: _Route, task: list[TaskRef]) -> Iterator[tuple[list[TaskRef], set[str]]]:
    """The route with the task inserted at every position (a shipment's delivery at every
    position after its pickup), each with the rules it surely breaks (empty: check it)."""
    base, n = route.steps, len(route.steps)
    capacity = route.problem.vehicles[route.v].capacity
    if len(task) == 1:
        job = route.problem.jobs[task[0].index]
        for i in range(n + 1):
            sure = set()
            if _over(route.before[i], job.delivery, capacity) or _over(
                    route.after[i], job.pickup, capacity):
                sure.add("capacity")
            if route.late(i, task[0]):
                sure.add("time_window")
            yield base[:i] + task + base[i:], sure
        return
    amount = route.problem.shipments[task[0].index].amount
    for i in range(n + 1):
        late_pickup, late_then = route.late(i, task[0], then=False), route.late(i, task[0])
        peak = route.loads[i]
        for j in range(i, n + 1):
            peak = tuple(max(a, b) for a, b in zip(peak, route.loads[j], strict=True))
            sure = {"capacity"} if _over(peak, amount, capacity) else set()
            if late_pickup or (j > i and (late_then or route.late(j, task[1]))):
                sure.add("time_window")
            yield [*base[:i], task[0], *base[i:j], task[1], *base[j:]], sure


def _base(problem: VrpProblem, routes: dict[int, list[TaskRef]], v: int) -> _Route:
    """Vehicle ``v``'s route in the plan; an unused vehicle's: its breaks, by window."""
    base = routes.get(v)
    if base is None:
        vehicle = problem.vehicles[v]
        order = sorted(range(len(vehicle.breaks)),
                       key=lambda b: vehicle.breaks[b].time_windows or ((0, 0),))
        base = [TaskRef("break", b) for b in order]
    return _Route(problem, v, base)


def _reason(problem: VrpProblem, routes: dict[int, list[TaskRef]], task: list[TaskRef],
            cache: dict[int, _Route]) -> str:
    skills = _skills(problem, task[0])
    eligible = [v for v, vehicle in enumerate(problem.vehicles) if skills <= vehicle.skills]
    if not eligible:
        return "skills"
    places = [task_location(problem, r) for r in task]
    eligible = [v for v in eligible if _reachable(problem, v, places)]
    if not eligible:
        return "unreachable"
    best: tuple[int, int] | None = None
    checks = 0
    for v in eligible:
        if v not in cache:
            cache[v] = _base(problem, routes, v)
        for steps, codes in _tries(cache[v], task):
            if not codes and checks < MAX_CHECKS:
                checks += 1
                codes = {x.code for x in check_route(problem, v, steps,
                                                     late_start=False).violations}
                if not codes:
                    return "insertable"
            if not codes:
                continue  # out of checks: this position is left unexplored
            rank = min(REASONS.index(c) if c in REASONS else len(REASONS) for c in codes)
            if best is None or (len(codes), rank) < best:
                best = (len(codes), rank)
    assert best is not None  # the first position left open is always checked
    return REASONS[best[1]] if best[1] < len(REASONS) else "time_window"


def unassigned_reasons(problem: VrpProblem, plan: VrpPlan) -> dict[TaskRef, str]:
    """A reason code (one of ``REASONS``) for every unassigned task of the plan; both halves
    of a shipment get the shipment's."""
    routes = {r.vehicle_index: list(r.steps) for r in plan.routes}
    cache: dict[int, _Route] = {}
    reasons: dict[TaskRef, str] = {}
    for ref in plan.unassigned:
        if ref in reasons:
            continue
        if ref.kind == "job":
            reasons[ref] = _reason(problem, routes, [ref], cache)
            continue
        pair = [TaskRef("pickup", ref.index), TaskRef("delivery", ref.index)]
        code = _reason(problem, routes, pair, cache)
        for half in pair:
            if half in plan.unassigned:
                reasons[half] = code
    return reasons
