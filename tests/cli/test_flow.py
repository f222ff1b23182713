"""``cosolve flow``: solve → DIMACS solution file → check, compare, and the error exits."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from solvers.flow.io import load_network, parse_dimacs_solution
from solvers.flow.solution import Certificate, check_flow
from tests.solvers.flow.conftest import HAND_CHECKED, NETGEN_OPTIMA, netgen_path

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
    assert rejected.exit_code == 2 and "violation" in rejected.stderr


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


def test_check_reads_the_json_that_solve_writes(tmp_path: Path) -> None:
    """`flow check` read DIMACS lines only, so the .json that `flow solve --out` writes was
    refused with "expected 's COST' or 'f FROM TO FLOW'"."""
    network = tmp_path / "net.json"
    network.write_text(json.dumps(HAND_CHECKED["lower_bound"][0]))
    out = tmp_path / "flow.json"
    assert _run("solve", str(network), "--solver", "networkx_simplex", "--out",
                str(out)).exit_code == 0
    checked = _run("check", str(network), str(out))
    assert checked.exit_code == 0, checked.stderr
    assert f"cost {HAND_CHECKED['lower_bound'][1]}" in checked.stdout
    body = json.loads(out.read_text())
    body["cost"] += 1
    out.write_text(json.dumps(body))
    stated = _run("check", str(network), str(out))
    assert stated.exit_code == 2 and "the file states cost" in stated.stderr
    body["flow"] = body["flow"][:-1]
    out.write_text(json.dumps(body))
    short = _run("check", str(network), str(out))
    assert short.exit_code == 2 and "flow:" in short.stderr and "one per arc" in short.stderr
    body["flow"] = [0.5] * len(HAND_CHECKED["lower_bound"][2])
    out.write_text(json.dumps(body))
    fractional = _run("check", str(network), str(out))
    assert fractional.exit_code == 2 and "flow[0]" in fractional.stderr


def test_check_names_a_cost_it_cannot_check_and_parallel_arcs(tmp_path: Path) -> None:
    """Regression: a stated cost of 3.5 or "abc" was dropped and the check passed;
    and a DIMACS solution on parallel arcs was checked as if spread cheapest first, refusing
    a feasible flow on the dearer arc without saying why. A BOM no longer breaks a file."""
    network = tmp_path / "net.json"
    network.write_text(json.dumps(HAND_CHECKED["lower_bound"][0]))
    out = tmp_path / "flow.json"
    assert _run("solve", str(network), "--solver", "networkx_simplex", "--out",
                str(out)).exit_code == 0
    body = json.loads(out.read_text())
    for bad in (3.5, "abc"):
        out.write_text(json.dumps({**body, "cost": bad}))
        result = _run("check", str(network), str(out))
        assert result.exit_code == 2 and "cost:" in result.stderr, result.stderr
    parallel = tmp_path / "par.min"
    parallel.write_bytes("\ufeffp min 2 2\nn 1 3\nn 2 -3\na 1 2 0 5 1\na 1 2 0 5 10\n"
                         .encode())
    dear = tmp_path / "dear.sol"
    dear.write_text("s 30\nf 1 2 3\n")
    result = _run("check", str(parallel), str(dear))
    assert result.exit_code == 2 and "parallel arcs" in result.stderr, result.stderr
    cheap = tmp_path / "cheap.sol"
    cheap.write_text("s 3\nf 1 2 3\n")
    assert _run("check", str(parallel), str(cheap)).exit_code == 0


def test_compare_agrees(tmp_path: Path) -> None:
    network = tmp_path / "net.json"
    network.write_text(json.dumps(HAND_CHECKED["transport"][0]))
    result = _run("compare", str(network), "--json")
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["agree"] is True and body["best_cost"] == 16
    assert {r["solver"] for r in body["rows"]} == {"ortools_mcf", "networkx_simplex",
                                                   "oft_sinkhorn"}
    # the API's fields (before: seed, violations and infeasibility were missing)
    from app.schemas.flow import FlowCompareResponse, FlowCompareRow

    assert set(FlowCompareResponse.model_fields) - {"nodes", "arcs"} <= set(body)
    assert all(set(FlowCompareRow.model_fields) <= set(r) for r in body["rows"])
    table = _run("compare", str(network), "--solvers", "ortools_mcf,oft_sinkhorn")
    assert table.exit_code == 0 and "agree" in table.stdout


def test_infeasible_network_exits_2_with_the_cut(tmp_path: Path) -> None:
    """No flow exists, proven by the cut: the input's fault, exit 2, as a fleet cap no routing
    plan meets (before: it was 1, a solver failure)."""
    network = tmp_path / "bad.min"
    network.write_text("p min 2 1\nn 1 5\nn 2 -5\na 1 2 0 3 1\n")
    compared = _run("compare", str(network))
    assert compared.exit_code == 2 and "at most 3" in compared.stderr
    result = _run("solve", str(network))
    assert result.exit_code == 2
    assert "no feasible flow" in result.stderr and "at most 3" in result.stderr
    # under --json the document says why it exits 2, as every other --json failure does
    as_json = _run("solve", str(network), "--json")
    assert as_json.exit_code == 2
    document = json.loads(as_json.stdout)
    assert document["status"] == "infeasible" and "at most 3" in document["error"]


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


def test_a_shifted_arc_line_exits_2_naming_it(tmp_path: Path) -> None:
    """Regression: a 4-field arc line before a 6-field one solved to 'optimal', cost 50,
    with arc 1→2 read at cost 9 from line 5."""
    silent = tmp_path / "silent.min"
    silent.write_text("p min 3 2\nn 1 5\nn 3 -5\na 1 2 0 5\na 9 2 3 0 10 1\n")
    result = _run("solve", str(silent))
    assert result.exit_code == 2, result.stdout
    assert "line 4: expected 'a FROM TO LOW CAP COST' (5 numbers), got 4" in result.stderr


def test_compare_counts_only_proven_optima_towards_agreement() -> None:
    """The QA case: a time-limited oft_sinkhorn row (optimal: false) is no disagreement."""
    result = _run("compare", str(netgen_path("netgen_8_10a")), "--solvers",
                  "ortools_mcf,oft_sinkhorn", "--time-limit", "0.1", "--json")
    body = json.loads(result.stdout)
    oft = body["rows"][1]
    if oft["status"] == "optimal":
        pytest.skip("oft_sinkhorn proved the optimum within 0.1 s here")
    assert oft["status"] == "feasible" and oft["certificate"]["optimal"] is False
    assert result.exit_code == 0, result.stderr
    assert body["agree"] is True and body["best_cost"] == NETGEN_OPTIMA["netgen_8_10a"]
    # its repaired flow may reach the optimal cost without proving it (gap 0, unproven)
    assert body["best_solver"] == "ortools_mcf" and oft["gap_to_best"] >= 0


@pytest.mark.parametrize("command", ["solve", "compare"])
@pytest.mark.parametrize("device", ["banana", "cuda:", "gpu"])
def test_bad_device_is_refused_before_anything_runs(command: str, device: str) -> None:
    result = _run(command, str(netgen_path("netgen_8_08a")), "--solver" if command == "solve"
                  else "--solvers", "oft_sinkhorn", "--device", device)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --device (or COSOLVE_DEVICE): ")
    assert result.stderr.count("\n") == 1
    assert "cpu, cuda or cuda:N" in result.stderr and not result.stdout


def test_cuda_without_a_gpu_says_so() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present here")
    for command, option in (("solve", "--solver"), ("compare", "--solvers")):
        result = _run(command, str(netgen_path("netgen_8_08a")), option, "oft_sinkhorn",
                      "--device", "cuda")
        assert result.exit_code == 2 and "COSOLVE_DEVICE): 'cuda'" in result.stderr
        assert "no CUDA GPU" in result.stderr


def test_certified_gap_of_an_uninformative_bound_is_no_percentage(tmp_path: Path) -> None:
    """Bound 0 and cost 483,014,461 once printed '48301446100.0000 %'."""
    from cli.flow import _relative_gap

    assert _relative_gap(Certificate(0, 483_014_461, "sinkhorn potentials")) == \
        "the dual bound proves nothing yet"
    assert _relative_gap(Certificate(100, 10, "x")) == "9.0909 %"
    assert _relative_gap(Certificate(100, 0, "x")) == "0.0000 %"
    result = _run("solve", str(netgen_path("netgen_8_10a")), "--solver", "oft_sinkhorn",
                  "--time-limit", "0.2", "--json")
    assert result.exit_code == 0, result.stderr
    cert = json.loads(result.stdout)["certificate"]
    assert 0 <= cert["relative_gap"] <= 2
    assert cert["relative_gap"] == pytest.approx(
        cert["gap"] / max(abs(cert["dual_bound"] + cert["gap"]), abs(cert["dual_bound"]), 1))


def test_directory_says_a_network_file(tmp_path: Path) -> None:
    result = _run("solve", str(tmp_path))
    assert result.exit_code == 2
    assert f"{tmp_path} is a directory, not a network file" in result.stderr


@pytest.mark.parametrize("command", ["solve", "compare"])
def test_unbounded_json_network_names_the_file(tmp_path: Path, command: str) -> None:
    network = tmp_path / "cycle.json"
    network.write_text(json.dumps({"nodes": 3, "supplies": [0, 0, 0], "arcs": [
        {"tail": 1, "head": 2, "cost": -5}, {"tail": 2, "head": 3, "cost": 2},
        {"tail": 3, "head": 1, "cost": 1}]}))
    result = _run(command, str(network))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {network}: arcs: ") and "unbounded" in result.stderr


def test_solve_out_says_where_it_wrote(tmp_path: Path) -> None:
    out = tmp_path / "flow.sol"
    result = _run("solve", str(netgen_path("netgen_8_08a")), "--out", str(out))
    assert result.exit_code == 0, result.stderr
    assert "written to" in result.stdout and out.name in result.stdout and out.exists()


def test_readme_flow_examples_name_files_that_exist() -> None:
    """The flow page's examples run from the repository root, so their files must be there."""
    root = Path(__file__).resolve().parents[2]
    section = (root / "docs" / "flow.md").read_text()
    paths = re.findall(r"(?:cosolve flow \w+ |file=@)(\S+\.min\.gz)", section)
    assert len(paths) >= 5
    for path in paths:
        assert (root / path).is_file(), path


