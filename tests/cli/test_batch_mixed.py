"""`cosolve batch` over files and folders of mixed problem kinds: ``--solver auto`` or one
solver per kind, totals per kind (never a TSP's length plus a CVRP's cost)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from cli.main import app
from solvers.routing.generate import random_cvrptw
from solvers.routing.io.documents import instance_to_dict
from solvers.routing.io.formats import load_instance
from solvers.routing.problem import CVRPInstance, TSPInstance

runner = CliRunner()


def _mixed_folder(folder: Path) -> Path:
    """A tiny TSP, a CVRP with a fleet cap and a CVRPTW, as JSON files."""
    rng = np.random.default_rng(5)
    coords = rng.random((8, 2))
    folder.mkdir()
    for name, inst in (
            ("a_tsp", TSPInstance(coords=coords)),
            ("b_cvrp", CVRPInstance(coords=coords, demands=np.r_[0, rng.integers(1, 4, 7)],
                                    capacity=6, max_vehicles=4)),
            ("c_cvrptw", random_cvrptw(rng, 8)[0])):
        (folder / f"{name}.json").write_text(json.dumps(
            {"problem": inst.problem, **instance_to_dict(inst)}))
    return folder


def _batch(*args: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["batch", *args, "--json", "--workers", "2"])
    return result.exit_code, json.loads(result.stdout)


def test_auto_on_a_mixed_folder_totals_per_problem(tmp_path: Path) -> None:
    folder = _mixed_folder(tmp_path / "in")
    code, doc = _batch(str(folder), "--solver", "auto", "--time-limit", "0.3",
                       "--out", str(tmp_path / "out"))
    assert code == 0, doc
    rows = {r["file"]: r for r in doc["rows"]}
    # the solver each file ran: auto's pick for its kind, size, fleet and time limit
    assert rows["b_cvrp.json"]["solver"] == "ils"  # a fleet cap
    assert rows["c_cvrptw.json"]["solver"] == "pyvrp"
    assert rows["a_tsp.json"]["solver"] in ("polynet", "reld", "pyvrp")
    totals = doc["totals"]
    assert totals["total_cost"] is None  # three kinds: no sum across them
    for kind, name in (("tsp", "a_tsp.json"), ("cvrp", "b_cvrp.json"),
                       ("cvrptw", "c_cvrptw.json")):
        assert totals["by_problem"][kind]["solved"] == 1
        plan = json.loads((tmp_path / "out" / f"{Path(name).stem}.json").read_text())
        cost = load_instance(folder / name).cost(plan["routes"])  # the checker's figure
        assert totals["by_problem"][kind]["total_cost"] == pytest.approx(cost)
        assert plan["auto"]["picked"] == rows[name]["solver"]
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "total cost per problem: TSP" in summary and "| solver |" in summary


def test_files_and_a_solver_per_problem(tmp_path: Path) -> None:
    folder = _mixed_folder(tmp_path / "in")
    files = [str(folder / "a_tsp.json"), str(folder / "b_cvrp.json")]
    code, doc = _batch(*files, "--solver", "tsp=nearest_neighbor,cvrp=ils",
                       "--time-limit", "0.3", "--out", str(tmp_path / "out"))
    assert code == 0, doc
    assert [(r["file"], r["solver"]) for r in doc["rows"]] == [
        ("a_tsp.json", "nearest_neighbor"), ("b_cvrp.json", "ils")]
    assert doc["paths"] == files and set(doc["totals"]["by_problem"]) == {"tsp", "cvrp"}
    # the folder too: its CVRPTW has no solver in this form, and is rejected saying so
    code, doc = _batch(str(folder), "--solver", "tsp=nearest_neighbor,cvrp=ils",
                       "--time-limit", "0.3", "--out", str(tmp_path / "out"))
    assert code == 1
    rows = {r["file"]: r for r in doc["rows"]}
    assert rows["a_tsp.json"]["state"] == rows["b_cvrp.json"]["state"] == "already_solved"
    assert rows["c_cvrptw.json"]["state"] == "rejected"
    assert "add cvrptw=NAME or use auto" in rows["c_cvrptw.json"]["error"]


@pytest.mark.parametrize(("solver", "message"), [
    ("tsp=ils,vrp=pyvrp", "unknown problem 'vrp'"),
    ("cvrptw=ils", "does not solve cvrptw"),
    ("tsp=ils,tsp=pyvrp", "tsp is given twice"),
    ("tsp=nope", "unknown solver 'nope'"),
])
def test_a_solver_per_problem_that_cannot_be_read_is_refused(tmp_path: Path, solver: str,
                                                             message: str) -> None:
    folder = _mixed_folder(tmp_path / "in")
    result = runner.invoke(app, ["batch", str(folder), "--solver", solver,
                                 "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "--solver" in result.stderr
    assert message in result.stderr
