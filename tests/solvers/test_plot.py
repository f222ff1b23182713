"""The cost-over-time chart (solvers/plot.py): one line per series, readable ticks."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from solvers.plot import cost_plot_svg, nice_ticks

SVG = "{http://www.w3.org/2000/svg}"


def test_one_step_line_per_series_and_a_legend_naming_each() -> None:
    text = cost_plot_svg({"ils": [(0.0, 5_828_660.0), (0.5, 5_800_000.0), (1.0, 5_800_000.0)],
                          "ortools": [(0.2, 5_900_000.0), (1.0, 5_810_000.5)],
                          "broken": []}, "three solvers")
    svg = ET.fromstring(text)
    lines = svg.findall(f".//{SVG}path[@class='series']")
    assert [line.attrib["data-name"] for line in lines] == ["ils", "ortools"]
    assert len({line.attrib["stroke"] for line in lines}) == 2
    labels = [t.text or "" for t in svg.iter(f"{SVG}text")]
    assert "broken (no cost)" in labels
    assert not any(re.search(r"\de[+-]?\d", label) for label in labels)  # no exponents
    assert any("," in label for label in labels)  # thousands separators on the cost axis
    # the step line holds each best until the next improvement: only H and V moves
    assert re.fullmatch(r"M[\d.]+ [\d.]+(H[\d.]+V[\d.]+)+", lines[0].attrib["d"])


def test_a_single_point_and_a_flat_series_still_draw() -> None:
    svg = ET.fromstring(cost_plot_svg({"one": [(0.0, 7.0)]}, "flat"))
    assert len(svg.findall(f".//{SVG}path[@class='series']")) == 1


def test_nice_ticks_are_round_and_cover_the_range() -> None:
    ticks, decimals = nice_ticks(5_791_234.0, 5_828_660.0)
    assert ticks == [5_800_000, 5_810_000, 5_820_000] and decimals == 0
    ticks, decimals = nice_ticks(0.0, 0.3)
    assert ticks == [0.0, 0.1, 0.2, 0.3] and decimals == 1
    ticks, _ = nice_ticks(7.0, 7.0)  # a flat series still gets an axis
    assert ticks and ticks[0] <= 7.0 <= ticks[-1] + 0.1
