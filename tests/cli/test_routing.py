"""The `cosolve` command line, end to end on the bundled TSPLIB/CVRPLIB instances.

Runs in-process through typer's CliRunner (stdout and stderr kept apart), plus one real
subprocess of the installed console script to prove the streams are separate there too.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from contextlib import suppress
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from solvers.routing.io.formats import load_instance
from solvers.routing.io.solutions import read_sol, read_tour
from tests.conftest import DATA, OPTIMA
from tests.conftest import REPO as REPO_ROOT

runner = CliRunner()

GEO_TSP = """NAME : geo5
TYPE : TSP
DIMENSION : 5
EDGE_WEIGHT_TYPE : XRAY1
NODE_COORD_SECTION
1 38.24 20.42
2 39.57 26.15
3 40.56 25.32
4 36.26 23.12
5 33.48 10.54
EOF
"""


def _run(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, list(args))


def _assert_user_error(result, *words: str) -> None:  # type: ignore[no-untyped-def]
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ")
    for word in words:
        assert word in result.stderr


# -- solvers ------------------------------------------------------------------------------
def test_solvers_table_lists_every_registered_solver() -> None:
    result = _run("solvers")
    assert result.exit_code == 0, result.stderr
    for name in ("ortools", "pyvrp", "nearest_neighbor"):
        assert name in result.stdout


def test_solvers_json_filters_by_problem() -> None:
    result = _run("solvers", "--problem", "cvrp", "--json")
    assert result.exit_code == 0, result.stderr
    listed = {row["name"]: row for row in json.loads(result.stdout)}
    assert {"ortools", "pyvrp", "nearest_neighbor"} <= set(listed)
    assert all("cvrp" in row["problems"] for row in listed.values())
    assert listed["pyvrp"]["max_nodes"]["cvrp"] > 0


def test_solvers_rejects_unknown_problem() -> None:
    _assert_user_error(_run("solvers", "--problem", "knapsack"), "--problem", "tsp")


def test_solvers_unknown_problem_under_json_is_a_json_document() -> None:
    """CLI sweep: `solvers --problem foo --json` printed nothing on stdout."""
    result = _run("solvers", "--problem", "foo", "--json")
    _assert_user_error(result, "--problem")
    document = json.loads(result.stdout)
    assert document["problem"] == "foo" and document["solvers"] == []
    assert document["error"].startswith("--problem: unknown problem 'foo'; known problems: ")


@pytest.mark.parametrize(("args", "words"), [
    (("solve", "x.tsp", "--solver", "ortools", "--time-limit", "abc"), "'--time-limit'"),
    (("compare", "x.tsp", "--no-such-option"), "--no-such-option"),
    (("flow", "solve"), "Missing argument 'FILE'"),
    (("schedule", "simulate", "--workflows-count", "many"), "'--workflows-count'"),
])
def test_a_usage_error_under_json_is_a_json_document(args: tuple[str, ...], words: str) -> None:
    """CLI sweep: click's own refusals (an unknown option, a value of the wrong type, a
    missing argument) printed no JSON under --json; stderr keeps click's usage lines."""
    result = _run(*args, "--json")
    assert result.exit_code == 2, result.output
    assert words in json.loads(result.stdout)["error"]
    assert "Usage:" in result.stderr and words in result.stderr
    plain = _run(*args)
    assert plain.exit_code == 2 and plain.stdout == ""


# -- solve --------------------------------------------------------------------------------
def test_solve_tsp_nearest_neighbor_writes_a_tour(tmp_path: Path) -> None:
    out = tmp_path / "eil51.tour"
    result = _run("solve", str(DATA / "eil51.tsp"), "--solver", "nearest_neighbor",
                  "--time-limit", "1", "--out", str(out), "--reference", str(OPTIMA["eil51"]))
    assert result.exit_code == 0, result.stderr
    tour = read_tour(out)
    assert sorted(tour) == list(range(51))
    cost = load_instance(DATA / "eil51.tsp").tour_cost(tour)
    assert f"{int(cost)}" in result.stdout
    assert "EUC_2D" in result.stdout
    assert "gap" in result.stdout


