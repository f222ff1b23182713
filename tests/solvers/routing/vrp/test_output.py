"""VROOM's output document, the cosolve block, GeoJSON, and what moved from a starting plan."""

from __future__ import annotations

import pytest

from solvers.errors import InstanceError
from solvers.routing.vrp.check import check_plan
from solvers.routing.vrp.output import to_geojson, to_vroom_output
from solvers.routing.vrp.parse import parse_document
from solvers.routing.vrp.plan import RoutePlan, TaskRef, VrpPlan, moved_tasks
from solvers.routing.vrp.reasons import unassigned_reasons
from tests.solvers.routing.vrp.docs import small_document

J = [TaskRef("job", k) for k in range(4)]


def _coordinate_document() -> dict:
    return {"vehicles": [{"id": 7, "start": [2.30, 48.85], "end": [2.30, 48.85],
                          "capacity": [4], "description": "van"}],
            "jobs": [{"id": 1, "location": [2.35, 48.86], "delivery": [2], "service": 60,
                      "description": "bakery"},
                     {"id": 2, "location": [2.32, 48.88], "delivery": [2]},
                     {"id": 3, "location": [2.40, 48.80], "delivery": [3]}]}


def test_the_vroom_document_with_checked_figures_and_reasons() -> None:
    problem = parse_document(small_document(jobs=3, windows=False))
    plan = VrpPlan((RoutePlan(0, (J[1], J[0])),), (J[2],))
    check = check_plan(problem, plan)
    out = to_vroom_output(problem, plan, check, unassigned_reasons(problem, plan), "vroom", 0.25)
    assert out["code"] == 0 and set(out) == {"code", "summary", "unassigned", "routes", "cosolve"}
    summary = out["summary"]
    assert summary["cost"] == check.cost and summary["routes"] == 1 and summary["unassigned"] == 1
    assert summary["computing_times"]["solving"] == 250 and "distance" not in summary
    assert out["unassigned"] == [{"id": 102, "type": "job", "location_index": 3,
                                  "reason": "insertable"}]
    route = out["routes"][0]
    assert route["vehicle"] == 1 and [s["type"] for s in route["steps"]] == [
        "start", "job", "job", "end"]
    assert [s.get("id") for s in route["steps"]] == [None, 101, 100, None]
    assert route["steps"][1]["location_index"] == 2 and "location" not in route["steps"][1]
    assert route["steps"][0]["load"] == [sum(problem.jobs[k].delivery[0] for k in (0, 1))]
    block = out["cosolve"]
    assert block["check"] == {"feasible": True, "violations": [], "cost": check.cost}
    assert block["distance_model"] == "matrix" and block["moved"] == []
    assert "insertable" in block["reasons"]


def test_coordinates_give_locations_distances_and_geojson() -> None:
    problem = parse_document(_coordinate_document())
    plan = VrpPlan((RoutePlan(0, (J[0], J[1])),), (J[2],))
    check = check_plan(problem, plan)
    reasons = unassigned_reasons(problem, plan)
    out = to_vroom_output(problem, plan, check, reasons, "x", 0.0)
    first = out["routes"][0]["steps"][1]
    assert first["location"] == [2.35, 48.86] and "location_index" not in first
    assert first["description"] == "bakery" and out["routes"][0]["description"] == "van"
    assert out["summary"]["distance"] == check.distance > 0
    assert out["unassigned"][0]["reason"] == "capacity"
    geo = to_geojson(problem, plan, check, reasons)
    assert geo["type"] == "FeatureCollection"
    kinds = [f["properties"]["kind"] for f in geo["features"]]
    assert kinds == ["route", "task", "task", "unassigned"]
    line = geo["features"][0]
    assert line["geometry"]["type"] == "LineString"
    assert line["geometry"]["coordinates"] == [[2.30, 48.85], [2.35, 48.86], [2.32, 48.88],
                                               [2.30, 48.85]]
    assert line["properties"]["vehicle"] == 7 and line["properties"]["max_load"] == [4]
    point = geo["features"][1]["properties"]
    assert point["id"] == 1 and point["load"] == [2] and point["arrival"] > 0
    assert geo["features"][3]["properties"]["reason"] == "capacity"


def test_geojson_needs_coordinates() -> None:
    problem = parse_document(small_document(jobs=2))
    plan = VrpPlan((RoutePlan(0, (J[0], J[1])),))
    with pytest.raises(InstanceError) as err:
        to_geojson(problem, plan, check_plan(problem, plan))
    assert err.value.field == "geometry"


def test_moved_lists_the_fewest_tasks_that_left_the_starting_plan() -> None:
    doc = small_document(jobs=4, windows=False)
    doc["vehicles"][0]["steps"] = [{"type": "job", "id": i} for i in (100, 101, 102)]
    problem = parse_document(doc)
    same = VrpPlan((RoutePlan(0, (J[0], J[1], J[2], J[3])),))
    assert moved_tasks(problem, same) == []
    swapped = VrpPlan((RoutePlan(0, (J[1], J[0], J[2])), RoutePlan(1, (J[3],))))
    assert [m["id"] for m in moved_tasks(problem, swapped)] in ([100], [101])
    elsewhere = VrpPlan((RoutePlan(0, (J[0], J[2])), RoutePlan(1, (J[1], J[3]))))
    assert moved_tasks(problem, elsewhere) == [{"type": "job", "id": 101, "from_vehicle": 1,
                                                "to_vehicle": 2}]
    dropped = VrpPlan((RoutePlan(0, (J[0], J[1])),), (J[2], J[3]))
    assert moved_tasks(problem, dropped)[0]["to_vehicle"] is None


def test_pinned_steps_stay_on_their_vehicle_in_their_order() -> None:
    doc = small_document(jobs=3, windows=False)
    doc["vehicles"][0]["steps"] = [{"type": "job", "id": 100, "pinned": True},
                                   {"type": "job", "id": 101, "pinned": True}]
    problem = parse_document(doc)
    kept = check_plan(problem, VrpPlan((RoutePlan(0, (J[0], J[2], J[1])),)))
    assert kept.feasible
    swapped = check_plan(problem, VrpPlan((RoutePlan(0, (J[1], J[0], J[2])),)))
    assert swapped.codes == ["pinned"]
    away = check_plan(problem, VrpPlan((RoutePlan(0, (J[0],)), RoutePlan(1, (J[1], J[2])))))
    assert away.codes == ["pinned"] and "[101]" in away.violations[0]
