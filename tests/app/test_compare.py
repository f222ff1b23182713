"""Comparing solvers on one instance."""

from __future__ import annotations

import itertools
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import httpx
import pytest

from tests.conftest import OPTIMA


def test_compare_ortools_and_pyvrp_on_x101(api: httpx.Client, data_dir: Path) -> None:
    path = data_dir / "X-n101-k25.vrp"
    reference = OPTIMA["X-n101-k25"]
    response = api.post(
        "/v1/routing/cvrp/compare",
        files={"file": (path.name, path.read_bytes(), "text/plain")},
        data={"solvers": "ortools, pyvrp", "time_limit": "2", "reference": str(reference),
              "svg": "true"},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["problem"], body["instance"], body["nodes"]) == ("cvrp", "X-n101-k25", 101)
    assert body["reference"] == reference and body["time_limit"] == 2
    rows = {row["solver"]: row for row in body["rows"]}
    assert list(rows) == ["ortools", "pyvrp"]
    best = min(row["cost"] for row in rows.values())
    assert rows[body["best_solver"]]["cost"] == best
    for row in rows.values():
        assert row["feasible"] is True and row["error"] is None, row
        assert row["cost"] >= reference
        assert row["gap_to_reference"] == pytest.approx(100 * (row["cost"] - reference) / reference)
        assert row["gap_to_best"] == pytest.approx(100 * (row["cost"] - best) / best)
        assert row["wall_time"] <= 2 + 1.0
        assert row["svg"].startswith("<svg")
        drawing = ET.fromstring(row["svg"])  # well-formed XML
        polylines = drawing.findall(".//{http://www.w3.org/2000/svg}polyline")
        assert len(polylines) >= 25  # X-n101-k25 needs at least 25 routes


def test_a_compare_upload_caps_every_solvers_fleet(api: httpx.Client, data_dir: Path) -> None:
    """max_vehicles as a form field reaches every row: ils (27 routes on X-n101-k25 at 2 s
    unconstrained) and PyVRP both draw at most 26 routes, and the checker passes them."""
    path = data_dir / "X-n101-k25.vrp"
    response = api.post(
        "/v1/routing/cvrp/compare",
        files={"file": (path.name, path.read_bytes(), "text/plain")},
        data={"solvers": "ils,pyvrp", "time_limit": "2", "max_vehicles": "26", "svg": "true"},
    )
    assert response.status_code == 200, response.text
    for row in response.json()["rows"]:
        assert row["feasible"] is True and row["error"] is None, row
        drawing = ET.fromstring(row["svg"])
        routes = drawing.findall(".//{http://www.w3.org/2000/svg}polyline")
        assert 25 <= len(routes) <= 26, (row["solver"], len(routes))


def test_compare_json_tsp_without_svg(api: httpx.Client) -> None:
    coords = [[0, 0], [4, 0], [4, 3], [0, 3], [2, 5], [2, -2]]
    body = api.post("/v1/routing/tsp/compare", json={
        "instance": {"coords": coords},
        "solvers": ["nearest_neighbor", "ortools"],
        "time_limit": 0.5,
    }).json()
    rows = body["rows"]
    assert [r["solver"] for r in rows] == ["nearest_neighbor", "ortools"]
    assert all(r["feasible"] and r["svg"] is None for r in rows)
    assert min(r["gap_to_best"] for r in rows) == 0.0
    assert all(r["gap_to_reference"] is None for r in rows)
    assert body["best_solver"] in {"nearest_neighbor", "ortools"}


def test_compare_svg_for_matrix_only_instance(api: httpx.Client) -> None:
    body = api.post("/v1/routing/tsp/compare", json={
        "instance": {"distance_matrix": [[0, 1, 2], [1, 0, 1], [2, 1, 0]]},
        "solvers": ["nearest_neighbor"], "svg": True,
    }).json()
    svg = body["rows"][0]["svg"]
    assert svg.startswith("<svg") and "circle" in svg
    ET.fromstring(svg)


def test_a_fleet_no_plan_meets_is_a_422_as_from_a_solve(api: httpx.Client) -> None:
    """Customers of 5, 5 and 2 with capacity 6 need three vehicles; with two, ils's DP proves no
    plan exists. The comparison answered 200 with every row failed while a solve answers 422
    and `cosolve compare` exits 2; now a 422 on the field the cap came from,
    and a row that is merely unsolved by the others keeps the 200."""
    instance = {"coords": [[0, 0], [1, 0], [0, 1], [1, 1]], "demands": [0, 5, 5, 2],
                "capacity": 6, "max_vehicles": 2}
    response = api.post("/v1/routing/cvrp/compare",
                        json={"instance": instance, "solvers": ["ils", "nearest_neighbor"],
                              "time_limit": 1})
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["field"] == "instance.max_vehicles" and "no solution exists (ils)" in \
        body["detail"], body
    instance["max_vehicles"] = 3
    response = api.post("/v1/routing/cvrp/compare",
                        json={"instance": instance, "solvers": ["ils"], "time_limit": 1})
    assert response.status_code == 200 and response.json()["best_solver"] == "ils"


