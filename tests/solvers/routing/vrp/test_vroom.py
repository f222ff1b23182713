"""The ``vroom`` solver end to end, and VROOM's own schedule against the checker's."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from solvers.contract import Budget
from solvers.errors import ProblemMismatchError
from solvers.routing.vrp.check import check_plan
from solvers.routing.vrp.parse import parse_document
from solvers.routing.vrp.plan import TaskRef
from solvers.routing.vrp.solve import solve_vrp
from solvers.routing.vrp.vroom import build_input, plan_from_output
from tests.conftest import DATA
from tests.solvers.routing.vrp.docs import rich_document, small_document, varied_document


@pytest.mark.parametrize("seed", [*range(6), *range(100, 110)])
def test_vroom_and_the_checker_agree_to_the_second(seed: int) -> None:
    """VROOM's own schedule and cost equal the checker's, step by step (150 such documents
    agreed when this was written; the test keeps 16)."""
    problem = parse_document(rich_document(seed) if seed < 100 else varied_document(seed))
    output = build_input(problem).solve(exploration_level=5, nb_threads=1).to_dict()
    check = check_plan(problem, plan_from_output(problem, output))
    assert check.feasible, check.violations
    for key in ("cost", "duration", "waiting_time", "setup", "service", "priority"):
        assert getattr(check, key) == output["summary"][key], key
    assert check.distance == output["summary"].get("distance", check.distance)
    for theirs, ours in zip(output["routes"], check.routes, strict=True):
        assert theirs["cost"] == ours.cost and theirs["duration"] == ours.duration
        got = [(s.type, s.arrival, s.waiting, s.duration, s.setup, s.service, list(s.load),
                s.location_index) for s in ours.steps]
        want = [(s["type"], s["arrival"], s["waiting_time"], s["duration"], s["setup"],
                 s["service"], s["load"], s.get("location_index")) for s in theirs["steps"]]
        assert got == want


def test_solve_a_small_document_end_to_end() -> None:
    doc = small_document(jobs=8, shipments=2, capacity=6)
    doc["jobs"][0]["skills"] = [3]  # no vehicle has it
    problem = parse_document(doc)
    result = solve_vrp(problem, "vroom", Budget(time_limit=5))
    assert result.check.feasible
    assert result.reasons[TaskRef("job", 0)] == "skills"
    assert {u["id"] for u in result.output["unassigned"]} >= {100}
    assert result.output["summary"]["cost"] == result.check.cost > 0
    assert result.output["cosolve"]["solver"] == "vroom"


def test_a_starting_plan_is_passed_to_vroom() -> None:
    doc = small_document(jobs=4, windows=False)
    doc["vehicles"][0]["steps"] = [{"type": "job", "id": 101}, {"type": "job", "id": 100}]
    problem = parse_document(doc)
    result = solve_vrp(problem, "vroom", Budget(time_limit=5))
    assert result.check.feasible and not result.plan.unassigned
    assert isinstance(result.output["cosolve"]["moved"], list)


def test_an_invalid_starting_plan_is_dropped_not_fatal() -> None:
    doc = small_document(jobs=8, capacity=6, windows=False)
    doc["vehicles"][0]["steps"] = [{"type": "job", "id": 100 + k} for k in range(8)]
    result = solve_vrp(parse_document(doc), "vroom", Budget(time_limit=5))
    assert result.check.feasible and len(result.plan.unassigned) < 8  # VROOM refused the plan
    assert result.output["cosolve"]["moved"]  # some of the overloaded route had to move


def test_a_break_without_windows_and_a_vehicle_without_hours() -> None:
    doc = small_document(jobs=4)
    doc["vehicles"][0].pop("time_window")
    doc["vehicles"][0]["breaks"] = [{"id": 3, "service": 30}]
    result = solve_vrp(parse_document(doc), "vroom", Budget(time_limit=5))
    assert result.check.feasible and not result.plan.unassigned


def test_coordinates_only_with_a_speed_per_profile() -> None:
    doc = {"vehicles": [{"id": 1, "start": [4.35, 50.85], "end": [4.35, 50.85],
                         "profile": "bike"}],
           "jobs": [{"id": k, "location": [4.35 + 0.01 * k, 50.85]} for k in range(1, 5)]}
    result = solve_vrp(parse_document(doc), "vroom", Budget(time_limit=5))
    out = result.output
    assert out["cosolve"]["distance_model"] == "haversine" and not out["unassigned"]
    # four 700 m hops out and 2.8 km back at 15 km/h
    assert 5_500 < out["summary"]["distance"] < 5_700
    assert out["summary"]["duration"] == pytest.approx(out["summary"]["distance"] / (15 / 3.6),
                                                       abs=5)
    assert out["routes"][0]["steps"][1]["location"][1] == 50.85


def test_pinned_steps_are_refused_by_name() -> None:
    doc = small_document(jobs=3)
    doc["vehicles"][1]["steps"] = [{"type": "job", "id": 100, "pinned": True}]
    with pytest.raises(ProblemMismatchError, match=r"vehicles\[1\]\.steps\[0\]\.pinned"):
        solve_vrp(parse_document(doc), "vroom", Budget(time_limit=5))


def _solomon_document(path: Path) -> tuple[dict[str, Any], int]:
    """An LKH-3 Solomon file (SCALE 10, FLOOR_2D) as a VROOM document, and its best-known
    cost from the matching tour file's name."""
    lines = path.read_text().splitlines()
    header = dict(line.split(" : ") for line in lines if " : " in line)
    scale = int(header["SCALE"])
    section = ""
    coords: list[tuple[float, float]] = []
    demand: list[int] = []
    windows: list[tuple[int, int]] = []
    for line in lines:
        if line.endswith("_SECTION"):
            section = line
            continue
        parts = line.split()
        if len(parts) < 2 or " : " in line:
            continue
        if section == "NODE_COORD_SECTION":
            coords.append((float(parts[1]), float(parts[2])))
        elif section == "DEMAND_SECTION":
            demand.append(int(parts[1]))
        elif section == "TIME_WINDOW_SECTION":
            windows.append((int(parts[1]) * scale, int(parts[2]) * scale))
    durations = [[math.floor(scale * math.dist(a, b)) for b in coords] for a in coords]
    service = int(header["SERVICE_TIME"]) * scale
    doc = {
        "vehicles": [{"id": v, "start_index": 0, "end_index": 0,
                      "capacity": [int(header["CAPACITY"])], "time_window": list(windows[0])}
                     for v in range(int(header["VEHICLES"]))],
        "jobs": [{"id": k, "location_index": k, "service": service, "delivery": [demand[k]],
                  "time_windows": [list(windows[k])]} for k in range(1, len(coords))],
        "matrices": {"car": {"durations": durations}}}
    best = next(p for p in path.parent.iterdir()
                if p.name.startswith(path.name.split(".")[0] + ".") and p.suffix == ".tour")
    return doc, int(best.name.split(".")[-2])


def test_solomon_c101_with_every_task_assigned_near_the_best_known() -> None:
    doc, best = _solomon_document(DATA / "solomon" / "C101.100.10.vrptw")
    problem = parse_document(doc)
    result = solve_vrp(problem, "vroom", Budget(time_limit=10))
    assert result.check.feasible and not result.plan.unassigned
    assert best <= result.check.cost <= best * 1.03
