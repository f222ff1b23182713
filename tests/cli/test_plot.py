"""`cosolve compare --plot`: one chart of every solver's best cost over time."""

from __future__ import annotations

import itertools
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from tests.conftest import DATA

runner = CliRunner()
SVG = "{http://www.w3.org/2000/svg}"


def test_compare_writes_one_plot_with_a_line_per_solver(tmp_path: Path) -> None:
    plot = tmp_path / "new" / "folder" / "eil51.svg"  # the folder is created
    result = runner.invoke(app, ["compare", str(DATA / "eil51.tsp"), "--solvers",
                                 "nearest_neighbor,ils", "--time-limit", "0.3", "--plot",
                                 str(plot), "--json"])
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["plot"] == str(plot)
    for row in document["rows"]:  # each row's series: never increasing, ends at its cost
        series = row["progress"]
        assert series and all(b[1] <= a[1] for a, b in itertools.pairwise(series))
        assert series[-1][1] == pytest.approx(row["cost"])
    chart = ET.fromstring(plot.read_text())
    lines = chart.findall(f".//{SVG}path[@class='series']")
    assert sorted(line.attrib["data-name"] for line in lines) == ["ils", "nearest_neighbor"]
    title = chart.find(f"{SVG}title").text or ""  # type: ignore[union-attr]
    assert "eil51" in title and "e+" not in title


def test_plot_must_be_an_svg_file_named_before_any_solve(tmp_path: Path) -> None:
    result = runner.invoke(app, ["compare", str(DATA / "eil51.tsp"), "--solvers",
                                 "nearest_neighbor", "--plot", str(tmp_path / "chart.png")])
    assert result.exit_code == 2 and "--plot" in result.stderr and "*.svg" in result.stderr
