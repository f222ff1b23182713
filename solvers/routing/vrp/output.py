"""Answers in VROOM's output format, plus cosolve's check, and as GeoJSON.

The output document is VROOM's (docs/API.md, "Output"), so a client reading VROOM's answers
reads ours unchanged; every figure in it comes from the checker, none from the solver. What
VROOM's format has no place for (the check, the reasons' meaning, what moved in a warm start,
how distances were obtained) goes under one extra key, ``cosolve``.
"""

from __future__ import annotations

from typing import Any

from solvers.errors import InstanceError
from solvers.routing.vrp.check import StepTimes, VrpCheck
from solvers.routing.vrp.model import VrpProblem
from solvers.routing.vrp.plan import TaskRef, VrpPlan, moved_tasks, task_id, task_location
from solvers.routing.vrp.reasons import REASON_TEXT


def _has_distances(problem: VrpProblem) -> bool:
    return all(problem.has_distances(v.profile) for v in problem.vehicles)


def _description(problem: VrpProblem, ref: TaskRef, vehicle_index: int | None) -> str | None:
    if ref.kind == "job":
        return problem.jobs[ref.index].description
    if ref.kind == "break":
        assert vehicle_index is not None
        return problem.vehicles[vehicle_index].breaks[ref.index].description
    shipment = problem.shipments[ref.index]
    return (shipment.pickup if ref.kind == "pickup" else shipment.delivery).description


def _place(problem: VrpProblem, index: int | None, out: dict[str, Any]) -> None:
    """``location`` (when its coordinates are known) and ``location_index`` (when the
    document gave indices into matrices) of a step, as VROOM writes them."""
    if index is None:
        return
    if problem.locations is not None and problem.locations[index] is not None:
        out["location"] = list(problem.locations[index])
    if problem.distance_model == "matrix":
        out["location_index"] = index


def _step(problem: VrpProblem, step: StepTimes, vehicle_index: int,
          distances: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"type": step.type}
    if step.ref is not None:
        out["id"] = step.id
        text = _description(problem, step.ref, vehicle_index)
        if text is not None:
            out["description"] = text
    _place(problem, step.location_index, out)
    out.update(arrival=step.arrival, duration=step.duration, setup=step.setup,
               service=step.service, waiting_time=step.waiting, violations=[],
               load=list(step.load))
    if distances:
        out["distance"] = step.distance
    return out


