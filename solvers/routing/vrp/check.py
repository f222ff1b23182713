"""The independent checker of VRP plans: it computes each route's schedule from the model
alone and lists every broken rule.

The schedule follows VROOM's semantics (its docs/API.md and its output), so a plan VROOM
accepts passes here with the same figures: service starts in the first time window it can
reach, after waiting if early; setup is paid on arriving from another location (a break does
not change the location); a break starts in one of its windows, and travel towards the next
task may be spent before it to shorten the waiting; a job's delivery is on board from the
start and its pickup until the end; travel times are the matrix's divided by the vehicle's
speed factor, in VROOM's hundredths of a second. The route leaves its start as late as keeps
the first step on time, so the reported waiting is the waiting the plan cannot avoid.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from solvers.routing.vrp.model import DURATION_FACTOR, Vehicle, VrpProblem, Window
from solvers.routing.vrp.plan import TaskRef, VrpPlan, task_id, task_location, task_refs

#: No time window: a horizon far beyond any real one, in VROOM's scaled units.
_NO_END = 2**62


@dataclass(frozen=True)
class StepTimes:
    """One step of a checked route, in user units: ``arrival`` at the place, ``waiting``
    before service starts, ``setup`` and ``service`` spent there, ``duration`` and
    ``distance`` travelled since the start upon arrival, ``load`` after the step."""

    type: str  # start, job, pickup, delivery, break or end
    ref: TaskRef | None
    id: int | None
    location_index: int | None
    arrival: int
    waiting: int
    setup: int
    service: int
    duration: int
    distance: int
    load: tuple[int, ...]


@dataclass(frozen=True)
class Violation:
    """A broken rule: ``code`` is one of capacity, time_window, skills, max_travel_time,
    max_distance, max_tasks, break, precedence, pinned (a pinned step of the starting plan
    moved), plan (the plan's own structure)."""

    code: str
    message: str


@dataclass(frozen=True)
class RouteCheck:
    """One route's schedule, totals and VROOM cost, and the rules it breaks."""

    vehicle_index: int
    steps: tuple[StepTimes, ...]
    cost: int
    duration: int
    distance: int
    setup: int
    service: int
    waiting_time: int
    priority: int
    delivery: tuple[int, ...]
    pickup: tuple[int, ...]
    violations: tuple[Violation, ...] = ()

    @property
    def feasible(self) -> bool:
        return not self.violations


@dataclass(frozen=True)
class VrpCheck:
    """A whole plan checked: ``feasible`` when no rule is broken; totals over its routes."""

    feasible: bool
    violations: list[str]
    routes: tuple[RouteCheck, ...]
    cost: int
    duration: int
    distance: int
    setup: int
    service: int
    waiting_time: int
    priority: int
    delivery: tuple[int, ...]
    pickup: tuple[int, ...]
    unassigned: int
    codes: list[str] = field(default_factory=list)


def _window(windows: Sequence[Window], t: int) -> Window | None:
    """The first window (sorted by start) whose end ``t`` (scaled) can still reach."""
    for start, end in windows:
        if t <= end * DURATION_FACTOR:
            return start, end
    return None


def _task_data(problem: VrpProblem, ref: TaskRef) -> tuple[int, int, tuple[Window, ...], int,
                                                            frozenset[int]]:
    """A task's setup, service, windows, priority and skills."""
    if ref.kind == "job":
        job = problem.jobs[ref.index]
        return job.setup, job.service, job.time_windows, job.priority, job.skills
    shipment = problem.shipments[ref.index]
    step = shipment.pickup if ref.kind == "pickup" else shipment.delivery
    return step.setup, step.service, step.time_windows, shipment.priority, shipment.skills


def _load_change(problem: VrpProblem, ref: TaskRef) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """What a task adds to and removes from the load (pickup, delivery)."""
    zero = problem.zero_amount
    if ref.kind == "job":
        job = problem.jobs[ref.index]
        return job.pickup, job.delivery
    amount = problem.shipments[ref.index].amount
    return (amount, zero) if ref.kind == "pickup" else (zero, amount)


def _add(a: tuple[int, ...], b: tuple[int, ...], sign: int = 1) -> tuple[int, ...]:
    return tuple(x + sign * y for x, y in zip(a, b, strict=True))


def _over(load: tuple[int, ...], limit: tuple[int, ...]) -> bool:
    return any(x > y for x, y in zip(load, limit, strict=True))


class _RouteState:
    """The running state of one route's forward pass (scaled times)."""

    def __init__(self, problem: VrpProblem, vehicle: Vehicle, load: tuple[int, ...],
                 start: int) -> None:
        self.problem = problem
        self.vehicle = vehicle
        self.t = start
        self.location = vehicle.start_index
        self.load = load
        self.travel = 0  # scaled travel so far
        self.distance = 0
        self.steps: list[StepTimes] = []
        self.violations: list[Violation] = []

    def flag(self, code: str, message: str) -> None:
        self.violations.append(Violation(code, f"vehicle {self.vehicle.id}: {message}"))

    def step(self, kind: str, ref: TaskRef | None, ident: int | None, location: int | None,
             arrival: int, waiting: int, setup: int, service: int, travel: int) -> None:
        f = DURATION_FACTOR
        self.steps.append(StepTimes(kind, ref, ident, location, arrival // f,
                                    (arrival + waiting) // f - arrival // f, setup, service,
                                    travel // f, self.distance, self.load))


def _travel(state: _RouteState, target: int | None) -> tuple[int, int]:
    """Scaled travel time and distance from the current place to ``target``."""
    v, here = state.vehicle, state.location
    if here is None or target is None:
        return 0, 0
    return (state.problem.duration(v.profile, here, target) * v.travel_factor,
            state.problem.distance(v.profile, here, target))


def _do_break(state: _RouteState, index: int, remaining: int, segment: int) -> int:
    """Take break ``index`` of the vehicle; return the travel still left to do after it."""
    brk = state.vehicle.breaks[index]
    if brk.max_load is not None and brk.max_load and _over(state.load, brk.max_load):
        state.flag("break", f"break {brk.id} with load {list(state.load)} above its max_load "
                   f"{list(brk.max_load)}")
    t, waiting = state.t, 0
    window = _window(brk.time_windows, t) if brk.time_windows else (0, _NO_END // DURATION_FACTOR)
    if window is None:
        state.flag("break", f"break {brk.id} cannot start before its time windows end "
                   f"(earliest {t // DURATION_FACTOR})")
        arrival = t
    else:
        start = window[0] * DURATION_FACTOR
        arrival = t
        if t < start:
            margin = start - t
            spent = min(margin, remaining)
            remaining -= spent
            arrival = t + spent
            waiting = margin - spent
            t = start
    state.step("break", TaskRef("break", index), brk.id, None, arrival, waiting, 0,
               brk.service, state.travel + segment - remaining)
    state.t = t + brk.service * DURATION_FACTOR
    return remaining


def _do_task(state: _RouteState, ref: TaskRef) -> None:
    problem = state.problem
    setup, service, windows, _, _ = _task_data(problem, ref)
    target = task_location(problem, ref)
    if state.location == target:
        setup = 0
    t = state.t
    waiting = 0
    window = _window(windows, t) if windows else (0, _NO_END // DURATION_FACTOR)
    if window is None:
        state.flag("time_window", f"{ref.kind} {task_id(problem, ref)} is reached at "
                   f"{t // DURATION_FACTOR}, after its time windows end")
    elif t < window[0] * DURATION_FACTOR:
        waiting = window[0] * DURATION_FACTOR - t
    plus, minus = _load_change(problem, ref)
    state.load = _add(_add(state.load, plus), minus, -1)
    if _over(state.load, state.vehicle.capacity):
        state.flag("capacity", f"load {list(state.load)} after {ref.kind} "
                   f"{task_id(problem, ref)} exceeds capacity {list(state.vehicle.capacity)}")
    state.step(ref.kind, ref, task_id(problem, ref), target, t, waiting, setup, service,
               state.travel)
    state.t = t + waiting + (setup + service) * DURATION_FACTOR
    state.location = target


def _segments(steps: Sequence[TaskRef]) -> list[tuple[list[int], TaskRef | None]]:
    """The route cut after each task: the breaks before a task (None: the end), and it."""
    segments: list[tuple[list[int], TaskRef | None]] = []
    breaks: list[int] = []
    for ref in steps:
        if ref.kind == "break":
            breaks.append(ref.index)
        else:
            segments.append((breaks, ref))
            breaks = []
    segments.append((breaks, None))
    return segments


def _route_rules(state: _RouteState, steps: Sequence[TaskRef]) -> None:
    """The rules that need no schedule: skills, breaks once each, max_tasks, and each
    shipment's pickup before its delivery on this route."""
    problem, vehicle = state.problem, state.vehicle
    tasks = [r for r in steps if r.kind != "break"]
    for ref in tasks:
        skills = _task_data(problem, ref)[4]
        if not skills <= vehicle.skills:
            state.flag("skills", f"{ref.kind} {task_id(problem, ref)} needs skills "
                       f"{sorted(skills - vehicle.skills)} the vehicle lacks")
    if vehicle.max_tasks is not None and len(tasks) > vehicle.max_tasks:
        state.flag("max_tasks", f"{len(tasks)} tasks, above max_tasks {vehicle.max_tasks}")
    taken = sorted(r.index for r in steps if r.kind == "break")
    if tasks and taken != list(range(len(vehicle.breaks))):
        missing = sorted(set(range(len(vehicle.breaks))) - set(taken))
        state.flag("break", "breaks " + (f"{[vehicle.breaks[b].id for b in missing]} missing"
                                         if missing else "repeated or unknown"))
    position = {r: k for k, r in enumerate(steps)}
    for ref in tasks:
        other = TaskRef("delivery" if ref.kind == "pickup" else "pickup", ref.index)
        if ref.kind == "pickup" and position.get(other, -1) < position[ref]:
            state.flag("precedence", f"shipment {problem.shipments[ref.index].pickup.id}: its "
                       "delivery is not after its pickup on this vehicle")
        if ref.kind == "delivery" and other not in position:
            state.flag("precedence", f"shipment delivery {task_id(problem, ref)} without its "
                       "pickup on this vehicle")


def _route_cost(problem: VrpProblem, vehicle: Vehicle, steps: Sequence[TaskRef],
                duration: int, distance: int) -> int:
    """VROOM's route cost: fixed, plus the cost matrix's arcs when the profile has one, else
    per_hour per hour of travel and per_km per kilometre, rounded to an integer."""
    if not any(r.kind != "break" for r in steps):
        return 0
    costs = problem.matrices[vehicle.profile].costs
    if costs is None:
        # VROOM rounds half up (value + 0.5, truncated), not to even as Python's round
        travel = math.floor(duration * vehicle.costs.per_hour / 3600
                            + distance * vehicle.costs.per_km / 1000 + 0.5)
    else:
        places = [vehicle.start_index] + [task_location(problem, r) for r in steps
                                          if r.kind != "break"] + [vehicle.end_index]
        places = [p for p in places if p is not None]
        travel = int(sum(int(costs[a, b]) for a, b in itertools.pairwise(places)))
    return vehicle.costs.fixed + travel


def _forward(problem: VrpProblem, vehicle: Vehicle, steps: Sequence[TaskRef],
             initial: tuple[int, ...], start: int) -> _RouteState:
    """The route scheduled as early as it can be, leaving its start at ``start`` (scaled)."""
    state = _RouteState(problem, vehicle, initial, start)
    first = next((task_location(problem, r) for r in steps if r.kind != "break"), None)
    # without a start, the route starts where its first task is (VROOM's start step says so)
    state.step("start", None, None, first if vehicle.start_index is None
               else vehicle.start_index, state.t, 0, 0, 0, 0)
    for breaks, target in _segments(steps):
        target_place = vehicle.end_index if target is None else task_location(problem, target)
        travel, metres = _travel(state, target_place)
        remaining = travel
        for b in breaks:
            remaining = _do_break(state, b, remaining, travel)
        state.t += remaining
        state.travel += travel
        state.distance += metres
        if target is not None:
            _do_task(state, target)
    end_place = vehicle.end_index if vehicle.end_index is not None else state.location
    state.step("end", None, None, end_place, state.t, 0, 0, 0, state.travel)
    if vehicle.time_window is not None and state.t > vehicle.time_window[1] * DURATION_FACTOR:
        state.flag("time_window", f"the route ends at {state.t // DURATION_FACTOR}, after "
                   f"the vehicle's time window ends ({vehicle.time_window[1]})")
    return state


def _leave_late(problem: VrpProblem, vehicle: Vehicle, steps: Sequence[TaskRef],
                initial: tuple[int, ...], opens: int, early: _RouteState) -> _RouteState:
    """The same route leaving its start as late as it can without ending later or breaking
    another rule, as VROOM schedules it (so the waiting reported is the waiting the plan
    cannot avoid). Ending time and rules only get worse with a later start, so a binary
    search over the delay finds it; the idle time of the early schedule bounds it."""
    busy = early.travel + sum(s.setup + s.service for s in early.steps) * DURATION_FACTOR
    lo, hi, best = 0, max(0, early.t - opens - busy), early
    while lo < hi:
        mid = (lo + hi + 1) // 2
        later = _forward(problem, vehicle, steps, initial, opens + mid)
        if later.t == early.t and len(later.violations) <= len(early.violations):
            lo, best = mid, later
        else:
            hi = mid - 1
    return best


def _user_durations(steps: list[StepTimes]) -> tuple[StepTimes, ...]:
    """Travel time upon arrival at each step, summed in user units as VROOM reports it (the
    time between leaving one step and reaching the next), so rounding agrees to the second."""
    result = [steps[0]]
    total = 0
    for prev, step in itertools.pairwise(steps):
        total += step.arrival - (prev.arrival + prev.waiting + prev.setup + prev.service)
        result.append(replace(step, duration=total))
    return tuple(result)


def check_route(problem: VrpProblem, vehicle_index: int, steps: Sequence[TaskRef],
                late_start: bool = True) -> RouteCheck:
    """One vehicle's route (its steps without start and end) scheduled as VROOM schedules
    it, with every rule it breaks. Steps must name existing tasks and breaks.
    ``late_start=False`` keeps the earliest schedule (same rules broken, same end, found
    faster: for trials that only ask whether a route is feasible)."""
    vehicle = problem.vehicles[vehicle_index]
    tasks = [r for r in steps if r.kind != "break"]
    initial = problem.zero_amount
    for ref in tasks:
        if ref.kind == "job":
            initial = _add(initial, problem.jobs[ref.index].delivery)
    opens = (vehicle.time_window or (0, 0))[0] * DURATION_FACTOR
    rules = _RouteState(problem, vehicle, initial, opens)
    if not tasks:
        return RouteCheck(vehicle_index, (), 0, 0, 0, 0, 0, 0, 0, problem.zero_amount,
                          problem.zero_amount, ())
    if _over(initial, vehicle.capacity):
        rules.flag("capacity", f"deliveries {list(initial)} loaded at the start exceed "
                   f"capacity {list(vehicle.capacity)}")
    _route_rules(rules, steps)
    state = _forward(problem, vehicle, steps, initial, opens)
    if late_start:
        state = _leave_late(problem, vehicle, steps, initial, opens, state)
    if vehicle.max_travel_time is not None and state.travel > vehicle.max_travel_time * 100:
        rules.flag("max_travel_time", f"travel time {state.travel / DURATION_FACTOR:g} above "
                   f"max_travel_time {vehicle.max_travel_time}")
    if vehicle.max_distance is not None and state.distance > vehicle.max_distance:
        rules.flag("max_distance", f"distance {state.distance} above max_distance "
                   f"{vehicle.max_distance}")
    timed = _user_durations(state.steps)
    duration = timed[-1].duration
    totals = [sum(_task_data(problem, r)[k] for r in tasks) for k in (1, 3)]
    breaks_service = sum(vehicle.breaks[r.index].service for r in steps if r.kind == "break")
    deliveries, pickups = problem.zero_amount, problem.zero_amount
    for ref in tasks:
        plus, minus = _load_change(problem, ref)
        pickups, deliveries = _add(pickups, plus), _add(deliveries, minus)
    return RouteCheck(
        vehicle_index, timed, _route_cost(problem, vehicle, steps, duration, state.distance),
        duration, state.distance, sum(s.setup for s in timed), totals[0] + breaks_service,
        sum(s.waiting for s in timed), totals[1], deliveries, pickups,
        tuple(rules.violations + state.violations))


def _plan_rules(problem: VrpProblem, plan: VrpPlan) -> tuple[list[Violation], list[int]]:
    """The plan's structure: known vehicles used once, known steps, every task exactly once
    in a route or in the unassigned list. Returns the violations and the routes whose steps
    are all known (only those can be scheduled)."""
    bad: list[Violation] = []
    usable: list[int] = []
    sizes = {"job": len(problem.jobs), "pickup": len(problem.shipments),
             "delivery": len(problem.shipments)}
    seen: dict[TaskRef, str] = {}
    vehicles_used: set[int] = set()
    for k, route in enumerate(plan.routes):
        v = route.vehicle_index
        if not 0 <= v < len(problem.vehicles):
            bad.append(Violation("plan", f"route {k}: unknown vehicle index {v}"))
            continue
        if v in vehicles_used:
            bad.append(Violation("plan", f"vehicle {problem.vehicles[v].id} has two routes"))
        vehicles_used.add(v)
        ok = True
        for ref in route.steps:
            limit = len(problem.vehicles[v].breaks) if ref.kind == "break" else sizes.get(ref.kind)
            if limit is None or not 0 <= ref.index < limit:
                bad.append(Violation("plan", f"route {k}: unknown step {tuple(ref)}"))
                ok = False
            elif ref.kind != "break":
                if ref in seen:
                    bad.append(Violation("plan", f"{ref.kind} {task_id(problem, ref)} is in "
                                         f"{seen[ref]} and again in route {k}"))
                seen[ref] = f"route {k}"
        if ok:
            usable.append(k)
    for ref in plan.unassigned:
        limit = sizes.get(ref.kind)
        if limit is None or not 0 <= ref.index < limit:
            bad.append(Violation("plan", f"unknown unassigned task {tuple(ref)}"))
        elif ref in seen:
            bad.append(Violation("plan", f"{ref.kind} {task_id(problem, ref)} is in {seen[ref]} "
                                 "and listed as unassigned"))
        else:
            seen[ref] = "the unassigned list"
    for ref in task_refs(problem):
        if ref not in seen:
            bad.append(Violation("plan", f"{ref.kind} {task_id(problem, ref)} is neither in a "
                                 "route nor unassigned"))
    return bad + _pinned_rules(problem, plan), usable


def _pinned_rules(problem: VrpProblem, plan: VrpPlan) -> list[Violation]:
    """Pinned steps of a starting plan stay on their vehicle, in their order."""
    bad: list[Violation] = []
    kinds = {"job": problem.job_index, "pickup": problem.pickup_index,
             "delivery": problem.delivery_index}
    for v, vehicle in enumerate(problem.vehicles):
        pinned = [TaskRef(s.type, kinds[s.type][s.id]) for s in vehicle.steps
                  if s.pinned and s.type in kinds]
        if not pinned:
            continue
        route = next((r.steps for r in plan.routes if r.vehicle_index == v), ())
        order = [s for s in route if s in set(pinned)]
        if order != pinned:
            lost = [task_id(problem, r) for r in pinned if r not in order]
            bad.append(Violation("pinned", f"vehicle {vehicle.id}: pinned steps " + (
                f"{lost} are not on it" if lost else "are out of their order")))
    return bad


def check_plan(problem: VrpProblem, plan: VrpPlan) -> VrpCheck:
    """Check a whole plan against every rule of the model, independently of any solver, and
    compute its schedule, totals and VROOM cost."""
    structural, usable = _plan_rules(problem, plan)
    routes = tuple(check_route(problem, plan.routes[k].vehicle_index, plan.routes[k].steps)
                   for k in usable if plan.routes[k].task_count > 0)
    violations = structural + [v for r in routes for v in r.violations]
    zero = problem.zero_amount
    deliveries, pickups = zero, zero
    for r in routes:
        deliveries, pickups = _add(deliveries, r.delivery), _add(pickups, r.pickup)
    return VrpCheck(
        feasible=not violations, violations=[v.message for v in violations], routes=routes,
        cost=sum(r.cost for r in routes), duration=sum(r.duration for r in routes),
        distance=sum(r.distance for r in routes), setup=sum(r.setup for r in routes),
        service=sum(r.service for r in routes), waiting_time=sum(r.waiting_time for r in routes),
        priority=sum(r.priority for r in routes), delivery=deliveries, pickup=pickups,
        unassigned=len(plan.unassigned), codes=[v.code for v in violations])
