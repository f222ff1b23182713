"""``--solver auto`` on the command line: solve prints what it picked and why, --json
carries it, and compare takes auto in its list."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()
#: 8 customers under a fleet cap: auto picks ils, which answers at once (exact under 14)
CAPPED = {"problem": "cvrp", "coords": [[0, 0], [1, 0], [0, 1], [1, 1], [2, 0], [0, 2],
                                        [2, 2], [1, 2], [2, 1]],
          "demands": [0, 3, 2, 4, 1, 2, 3, 2, 1], "capacity": 8, "max_vehicles": 3}


def test_solve_auto_prints_its_choice_and_json_carries_it(tmp_path: Path) -> None:
    path = tmp_path / "capped.json"
    path.write_text(json.dumps(CAPPED))
    result = runner.invoke(app, ["solve", str(path), "--solver", "auto", "--time-limit", "0.5"])
    assert result.exit_code == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("auto picked"))
    assert line.startswith("auto picked ils: CVRP, any size, with a fleet cap")
    result = runner.invoke(app, ["solve", str(path), "--solver", "auto", "--time-limit", "0.5",
                                 "--json"])
    solution = json.loads(result.stdout)["solution"]
    assert solution["solver"] == solution["auto"]["picked"] == "ils"
    # auto may pick a solver that counts no solutions
    result = runner.invoke(app, ["solve", str(path), "--solver", "auto", "--max-solutions", "5"])
    assert result.exit_code == 2 and "--max-solutions" in result.stderr


def test_compare_takes_auto_in_its_list(tmp_path: Path) -> None:
    path = tmp_path / "capped.json"
    path.write_text(json.dumps(CAPPED))
    result = runner.invoke(app, ["compare", str(path), "--solvers", "auto,nearest_neighbor",
                                 "--time-limit", "0.3", "--json"])
    assert result.exit_code == 0, result.stderr
    rows = {r["solver"]: r for r in json.loads(result.stdout)["rows"]}
    assert rows["auto"]["auto"]["picked"] == "ils" and rows["nearest_neighbor"]["auto"] is None