def to_vroom_output(problem: VrpProblem, plan: VrpPlan, check: VrpCheck,
                    reasons: dict[TaskRef, str], solver: str, elapsed_s: float,
                    moved: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """VROOM's output document for a checked plan, with ``cosolve``'s block: the solver,
    the check, the reasons' meaning, what moved from the starting plan and the distance
    model. ``moved`` defaults to the comparison with ``vehicles[].steps``."""
    distances = _has_distances(problem)
    routes = []
    for route in check.routes:
        vehicle = problem.vehicles[route.vehicle_index]
        out: dict[str, Any] = {
            "vehicle": vehicle.id, "cost": route.cost, "setup": route.setup,
            "service": route.service, "duration": route.duration,
            "waiting_time": route.waiting_time, "priority": route.priority, "violations": [],
            "delivery": list(route.delivery), "pickup": list(route.pickup)}
        if vehicle.description is not None:
            out["description"] = vehicle.description
        if distances:
            out["distance"] = route.distance
        out["steps"] = [_step(problem, s, route.vehicle_index, distances) for s in route.steps]
        routes.append(out)
    unassigned = []
    for ref in plan.unassigned:
        item: dict[str, Any] = {"id": task_id(problem, ref), "type": ref.kind}
        text = _description(problem, ref, None)
        if text is not None:
            item["description"] = text
        _place(problem, task_location(problem, ref), item)
        item["reason"] = reasons.get(ref, "unknown")
        unassigned.append(item)
    summary: dict[str, Any] = {
        "cost": check.cost, "routes": len(check.routes), "unassigned": len(plan.unassigned),
        "setup": check.setup, "service": check.service, "duration": check.duration,
        "waiting_time": check.waiting_time, "priority": check.priority, "violations": [],
        "delivery": list(check.delivery), "pickup": list(check.pickup)}
    if distances:
        summary["distance"] = check.distance
    summary["computing_times"] = {"loading": 0, "solving": round(elapsed_s * 1000), "routing": 0}
    used = sorted({reasons[r] for r in plan.unassigned if r in reasons})
    return {
        "code": 0, "summary": summary, "unassigned": unassigned, "routes": routes,
        "cosolve": {
            "solver": solver,
            "check": {"feasible": check.feasible, "violations": check.violations,
                      "cost": check.cost},
            "reasons": {code: REASON_TEXT[code] for code in used if code in REASON_TEXT},
            "moved": moved_tasks(problem, plan) if moved is None else moved,
            "distance_model": problem.distance_model,
        },
    }


def _coordinates(problem: VrpProblem, index: int | None, what: str) -> list[float] | None:
    if index is None:
        return None
    if problem.locations is None or problem.locations[index] is None:
        raise InstanceError("geometry", f"{what} has no coordinates: GeoJSON needs a location "
                            "for every task and every vehicle start and end")
    return list(problem.locations[index])


def _task_point(problem: VrpProblem, step: StepTimes, vehicle_id: int) -> dict[str, Any]:
    coords = _coordinates(problem, step.location_index, f"{step.type} {step.id}")
    return {"type": "Feature", "geometry": {"type": "Point", "coordinates": coords},
            "properties": {"kind": "task", "type": step.type, "id": step.id,
                           "vehicle": vehicle_id, "arrival": step.arrival,
                           "waiting_time": step.waiting, "service": step.service,
                           "setup": step.setup, "load": list(step.load)}}


def to_geojson(problem: VrpProblem, plan: VrpPlan, check: VrpCheck,
               reasons: dict[TaskRef, str] | None = None) -> dict[str, Any]:
    """A FeatureCollection: a LineString per route (vehicle id, cost, duration, distance,
    largest load) and a Point per task (times and load after it; an unassigned task with its
    reason). Raises InstanceError("geometry") when a place has no coordinates."""
    features: list[dict[str, Any]] = []
    for route in check.routes:
        vehicle = problem.vehicles[route.vehicle_index]
        line = []
        for step in route.steps:
            if step.type == "break":
                continue
            what = f"vehicle {vehicle.id}'s {step.type}" if step.ref is None else \
                f"{step.type} {step.id}"
            coords = _coordinates(problem, step.location_index, what)
            if coords is not None and (not line or line[-1] != coords or step.type == "end"):
                line.append(coords)
        loads = [s.load for s in route.steps]
        features.append({
            "type": "Feature", "geometry": {"type": "LineString", "coordinates": line},
            "properties": {"kind": "route", "vehicle": vehicle.id, "cost": route.cost,
                           "duration": route.duration, "distance": route.distance,
                           "waiting_time": route.waiting_time,
                           "max_load": [max(x) for x in zip(*loads, strict=True)]
                           if loads and loads[0] else [],
                           "tasks": sum(1 for s in route.steps if s.ref is not None
                                        and s.type != "break")}})
        features += [_task_point(problem, s, vehicle.id) for s in route.steps
                     if s.ref is not None and s.type != "break"]
    for ref in plan.unassigned:
        coords = _coordinates(problem, task_location(problem, ref),
                              f"{ref.kind} {task_id(problem, ref)}")
        features.append({"type": "Feature", "geometry": {"type": "Point", "coordinates": coords},
                         "properties": {"kind": "unassigned", "type": ref.kind,
                                        "id": task_id(problem, ref),
                                        "reason": (reasons or {}).get(ref)}})
    return {"type": "FeatureCollection", "features": features,
            "properties": {"distance_model": problem.distance_model, "cost": check.cost}}
