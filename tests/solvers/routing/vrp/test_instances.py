"""The benchmark readers: each set's file becomes a VROOM document the parser accepts, with
the reference values of the data READMEs."""

from __future__ import annotations

import math

import pytest

from solvers.routing.vrp.instances import DATA_DIR, gap, load, readme_row
from solvers.routing.vrp.parse import parse_document

pytestmark = pytest.mark.skipif(not DATA_DIR.is_dir(), reason="shared benchmark data absent")


def test_solomon_c101_reads_with_both_references() -> None:
    b = load("solomon", "C101")
    assert (b.tasks, b.scale, b.rounding) == (100, 10, "dimacs")
    assert (b.bks, b.bks_vehicles, b.bks_distance_only) == (828.94, 10, 827.3)
    doc = b.document
    assert len(doc["vehicles"]) == 25 and doc["vehicles"][0]["capacity"] == [200]
    assert doc["vehicles"][0]["time_window"] == [0, 12360]  # horizon 1236, in tenths
    job = doc["jobs"][0]
    assert job == {"id": 1, "location_index": 1, "delivery": [10], "service": 900,
                   "time_windows": [[9120, 9670]]}
    m = doc["matrices"]["car"]["durations"]
    # depot (40, 50) to customer 1 (45, 68): 18.68 truncated to one decimal
    assert m[0][1] == math.floor(10 * math.hypot(5, 18))
    problem = parse_document(doc)
    assert problem.task_count == 100 and len(problem.vehicles) == 25


def test_homberger_reads_its_sintef_row() -> None:
    b = load("homberger", "c1_2_1")
    assert b.tasks == 200 and (b.bks, b.bks_vehicles) == (2704.5678, 20)
    assert b.bks_distance_only == 2698.6
    assert parse_document(b.document).task_count == 200


def test_lilim_pairs_become_shipments() -> None:
    b = load("lilim", "lc101")
    ships = b.document["shipments"]
    assert b.tasks == 106 and len(ships) == 53
    assert (b.bks, b.bks_vehicles) == (828.9369, 10)
    first = ships[0]
    # task 3 picks up 10 for delivery task 75
    pickup = next(s for s in ships if s["pickup"]["id"] == 3)
    assert pickup["amount"] == [10] and pickup["delivery"]["id"] == 75
    assert first["pickup"]["service"] == 9000
    problem = parse_document(b.document)
    assert len(problem.shipments) == 53


def test_cordeau_depots_and_best_public_value() -> None:
    b = load("mdvrp", "p02")
    doc = b.document
    assert b.tasks == 50 and len(doc["vehicles"]) == 8  # 2 vehicles at each of 4 depots
    assert {v["start_index"] for v in doc["vehicles"]} == {50, 51, 52, 53}
    assert all(v["start_index"] == v["end_index"] for v in doc["vehicles"])
    assert (b.bks, b.bks_vehicles) == (473.53, 5)
    assert "max_travel_time" not in doc["vehicles"][0]  # p02 has no duration limit
    assert len(parse_document(doc).vehicles) == 8


def test_heterogeneous_variant_mixes_capacities_and_fixed_costs() -> None:
    b = load("solomon_hetero", "R101")
    caps = [v["capacity"][0] for v in b.document["vehicles"][:3]]
    assert caps == [100, 200, 300] and b.bks is None
    assert [v["costs"]["fixed"] for v in b.document["vehicles"][:3]] == [200, 400, 600]
    problem = parse_document(b.document)
    assert problem.vehicles[2].costs.fixed == 600


def test_unknown_set_and_gap() -> None:
    with pytest.raises(ValueError, match="unknown benchmark set"):
        load("cvrp", "X")
    assert gap(110.0, 100.0) == pytest.approx(10.0)
    assert gap(1.0, None) is None
    assert readme_row(DATA_DIR / "lilim" / "README.md", "nope.txt") == {}


def test_cvrplib_x_with_coordinates_beside_its_matrix() -> None:
    b = load("cvrp_x", "X-n101-k25")
    assert (b.bks, b.bks_vehicles, b.scale) == (27591.0, 26, 1)
    doc = b.document
    assert len(doc["vehicles"]) == 30 and doc["vehicles"][0]["capacity"] == [206]
    assert doc["jobs"][0]["location"] == [146.0, 180.0]
    # depot (365, 689) to node 2 (146, 180): EUC_2D rounds 554.05 to 554
    assert doc["matrices"]["car"]["durations"][0][1] == 554
    assert parse_document(doc).task_count == 100
