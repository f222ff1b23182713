"""The runnable examples in examples/ run as a user would run them, so they cannot drift from
the code: the Python one as a subprocess with a short budget, the batch one through the CLI,
and the curl and client ones against a real server (the suite's shared uvicorn fixture)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


def _env(**extra: str) -> dict[str, str]:
    """The caller's environment with the interpreter's folder first on PATH (so `cosolve` and
    `python3` are the project's) and no COSOLVE_* settings from outside."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COSOLVE_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHON"] = sys.executable
    env.update(extra)
    return env


def _run(args: list[str], env: dict[str, str], timeout: float = 120) -> str:
    proc = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"{args} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_python_example_solves_and_compares() -> None:
    out = _run([sys.executable, str(EXAMPLES / "solve_and_compare.py"), "--time-limit", "0.3"],
               _env())
    assert "nearest_neighbor: cost" in out and "feasible=True" in out
    assert "ortools" in out and "pyvrp" in out and "best: " in out
    assert "failed" not in out


def test_batch_example_solves_a_folder(tmp_path: Path) -> None:
    out = _run(["bash", str(EXAMPLES / "batch.sh")],
               _env(TIME_LIMIT="0.5", WORK=str(tmp_path / "batch")))
    assert "2 succeeded" in out
    solved = {p.name for p in (tmp_path / "batch" / "out").iterdir()}
    assert {"eil51.tour", "berlin52.tour", "summary.md"} <= solved


@pytest.mark.skipif(shutil.which("curl") is None, reason="the example needs curl")
def test_curl_example_against_a_server(server_url: str) -> None:
    out = _run(["bash", str(EXAMPLES / "curl.sh")], _env(COSOLVE_URL=server_url))
    for step in ("the solvers that can run here", "a 5-node TSP", "a CVRPLIB file",
                 "two solvers", "a job"):
        assert f"== {step}" in out
    assert "feasible: True" in out
    assert "reference: 27591.0 from X-n101-k25.sol" in out
    assert "state: succeeded" in out and "TOUR_SECTION" in out


@pytest.mark.skipif(shutil.which("curl") is None, reason="the example needs curl")
def test_vrp_curl_example_against_a_server(server_url: str) -> None:
    out = _run(["bash", str(EXAMPLES / "vrp.sh")], _env(COSOLVE_URL=server_url,
                                                        TIME_LIMIT="0.5"))
    for step in ("the solvers that take VROOM documents", "solve with vroom",
                 "every solver of VROOM documents at equal time", "a refused document"):
        assert f"== {step}" in out
    assert "checked: feasible=True" in out and "LineString" in out and "Point" in out
    assert "422 jobs[0].location_index" in out


def test_client_example_against_a_server(server_url: str) -> None:
    out = _run([sys.executable, str(EXAMPLES / "client.py"), "--time-limit", "0.3"],
               _env(COSOLVE_URL=server_url))
    for step in ("the solvers that can run here", "a TSPLIB file", "two solvers", "a job",
                 "a batch", "a refused request"):
        assert f"== {step}" in out
    assert "<SolutionDocument TSP eil51 by ils: cost " in out and ", feasible," in out
    assert "gap " in out and "end: succeeded" in out and "TOUR_SECTION" in out
    assert "eil51.tsp: succeeded" in out and "422 " in out and "field instance" in out
