"""`cosolve batch`, end to end: real files, the real job store and real executors.

A folder with four good instances (TSP plain and gzipped, CVRP), one unsupported TSPLIB file
and one file that is not an instance. Budgets are 1 s and nearest_neighbor is used where the
solver does not matter, so the module runs in well under a minute on two cores.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.batch import output_stem
from cli.main import app
from jobs.store import JobStore
from solvers.routing.io.formats import load_instance
from solvers.routing.io.solutions import read_sol, read_tour
from tests.conftest import DATA, OPTIMA

runner = CliRunner()
SCRIPT = Path(sys.executable).parent / "cosolve"
GOOD = ("eil51.tsp", "berlin52.tsp", "X-n101-k25.vrp", "kroA100.tsp.gz")
#: XRAY1 (crystallography): a distance convention we do not read
MAN_TSP = """NAME : man3
TYPE : TSP
DIMENSION : 3
EDGE_WEIGHT_TYPE : XRAY1
NODE_COORD_SECTION
1 38.24 20.42
2 39.57 26.15
3 40.56 25.32
EOF
"""


def _run(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, ["batch", *args])


def _instances(folder: Path, names: tuple[str, ...] = GOOD, junk: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(DATA / name, folder / name)
    if junk:
        (folder / "notes.txt").write_text("not an instance\n")
        (folder / "bad.tsp").write_text(MAN_TSP)
    return folder


def _jobs_in_store(out: Path) -> int:
    return JobStore(out / ".cosolve").list(limit=1000)[1]


def _script() -> Path:
    if not SCRIPT.exists():
        pytest.skip("the cosolve console script is not installed in this environment")
    return SCRIPT


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path, Path]:
    """One batch over the whole folder; several tests read what it left behind."""
    base = tmp_path_factory.mktemp("batch")
    folder, out = _instances(base / "in"), base / "out"
    result = _run(str(folder), "--solver", "nearest_neighbor", "--time-limit", "1",
                  "--workers", "2", "--out", str(out), "--json")
    return result, folder, out


# -- the full folder ----------------------------------------------------------------------
def test_solves_every_instance_and_writes_its_outputs(first_run: tuple[Any, Path, Path]) -> None:
    result, folder, out = first_run
    assert result.exit_code == 1, (result.stdout, result.stderr)  # bad.tsp was rejected
    report = json.loads(result.stdout)
    rows = {row["file"]: row for row in report["rows"]}
    assert list(rows) == sorted([*GOOD, "bad.tsp"])  # sorted by name; notes.txt ignored
    assert report["totals"]["ignored_files"] == 1
    assert report["totals"]["states"] == {"succeeded": 4, "rejected": 1}

    for name in GOOD:
        row, stem = rows[name], output_stem(name)
        instance = load_instance(folder / name)
        assert row["state"] == "succeeded" and row["feasible"] is True, row
        assert row["nodes"] == instance.n
        assert row["cost"] >= OPTIMA[stem]
        saved = json.loads((out / f"{stem}.json").read_text())
        assert saved["cost"] == row["cost"] and saved["feasible"] is True
        if instance.problem == "tsp":
            tour = read_tour(out / f"{stem}.tour")
            assert sorted(tour) == list(range(instance.n))
            assert instance.tour_cost(tour) == row["cost"]
        else:
            routes, stated = read_sol(out / f"{stem}.sol")
            assert sorted(v for r in routes for v in r) == list(range(1, instance.n))
            assert all(instance.demands[r].sum() <= instance.capacity for r in routes)
            assert instance.cost(routes) == stated == row["cost"]
    assert not list(out.glob("*.tmp")) and not list(out.glob(".*.tmp"))


def test_the_broken_file_is_rejected_with_its_reason(first_run: tuple[Any, Path, Path]) -> None:
    result, _, out = first_run
    bad = next(r for r in json.loads(result.stdout)["rows"] if r["file"] == "bad.tsp")
    assert bad["state"] == "rejected" and bad["job_id"] is None
    assert "EDGE_WEIGHT_TYPE" in bad["error"] and "XRAY1" in bad["error"]
    assert result.stderr.startswith("error: ") and "bad.tsp" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (out / "bad.json").exists() and not (out / "notes.json").exists()
    summary = (out / "summary.md").read_text()
    assert "| bad.tsp |" in summary and "rejected" in summary and "XRAY1" in summary
    for name in GOOD:
        assert f"| {name} |" in summary
    assert _jobs_in_store(out) == len(GOOD)  # the rejected file never became a job


def test_a_rerun_skips_what_is_already_solved(first_run: tuple[Any, Path, Path]) -> None:
    _, folder, out = first_run
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("*.json")}
    result = _run(str(folder), "--solver", "nearest_neighbor", "--time-limit", "1",
                  "--out", str(out))
    assert result.exit_code == 1, result.stderr  # bad.tsp is still rejected
    table_rows = [line for line in result.stdout.splitlines() if "│" in line]
    assert sum("already solved" in line for line in table_rows) == len(GOOD)
    assert "4 already solved, 1 rejected" in result.stdout
    for column in ("file", "nodes", "state", "cost", "feasible", "time (s)", "error"):
        assert column in result.stdout
    assert _jobs_in_store(out) == len(GOOD)  # no new job ran
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.json")} == before

    as_json = json.loads(_run(str(folder), "--solver", "nearest_neighbor", "--time-limit",
                              "1", "--out", str(out), "--json").stdout)
    states = {r["file"]: (r["state"], r["job_id"]) for r in as_json["rows"]}
    assert all(states[name] == ("already_solved", None) for name in GOOD)


def test_a_missing_or_infeasible_solution_is_solved_again(
        first_run: tuple[Any, Path, Path], tmp_path: Path) -> None:
    _, folder, first_out = first_run
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(first_out / "eil51.json", out / "eil51.json")
    broken = json.loads((first_out / "berlin52.json").read_text()) | {"feasible": False}
    (out / "berlin52.json").write_text(json.dumps(broken))
    result = _run(str(folder), "--solver", "nearest_neighbor", "--time-limit", "1",
                  "--workers", "1", "--out", str(out), "--json")
    rows = {r["file"]: r["state"] for r in json.loads(result.stdout)["rows"]}
    assert rows["eil51.tsp"] == "already_solved"
    assert rows["berlin52.tsp"] == rows["kroA100.tsp.gz"] == "succeeded"
    assert json.loads((out / "berlin52.json").read_text())["feasible"] is True


def test_a_changed_input_file_is_solved_again(
        first_run: tuple[Any, Path, Path], tmp_path: Path) -> None:
    """A rerun skipped a file whose solution was in OUT even after the file itself had been
    replaced by another instance (same name): the old cost came back as 'already solved'."""
    _, folder, first_out = first_run
    changed, out = tmp_path / "in", tmp_path / "out"
    shutil.copytree(folder, changed)
    shutil.copytree(first_out, out)
    (changed / "eil51.tsp").write_bytes((DATA / "berlin52.tsp").read_bytes())
    result = _run(str(changed), "--solver", "nearest_neighbor", "--time-limit", "1",
                  "--workers", "1", "--out", str(out), "--json")
    rows = {r["file"]: r for r in json.loads(result.stdout)["rows"]}
    assert rows["eil51.tsp"]["state"] == "succeeded" and rows["eil51.tsp"]["nodes"] == 52
    assert rows["berlin52.tsp"]["state"] == "already_solved"


def test_a_saved_solution_is_checked_again_before_it_is_reported(
        first_run: tuple[Any, Path, Path], tmp_path: Path) -> None:
    """A rerun reported whatever OUT held under the same settings and input: an edited
    <stem>.json came back 'already solved' with its edited routes and cost unchecked."""
    _, folder, first_out = first_run
    out = tmp_path / "out"
    shutil.copytree(first_out, out)
    edited = json.loads((out / "eil51.json").read_text())
    edited["routes"][0][1], edited["routes"][0][2] = edited["routes"][0][2], \
        edited["routes"][0][1]  # a different tour, cost left as it was
    (out / "eil51.json").write_text(json.dumps(edited))
    twice = json.loads((out / "berlin52.json").read_text())
    twice["routes"][0][1] = twice["routes"][0][2]  # a node visited twice, one never
    (out / "berlin52.json").write_text(json.dumps(twice))
    (out / "X-n101-k25.sol").unlink()  # a lost solution file is written again, not solved
    result = _run(str(folder), "--solver", "nearest_neighbor", "--time-limit", "1",
                  "--workers", "1", "--out", str(out), "--json")
    rows = {r["file"]: r for r in json.loads(result.stdout)["rows"]}
    assert rows["eil51.tsp"]["state"] == rows["berlin52.tsp"]["state"] == "succeeded"
    assert rows["X-n101-k25.vrp"]["state"] == "already_solved"
    routes, cost = read_sol(out / "X-n101-k25.sol")
    saved = json.loads((out / "X-n101-k25.json").read_text())
    assert routes == saved["routes"] and cost == pytest.approx(saved["cost"])
    saved_tour = json.loads((out / "eil51.json").read_text())["routes"][0]
    assert read_tour(out / "eil51.tour") == saved_tour
    assert load_instance(DATA / "eil51.tsp").tour_cost(saved_tour) == rows["eil51.tsp"]["cost"]


def test_a_saved_depot_or_route_ids_unlike_the_instance_are_solved_again(
        tmp_path: Path) -> None:
    """The rerun rewrote the .sol/.tour from the saved depot and route ids unchecked: an
    edited depot numbered a customer 0 (CVRPLIB's depot) and the file was 'already solved'."""
    from cli.batch import recheck_done
    from solvers.contract import Budget
    from solvers.routing.io.documents import solution_to_dict
    from solvers.routing.io.formats import parse_instance_bytes
    from solvers.routing.solve import solve

    cases = {
        "cv.json": {"problem": "cvrp", "coords": [[0, 0], [10, 0], [10, 10], [0, 10]],
                    "demands": [3, 0, 3, 3], "capacity": 6, "depot": 1},
        "ids.json": {"problem": "tsp", "coords": [[0, 0], [10, 0], [10, 10], [0, 10]],
                     "ids": [4, 3, 2, 1]},
    }
    for name, doc in cases.items():
        data = json.dumps(doc).encode()
        instance = parse_instance_bytes(data, name)
        solution = solve(instance, "nearest_neighbor", Budget(time_limit=1.0))
        payload = solution_to_dict(solution, instance)
        if instance.problem == "cvrp":
            payload["depot"] = instance.depot
        stem = name.removesuffix(".json")
        assert recheck_done(data, name, tmp_path, stem, payload)  # as saved: kept
        if instance.problem == "cvrp":
            payload["depot"] = 0
        else:
            payload["route_ids"] = [payload["route_ids"][0][::-1]]
        assert not recheck_done(data, name, tmp_path, stem, payload), name


def test_a_solution_from_other_settings_is_solved_again(
        first_run: tuple[Any, Path, Path], tmp_path: Path) -> None:
    """A rerun with another solver, time limit or seed must not report the earlier run's
    answer under its own settings (it did: ortools' tour listed as pyvrp's)."""
    _, folder, first_out = first_run
    out = tmp_path / "out"
    out.mkdir()
    for stem in ("eil51", "berlin52"):
        shutil.copy(first_out / f"{stem}.json", out / f"{stem}.json")
    saved = json.loads((out / "eil51.json").read_text())
    assert saved["batch"] == {"solver": "nearest_neighbor", "time_limit": 1.0, "seed": 0,
                              "input_sha256": hashlib.sha256(
                                  (folder / "eil51.tsp").read_bytes()).hexdigest()}
    result = _run(str(folder), "--solver", "nearest_neighbor", "--time-limit", "2",
                  "--workers", "1", "--out", str(out), "--json")
    rows = {r["file"]: r["state"] for r in json.loads(result.stdout)["rows"]}
    assert rows["eil51.tsp"] == rows["berlin52.tsp"] == "succeeded"
    assert json.loads((out / "eil51.json").read_text())["batch"]["time_limit"] == 2.0
    result = _run(str(folder), "--solver", "nearest_neighbor", "--time-limit", "2",
                  "--seed", "3", "--workers", "1", "--out", str(out), "--json")
    rows = {r["file"]: r["state"] for r in json.loads(result.stdout)["rows"]}
    assert rows["eil51.tsp"] == "succeeded"


@pytest.mark.heavy
def test_max_vehicles_caps_every_cvrp_file_and_rejects_a_tsp(tmp_path: Path) -> None:
    """--max-vehicles reaches each CVRP file's job (ils uses 27 routes on X-n101-k25 at 2 s
    without a cap; here at most 26); a TSP file is rejected, naming the option; a rerun with
    the same cap skips the file, one with another cap (or none) solves it again."""
    folder = _instances(tmp_path / "in", ("X-n101-k25.vrp", "berlin52.tsp"), junk=False)
    out = tmp_path / "out"
    capped = (str(folder), "--solver", "ils", "--time-limit", "2", "--workers", "1",
              "--out", str(out), "--json", "--max-vehicles", "26")
    result = _run(*capped)
    assert result.exit_code == 1, (result.stdout, result.stderr)  # the TSP was rejected
    report = json.loads(result.stdout)
    assert report["max_vehicles"] == 26
    rows = {r["file"]: r for r in report["rows"]}
    assert rows["berlin52.tsp"]["state"] == "rejected"
    assert rows["berlin52.tsp"]["error"].startswith("--max-vehicles: ")
    assert "TSP" in rows["berlin52.tsp"]["error"]
    assert rows["X-n101-k25.vrp"]["state"] == "succeeded" and rows["X-n101-k25.vrp"]["feasible"]
    routes, stated = read_sol(out / "X-n101-k25.sol")
    assert len(routes) <= 26 and stated == rows["X-n101-k25.vrp"]["cost"]
    saved = json.loads((out / "X-n101-k25.json").read_text())
    assert saved["batch"]["max_vehicles"] == 26
    (job,), _ = JobStore(out / ".cosolve").list(limit=10)
    assert job.filename == "X-n101-k25.vrp.json"  # the capped instance, as the API keeps it
    assert "at most 26 vehicles" in (out / "summary.md").read_text()

    again = {r["file"]: r["state"] for r in json.loads(_run(*capped).stdout)["rows"]}
    assert again["X-n101-k25.vrp"] == "already_solved"
    # a saved solution is rechecked against the cap: one with more routes is solved again
    saved["routes"] = [*saved["routes"][:-1], saved["routes"][-1][:1], saved["routes"][-1][1:]]
    saved["cost"] = load_instance(folder / "X-n101-k25.vrp").cost(saved["routes"])
    (out / "X-n101-k25.json").write_text(json.dumps(saved))
    again = {r["file"]: r["state"] for r in json.loads(_run(*capped).stdout)["rows"]}
    assert again["X-n101-k25.vrp"] == "succeeded"
    uncapped = json.loads(_run(*capped[:-2]).stdout)
    assert uncapped["max_vehicles"] is None
    assert {r["file"]: r["state"] for r in uncapped["rows"]}["X-n101-k25.vrp"] == "succeeded"


def test_max_vehicles_below_what_a_file_needs_rejects_that_file(tmp_path: Path) -> None:
    folder = _instances(tmp_path / "in", ("X-n101-k25.vrp",), junk=False)
    out = str(tmp_path / "out")
    result = _run(str(folder), "--solver", "ils", "--out", out, "--max-vehicles", "20")
    _assert_user_error(result, "X-n101-k25.vrp", "--max-vehicles", "at least 25")
    _assert_user_error(_run(str(folder), "--solver", "ils", "--out", out, "--max-vehicles",
                            "0"), "--max-vehicles", "at least 1")


def test_max_solutions_gives_every_file_its_budget_in_solutions(tmp_path: Path) -> None:
    """--max-solutions reaches each file's job, as `cosolve solve --max-solutions` does (polynet
    stops after 64 solutions, long before its 30 s time limit); the report, the saved
    solution's settings, the store and summary.md say it; a rerun with the same budget skips
    the file; a solver without a budget in solutions, or a budget below 1, is exit 2 naming
    the option before anything runs."""
    folder = _instances(tmp_path / "in", ("eil51.tsp",), junk=False)
    out = tmp_path / "out"
    budgeted = (str(folder), "--solver", "polynet", "--time-limit", "30", "--workers", "1",
                "--out", str(out), "--json", "--max-solutions", "64")
    result = _run(*budgeted)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    report = json.loads(result.stdout)
    assert report["max_solutions"] == 64
    (row,) = report["rows"]
    assert row["state"] == "succeeded" and row["feasible"] and row["wall_time"] < 15
    saved = json.loads((out / "eil51.json").read_text())
    assert saved["batch"]["max_solutions"] == 64
    assert saved["stats"]["solutions"] == 64 and saved["stats"]["max_solutions"] == 64
    (job,), _ = JobStore(out / ".cosolve").list(limit=10)
    assert job.max_solutions == 64
    assert "at most 64 solutions" in (out / "summary.md").read_text()
    again = json.loads(_run(*budgeted).stdout)
    assert again["rows"][0]["state"] == "already_solved"
    _assert_user_error(_run(str(folder), "--solver", "ortools", "--out", str(out),
                            "--max-solutions", "64"), "--max-solutions", "time limit only")
    _assert_user_error(_run(str(folder), "--solver", "polynet", "--out", str(out),
                            "--max-solutions", "0"), "--max-solutions", "at least 1")
    assert _jobs_in_store(out) == 1  # the refusals ran nothing


def test_two_files_with_the_same_stem_do_not_overwrite_each_other(tmp_path: Path) -> None:
    folder = _instances(tmp_path / "in", ("eil51.tsp",), junk=False)
    (folder / "eil51.tsp.gz").write_bytes(gzip.compress((DATA / "eil51.tsp").read_bytes()))
    result = _run(str(folder), "--solver", "nearest_neighbor", "--time-limit", "1",
                  "--workers", "1", "--out", str(tmp_path / "out"), "--json")
    assert result.exit_code == 1
    rows = {r["file"]: r for r in json.loads(result.stdout)["rows"]}
    assert rows["eil51.tsp"]["state"] == "succeeded"
    assert rows["eil51.tsp.gz"]["state"] == "rejected"
    assert "eil51.tsp" in rows["eil51.tsp.gz"]["error"]


def test_an_unreadable_file_does_not_take_the_name_of_a_good_one(tmp_path: Path) -> None:
    """berlin52.json.gz (not gzip) came first and claimed the outputs 'berlin52', so the good
    berlin52.tsp was rejected as a name clash; a file that will have no outputs claims none."""
    folder = _instances(tmp_path / "in", ("berlin52.tsp",), junk=False)
    (folder / "berlin52.json.gz").write_bytes(b"not gzip")
    result = _run(str(folder), "--solver", "nearest_neighbor", "--time-limit", "1",
                  "--workers", "1", "--out", str(tmp_path / "out"), "--json")
    rows = {r["file"]: r for r in json.loads(result.stdout)["rows"]}
    assert rows["berlin52.tsp"]["state"] == "succeeded"
    assert rows["berlin52.json.gz"]["state"] == "rejected"
    assert "overwrite" not in rows["berlin52.json.gz"]["error"]


def test_a_matrix_for_a_solver_that_reads_coordinates_is_rejected_up_front(
        tmp_path: Path) -> None:
    """It used to be queued and fail when it ran; `cosolve solve` refused it at once."""
    folder = _instances(tmp_path / "in", ("eil51.tsp",), junk=False)
    (folder / "m.json").write_text(json.dumps(
        {"problem": "tsp", "distance_matrix": [[0, 1, 2], [1, 0, 1], [2, 1, 0]]}))
    result = _run(str(folder), "--solver", "ils", "--time-limit", "1", "--workers", "1",
                  "--out", str(tmp_path / "out"), "--json")
    rows = {r["file"]: r for r in json.loads(result.stdout)["rows"]}
    assert rows["eil51.tsp"]["state"] == "succeeded"
    assert rows["m.json"]["state"] == "rejected"
    assert "needs node coordinates" in rows["m.json"]["error"]


def test_a_batch_the_solver_can_take_no_file_of_is_a_user_error(tmp_path: Path) -> None:
    """Regression: every file rejected (here: ils, TSP and CVRP only, on a CVRPTW
    file) exited 1, a solver failure; nothing ran, so it is the input's fault (2), as the
    API's 422."""
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(DATA / "solomon" / "C101.100.10.vrptw", folder / "C101.vrptw")
    result = _run(str(folder), "--solver", "ils", "--time-limit", "1", "--workers", "1",
                  "--out", str(tmp_path / "out"))
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert "no file of the batch can be solved" in result.stderr


def test_long_file_names(tmp_path: Path) -> None:
    """A 250-character name failed with a traceback (the job store's input-<name> and the
    outputs' temporary files passed 255 bytes); a name whose outputs cannot fit is
    rejected with the reason, and the other files are solved."""
    folder = tmp_path / "in"
    folder.mkdir()
    fits, too_long = "a" * 250 + ".tsp", "b" * 251 + ".tsp"
    for name in (fits, too_long):
        shutil.copy(DATA / "eil51.tsp", folder / name)
    result = _run(str(folder), "--solver", "nearest_neighbor", "--time-limit", "1",
                  "--workers", "1", "--out", str(tmp_path / "out"), "--json")
    rows = {r["file"]: r for r in json.loads(result.stdout)["rows"]}
    assert rows[fits]["state"] == "succeeded", rows[fits]
    assert read_tour(tmp_path / "out" / ("a" * 250 + ".tour"))
    assert rows[too_long]["state"] == "rejected"
    assert "shorten the file name" in rows[too_long]["error"]


# -- real solvers and executors -----------------------------------------------------------
def test_ortools_solves_a_folder_of_one(tmp_path: Path) -> None:
    folder = _instances(tmp_path / "in", ("eil51.tsp",), junk=False)
    out = tmp_path / "out"
    result = _run(str(folder), "--solver", "ortools", "--time-limit", "1", "--workers", "1",
                  "--out", str(out))
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert result.stderr == ""
    assert "succeeded" in result.stdout and "1 succeeded" in result.stdout
    saved = json.loads((out / "eil51.json").read_text())
    assert saved["solver"] == "ortools" and saved["feasible"] is True
    tour = read_tour(out / "eil51.tour")
    assert sorted(tour) == list(range(51))
    assert load_instance(DATA / "eil51.tsp").tour_cost(tour) == saved["cost"]
    assert saved["cost"] >= OPTIMA["eil51"]


@pytest.mark.heavy
def test_ray_executor_solves_a_file(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    folder = _instances(tmp_path / "in", ("eil51.tsp",), junk=False)
    out = tmp_path / "out"
    # A subprocess, so the local Ray instance it starts ends with it.
    proc = subprocess.run(
        [str(_script()), "batch", str(folder), "--solver", "nearest_neighbor", "--time-limit",
         "1", "--executor", "ray", "--out", str(out), "--json"],
        capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["executor"] == "ray"
    assert [r["state"] for r in report["rows"]] == ["succeeded"]
    assert sorted(read_tour(out / "eil51.tour")) == list(range(51))


def test_ctrl_c_stops_the_batch_and_a_rerun_resumes(tmp_path: Path) -> None:
    folder = _instances(tmp_path / "in", ("eil51.tsp", "berlin52.tsp", "kroA100.tsp.gz"),
                        junk=False)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [str(_script()), "batch", str(folder), "--solver", "ortools", "--time-limit", "1",
         "--workers", "1", "--out", str(out), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # a test run started in the background inherits an ignored SIGINT; Ctrl-C is what
        # this test is about, so the child gets the default disposition back
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not (out / "berlin52.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the batch ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted" in stderr
    report = json.loads(stdout)
    assert report["interrupted"] is True
    states = {r["file"]: r["state"] for r in report["rows"]}
    assert states["berlin52.tsp"] == "succeeded"
    assert "interrupted" in states.values()
    assert (out / "summary.md").exists()
    unsolved = [name for name, state in states.items() if state != "succeeded"]
    for name in unsolved:
        assert not (out / f"{output_stem(name)}.json").exists()

    result = _run(str(folder), "--solver", "ortools", "--time-limit", "1",
                  "--out", str(out), "--json")
    assert result.exit_code == 0, result.stderr
    resumed = {r["file"]: r["state"] for r in json.loads(result.stdout)["rows"]}
    assert {name for name, s in resumed.items() if s == "succeeded"} == set(unsolved)
    assert {name for name, s in resumed.items() if s == "already_solved"} == (
        set(states) - set(unsolved))


# -- input mistakes -----------------------------------------------------------------------
def _assert_user_error(result, *words: str) -> None:  # type: ignore[no-untyped-def]
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ")
    for word in words:
        assert word in result.stderr


def test_unknown_solver_lists_known_solvers_before_anything_runs(tmp_path: Path) -> None:
    folder = _instances(tmp_path / "in", ("eil51.tsp",), junk=False)
    out = tmp_path / "out"
    result = _run(str(folder), "--solver", "concorde", "--out", str(out))
    _assert_user_error(result, "--solver", "concorde", "ortools", "pyvrp", "nearest_neighbor")
    assert not out.exists()


def test_missing_or_empty_folder_is_a_user_error(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _assert_user_error(_run(str(tmp_path / "nowhere"), "--solver", "nearest_neighbor",
                            "--out", str(out)), "PATH", "no such file or folder")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("x")
    _assert_user_error(_run(str(empty), "--solver", "nearest_neighbor", "--out", str(out)),
                       "PATH", "no instance files", "1 other file ignored")


def test_bad_options_name_the_option(tmp_path: Path) -> None:
    folder = _instances(tmp_path / "in", ("eil51.tsp",), junk=False)
    out = str(tmp_path / "out")
    base = (str(folder), "--solver", "nearest_neighbor", "--out")
    _assert_user_error(_run(*base, out, "--time-limit", "0"), "--time-limit")
    _assert_user_error(_run(*base, out, "--workers", "0"), "--workers")
    _assert_user_error(_run(*base, out, "--executor", "dask"), "--executor", "local", "ray")
    _assert_user_error(_run(*base, str(folder)), "--out", "PATH")


def test_the_device_is_checked_and_reaches_the_jobs(tmp_path: Path) -> None:
    """Regression: batch ignored COSOLVE_DEVICE (a misspelt one too) and had no --device."""
    folder = _instances(tmp_path / "in", ("eil51.tsp",), junk=False)
    out = str(tmp_path / "out")
    bad = runner.invoke(app, ["batch", str(folder), "--solver", "reld", "--out", out],
                        env={"COSOLVE_DEVICE": "gpu"})
    assert bad.exit_code == 2 and "COSOLVE_DEVICE): unknown device 'gpu'" in bad.stderr
    result = _run(str(folder), "--solver", "reld", "--out", out, "--time-limit", "1",
                  "--workers", "1", "--device", "auto", "--json")
    assert result.exit_code == 0, result.stderr
    solved = json.loads((tmp_path / "out" / "eil51.json").read_text())
    assert solved["stats"]["device"] == "cpu"  # auto, with no GPU here


def test_a_dangling_link_or_a_fifo_is_listed_as_rejected(tmp_path: Path) -> None:
    """Regression: an instance-named dangling link or FIFO vanished from the summary (neither a
    row nor counted); it is a rejected row now, and the FIFO is never opened (it would block)."""
    import os

    folder = _instances(tmp_path / "in", ("eil51.tsp",), junk=False)
    (folder / "gone.tsp").symlink_to(tmp_path / "nowhere.tsp")
    os.mkfifo(folder / "pipe.tsp")
    result = _run(str(folder), "--solver", "nearest_neighbor", "--time-limit", "1",
                  "--workers", "1", "--out", str(tmp_path / "out"), "--json")
    rows = {r["file"]: r for r in json.loads(result.stdout)["rows"]}
    assert rows["eil51.tsp"]["state"] == "succeeded"
    assert "a link to nothing" in rows["gone.tsp"]["error"]
    assert "not a regular file" in rows["pipe.tsp"]["error"]


def test_refusals_before_the_run_print_a_json_document(tmp_path: Path) -> None:
    """Regression: under ``--json`` every refusal before the run (a bad option, folder or
    --out) printed nothing on stdout; it prints the batch's fields, no rows and the error."""
    folder = _instances(tmp_path / "in", names=("eil51.tsp",), junk=False)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("no instance\n")
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    out = str(tmp_path / "out")
    base = ("--solver", "nearest_neighbor", "--time-limit", "1")
    cases = [
        (str(folder), "--solver", "nope", "--out", out),
        (str(folder), "--solver", "ortools_mcf", "--out", out),
        (str(folder), *base, "--time-limit", "-1", "--out", out),
        (str(folder), *base, "--seed", "-1", "--out", out),
        (str(tmp_path / "missing"), *base, "--out", out),
        (str(a_file), *base, "--out", out),
        (str(empty), *base, "--out", out),
        (str(folder), *base, "--out", str(a_file)),
        (str(folder), *base, "--workers", "0", "--out", out),
        (str(folder), *base, "--executor", "foo", "--out", out),
    ]
    for args in cases:
        result = _run(*args, "--json")
        assert result.exit_code == 2, (args, result.stderr)
        document = json.loads(result.stdout)
        assert document["error"] == result.stderr.strip().removeprefix("error: "), args
        assert document["rows"] == [] and document["totals"]["files"] == 0, args
        assert document["dir"] == args[0] and document["executor"] in ("local", "foo"), args
    plain = _run(str(folder), "--solver", "nope", "--out", out)
    assert plain.exit_code == 2 and plain.stdout == ""  # without --json, as before


def test_solver_of_another_family_is_refused_on_solver(tmp_path: Path) -> None:
    """Regression: an unknown solver listed the min-cost flow solvers, and a flow solver was
    taken and then every file rejected one by one; both now fail at once on --solver."""
    folder = _instances(tmp_path / "in", names=("eil51.tsp",), junk=False)
    unknown = _run(str(folder), "--solver", "nope", "--out", str(tmp_path / "o1"))
    assert unknown.exit_code == 2
    assert unknown.stderr.startswith("error: --solver: unknown solver 'nope'; the routing "
                                     "solvers: ")
    assert "nearest_neighbor" in unknown.stderr and "ortools_mcf" not in unknown.stderr
    flow = _run(str(folder), "--solver", "ortools_mcf", "--out", str(tmp_path / "o2"))
    assert flow.exit_code == 2, flow.stderr
    assert flow.stderr.startswith("error: --solver: solver 'ortools_mcf' does not solve "
                                  "routing problems")
    assert "nearest_neighbor" in flow.stderr and not (tmp_path / "o2").exists()


def test_an_infeasible_plan_gets_its_json_only_and_no_stale_sol(tmp_path: Path) -> None:
    """A batch wrote <stem>.sol for a plan with dropped customers, which reads as a solution
    (a .sol has no word for "infeasible"); an earlier run's .sol of that file stayed too."""
    from cli.batch import write_outputs
    from solvers.routing.io.documents import solution_to_dict
    from solvers.routing.solution import build_solution

    instance = load_instance(DATA / "X-n101-k25.vrp")
    feasible = build_solution(instance, [[v] for v in range(1, 101)], solver="hand",
                              wall_time=0)
    dropped = build_solution(instance, [[v] for v in range(1, 100)], solver="hand",
                             wall_time=0)
    payload = solution_to_dict(feasible, instance)
    assert write_outputs(tmp_path, "x", "cvrp", payload) == ["x.sol", "x.json"]
    assert (tmp_path / "x.sol").exists()
    payload = solution_to_dict(dropped, instance)
    assert write_outputs(tmp_path, "x", "cvrp", payload) == ["x.json"]
    assert not (tmp_path / "x.sol").exists()
    assert json.loads((tmp_path / "x.json").read_text())["feasible"] is False


def test_known_solutions_beside_the_files_give_each_a_checked_gap(tmp_path: Path) -> None:
    """A folder of CVRPLIB / TSPLIB files usually holds their known solutions too (NAME.sol,
    NAME.opt.tour): the summary gains a gap to each, checked and costed by our own code, and
    a mean gap; the known solutions are read, not counted as ignored files. One that is not a
    solution of its instance (eil51's tour beside kroA100) is left out with a warning, and a
    rerun that skips solved files still shows the gaps."""
    folder = _instances(tmp_path / "in", ("eil51.tsp", "berlin52.tsp", "X-n101-k25.vrp",
                                          "kroA100.tsp.gz"), junk=False)
    shutil.copy(DATA / "eil51.opt.tour", folder / "eil51.opt.tour")
    shutil.copy(DATA / "X-n101-k25.sol", folder / "X-n101-k25.sol")
    shutil.copy(DATA / "eil51.opt.tour", folder / "kroA100.opt.tour")  # the wrong tour
    out = tmp_path / "out"
    for state in ("succeeded", "already_solved"):
        result = _run(str(folder), "--solver", "nearest_neighbor", "--time-limit", "1",
                      "--out", str(out), "--json")
        assert result.exit_code == 0, result.stderr
        doc = json.loads(result.stdout)
        rows = {r["file"]: r for r in doc["rows"]}
        assert {r["state"] for r in rows.values()} == {state}
        for name, known in (("eil51.tsp", 426), ("X-n101-k25.vrp", 27591)):
            assert rows[name]["reference"] == known == OPTIMA[name.split(".")[0]]
            assert rows[name]["gap_percent"] == pytest.approx(
                100 * (rows[name]["cost"] / known - 1))
        assert rows["berlin52.tsp"]["reference"] is None
        assert rows["berlin52.tsp"]["gap_percent"] is None
        kro = rows["kroA100.tsp.gz"]
        assert kro["reference"] is None and kro["reference_file"] == "kroA100.opt.tour"
        assert "not a feasible solution of kroA100" in kro["reference_note"]
        assert "warning: kroA100.tsp.gz: kroA100.opt.tour not used" in result.stderr
        totals = doc["totals"]
        assert totals["ignored_files"] == 0 and totals["with_reference"] == 2
        assert totals["mean_gap_percent"] == pytest.approx(
            (rows["eil51.tsp"]["gap_percent"] + rows["X-n101-k25.vrp"]["gap_percent"]) / 2)
    summary = (out / "summary.md").read_text()
    assert "| gap to ref. |" in summary and "to the known solutions of 2 files" in summary
