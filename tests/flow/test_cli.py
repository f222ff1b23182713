"""``cosolve flow``: solve → DIMACS solution file → check, compare, and the error exits."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cli.main import app
from solvers.flow.io import load_network, parse_dimacs_solution
from solvers.flow.problem import check_flow
from tests.flow.conftest import HAND_CHECKED, NETGEN_OPTIMA, netgen_path

runner = CliRunner()


def _run(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, ["flow", *args])


def test_solve_writes_dimacs_solution_lines_that_check(tmp_path: Path) -> None:
    out = tmp_path / "netgen_8_08a.sol"
    network = str(netgen_path("netgen_8_08a"))
    result = _run("solve", network, "--solver", "oft_sinkhorn", "--out", str(out))
    assert result.exit_code == 0, result.stderr
    assert "optimal" in result.stdout and "142,274,536" in result.stdout
    lines = out.read_text().splitlines()
    assert f"s {NETGEN_OPTIMA['netgen_8_08a']}" in lines
    assert all(line.split()[0] in ("c", "s", "f") for line in lines)
    net = load_network(netgen_path("netgen_8_08a"))
    claimed, flow = parse_dimacs_solution(out.read_text(), net)
    assert check_flow(net, flow) == (claimed, [])

    checked = _run("check", network, str(out))
    assert checked.exit_code == 0, checked.stderr
    assert f"cost {NETGEN_OPTIMA['netgen_8_08a']}" in checked.stdout
    broken = out.read_text().replace(lines[-1], lines[-1].rsplit(" ", 1)[0] + " 99999")
    out.write_text(broken)
    rejected = _run("check", network, str(out))
    assert rejected.exit_code == 1 and "violation" in rejected.stderr


def test_solve_json_network_to_json(tmp_path: Path) -> None:
    network = tmp_path / "net.json"
    network.write_text(json.dumps(HAND_CHECKED["lower_bound"][0]))
    out = tmp_path / "flow.json"
    result = _run("solve", str(network), "--solver", "networkx_simplex", "--out", str(out),
                  "--json")
    assert result.exit_code == 0, result.stderr
    printed = json.loads(result.stdout)
    written = json.loads(out.read_text())
    for body in (printed, written):
        assert body["cost"] == HAND_CHECKED["lower_bound"][1] and body["status"] == "optimal"
        assert body["flow"] == HAND_CHECKED["lower_bound"][2]


def test_compare_agrees(tmp_path: Path) -> None:
    network = tmp_path / "net.json"
    network.write_text(json.dumps(HAND_CHECKED["transport"][0]))
    result = _run("compare", str(network), "--json")
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["agree"] is True and body["best_cost"] == 16
    assert {r["solver"] for r in body["rows"]} == {"ortools_mcf", "networkx_simplex",
                                                   "oft_sinkhorn"}
    table = _run("compare", str(network), "--solvers", "ortools_mcf,oft_sinkhorn")
    assert table.exit_code == 0 and "agree" in table.stdout


def test_infeasible_network_exits_1_with_the_cut(tmp_path: Path) -> None:
    network = tmp_path / "bad.min"
    network.write_text("p min 2 1\nn 1 5\nn 2 -5\na 1 2 0 3 1\n")
    result = _run("solve", str(network))
    assert result.exit_code == 1
    assert "no feasible flow" in result.stderr and "at most 3" in result.stderr


def test_input_errors_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.min"
    bad.write_text("p min 2 1\nn 1 1\nn 2 -1\na 1 2 0 -3 1\n")
    result = _run("solve", str(bad))
    assert result.exit_code == 2 and "line 4" in result.stderr and "negative capacity" in \
        result.stderr
    assert _run("solve", str(tmp_path / "missing.min")).exit_code == 2
    wrong_out = _run("solve", str(netgen_path("netgen_8_08a")), "--out", str(tmp_path / "x.tour"))
    assert wrong_out.exit_code == 2 and "--out" in wrong_out.stderr
    unknown = _run("solve", str(netgen_path("netgen_8_08a")), "--solver", "pyvrp")
    assert unknown.exit_code == 2 and "--solver" in unknown.stderr
    twice = _run("compare", str(netgen_path("netgen_8_08a")),
                 "--solvers", "ortools_mcf,ortools_mcf")
    assert twice.exit_code == 2 and "listed twice" in twice.stderr
    tol = _run("solve", str(netgen_path("netgen_8_08a")), "--tolerance", "2")
    assert tol.exit_code == 2 and "--tolerance" in tol.stderr
