"""`cosolve solve` and `cosolve compare` on a VROOM document (a .json with `vehicles`): the
output document written and read back here, GeoJSON, and mistakes as exit 2 naming the
option or VROOM's field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from cli.main import app
from solvers.routing.vrp.solve import VRP_SOLVERS
from tests.app.test_vrp import EXAMPLE, MATRIX_DOC, _check_answer

runner = CliRunner()


def _run(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, list(args))


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc))
    return path


def test_solve_writes_vroom_output(tmp_path: Path) -> None:
    problem = _write(tmp_path / "fleet.json", MATRIX_DOC)
    out = tmp_path / "solution.json"
    result = _run("solve", str(problem), "--solver", "vroom", "--time-limit", "1",
                  "--out", str(out))
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "vroom: cost" in result.stdout and "feasible=True" in result.stdout
    _check_answer(MATRIX_DOC, json.loads(out.read_text()))


def test_solve_json_and_geojson(tmp_path: Path) -> None:
    geojson = tmp_path / "routes.geojson"
    result = _run("solve", str(EXAMPLE), "--solver", "vroom", "--time-limit", "1", "--json",
                  "--geojson", str(geojson))
    assert result.exit_code == 0, (result.stdout, result.stderr)
    doc = json.loads(EXAMPLE.read_text())
    answer = json.loads(result.stdout)
    _check_answer(doc, answer)
    drawn = json.loads(geojson.read_text())
    assert drawn["type"] == "FeatureCollection"
    assert sum(f["geometry"]["type"] == "LineString" for f in drawn["features"]) == len(
        answer["routes"])


def test_compare_ranks_the_solvers(tmp_path: Path) -> None:
    problem = _write(tmp_path / "fleet.json", MATRIX_DOC)
    names = list(VRP_SOLVERS)[:2]
    result = _run("compare", str(problem), "--solvers", ",".join(names), "--time-limit",
                  "0.5", "--json")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    body = json.loads(result.stdout)
    assert [r["solver"] for r in body["rows"]] == names and body["best_solver"] in names
    for row in body["rows"]:
        if row["solution"] is not None:
            _check_answer(MATRIX_DOC, row["solution"])


def test_mistakes_exit_2_naming_the_option_or_field(tmp_path: Path) -> None:
    problem = _write(tmp_path / "fleet.json", MATRIX_DOC)
    result = _run("solve", str(problem), "--solver", "nope")
    assert result.exit_code == 2 and "--solver" in result.stderr and "vroom" in result.stderr
    result = _run("solve", str(problem), "--solver", "vroom", "--max-vehicles", "2")
    assert result.exit_code == 2 and "--max-vehicles" in result.stderr
    result = _run("solve", str(problem), "--solver", "vroom", "--geojson",
                  str(tmp_path / "g.json"))
    assert result.exit_code == 2 and "--geojson" in result.stderr  # matrices only
    bad = json.loads(json.dumps(MATRIX_DOC))
    bad["jobs"][0]["location_index"] = 9
    result = _run("solve", str(_write(tmp_path / "bad.json", bad)), "--solver", "vroom")
    assert result.exit_code == 2 and "jobs[0].location_index" in result.stderr
    assert "Traceback" not in result.stderr


def test_batch_solves_a_folder_of_documents(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    other = json.loads(json.dumps(MATRIX_DOC))
    other["jobs"] = other["jobs"][:2]
    _write(folder / "a.json", MATRIX_DOC)
    _write(folder / "b.json", other)
    out = tmp_path / "out"
    result = _run("batch", str(folder), "--solver", "vroom", "--time-limit", "1", "--out",
                  str(out), "--workers", "1")
    assert result.exit_code == 0, (result.stdout, result.stderr)
    for name, doc in (("a", MATRIX_DOC), ("b", other)):
        answer = json.loads((out / f"{name}.json").read_text())
        _check_answer(doc, answer)