def test_solve_json_keeps_the_solution_when_out_cannot_be_written(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Regression: under --json a write failure after the solve printed no document, so a
    script lost the solution of a long run along with the file."""
    import cli.main

    def full_disk(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cli.main, "write_solution_file", full_disk)
    result = _run("solve", str(DATA / "eil51.tsp"), "--solver", "nearest_neighbor",
                  "--time-limit", "1", "--out", str(tmp_path / "x.tour"), "--json")
    assert result.exit_code == 2, result.stderr
    printed = json.loads(result.stdout)
    assert "No space left" in printed["error"]
    assert sorted(printed["solution"]["tour"]) == list(range(51))
    assert printed["solution"]["cost"] > 0


def test_solve_tsp_ortools_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "eil51.json"
    result = _run("solve", str(DATA / "eil51.tsp"), "--solver", "ortools", "--time-limit", "1",
                  "--out", str(out), "--json", "--reference", str(OPTIMA["eil51"]))
    assert result.exit_code == 0, result.stderr
    printed = json.loads(result.stdout)
    written = json.loads(out.read_text())
    assert sorted(written["routes"][0]) == list(range(51))
    assert written["feasible"] is True
    assert written["distance"] == "EUC_2D"
    assert written["cost"] >= OPTIMA["eil51"]
    assert printed["solution"]["cost"] == written["cost"]
    # the tour too, as the API answers (it was only in the API's response)
    assert printed["solution"]["tour"] == written["tour"] == written["routes"][0]
    assert printed["gap_percent"] == pytest.approx(
        100 * (written["cost"] - OPTIMA["eil51"]) / OPTIMA["eil51"])


def test_solve_cvrp_ortools_writes_a_sol(tmp_path: Path) -> None:
    out = tmp_path / "x101.sol"
    result = _run("solve", str(DATA / "X-n101-k25.vrp"), "--solver", "ortools",
                  "--time-limit", "1", "--out", str(out))
    assert result.exit_code == 0, result.stderr
    routes, cost = read_sol(out)
    instance = load_instance(DATA / "X-n101-k25.vrp")
    visited = sorted(v for r in routes for v in r)
    assert visited == list(range(1, instance.n))
    assert all(instance.demands[r].sum() <= instance.capacity for r in routes)
    assert cost == instance.cost(routes)
    assert cost >= OPTIMA["X-n101-k25"]


def test_solve_and_compare_take_a_fleet_cap(tmp_path: Path) -> None:
    """--max-vehicles caps a file without VEHICLES (ils uses 27 routes on X-n101-k25 at 2 s
    unconstrained); a cap below the demand bound, or one on a TSP, is an input mistake."""
    out = tmp_path / "x101.sol"
    result = _run("solve", str(DATA / "X-n101-k25.vrp"), "--solver", "ils",
                  "--time-limit", "2", "--max-vehicles", "26", "--out", str(out))
    assert result.exit_code == 0, result.stderr
    routes, _ = read_sol(out)
    assert len([r for r in routes if r]) <= 26
    result = _run("compare", str(DATA / "X-n101-k25.vrp"), "--solvers", "ils",
                  "--time-limit", "2", "--max-vehicles", "26", "--json")
    assert result.exit_code == 0, result.stderr
    assert "max_vehicles" in result.stdout and '"max_vehicles": 26' in result.stdout
    _assert_user_error(_run("solve", str(DATA / "X-n101-k25.vrp"), "--solver", "ils",
                            "--max-vehicles", "20"), "--max-vehicles", "at least 25")
    _assert_user_error(_run("compare", str(DATA / "berlin52.tsp"), "--solvers", "ils",
                            "--max-vehicles", "2"), "--max-vehicles", "CVRP and CVRPTW")


def test_solve_json_stdout_is_clean_in_a_real_process(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "cosolve"
    if not script.exists():
        pytest.skip("the cosolve console script is not installed in this environment")
    proc = subprocess.run(
        [str(script), "solve", str(DATA / "berlin52.tsp"), "--solver", "nearest_neighbor",
         "--json"], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert json.loads(proc.stdout)["solution"]["feasible"] is True


def test_the_cli_starts_without_torch() -> None:
    # torch takes seconds to import; it loads when a neural solver or GOODRL runs, so --help
    # and usage errors answer at once.
    proc = subprocess.run([sys.executable, "-c", "import sys, cli.main, app.main; "
                           "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))"],
                          capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.strip() == "[]"


# -- compare ------------------------------------------------------------------------------
def test_compare_ortools_and_nearest_neighbor() -> None:
    result = _run("compare", str(DATA / "eil51.tsp"), "--solvers", "ortools,nearest_neighbor",
                  "--time-limit", "1", "--reference", str(OPTIMA["eil51"]), "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    rows = {row["solver"]: row for row in report["rows"]}
    assert set(rows) == {"ortools", "nearest_neighbor"}
    assert all(row["feasible"] and row["error"] is None for row in rows.values())
    assert min(row["gap_to_best"] for row in rows.values()) == 0.0
    assert rows["ortools"]["cost"] <= rows["nearest_neighbor"]["cost"]
    assert report["best_solver"] == "ortools"
    assert all(row["gap_to_reference"] >= 0 for row in rows.values())


def test_solve_with_a_budget_in_solutions() -> None:
    result = _run("solve", str(DATA / "eil51.tsp"), "--solver", "polynet", "--time-limit", "30",
                  "--max-solutions", "32", "--json")
    assert result.exit_code == 0, result.stderr
    stats = json.loads(result.stdout)["solution"]["stats"]
    assert stats["solutions"] == 32 and stats["max_solutions"] == 32
    refused = _run("solve", str(DATA / "eil51.tsp"), "--solver", "ortools",
                   "--max-solutions", "32")
    assert refused.exit_code == 2 and "--max-solutions" in refused.stderr


def test_compare_draws_each_solution_into_the_svg_folder(tmp_path: Path) -> None:
    result = _run("compare", str(DATA / "X-n101-k25.vrp"), "--solvers",
                  "nearest_neighbor,ortools", "--time-limit", "0.5", "--svg", str(tmp_path),
                  "--json")
    assert result.exit_code == 0, result.stderr
    rows = {row["solver"]: row for row in json.loads(result.stdout)["rows"]}
    for solver in ("nearest_neighbor", "ortools"):
        path = tmp_path / f"X-n101-k25_{solver}.svg"
        assert rows[solver]["svg"] == str(path)
        text = path.read_text()
        assert text.startswith("<svg") and text.rstrip().endswith("</svg>")
        assert text.count("<polyline") >= 25  # X-n101-k25 needs at least 25 vehicles
        # each row carries its plan, so it can be checked (before: only the cost was there)
        from solvers.routing.io.formats import load_instance

        inst = load_instance(DATA / "X-n101-k25.vrp")
        routes = rows[solver]["routes"]
        assert sorted(c for r in routes for c in r) == list(range(1, inst.n))
        assert inst.cost(routes) == pytest.approx(rows[solver]["cost"])


def test_compare_svg_makes_its_folder_and_names_a_file_in_the_way(tmp_path: Path) -> None:
    folder = tmp_path / "new" / "charts"
    result = _run("compare", str(DATA / "eil51.tsp"), "--solvers", "nearest_neighbor",
                  "--time-limit", "0.5", "--svg", str(folder))
    assert result.exit_code == 0, result.stderr
    assert (folder / "eil51_nearest_neighbor.svg").read_text().startswith("<svg")
    (tmp_path / "afile").write_text("x")
    result = _run("compare", str(DATA / "eil51.tsp"), "--solvers", "nearest_neighbor",
                  "--svg", str(tmp_path / "afile" / "charts"))
    assert result.exit_code == 2
    assert "--svg" in result.stderr and "afile is a file" in result.stderr


def test_out_and_svg_make_the_folders_they_name(tmp_path: Path) -> None:
    out = tmp_path / "new" / "dir" / "x.tour"
    drawing = tmp_path / "pictures" / "x.svg"
    result = _run("solve", str(DATA / "eil51.tsp"), "--solver", "nearest_neighbor",
                  "--time-limit", "0.5", "--out", str(out), "--svg", str(drawing))
    assert result.exit_code == 0, result.stderr
    assert out.read_text().strip() and drawing.read_text().startswith("<svg")


def test_solve_writes_an_svg_drawing_and_refuses_other_names(tmp_path: Path) -> None:
    drawing = tmp_path / "eil51.svg"
    result = _run("solve", str(DATA / "eil51.tsp"), "--solver", "nearest_neighbor",
                  "--svg", str(drawing), "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["svg"] == str(drawing)
    assert drawing.read_text().count("<polyline") == 1  # a tour is one closed line
    refused = _run("solve", str(DATA / "eil51.tsp"), "--solver", "nearest_neighbor",
                   "--svg", str(tmp_path / "eil51.png"))
    assert refused.exit_code == 2 and "*.svg" in refused.stderr
    assert not (tmp_path / "eil51.png").exists()


def test_compare_table_names_every_column() -> None:
    result = _run("compare", str(DATA / "eil51.tsp"), "--solvers", "nearest_neighbor")
    assert result.exit_code == 0, result.stderr
    for column in ("cost", "gap to best", "gap to ref.", "time (s)", "feasible", "error"):
        assert column in result.stdout


def test_compare_unknown_solver_lists_known_names() -> None:
    result = _run("compare", str(DATA / "eil51.tsp"), "--solvers", "ortools,lkh9")
    _assert_user_error(result, "--solvers", "lkh9", "ortools", "pyvrp", "nearest_neighbor")


def test_solvers_load_before_their_clock_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    # In a fresh process the first neural solve at 1 s took 2.6-3.7 s (torch and the weights
    # loaded inside it) and searched less: solve and compare warm every solver up first.
    import cli.main
    from solvers.routing import solve as routing_solve

    events: list[str] = []
    monkeypatch.setattr(cli.main, "warm_up", lambda name: events.append(f"warm {name}"))
    real = routing_solve.solve

    def solving(instance, name, *args, **kwargs):  # type: ignore[no-untyped-def]
        events.append(f"solve {name}")
        return real(instance, name, *args, **kwargs)

    monkeypatch.setattr(routing_solve, "solve", solving)
    monkeypatch.setattr(cli.main, "solve_instance", solving)
    assert _run("compare", str(DATA / "eil51.tsp"), "--solvers", "nearest_neighbor,ortools",
                "--time-limit", "0.2").exit_code == 0
    assert events == ["warm nearest_neighbor", "warm ortools", "solve nearest_neighbor",
                      "solve ortools"]
    events.clear()
    assert _run("solve", str(DATA / "eil51.tsp"), "--solver", "nearest_neighbor",
                "--time-limit", "0.2").exit_code == 0
    assert events == ["warm nearest_neighbor", "solve nearest_neighbor"]


def test_compare_refuses_a_solver_of_another_problem() -> None:
    # `solve --solver ils` on a CVRPTW is an input mistake (exit 2); compare ran the rest and
    # showed an error row with exit 0
    result = _run("compare", str(DATA / "solomon" / "C101.100.10.vrptw"), "--solvers",
                  "nearest_neighbor,ils")
    _assert_user_error(result, "--solvers", "'ils' does not solve cvrptw")


def test_a_solver_that_cannot_take_the_instance_is_an_input_mistake(tmp_path: Path) -> None:
    # a TSP given only as a distance matrix: the neural solvers need coordinates (exit 2, not
    # the exit 1 of a solver failure)
    path = tmp_path / "m.json"
    path.write_text('{"problem": "tsp", "distance_matrix": [[0, 1, 2], [1, 0, 1], [2, 1, 0]]}')
    result = _run("solve", str(path), "--solver", "ils", "--time-limit", "1")
    _assert_user_error(result, "'ils' cannot take this instance", "coords")


def test_compare_refuses_a_solver_listed_twice() -> None:
    # It would run once and the table would hide that the user asked twice (the API refuses too).
    result = _run("compare", str(DATA / "eil51.tsp"),
                  "--solvers", "nearest_neighbor, nearest_neighbor")
    _assert_user_error(result, "--solvers", "'nearest_neighbor' is listed twice")
    _assert_user_error(_run("compare", str(DATA / "eil51.tsp"), "--solvers", " , "),
                       "--solvers", "at least one solver name")


# -- input mistakes -----------------------------------------------------------------------
def test_unsupported_extension_is_a_clear_user_error(tmp_path: Path) -> None:
    bad = tmp_path / "eil51.txt"
    bad.write_text((DATA / "eil51.tsp").read_text())
    _assert_user_error(_run("solve", str(bad), "--solver", "ortools"), "file", ".tsp")


def test_missing_file_is_a_clear_user_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.tsp"
    _assert_user_error(_run("solve", str(missing), "--solver", "ortools"), "FILE",
                       "no such file")


def test_unread_edge_weights_are_refused_naming_the_field(tmp_path: Path) -> None:
    geo = tmp_path / "geo5.tsp"
    geo.write_text(GEO_TSP)
    result = _run("compare", str(geo), "--solvers", "nearest_neighbor")
    _assert_user_error(result, "EDGE_WEIGHT_TYPE", "XRAY1")


def test_unknown_solver_lists_known_names() -> None:
    result = _run("solve", str(DATA / "eil51.tsp"), "--solver", "concorde")
    assert result.exit_code != 0
    assert "Traceback" not in result.stderr
    for name in ("concorde", "ortools", "pyvrp", "nearest_neighbor"):
        assert name in result.stderr


def test_tour_output_for_a_cvrp_is_refused_before_solving(tmp_path: Path) -> None:
    result = _run("solve", str(DATA / "X-n101-k25.vrp"), "--solver", "ortools",
                  "--out", str(tmp_path / "x.tour"))
    _assert_user_error(result, "--out", ".sol")
    assert not (tmp_path / "x.tour").exists()


def test_sol_output_for_a_tsp_is_refused_before_solving(tmp_path: Path) -> None:
    result = _run("solve", str(DATA / "eil51.tsp"), "--solver", "nearest_neighbor",
                  "--out", str(tmp_path / "x.sol"))
    _assert_user_error(result, "--out", ".tour")
    assert not (tmp_path / "x.sol").exists()


def test_non_positive_time_limit_is_refused() -> None:
    result = _run("solve", str(DATA / "eil51.tsp"), "--solver", "ortools", "--time-limit", "0")
    _assert_user_error(result, "--time-limit")


def test_a_time_limit_above_thirty_days_is_refused() -> None:
    """Regression: 1e30 s reached OR-Tools, whose duration overflowed ('failed unexpectedly',
    exit 1); every command now names the option, before anything runs."""
    for command in (["solve", str(DATA / "eil51.tsp"), "--solver", "ortools"],
                    ["compare", str(DATA / "eil51.tsp"), "--solvers", "ortools"]):
        _assert_user_error(_run(*command, "--time-limit", "1e30"), "--time-limit", "30 days")
        # the refused value in full, not rounded to look like the limit itself
        _assert_user_error(_run(*command, "--time-limit", "2592000.5"), "--time-limit",
                           "got 2,592,000.5")


def test_time_limit_below_a_solvers_start_up_is_bad_input(tmp_path):
    """PyVRP needs 3e-7·N² s to start; asking for less is the user's input, named as such."""
    coords = [[i % 70, i // 70] for i in range(4900)]
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"problem": "tsp", "coords": coords}))
    result = CliRunner().invoke(app, ["solve", str(path), "--solver", "pyvrp",
                                      "--time-limit", "1"])
    assert result.exit_code == 2
    assert "--time-limit" in result.output