def test_rows_carry_the_plan_and_stats_so_a_cost_can_be_checked(api: httpx.Client) -> None:
    """Regression: a compare row had only the cost (the CLI's rows had routes and stats); now
    the routes recompute to the row's cost and OR-Tools' settings are in its stats."""
    coords = [[0, 0], [4, 0], [4, 3], [0, 3], [2, 5], [2, -2]]
    body = api.post("/v1/routing/cvrp/compare", json={
        "instance": {"coords": coords, "demands": [0, 2, 2, 2, 2, 2], "capacity": 4},
        "solvers": ["nearest_neighbor", "ortools"], "time_limit": 0.5,
    }).json()
    for row in body["rows"]:
        assert row["distance"] == body["distance"] == "exact" and row["wall_time"] > 0
        length = 0.0
        for route in row["routes"]:
            path = [0, *route, 0]
            length += sum(math.dist(coords[a], coords[b]) for a, b in itertools.pairwise(path))
        assert length == pytest.approx(row["cost"]), row
        assert sorted(c for r in row["routes"] for c in r) == [1, 2, 3, 4, 5]
    assert "status" in body["rows"][1]["stats"]


def test_a_compare_every_solver_refuses_is_a_422_naming_each_reason(
        api: httpx.Client) -> None:
    """Regression: 1,000 nodes at 0.2 s, too short for OR-Tools and PyVRP alike, answered 200
    with every row failed (and `cosolve compare` exited 1, a solver failure); a solve says
    422 on time_limit. Now the comparison does too, with each solver's reason."""
    coords = [[(i * 7919) % 1000, (i * 104729) % 997] for i in range(1000)]
    response = api.post("/v1/routing/tsp/compare", json={
        "instance": {"coords": coords}, "solvers": ["ortools", "pyvrp"], "time_limit": 0.2})
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["field"] == "time_limit" and body["needed"] >= 0.3, body
    assert "'ortools'" in body["detail"] and "'pyvrp'" in body["detail"]
    # one solver that can run keeps the 200, the other row says why it did not
    response = api.post("/v1/routing/tsp/compare", json={
        "instance": {"coords": coords}, "solvers": ["ortools", "nearest_neighbor"],
        "time_limit": 0.2})
    assert response.status_code == 200, response.text
    rows = response.json()["rows"]
    assert rows[0]["error"] and rows[0]["wall_time"] is None and rows[1]["feasible"]


def test_a_known_solutions_file_is_the_checked_reference(api: httpx.Client,
                                                         data_dir: Path) -> None:
    """A compare upload takes the instance's known solution as a second file part,
    ``reference_file`` (CVRPLIB's .sol, TSPLIB's .opt.tour, LKH-3's tour), in place of a
    number typed in: it is checked and costed in the instance's convention (27,591 for
    X-n101-k25), and one that is not a solution of the instance is a 422 naming it, as is a
    reference given both ways; /solve takes no such part."""
    from tests.app.helpers import assert_problem

    vrp = data_dir / "X-n101-k25.vrp"
    instance = ("X-n101-k25.vrp", vrp.read_bytes())
    known = ("X-n101-k25.sol", (data_dir / "X-n101-k25.sol").read_bytes())
    response = api.post("/v1/routing/cvrp/compare",
                        files={"file": instance, "reference_file": known},
                        data={"solvers": "nearest_neighbor", "time_limit": "1"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["reference"] == OPTIMA["X-n101-k25"] == 27591
    assert body["reference_file"] == "X-n101-k25.sol"
    row = body["rows"][0]
    assert row["gap_to_reference"] == pytest.approx(100 * (row["cost"] / 27591 - 1))

    wrong = ("eil51.opt.tour", (data_dir / "eil51.opt.tour").read_bytes())
    body = assert_problem(api.post("/v1/routing/cvrp/compare",
                                   files={"file": instance, "reference_file": wrong},
                                   data={"solvers": "nearest_neighbor", "time_limit": "1"}),
                          422, field="reference_file")
    assert "not a feasible solution of X-n101-k25" in body["detail"]
    body = assert_problem(api.post("/v1/routing/cvrp/compare",
                                   files={"file": instance, "reference_file": known},
                                   data={"solvers": "nearest_neighbor", "time_limit": "1",
                                         "reference": "27591"}),
                          422, field="reference_file")
    assert "not both" in body["detail"]
    body = assert_problem(api.post("/v1/routing/cvrp/compare",
                                   files=[("file", instance), ("reference_file", known),
                                          ("reference_file", known)],
                                   data={"solvers": "nearest_neighbor", "time_limit": "1"}),
                          422)
    assert "at most 1 'file' part, 1 'reference_file' part" in body["detail"]
    body = assert_problem(api.post("/v1/routing/cvrp/solve",
                                   files={"file": instance, "reference_file": known},
                                   data={"solver": "nearest_neighbor", "time_limit": "1"}),
                          422, field="file")
    assert "at most 1 'file' part" in body["detail"]
