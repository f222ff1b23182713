"""A solution shows itself in a notebook: ``cosolve.draw`` gives its route drawing."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cosolve import CVRPInstance, Drawing, TSPInstance, draw
from solvers.routing.solution import build_solution

SVG = "{http://www.w3.org/2000/svg}"


def _cvrp() -> CVRPInstance:
    return CVRPInstance(name="six", coords=[[0, 0], [1, 5], [2, 5], [5, 1], [5, 2], [9, 9]],
                        demands=[0, 1, 1, 1, 1, 1], capacity=2)


def test_a_notebook_shows_the_routes(tmp_path: Path) -> None:
    instance = _cvrp()
    solution = build_solution(instance, [[1, 2], [3, 4], [5]], solver="by-hand", wall_time=0)
    picture = draw(instance, solution, width=320)
    assert isinstance(picture, Drawing) and picture._repr_svg_() == str(picture)
    svg = ET.fromstring(picture._repr_svg_())
    assert svg.attrib["width"] == "320" and "by-hand" in svg.findtext(f"{SVG}title", "")
    assert "characters" in repr(picture) and "<svg" not in repr(picture)
    saved = picture.save(tmp_path / "out" / "six.svg")
    assert saved.read_text() == str(picture)


def test_a_drawing_refuses_another_instance() -> None:
    square = TSPInstance(name="square", coords=[[0, 0], [0, 1], [1, 1], [1, 0]])
    solution = build_solution(square, [[0, 1, 2, 3]], solver="x", wall_time=0)
    with pytest.raises(ValueError, match="six"):
        draw(_cvrp(), solution)
