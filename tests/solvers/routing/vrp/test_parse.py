"""VROOM documents read into the model, and every bad input refused by name."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from solvers.errors import InstanceError
from solvers.routing.vrp.parse import ParseParams, parse_document
from tests.solvers.routing.vrp.docs import small_document


def _refused(doc: dict[str, Any], field: str, words: str = "") -> InstanceError:
    with pytest.raises(InstanceError) as err:
        parse_document(doc)
    assert err.value.field == field, str(err.value)
    assert words in str(err.value)
    return err.value


def test_a_small_document_reads_with_its_units() -> None:
    doc = small_document(jobs=4, shipments=1)
    doc["vehicles"][0].update(skills=[1, 2], breaks=[{"id": 7, "service": 30,
                                                       "time_windows": [[200, 300]]}],
                              costs={"fixed": 100, "per_hour": 7200}, max_tasks=5,
                              speed_factor=2.0, steps=[{"type": "start"},
                                                       {"type": "job", "id": 101, "pinned": True},
                                                       {"type": "end"}])
    doc["jobs"][0].update(skills=[1], priority=30, setup=4,
                          time_windows=[[500, 600], [0, 100]])
    problem = parse_document(doc)
    assert problem.task_count == 6 and problem.amount_size == 1
    job = problem.jobs[0]
    assert job.time_windows == ((0, 100), (500, 600))  # sorted: earliest first
    assert job.skills == frozenset({1}) and job.priority == 30 and job.setup == 4
    assert problem.shipments[0].amount[0] >= 1
    v = problem.vehicles[0]
    assert v.breaks[0].time_windows == ((200, 300),) and v.costs.per_hour == 7200
    assert v.travel_factor == 50 and v.max_tasks == 5
    assert v.steps[0].type == "job" and v.steps[0].pinned and len(v.steps) == 1
    assert problem.vehicles[1].costs.per_hour == 3600
    assert problem.duration("car", 0, 1) == doc["matrices"]["car"]["durations"][0][1]
    assert problem.job_index[101] == 1 and problem.pickup_index[500] == 0
    assert problem.distance_model == "matrix" and problem.locations is None


def test_missing_amounts_are_zeros_of_the_documents_size() -> None:
    doc = small_document(jobs=2)
    del doc["jobs"][1]["delivery"]
    problem = parse_document(doc)
    assert problem.jobs[1].delivery == (0,) and problem.jobs[1].pickup == (0,)


def test_coordinates_give_haversine_times_at_the_profiles_speed() -> None:
    doc = {"vehicles": [{"id": 1, "start": [2.35, 48.85]}],
           "jobs": [{"id": 1, "location": [2.35, 48.95]}, {"id": 2, "location": [2.35, 48.85]}]}
    problem = parse_document(doc, ParseParams(speed_kmh={"car": 36.0}))
    assert problem.distance_model == "haversine"
    metres = problem.distance("car", 0, 1)
    assert 11_100 < metres < 11_150  # 0.1 degree of latitude
    assert problem.duration("car", 0, 1) == round(metres / 10)  # 36 km/h = 10 m/s
    # one index per distinct place, in the order of the document
    assert problem.jobs[1].location_index == problem.vehicles[0].start_index == 1
    assert problem.locations == ((2.35, 48.95), (2.35, 48.85))


def test_planar_coordinates_are_euclidean() -> None:
    doc = {"vehicles": [{"id": 1, "start": [0, 0], "profile": "bike"}],
           "jobs": [{"id": 1, "location": [3000, 4000]}]}
    problem = parse_document(doc)  # beyond lon/lat's range: planar
    assert problem.distance_model == "euclidean"
    assert problem.distance("bike", 0, 1) == 5000
    assert problem.duration("bike", 0, 1) == round(5000 / (15 / 3.6))
    forced = parse_document({"vehicles": [{"id": 1, "start": [0, 0]}],
                             "jobs": [{"id": 1, "location": [3, 4]}]}, ParseParams(planar=True))
    assert forced.distance_model == "euclidean" and forced.distance("car", 0, 1) == 5


def test_unknown_location_index() -> None:
    doc = small_document(jobs=4)
    doc["jobs"][3]["location_index"] = 99
    _refused(doc, "jobs[3].location_index", "unknown location index 99")
    doc = small_document(jobs=2)
    doc["vehicles"][1]["end_index"] = 3
    _refused(doc, "vehicles[1].end_index")


def test_matrix_not_square_or_negative() -> None:
    doc = small_document(jobs=2)
    doc["matrices"]["car"]["durations"][1].append(5)
    _refused(doc, "matrices.car.durations[1]", "square")
    doc = small_document(jobs=2)
    doc["matrices"]["car"]["durations"][2][0] = -4
    _refused(doc, "matrices.car.durations[2][0]", "negative")
    doc = small_document(jobs=2)
    doc["matrices"]["car"]["distances"] = [[0, 1], [1, 0]]
    _refused(doc, "matrices.car.distances", "rows")
    doc = small_document(jobs=2)
    doc["matrices"]["car"]["durations"][0][1] = 1.5
    _refused(doc, "matrices.car.durations", "integers")


def test_capacity_with_fewer_dimensions_than_the_amounts() -> None:
    doc = small_document(jobs=3)
    doc["jobs"][2]["delivery"] = [1, 2]
    _refused(doc, "jobs[0].delivery", "dimensions")  # the first amount out of line
    doc = small_document(jobs=3)
    for job in doc["jobs"]:
        job["delivery"] = [1, 2]
    _refused(doc, "vehicles[0].capacity", "1 dimensions but the tasks' amounts have 2")
    del doc["vehicles"][0]["capacity"]
    _refused(doc, "vehicles[0].capacity", "missing")


def test_time_window_ending_before_it_starts() -> None:
    doc = small_document(jobs=3)
    doc["jobs"][1]["time_windows"] = [[0, 10], [50, 20]]
    _refused(doc, "jobs[1].time_windows[1]", "before it starts")
    doc = small_document(jobs=3)
    doc["vehicles"][0]["time_window"] = [9, 3]
    _refused(doc, "vehicles[0].time_window")
    doc = small_document(jobs=3)
    doc["vehicles"][0]["breaks"] = [{"id": 1, "time_windows": [[5, 1]]}]
    _refused(doc, "vehicles[0].breaks[0].time_windows[0]")


def test_overlapping_windows_and_breaks_that_cannot_fit() -> None:
    doc = small_document(jobs=3)
    doc["jobs"][2]["time_windows"] = [[50, 60], [0, 10], [10, 20]]
    _refused(doc, "jobs[2].time_windows", "[0, 10] and [10, 20] overlap")
    doc = small_document(jobs=1)
    doc["vehicles"][0]["breaks"] = [{"id": 1, "time_windows": [[500, 600]]},
                                    {"id": 2, "time_windows": [[0, 100]]}]
    _refused(doc, "vehicles[0].breaks[1]", "order given")
    doc["vehicles"][0]["breaks"] = [{"id": 1, "time_windows": [[900, 990]], "service": 200}]
    _refused(doc, "vehicles[0].breaks[0]", "time_window")  # the shift ends at 1000
    doc["vehicles"][0]["breaks"][0]["service"] = 100
    assert parse_document(doc).vehicles[0].breaks[0].service == 100


def test_shipment_amounts_that_differ() -> None:
    doc = small_document(jobs=1, shipments=2)
    doc["shipments"][1]["pickup"]["amount"] = [2]
    doc["shipments"][1]["delivery"]["amount"] = [3]
    _refused(doc, "shipments[1].delivery.amount", "differs")
    doc = small_document(jobs=1, shipments=2)
    doc["shipments"][0]["amount"] = [1]
    doc["shipments"][0]["pickup"]["amount"] = [2]
    _refused(doc, "shipments[0].pickup.amount", "differs")
    doc = small_document(jobs=1, shipments=1)
    doc["shipments"][0]["pickup"]["amount"] = doc["shipments"][0]["delivery"]["amount"] = [2]
    del doc["shipments"][0]["amount"]
    assert parse_document(doc).shipments[0].amount == (2,)


@pytest.mark.parametrize(("where", "key", "value", "field"), [
    ("doc", "matrix", [[0]], "matrix"),
    ("job", "setup_per_type", {"van": 3}, "jobs[0].setup_per_type"),
    ("job", "service_per_type", {"van": 3}, "jobs[0].service_per_type"),
    ("job", "amount", [1], "jobs[0].amount"),
    ("job", "time_window", [0, 5], "jobs[0].time_window"),
    ("vehicle", "colour", "red", "vehicles[0].colour"),
    ("costs", "per_task_hour", 10, "vehicles[0].costs.per_task_hour"),
])
def test_unsupported_or_unknown_keys_are_named(where: str, key: str, value: Any,
                                               field: str) -> None:
    doc = small_document(jobs=2)
    target = {"doc": doc, "job": doc["jobs"][0], "vehicle": doc["vehicles"][0]}.get(where)
    if where == "costs":
        target = doc["vehicles"][0].setdefault("costs", {})
    assert target is not None
    target[key] = value
    _refused(doc, field)


def test_other_bad_values_are_named() -> None:
    cases = [
        (lambda d: d["jobs"][0].update(id=d["jobs"][1]["id"]), "jobs[1].id", "duplicate"),
        (lambda d: d["vehicles"][1].update(id=1), "vehicles[1].id", "duplicate"),
        (lambda d: d["jobs"][0].update(priority=101), "jobs[0].priority", ""),
        (lambda d: d["jobs"][0].update(service=-1), "jobs[0].service", "negative"),
        (lambda d: d["jobs"][0].update(service=True), "jobs[0].service", ""),
        (lambda d: d["jobs"][0].pop("location_index"), "jobs[0].location_index", "missing"),
        (lambda d: d["vehicles"][0].update(speed_factor=6), "vehicles[0].speed_factor", ""),
        (lambda d: d["vehicles"][0].update(profile="bike"), "vehicles[0].profile", "bike"),
        (lambda d: d["vehicles"][0].update(max_distance=9), "vehicles[0].max_distance",
         "distances"),
        (lambda d: (d["vehicles"][0].pop("start_index"), d["vehicles"][0].pop("end_index")),
         "vehicles[0].start_index", "start or an end"),
        (lambda d: d["vehicles"][0].update(steps=[{"type": "job", "id": 9}]),
         "vehicles[0].steps[0].id", "no job has id 9"),
        (lambda d: d["vehicles"][0].update(steps=[{"type": "walk"}]),
         "vehicles[0].steps[0].type", ""),
        (lambda d: d.update(vehicles=[]), "vehicles", "empty"),
        (lambda d: d.pop("vehicles"), "vehicles", "missing"),
        (lambda d: d["matrices"]["car"].update(costs=d["matrices"]["car"]["durations"])
         or d["vehicles"][0].update(costs={"per_hour": 10}), "vehicles[0].costs", ""),
    ]
    for change, field, words in cases:
        doc = copy.deepcopy(small_document(jobs=2))
        change(doc)
        _refused(doc, field, words)
    with pytest.raises(InstanceError) as err:
        parse_document([1, 2])  # type: ignore[arg-type]
    assert err.value.field == "document"


@pytest.mark.parametrize("entry", [True, "7", None, float("nan"), [1]])
def test_matrix_entries_that_are_not_numbers(entry: Any) -> None:
    doc = small_document(jobs=2)
    doc["matrices"]["car"]["durations"][0][1] = entry
    _refused(doc, "matrices.car.durations", "integers")


def test_integral_floats_in_a_matrix_are_integers() -> None:
    doc = small_document(jobs=2)
    doc["matrices"]["car"]["durations"][0][1] = 12.0
    assert parse_document(doc).duration("car", 0, 1) == 12
