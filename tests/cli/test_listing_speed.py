"""`cosolve solvers` reads the registry without loading a solver: none of the heavy libraries
is imported to list them (each costs 0.1-2 s of start-up)."""

import json
import subprocess
import sys

HEAVY = ("numba", "scipy", "ortools", "pyvrp", "torch", "vroom", "networkx")


def test_listing_the_solvers_loads_no_solver_library() -> None:
    code = (
        "import sys, json\n"
        "from typer.testing import CliRunner\n"
        "from cli.main import app\n"
        "result = CliRunner().invoke(app, ['solvers', '--json'])\n"
        "assert result.exit_code == 0, result.output\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
