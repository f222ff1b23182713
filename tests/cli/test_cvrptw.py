"""`cosolve solve` and `cosolve compare` on Solomon CVRPTW files."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli.main import app
from solvers.routing.io.formats import load_instance
from solvers.routing.io.solutions import read_sol
from solvers.routing.solution import build_solution
from tests.conftest import DATA

runner = CliRunner()
SOLOMON = DATA / "solomon"


def test_solve_a_solomon_file_and_write_sol(tmp_path):
    path = SOLOMON / "C101.100.10.vrptw"
    out = tmp_path / "c101.sol"
    result = runner.invoke(app, ["solve", str(path), "--solver", "pyvrp", "--time-limit", "1",
                                 "--out", str(out), "--reference", "8273", "--json"])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["instance"]["problem"] == "cvrptw" and body["instance"]["scale"] == 10
    assert body["solution"]["feasible"] and body["solution"]["distance"] == "FLOOR_2D"
    routes, cost = read_sol(out)
    inst = load_instance(path)
    checked = build_solution(inst, routes, solver="check", wall_time=0)
    assert checked.feasible and checked.cost == cost == body["solution"]["cost"]
    assert body["gap_percent"] is not None and 0 <= body["gap_percent"] <= 2


def test_compare_on_a_solomon_file():
    path = SOLOMON / "C201.100.3.vrptw"
    result = runner.invoke(app, ["compare", str(path), "--solvers", "nearest_neighbor,ortools",
                                 "--time-limit", "0.5", "--reference", "5891", "--json"])
    assert result.exit_code == 0, result.stderr
    rows = {row["solver"]: row for row in json.loads(result.stdout)["rows"]}
    assert rows["ortools"]["feasible"] and rows["nearest_neighbor"]["feasible"]
    assert rows["ortools"]["distance"] == "FLOOR_2D"


def test_bad_window_and_wrong_solver_are_input_errors(tmp_path):
    text = (SOLOMON / "C101.100.10.vrptw").read_text().replace("\n2 912 967\n", "\n2 967 912\n")
    bad = tmp_path / "bad.vrptw"
    bad.write_text(text)
    result = runner.invoke(app, ["solve", str(bad), "--solver", "ortools"])
    # named as the file writes it (the file's node 2, its values before SCALE)
    assert result.exit_code == 2, result.stderr
    assert "TIME_WINDOW_SECTION: node 2: window [967.0, 912.0]" in result.stderr
    result = runner.invoke(app, ["solve", str(SOLOMON / "C101.100.10.vrptw"), "--solver",
                                 "sil", "--time-limit", "1"])
    assert result.exit_code == 2 and "--solver" in result.stderr, result.stderr


def test_an_infeasible_plan_is_not_written_as_a_sol(tmp_path):
    """OR-Tools under a fleet of 12 on R101 (20 in the file) drops customers. The plan was
    written to --out x.sol as a plain solution with its cost (a .sol has no word for
    "infeasible"); now it is not, the failure says so, and x.json keeps it."""
    path = SOLOMON / "R101.100.20.vrptw"
    args = ["solve", str(path), "--solver", "ortools", "--time-limit", "0.5",
            "--max-vehicles", "12"]
    sol = tmp_path / "r101.sol"
    result = runner.invoke(app, [*args, "--out", str(sol)])
    assert result.exit_code == 1, result.stderr
    assert "infeasible" in result.stderr and "--out: not written" in result.stderr
    assert not sol.exists()
    kept = tmp_path / "r101.json"
    result = runner.invoke(app, [*args, "--out", str(kept), "--json"])
    assert result.exit_code == 1 and json.loads(result.stdout)["out"] == str(kept)
    saved = json.loads(kept.read_text())
    assert saved["feasible"] is False and saved["violations"]


def test_write_solution_file_refuses_an_infeasible_plan_as_sol_or_tour(tmp_path):
    from solvers.errors import InstanceError
    from solvers.routing.io.solutions import write_solution_file

    cvrp = load_instance(DATA / "X-n101-k25.vrp")
    dropped = build_solution(cvrp, [[v] for v in range(1, 100)], solver="hand", wall_time=0)
    tsp = load_instance(DATA / "eil51.tsp")
    short = build_solution(tsp, [list(range(50))], solver="hand", wall_time=0)
    for name, solution, instance in (("x.sol", dropped, cvrp), ("t.tour", short, tsp)):
        assert not solution.feasible
        try:
            write_solution_file(tmp_path / name, solution, instance)
        except InstanceError as refused:
            assert refused.field == "path" and "infeasible" in refused.message
        else:
            raise AssertionError(f"{name} was written")
        assert not (tmp_path / name).exists()
        write_solution_file(tmp_path / f"{name}.json", solution, instance)
        assert json.loads((tmp_path / f"{name}.json").read_text())["violations"]