def test_input_mistakes_found_before_any_solving(tmp_path: Path) -> None:
    """A seed past the C int some solvers take (a pyvrp TypeError, rc 1), a device file (read
    forever), and an --out or --svg that is a folder (found only after the time limit)."""
    seed = _run("solve", str(DATA / "eil51.tsp"), "--solver", "nearest_neighbor", "--seed",
                str(2**32))
    assert seed.exit_code == 2 and "--seed" in seed.stderr
    device = _run("solve", "/dev/zero", "--solver", "nearest_neighbor")
    assert device.exit_code == 2 and "not a regular file" in device.stderr
    (tmp_path / "x.json").mkdir()
    (tmp_path / "x.svg").mkdir()
    for option, path in (("--out", "x.json"), ("--svg", "x.svg")):
        result = _run("solve", str(DATA / "eil51.tsp"), "--solver", "ortools", "--time-limit",
                      "30", option, str(tmp_path / path))
        assert result.exit_code == 2 and "is a folder" in result.stderr
    # a file where the folder should be is named as a file, not as a missing folder
    (tmp_path / "afile").write_text("x")
    for option, path in (("--out", "afile/x.tour"), ("--svg", "afile/x.svg")):
        result = _run("solve", str(DATA / "eil51.tsp"), "--solver", "ortools", "--time-limit",
                      "30", option, str(tmp_path / path))
        assert result.exit_code == 2 and "afile is a file, not a folder" in result.stderr


