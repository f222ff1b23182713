"""torch is optional (the `neural` extra): without it the service, the CLI and the job layer
import, the classical solvers run, and every torch solver says it is unavailable and why.

A child process stands in for an install without torch: ``sys.modules["torch"] = None``
makes every ``import torch`` there fail as a missing package does, so a module that imports
torch when the service or the CLI starts fails this test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHILD = """
import json, sys
sys.modules["torch"] = None
import app.main, cli.main, jobs.service, jobs.worker
from typer.testing import CliRunner
from solvers.catalog import all_specs, check_solver
from solvers.errors import SolverUnavailableError
from solvers.scheduling.registry import POLICIES
reasons = {s.name: s.unavailable_reason(None) for s in all_specs()}
reasons["goodrl"] = POLICIES["goodrl"].unavailable_reason()
try:
    check_solver("reld", "tsp", 20, 1.0)
    refusal = None
except SolverUnavailableError as exc:
    refusal = str(exc)
listing = CliRunner().invoke(cli.main.app, ["solvers", "--json"])
print(json.dumps({"reasons": reasons, "refusal": refusal, "exit": listing.exit_code,
                  "listed": json.loads(listing.output)}))
"""
TORCH_SOLVERS = {"reld", "sil", "sil_ls", "polynet", "oft_sinkhorn", "goodrl"}


def test_everything_but_the_torch_solvers_without_torch() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    reasons = found["reasons"]
    for name in TORCH_SOLVERS:
        assert "torch is not installed" in reasons[name], (name, reasons[name])
        assert "download.pytorch.org/whl/cpu" in reasons[name]
    assert {name for name, why in reasons.items() if why is None} >= {
        "ortools", "pyvrp", "nearest_neighbor", "ils", "ortools_mcf", "networkx_simplex"}
    assert found["refusal"] and "torch is not installed" in found["refusal"]
    assert found["exit"] == 0
    listed = {row["name"]: row for row in found["listed"]}
    assert listed["ils"]["available"] is True
    assert listed["reld"]["available"] is False