def test_readme_flow_timing_snippet_runs(capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The flow page's networkx-versus-OR-Tools measurement (before: the ratio it states was
    re-measured with it) runs as written from the repository root and finds networkx slower;
    the ratio itself depends on the machine, so only its sign is checked."""
    root = Path(__file__).resolve().parents[2]
    section = (root / "docs" / "flow.md").read_text()
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None
    monkeypatch.chdir(root)
    exec(compile(match.group(1), "docs/flow.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["netgen_8_08a", "netgen_8_10a"], lines
    for line in lines:
        assert float(line.split()[2].rstrip("x")) > 1, line


def test_check_refuses_binary_and_out_of_range_solutions(tmp_path: Path) -> None:
    """A binary file and a flow past int64 were tracebacks (UnicodeDecodeError,
    OverflowError)."""
    network = netgen_path("netgen_8_08a")
    binary = tmp_path / "bin.sol"
    binary.write_bytes(bytes(range(256)))
    result = _run("check", str(network), str(binary))
    assert result.exit_code == 2 and "not a text file" in result.stderr
    huge = tmp_path / "huge.sol"
    huge.write_text("f 1 2 4611686018427387904\n")
    result = _run("check", str(network), str(huge))
    assert result.exit_code == 2 and "out of range" in result.stderr


def test_a_time_limit_a_solver_cannot_keep_exits_2(tmp_path: Path) -> None:
    """Regression: ortools_mcf's refusal of a too-short limit exited 1 as a solver failure;
    it is bad input (the HTTP API's 422 on time_limit), and the advice no longer sends the
    user to oft_sinkhorn, which refused the same limit and pointed back."""
    from solvers.flow.generate import netgen_style
    from solvers.flow.io import dimacs_text

    path = tmp_path / "big.min"
    path.write_text(dimacs_text(netgen_style(2, 3000, 300_000)))
    result = _run("solve", str(path), "--solver", "ortools_mcf", "--time-limit", "0.5")
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith("error: --time-limit: ortools_mcf cannot be interrupted")
    assert "at least 0.9 s" in result.stderr and "oft_sinkhorn" not in result.stderr


@pytest.mark.parametrize("command", ["solve", "compare"])
def test_bad_input_under_json_prints_a_document(tmp_path: Path, command: str) -> None:
    """Under --json a refused input also prints a JSON document with the error, as the
    routing commands do (it printed nothing on stdout, and a script had nothing to parse)."""
    result = _run(command, str(tmp_path / "missing.min"), "--json")
    assert result.exit_code == 2
    printed = json.loads(result.stdout)
    assert "no such file" in printed["error"] and printed["network"] is None
    assert result.stderr.startswith("error: ")


def test_solve_json_keeps_the_flow_when_out_cannot_be_written(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import cli.flow

    def full_disk(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cli.flow, "write_solution_file", full_disk)
    result = _run("solve", str(netgen_path("netgen_8_08a")), "--out", str(tmp_path / "x.sol"),
                  "--json")
    assert result.exit_code == 2
    printed = json.loads(result.stdout)
    assert "No space left" in printed["error"]
    assert printed["cost"] == NETGEN_OPTIMA["netgen_8_08a"] and printed["flow"]


def test_unknown_solver_lists_the_flow_solvers() -> None:
    """Regression: ``flow solve --solver nope`` listed the routing solvers."""
    result = _run("solve", str(netgen_path("netgen_8_08a")), "--solver", "nope")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --solver: unknown solver 'nope'; the min-cost "
                                    "flow solvers: ")
    assert "ortools_mcf" in result.stderr and "nearest_neighbor" not in result.stderr


def test_solve_out_a_folder_is_named_a_folder(tmp_path: Path) -> None:
    """Regression: ``--out <folder>`` said "unknown solution extension '(none)'"."""
    result = _run("solve", str(netgen_path("netgen_8_08a")), "--solver", "ortools_mcf",
                  "--out", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: --out: {tmp_path} is a folder; name a file"


def test_a_comparison_every_solver_refuses_exits_2(tmp_path: Path) -> None:
    """CLI sweep: a time limit too short for every solver exited 1 ("no solver produced a
    feasible flow", a solver failure) where the routing `compare` exits 2 naming each
    refusal; the reasons are in the --json document's error too."""
    from solvers.flow.generate import netgen_style
    from solvers.flow.io import dimacs_text

    path = tmp_path / "mid.min"
    path.write_text(dimacs_text(netgen_style(2, 1000, 30_000)))
    result = _run("compare", str(path), "--solvers", "oft_sinkhorn,networkx_simplex",
                  "--time-limit", "0.1", "--json")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: no solver could run on this request: oft_sinkhorn ")
    assert "; networkx_simplex cannot be interrupted" in result.stderr
    printed = json.loads(result.stdout)
    assert printed["best_solver"] is None and printed["error"] in result.stderr
    assert all(row["error"] for row in printed["rows"])


def test_check_exits_2_on_a_flow_that_fails_and_prints_json(tmp_path: Path) -> None:
    """CLI sweep: `flow check` had no --json, and a flow that fails the check exited 1 (a
    solver failure, though no solver ran: the file given is at fault, exit 2 as for a file
    that cannot be read)."""
    network = tmp_path / "net.json"
    network.write_text(json.dumps(HAND_CHECKED["lower_bound"][0]))
    out = tmp_path / "flow.json"
    assert _run("solve", str(network), "--solver", "networkx_simplex", "--out",
                str(out)).exit_code == 0
    good = _run("check", str(network), str(out), "--json")
    assert good.exit_code == 0, good.stderr
    body = json.loads(good.stdout)
    assert body["feasible"] is True and body["violations"] == [] and "error" not in body
    assert body["cost"] == body["stated_cost"] == HAND_CHECKED["lower_bound"][1]
    assert body["network"]["arcs"] == len(HAND_CHECKED["lower_bound"][2])
    written = json.loads(out.read_text())
    out.write_text(json.dumps({**written, "flow": [0] * len(written["flow"])}))
    bad = _run("check", str(network), str(out), "--json")
    assert bad.exit_code == 2, bad.output
    body = json.loads(bad.stdout)
    assert body["feasible"] is False and body["violations"] and "problem(s) found" in body["error"]
    assert bad.stderr.startswith("violation: ")
    missing = _run("check", str(network), str(tmp_path / "nope.sol"), "--json")
    assert missing.exit_code == 2 and "cannot read" in json.loads(missing.stdout)["error"]


def test_check_refuses_an_empty_solution_unless_nothing_is_supplied(tmp_path: Path) -> None:
    """CLI sweep: an empty solution file was checked as the zero flow (and named each
    unbalanced node); it is refused as empty, except on a network without supplies, where
    the zero flow is a fair answer."""
    empty = tmp_path / "empty.sol"
    empty.write_text("c nothing here\n\n")
    result = _run("check", str(netgen_path("netgen_8_08a")), str(empty))
    assert result.exit_code == 2
    assert result.stderr == (f"error: SOLUTION: {empty} is empty (no 's COST' or 'f FROM TO "
                             "FLOW' line); as the zero flow it could not meet the network's "
                             "supplies\n")
    idle = tmp_path / "idle.json"
    idle.write_text(json.dumps({"nodes": [1, 2], "supplies": [0, 0],
                                "arcs": [{"tail": 1, "head": 2, "cost": 1}]}))
    zero = _run("check", str(idle), str(empty))
    assert zero.exit_code == 0 and "cost 0" in zero.stdout