def test_one_solver_crashing_keeps_the_other_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """compare caught only the domain's errors: any other exception in one solver (a pyvrp
    TypeError) lost the whole table."""
    import solvers.routing.solve as solve_module
    from solvers.contract import Budget

    real = solve_module.solve

    def flaky(instance, name, budget, progress=None):  # type: ignore[no-untyped-def]
        if name == "ortools":
            raise TypeError("incompatible constructor arguments")
        return real(instance, name, budget, progress) if progress else real(instance, name,
                                                                            budget)

    monkeypatch.setattr(solve_module, "solve", flaky)
    inst = load_instance(DATA / "eil51.tsp")
    comparison = solve_module.compare(inst, ["ortools", "nearest_neighbor"],
                                      Budget(time_limit=0.5))
    rows = {r.solver: r for r in comparison.rows}
    assert "TypeError" in rows["ortools"].error and rows["nearest_neighbor"].feasible
    assert comparison.best_solver == "nearest_neighbor"


def test_serve_on_a_busy_port_is_a_clear_input_error() -> None:
    """uvicorn's own exit code 3 and log line became exit 2 naming --host/--port."""
    import socket

    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        proc = subprocess.run([sys.executable, "-c", "from cli.main import app; app()", "serve",
                               "--port", str(port)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in proc.stderr


@pytest.mark.heavy
def test_serve_stops_promptly_while_a_client_follows_a_job(tmp_path: Path) -> None:
    """Ctrl-C waited for the followed job to end (uvicorn waits for open responses, and an
    events stream stays open until its job is final): 15 s for a 15 s job, an hour for an
    hour's. The wait is now bounded (GRACEFUL_SHUTDOWN_S); the job resumes on restart."""
    import os
    import signal
    import socket
    import threading
    import time

    import httpx

    from cli.main import GRACEFUL_SHUTDOWN_S

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("COSOLVE_")}
    env["COSOLVE_DATA_DIR"] = str(tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", "from cli.main import app; app()", "serve",
                             "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        job = httpx.post(f"{url}/v1/jobs", json={
            "problem": "tsp", "solver": "ortools", "time_limit": 60,
            "instance": {"coords": [[i % 7, i // 7] for i in range(40)]}}, timeout=30).json()

        def follow() -> None:
            with suppress(httpx.HTTPError), httpx.stream(
                    "GET", f"{url}/v1/jobs/{job['id']}/events", timeout=120) as stream:
                for _ in stream.iter_lines():
                    pass

        threading.Thread(target=follow, daemon=True).start()
        time.sleep(2)
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=45)
        assert time.monotonic() - started < GRACEFUL_SHUTDOWN_S + 15
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- Ctrl-C and failures under --json -----------------------------------------------------
def test_first_ctrl_c_cancels_the_solve_and_a_second_stops_at_once() -> None:
    import os
    import signal
    import time

    from cli.common import first_ctrl_c_cancels

    before = signal.getsignal(signal.SIGINT)
    with first_ctrl_c_cancels() as cancel:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # the handler runs at the next bytecode
        assert cancel.is_set()  # no KeyboardInterrupt: the solver winds down itself
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
    assert signal.getsignal(signal.SIGINT) is before


@pytest.mark.heavy
def test_ctrl_c_stops_an_ortools_solve_and_keeps_its_best_solution() -> None:
    """OR-Tools searches in C++, where a KeyboardInterrupt never reached it (before: a 60 s
    solve ran on after Ctrl-C); the first Ctrl-C now cancels its search like an API job's."""
    import signal
    import time

    script = Path(sys.executable).parent / "cosolve"
    if not script.exists():
        pytest.skip("the cosolve console script is not installed in this environment")
    proc = subprocess.Popen(
        [str(script), "solve", str(DATA / "X-n101-k25.vrp"), "--solver", "ortools",
         "--time-limit", "120", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    try:
        time.sleep(8)  # past the imports, into the search
        proc.send_signal(signal.SIGINT)
        sent = time.perf_counter()
        out, err = proc.communicate(timeout=30)
    finally:
        with suppress(ProcessLookupError):
            proc.kill()
    assert time.perf_counter() - sent < 10
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    document = json.loads(out)
    assert document["interrupted"] is True
    assert document["solution"]["feasible"] is True
    assert document["solution"]["wall_time"] < 60


def test_ctrl_c_before_the_solve_says_so(monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    """CLI sweep: Ctrl-C while the instance was read or the solvers imported (before the
    warm-up) exited 130 without a word and, under --json, no document."""
    import cli.flow
    import cli.main

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli.main, "load_instance", interrupted)
    monkeypatch.setattr(cli.flow, "load_network", interrupted)
    net = tmp_path / "net.json"
    net.write_text("{}")
    for args in (["solve", str(DATA / "eil51.tsp"), "--solver", "ortools"],
                 ["compare", str(DATA / "eil51.tsp")], ["flow", "solve", str(net)],
                 ["flow", "compare", str(net)]):
        result = _run(*args, "--json")
        assert result.exit_code == 130, (args, result.output)
        assert result.stderr == "error: interrupted (Ctrl-C) while loading, before solving\n"
        document = json.loads(result.stdout)
        assert document["interrupted"] is True and "interrupted" in document["error"]


@pytest.mark.parametrize(("argv0", "interrupted"), [
    ("/venv/bin/cosolve", True), ("-m", True), ("other", False)])  # -m: python -m cli.main
def test_ctrl_c_while_cosolve_loads_is_one_line(argv0: str, interrupted: bool) -> None:
    """CLI sweep: Ctrl-C in the first half second of `cosolve solve` (typer, numpy and the
    solvers importing) printed a traceback from whichever import it hit. A process that is
    not cosolve keeps Python's KeyboardInterrupt."""
    script = (f"import os, signal, sys; sys.argv = [{argv0!r}, 'solve', 'x.tsp', '--json']; "
              "sys.orig_argv = ['python', '-m', 'cli.main']; "
              "import cli; os.kill(os.getpid(), signal.SIGINT); import cli.main")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=REPO_ROOT,
                          # a test run started in the background inherits an ignored SIGINT
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    if interrupted:
        assert proc.returncode == 130, proc.stderr
        assert proc.stderr == "error: interrupted (Ctrl-C) while loading, before solving\n"
        assert json.loads(proc.stdout)["interrupted"] is True
    else:
        assert proc.returncode != 0 and "KeyboardInterrupt" in proc.stderr


def test_a_solver_failure_under_json_is_a_json_document() -> None:
    """Scripts read every outcome from stdout: a solver that fails (here nearest_neighbor,
    which ignores RC101's fleet of 15) prints its error as JSON, not only on stderr."""
    result = _run("solve", str(DATA / "solomon" / "RC101.100.15.vrptw"), "--solver",
                  "nearest_neighbor", "--time-limit", "1", "--json")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert document["solution"] is None and "max_vehicles is 15" in document["error"]
    assert document["interrupted"] is False
    assert result.stderr.startswith("error: solver 'nearest_neighbor' failed")


def test_bad_input_under_json_is_a_json_document_too() -> None:
    """Regression: a solver that does not solve the problem, a missing file or a bad time limit
    under ``--json`` printed nothing on stdout (only a failure during the solve did)."""
    cases = [
        ("solve", str(DATA / "solomon" / "R101.100.20.vrptw"), "--solver", "ils",
         "--time-limit", "1", "--json"),
        ("solve", str(DATA / "eil51.tsp"), "--solver", "ortools", "--time-limit", "-1",
         "--json"),
        ("compare", "/nonexistent/x.tsp", "--json"),
        ("compare", str(DATA / "eil51.tsp"), "--solvers", "ortools,nosuch", "--json"),
    ]
    for args in cases:
        result = _run(*args)
        _assert_user_error(result)
        document = json.loads(result.stdout)
        assert document["error"] == result.stderr.strip().removeprefix("error: "), args
        assert document.get("solution", "absent") is None or document.get("rows") == []
    plain = _run("solve", str(DATA / "eil51.tsp"), "--solver", "nosuch")
    _assert_user_error(plain)
    assert plain.stdout == ""  # without --json, stdout stays empty as before
    # the solvers of the instance's problem, not the flow solvers too
    assert "the tsp solvers: ortools" in plain.stderr and "ortools_mcf" not in plain.stderr


@pytest.mark.parametrize("command", ["solve", "compare"])
def test_routing_commands_check_the_torch_device_first(command: str) -> None:
    option = "--solver" if command == "solve" else "--solvers"
    result = _run(command, str(DATA / "eil51.tsp"), option, "reld", "--device", "gpu")
    _assert_user_error(result, "--device (or COSOLVE_DEVICE): unknown device 'gpu'",
                       "cpu, cuda or cuda:N")
    # COSOLVE_DEVICE is the same option (the service reads it too); auto is the CPU here
    import torch

    if not torch.cuda.is_available():
        result = runner.invoke(app, [command, str(DATA / "eil51.tsp"), option, "reld",
                                     "--time-limit", "1"], env={"COSOLVE_DEVICE": "cuda"})
        _assert_user_error(result, "COSOLVE_DEVICE): 'cuda' was asked for", "no CUDA GPU")
        result = _run(command, str(DATA / "eil51.tsp"), option, "reld", "--time-limit", "1",
                      "--device", "auto", "--json")
        assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize(("env", "words"), [
    ({"COSOLVE_DEVICE": "gpu"}, ["COSOLVE_DEVICE: unknown device 'gpu'"]),
    ({"COSOLVE_MAX_TIME_LIMIT": "-1"}, ["COSOLVE_MAX_TIME_LIMIT: ", "greater than 0"]),
    ({"COSOLVE_DEFAULT_TIME_LIMIT": "999"}, ["settings: default_time_limit (999 s) is above"]),
    # a file for the data folder (before: a traceback after the warm-up)
    ({"COSOLVE_DATA_DIR": str(DATA / "eil51.tsp")}, ["COSOLVE_DATA_DIR: ", "is a file"]),
    # Ray (before: an address with the local executor was ignored; a mistyped one was a
    # traceback after the warm-up; one with no cluster hung in Ray's connect for minutes)
    ({"COSOLVE_RAY_ADDRESS": "ray://head:10001"},
     ["COSOLVE_RAY_ADDRESS is set but COSOLVE_EXECUTOR is local"]),
    ({"COSOLVE_EXECUTOR": "ray", "COSOLVE_RAY_ADDRESS": "head"},
     ["COSOLVE_RAY_ADDRESS: 'head' is not a Ray address", "ray://host:port"]),
    ({"COSOLVE_EXECUTOR": "ray", "COSOLVE_RAY_ADDRESS": "head:6³79"},
     ["COSOLVE_RAY_ADDRESS: 'head:6³79' is not a Ray address"]),
    ({"COSOLVE_EXECUTOR": "ray", "COSOLVE_RAY_ADDRESS": "ray://127.0.0.1:1"},
     ["COSOLVE_RAY_ADDRESS=ray://127.0.0.1:1: nothing answers at 127.0.0.1:1"]),
    ({"COSOLVE_EXECUTOR": "ray", "COSOLVE_RAY_ADDRESS": "127.0.0.1:1"},
     ["COSOLVE_RAY_ADDRESS=127.0.0.1:1: nothing answers", "is the Ray head running?"]),
])
def test_serve_checks_its_settings_before_starting(env: dict[str, str],
                                                   words: list[str]) -> None:
    """A bad COSOLVE_* value is one line and exit 2, not uvicorn's start-up traceback."""
    result = runner.invoke(app, ["serve", "--port", "8799"], env=env)
    _assert_user_error(result, *words)


def test_uvicorn_run_directly_names_a_bad_setting_in_one_line() -> None:
    """`uvicorn app.main:app` with a bad variable: one line naming it and exit 2, not
    pydantic's traceback."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COSOLVE_")}
    env["COSOLVE_MAX_TIME_LIMIT"] = "-1"
    proc = subprocess.run([sys.executable, "-m", "uvicorn", "app.main:app", "--port", "8798"],
                          cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "cosolve: COSOLVE_MAX_TIME_LIMIT: Input should be greater than 0" in proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr


def test_a_fleet_proven_impossible_is_the_inputs_fault(tmp_path: Path) -> None:
    """Five customers of 4 on vehicles of 10 with max_vehicles 2: the demand fits two
    vehicles, no partition does. The exact search proves it, so the CLI exits 2 (bad input)
    as the API answers 422, not 1 ("solver failed")."""
    path = tmp_path / "inf.json"
    path.write_text(json.dumps({"problem": "cvrp", "coords": [[0, 0], [1, 0], [0, 1], [1, 1],
                                                             [2, 2], [3, 3]],
                                "demands": [0, 4, 4, 4, 4, 4], "capacity": 10,
                                "max_vehicles": 2}))
    result = _run("solve", str(path), "--solver", "ils", "--time-limit", "1")
    _assert_user_error(result, "ils: max_vehicles: no plan within the fleet exists",
                       "proven by enumerating every partition")
    result = _run("compare", str(path), "--solvers", "ils,nearest_neighbor", "--time-limit",
                  "1")
    _assert_user_error(result, "no solution exists (ils): no plan within the fleet exists")


@pytest.mark.parametrize(("env", "words"), [
    ({"COSOLVE_TORCH_THREADS": "abc"}, ["COSOLVE_TORCH_THREADS: must be an integer from 1"]),
    ({"COSOLVE_TORCH_THREADS": "0"}, ["COSOLVE_TORCH_THREADS", "got '0'"]),
    # Regression: '²' is a digit to str.isdigit, and 10^20 overflowed inside torch
    ({"COSOLVE_TORCH_THREADS": "²"}, ["COSOLVE_TORCH_THREADS", "got '²'"]),
    ({"COSOLVE_TORCH_THREADS": "9" * 20}, ["COSOLVE_TORCH_THREADS", "to 4096"]),
    ({"COSOLVE_SIL_PRECISION": "fp64"}, ["COSOLVE_SIL_PRECISION: must be auto, fp32 or bf16"]),
    ({"COSOLVE_SIL_VIEWS": "yes"}, ["COSOLVE_SIL_VIEWS: must be 0 or 1"]),
])
def test_the_solvers_own_variables_are_checked_by_every_command(
        env: dict[str, str], words: list[str]) -> None:
    """Regression: COSOLVE_TORCH_THREADS=abc was a traceback in `solve` and `serve`, and a
    misspelt SIL precision fell back to fp32 silently."""
    result = runner.invoke(app, ["solve", str(DATA / "eil51.tsp"), "--solver",
                                 "nearest_neighbor"], env=env)
    _assert_user_error(result, *words)
    result = runner.invoke(app, ["serve", "--port", "8799"], env=env)
    _assert_user_error(result, *words)


def test_compare_every_solver_refuses_exits_2_with_the_reasons_in_the_json(
        tmp_path: Path) -> None:
    """Regression: every row refused (0.2 s for 1,000 nodes) exited 1, a solver failure, and
    the --json document had no error; now exit 2 as `solve` gives, the reasons in both."""
    coords = [[(i * 7919) % 1000, (i * 104729) % 997] for i in range(1000)]
    path = tmp_path / "tsp1000.json"
    path.write_text(json.dumps({"coords": coords}))
    result = _run("compare", str(path), "--solvers", "ortools,pyvrp", "--time-limit", "0.2",
                  "--json")
    assert result.exit_code == 2, result.stderr
    printed = json.loads(result.stdout)
    assert "'ortools'" in printed["error"] and "'pyvrp'" in printed["error"]
    assert [r["wall_time"] for r in printed["rows"]] == [None, None]
    assert result.stderr.startswith("error: no solver could run")
    # a bad option's document has the same keys as a comparison's
    bad = _run("compare", str(path), "--solvers", "ortools,nosuch", "--json")
    assert bad.exit_code == 2
    assert {"reference", "best_solver", "interrupted", "rows", "error"} <= set(
        json.loads(bad.stdout))


def test_out_that_is_the_input_file_is_refused(tmp_path: Path) -> None:
    """Regression: `solve self.json --out self.json` replaced the instance with its solution
    (and `flow solve` did the same with a network)."""
    inst = tmp_path / "self.json"
    inst.write_text(json.dumps({"problem": "tsp", "coords": [[0, 0], [1, 0], [0, 1], [1, 1]]}))
    before = inst.read_text()
    result = _run("solve", str(inst), "--solver", "nearest_neighbor", "--out", str(inst))
    _assert_user_error(result, "--out", "is the input file")
    assert inst.read_text() == before
    net = tmp_path / "net.json"
    net.write_text(json.dumps({"nodes": [1, 2], "supplies": [1, -1],
                               "arcs": [{"tail": 1, "head": 2, "cost": 1}]}))
    before = net.read_text()
    result = runner.invoke(app, ["flow", "solve", str(net), "--out", str(net)])
    assert result.exit_code == 2 and "is the input file" in result.stderr
    assert net.read_text() == before


def test_flow_json_prints_a_document_when_the_solver_step_refuses(tmp_path: Path) -> None:
    """Regression: under --json a refusal from the solver step itself (here an unbounded
    cost: a negative cycle of uncapacitated arcs) left stdout empty."""
    net = tmp_path / "negcyc.json"
    net.write_text(json.dumps({"nodes": [1, 2, 3], "supplies": [0, 0, 0], "arcs": [
        {"tail": 1, "head": 2, "cost": -1}, {"tail": 2, "head": 3, "cost": -1},
        {"tail": 3, "head": 1, "cost": -1}]}))
    for command in ("solve", "compare"):
        result = runner.invoke(app, ["flow", command, str(net), "--json"])
        assert result.exit_code == 2, result.output
        doc = json.loads(result.stdout)
        assert "unbounded" in doc["error"] and doc["network"]["arcs"] == 3


def test_ctrl_c_in_flow_and_schedule_commands_says_so_under_json(tmp_path: Path,
                                                                 monkeypatch) -> None:
    """Regression: Ctrl-C during `flow solve`, `flow compare` or `schedule simulate` exited 130
    with nothing on stderr and, under --json, no document."""
    import cli.flow
    import cli.schedule

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli.flow, "solve", interrupted)
    monkeypatch.setattr(cli.flow, "compare", interrupted)
    monkeypatch.setattr(cli.schedule, "run_policies", interrupted)
    net = tmp_path / "net.json"
    net.write_text(json.dumps({"nodes": [1, 2], "supplies": [1, -1],
                               "arcs": [{"tail": 1, "head": 2, "cost": 1}]}))
    for args in (["flow", "solve", str(net)], ["flow", "compare", str(net)],
                 ["schedule", "simulate", "--workflows-count", "10", "--policies", "heft"]):
        result = runner.invoke(app, [*args, "--json"])
        assert result.exit_code == 130, (args, result.output)
        assert "interrupted" in json.loads(result.stdout)["error"]
        assert "error: interrupted" in result.stderr


def test_solve_out_a_folder_is_named_a_folder(tmp_path: Path) -> None:
    """Regression: ``solve --out <folder>`` said "unknown solution extension '(none)'"."""
    result = _run("solve", str(DATA / "eil51.tsp"), "--solver", "nearest_neighbor",
                  "--out", str(tmp_path))
    _assert_user_error(result)
    assert result.stderr.strip() == f"error: --out: {tmp_path} is a folder; name a file"


def test_a_result_file_that_cannot_be_written_keeps_the_printed_result(tmp_path: Path,
                                                                       monkeypatch) -> None:
    """Regression: without --json, a solution file that could not be written after the solve
    (a full disk, /proc) left stdout empty, the solve lost; the summary is printed first.
    And `flow solve --json` now carries the request's time_limit, seed and tolerance."""
    import cli.main

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cli.main, "write_solution_file", full_disk)
    result = _run("solve", str(DATA / "eil51.tsp"), "--solver", "nearest_neighbor",
                  "--time-limit", "1", "--out", str(tmp_path / "x.tour"))
    assert result.exit_code == 2 and "cannot write" in result.stderr
    assert "cost" in result.stdout and "feasible" in result.stdout
    net = tmp_path / "net.json"
    net.write_text(json.dumps({"nodes": [1, 2], "supplies": [1, -1],
                               "arcs": [{"tail": 1, "head": 2, "cost": 1}]}))
    doc = json.loads(runner.invoke(app, ["flow", "solve", str(net), "--json", "--seed", "3",
                                         "--time-limit", "5"]).stdout)
    assert (doc["time_limit"], doc["seed"], doc["tolerance"]) == (5.0, 3, 0.0)


# -- references from a known solution's file --------------------------------------------------
def _x101_beside(tmp_path: Path, sol_text: str | None = None) -> Path:
    """X-n101-k25.vrp in its own folder, with its CVRPLIB .sol (or ``sol_text``) beside it."""
    vrp = tmp_path / "X-n101-k25.vrp"
    vrp.write_bytes((DATA / "X-n101-k25.vrp").read_bytes())
    sol = (DATA / "X-n101-k25.sol").read_text() if sol_text is None else sol_text
    (tmp_path / "X-n101-k25.sol").write_text(sol)
    return vrp


def test_a_known_solution_beside_the_instance_is_the_checked_reference(tmp_path: Path) -> None:
    """CVRPLIB ships NAME.sol beside NAME.vrp and TSPLIB NAME.opt.tour: gaps to the best
    known were reported only when its cost was typed in as --reference. The file found beside
    the instance is checked and its cost recomputed (27,591 for X-n101-k25, kroA100's optimal
    tour 21,282); --reference-file none turns it off."""
    vrp = _x101_beside(tmp_path)
    result = _run("compare", str(vrp), "--solvers", "nearest_neighbor", "--time-limit", "1",
                  "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["reference"] == 27591 and doc["reference_source"].endswith("X-n101-k25.sol")
    row = doc["rows"][0]
    assert row["gap_to_reference"] == pytest.approx(100 * (row["cost"] / 27591 - 1))
    table = _run("compare", str(vrp), "--solvers", "nearest_neighbor", "--time-limit", "1")
    assert "from X-n101-k25.sol, checked" in " ".join(table.stdout.split())

    tour = _run("solve", str(DATA / "kroA100.tsp.gz"), "--solver", "nearest_neighbor",
                "--time-limit", "1", "--json")
    assert tour.exit_code == 0, tour.stderr
    doc = json.loads(tour.stdout)
    assert doc["reference"] == OPTIMA["kroA100"] == 21282
    assert doc["reference_source"].endswith("kroA100.opt.tour") and doc["gap_percent"] > 0

    off = _run("solve", str(vrp), "--solver", "nearest_neighbor", "--time-limit", "1",
               "--reference-file", "none", "--json")
    assert off.exit_code == 0 and json.loads(off.stdout)["reference"] is None
    typed = _run("solve", str(vrp), "--solver", "nearest_neighbor", "--time-limit", "1",
                 "--reference", "27000", "--json")
    doc = json.loads(typed.stdout)
    assert doc["reference"] == 27000 and doc["reference_source"] == "--reference"


def test_a_reference_that_is_not_a_solution_of_the_instance_is_never_used(
        tmp_path: Path) -> None:
    """A file beside the instance that is not a feasible solution of it (a route dropped, or
    26 routes under a fleet cap of 25) is left out with a warning; one named with
    --reference-file is the user's error (exit 2), as are a tour for a CVRP and both
    options at once."""
    lines = (DATA / "X-n101-k25.sol").read_text().splitlines()
    vrp = _x101_beside(tmp_path, "\n".join(lines[1:]) + "\n")  # route 1 dropped
    result = _run("solve", str(vrp), "--solver", "nearest_neighbor", "--time-limit", "1",
                  "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["reference"] is None
    assert "warning: not used as the reference" in result.stderr
    assert "not a feasible solution of X-n101-k25" in result.stderr

    (tmp_path / "capped").mkdir()
    capped = _x101_beside(tmp_path / "capped")
    result = _run("solve", str(capped), "--solver", "nearest_neighbor", "--time-limit", "1",
                  "--max-vehicles", "26", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["reference"] == 27591
    # the reference is settled before any solve: the plan's own fate does not matter here
    result = _run("solve", str(capped), "--solver", "nearest_neighbor", "--time-limit", "1",
                  "--max-vehicles", "25", "--json")
    assert "warning: not used as the reference" in result.stderr
    assert "max_vehicles is 25" in result.stderr

    named = _run("solve", str(capped), "--solver", "nearest_neighbor", "--time-limit", "1",
                 "--reference-file", str(vrp.with_suffix(".sol")))
    _assert_user_error(named, "--reference-file", "not a feasible solution")
    _assert_user_error(_run("solve", str(capped), "--solver", "nearest_neighbor",
                            "--reference-file", str(DATA / "kroA100.opt.tour")),
                       "--reference-file", "not a feasible solution of X-n101-k25")
    _assert_user_error(_run("solve", str(DATA / "kroA100.tsp.gz"), "--solver",
                            "nearest_neighbor", "--reference-file", str(capped)),
                       "--reference-file", "a reference is a .sol")
    _assert_user_error(_run("solve", str(capped), "--solver", "nearest_neighbor",
                            "--reference", "1", "--reference-file", "none"),
                       "not both")


def test_an_lkh3_vehicle_routing_tour_is_a_reference_for_solomon() -> None:
    """LKH-3 writes a CVRPTW solution as one tour with the depot copied once per vehicle
    (the Solomon references in tests/data/solomon, named NAME.COST.tour): --reference-file
    reads it as routes, checks the windows and recomputes C101's 8,273."""
    result = _run("solve", str(DATA / "solomon" / "C101.100.10.vrptw"), "--solver",
                  "nearest_neighbor", "--time-limit", "1", "--json", "--reference-file",
                  str(DATA / "solomon" / "C101.100.10.8273.tour"))
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["reference"] == 8273 and doc["gap_percent"] > 0
