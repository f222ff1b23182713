"""The SVG drawings the compare endpoint returns (solvers/routing/render.py)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np

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
    lines = svg.findall(f".//{SVG}polyline")
    assert len(lines) == 2
    assert lines[0].attrib["stroke"] != lines[1].attrib["stroke"]
    for line in lines:  # every route starts and ends at the depot
        points = _points(line)
        assert points[0] == points[-1] and len(points) == 4
    assert len(svg.findall(f".//{SVG}rect[@fill='#d62728']")) == 1


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
