"""The SVG drawings of routing solutions (solvers/routing/render.py) and the cost-over-time
plots and numbers they share (solvers/plot.py)."""

from __future__ import annotations

import itertools
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from solvers.plot import distinct_colour, readable_number
from solvers.routing.problem import CVRPInstance, TSPInstance
from solvers.routing.render import solution_svg
from solvers.routing.solution import build_solution

SVG = "{http://www.w3.org/2000/svg}"


def _points(polyline: ET.Element) -> list[tuple[float, float]]:
    return [tuple(map(float, p.split(","))) for p in polyline.attrib["points"].split()]


def test_tsp_drawing_closes_the_tour_and_names_solver_and_cost() -> None:
    instance = TSPInstance(name="square", coords=[[0, 0], [0, 10], [10, 10], [10, 0]])
    solution = build_solution(instance, [[0, 1, 2, 3]], solver="by-hand", wall_time=0.0)
    svg = ET.fromstring(solution_svg(instance, solution, width=300))
    assert svg.attrib["width"] == "300"
    (line,) = svg.findall(f".//{SVG}polyline")
    points = _points(line)
    assert len(points) == 5 and points[0] == points[-1]
    assert all(0 <= x <= 300 for x, _ in points)
    title = svg.find(f"{SVG}title")
    assert title is not None and "by-hand" in (title.text or "") and "cost 40" in (title.text or "")
    assert svg.findall(f".//{SVG}rect[@fill='#d62728']") == []  # no depot in a TSP


def test_cvrp_drawing_has_a_depot_square_and_one_colour_per_route() -> None:
    coords = [[5, 5], [0, 0], [0, 10], [10, 10], [10, 0]]
    instance = CVRPInstance(coords=coords, demands=[0, 1, 1, 1, 1], capacity=2)
    solution = build_solution(instance, [[1, 2], [3, 4]], solver="by-hand", wall_time=0.0)
    svg = ET.fromstring(solution_svg(instance, solution))
    lines = svg.findall(f".//{SVG}polyline[@class='route']")
    assert len(lines) == 2
    assert lines[0].attrib["stroke"] != lines[1].attrib["stroke"]
    legs = svg.findall(f".//{SVG}path[@class='depot-legs']")
    assert len(legs) == 2
    (depot,) = svg.findall(f".//{SVG}rect[@fill='#d62728']")
    centre = (float(depot.attrib["x"]) + float(depot.attrib["width"]) / 2,
              float(depot.attrib["y"]) + float(depot.attrib["height"]) / 2)
    for line, leg in zip(lines, legs, strict=True):
        points = _points(line)
        assert len(points) == 2  # the body: the customers only
        # the legs run depot -> first customer and last customer -> depot, thinner and fainter
        numbers = [float(v) for v in re.findall(r"[-\d.]+", leg.attrib["d"])]
        assert numbers[:2] == pytest.approx(centre, abs=0.1)
        assert tuple(numbers[2:4]) == points[0] and tuple(numbers[4:6]) == points[-1]
        assert float(leg.attrib["stroke-width"]) < float(line.attrib["stroke-width"])
        assert leg.attrib["stroke"] == line.attrib["stroke"]
        assert float(leg.attrib["stroke-opacity"]) < 1


def test_every_route_of_a_150_route_plan_is_one_polyline_in_its_own_colour() -> None:
    rng = np.random.default_rng(1)
    coords = np.vstack([[500, 500], rng.random((300, 2)) * 1000])
    instance = CVRPInstance(coords=coords, demands=[0] + [1] * 300, capacity=2)
    routes = [[2 * k + 1, 2 * k + 2] for k in range(150)]
    solution = build_solution(instance, routes, solver="by-hand", wall_time=0.0)
    assert solution.feasible
    svg = ET.fromstring(solution_svg(instance, solution))
    lines = svg.findall(f".//{SVG}polyline[@class='route']")
    assert len(lines) == 150
    assert len({line.attrib["stroke"] for line in lines}) == 150
    assert "150 routes" in (svg.find(f"{SVG}title").text or "")  # type: ignore[union-attr]


def test_palette_stays_distinct_for_hundreds_of_routes() -> None:
    colours = [distinct_colour(k) for k in range(1000)]
    assert len(set(colours)) == 1000
    for a, b in itertools.pairwise(colours):  # neighbours differ in hue or tone
        hue_a, _, light_a = (float(v.rstrip("%")) for v in a[4:-1].split(","))
        hue_b, _, light_b = (float(v.rstrip("%")) for v in b[4:-1].split(","))
        assert min(abs(hue_a - hue_b), 360 - abs(hue_a - hue_b)) > 30 or light_a != light_b


def test_title_has_readable_numbers_and_the_gap() -> None:
    coords = [[0, 0], [0, 2_000_000], [2_000_000, 2_000_000], [2_000_000, 0]]
    instance = TSPInstance(name="big", coords=coords)
    solution = build_solution(instance, [[0, 1, 2, 3]], solver="by-hand", wall_time=0.0)
    title = ET.fromstring(solution_svg(instance, solution, reference=7_900_000)).find(
        f"{SVG}title").text or ""  # type: ignore[union-attr]
    assert "cost 8,000,000" in title and "gap +1.27%" in title and "by-hand" in title
    assert not re.search(r"\de[+-]?\d", title)  # no exponent anywhere


def test_readable_number() -> None:
    assert readable_number(5828660.0) == "5,828,660"
    assert readable_number(5828660.37) == "5,828,660.4"
    assert readable_number(427.3456) == "427.35"
    assert readable_number(0.000123) == "0.000123"
    assert readable_number(float("nan")) == "n/a" and readable_number(None) == "n/a"
    assert readable_number(1e20) == "100,000,000,000,000,000,000.0"
    assert readable_number(2.5, 0) == "2"  # banker's rounding, as Python formats


def test_matrix_only_instance_is_drawn_on_a_circle() -> None:
    instance = TSPInstance(distance_matrix=[[0, 1, 2], [1, 0, 1], [2, 1, 0]])
    solution = build_solution(instance, [[0, 1, 2]], solver="by-hand", wall_time=0.0)
    text = solution_svg(instance, solution)
    assert "circle" in ET.fromstring(text).find(f"{SVG}title").text  # type: ignore[union-attr]


def test_infeasible_solution_with_bad_indices_still_draws() -> None:
    instance = TSPInstance(coords=[[0, 0], [1, 0], [0, 1]])
    solution = build_solution(instance, [[0, 7, 1]], solver="broken", wall_time=0.0)
    text = solution_svg(instance, solution)
    assert "INFEASIBLE" in text and "n/a" in text
    ET.fromstring(text)


def test_a_few_thousand_nodes_stay_small() -> None:
    rng = np.random.default_rng(0)
    instance = TSPInstance(coords=rng.random((3000, 2)) * 1000)
    solution = build_solution(instance, [list(range(3000))], solver="identity", wall_time=0.0)
    text = solution_svg(instance, solution)
    assert len(text) < 3000 * 40  # about 25 bytes per node: one point and one dot each
    assert len(re.findall(r"<(?:polyline|path)\b", text)) == 2
