"""``solver="auto"``: the measured table as code, the docs showing the same table, the choice
per problem and size band, and its fallbacks (availability, time limit, coordinates)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from solvers.contract import Budget
from solvers.errors import CosolveError
from solvers.routing import auto
from solvers.routing.auto import RULES, choose_for, markdown_table, rule_for
from solvers.routing.generate import random_cvrptw
from solvers.routing.io.documents import solution_to_dict
from solvers.routing.neural import checkpoints
from solvers.routing.problem import CVRPInstance, TSPInstance
from solvers.routing.solve import compare, solve
from tests.conftest import REPO


def test_the_docs_table_is_the_codes_table() -> None:
    page = (REPO / "docs" / "routing.md").read_text()
    block = re.search(r"<!-- auto table: begin[^\n]*-->\n(.*?)\n<!-- auto table: end -->",
                      page, re.S)
    assert block is not None, "docs/routing.md lost its auto table markers"
    assert block.group(1) == markdown_table(), (
        "docs/routing.md's auto table differs from solvers/routing/auto.py: paste the output "
        "of `python -m solvers.routing.auto` between the markers")


def test_every_rule_names_registered_solvers_of_its_problem() -> None:
    from solvers.catalog import get_spec

    for rule in RULES:
        for name in rule.solvers:
            assert rule.problem in get_spec(name).problems, (rule.band(), name)
        assert "results/" in rule.why  # the figure says where it was measured


@pytest.mark.parametrize(("problem", "nodes", "time_limit", "fleet", "expected"), [
    ("tsp", 100, 1.0, False, "polynet"),
    ("tsp", 100, 10.0, False, "pyvrp"),
    ("tsp", 999, 10.0, False, "pyvrp"),
    ("tsp", 1_000, 10.0, False, "ils"),
    ("tsp", 2_000_000, 600.0, False, "ils"),
    ("cvrp", 100, 1.0, False, "polynet"),
    ("cvrp", 100, 1.0, True, "ils"),  # a fleet cap outranks the short budget
    ("cvrp", 300, 10.0, False, "pyvrp"),
    ("cvrp", 450, 10.0, False, "pyvrp"),
    ("cvrp", 451, 10.0, False, "ils"),
    ("cvrp", 10_000, 60.0, False, "ils"),
    ("cvrp", 100_000, 120.0, False, "ils"),
    ("cvrptw", 100, 1.0, False, "pyvrp"),
    ("cvrptw", 5_000, 60.0, False, "pyvrp"),
])
def test_the_choice_per_problem_and_size_band(problem: str, nodes: int, time_limit: float,
                                              fleet: bool, expected: str) -> None:
    choice = choose_for(problem, nodes, time_limit, fleet_capped=fleet)
    assert choice.picked == expected
    assert choice.skipped == []
    assert choice.rule is rule_for(problem, nodes, fleet, time_limit)
    assert choice.reason.startswith(choice.rule.band())


def test_a_matrix_only_instance_skips_the_solvers_that_read_coordinates() -> None:
    choice = choose_for("tsp", 5_000, 60.0, has_coordinates=False)
    assert choice.picked == "ortools"
    assert [name for name, _ in choice.skipped] == ["ils", "sil_ls"]
    assert all("coordinates" in why for _, why in choice.skipped)
    assert choose_for("cvrp", 100, 1.0, has_coordinates=False).picked == "pyvrp"


def test_a_short_time_limit_falls_back_past_slow_starters() -> None:
    # pyvrp needs 3e-7·N² s (7.5 s) and ortools 2.5e-7·N² s to start on 5,000 nodes
    choice = choose_for("cvrptw", 5_000, 1.0)
    assert choice.picked == "nearest_neighbor"
    assert [name for name, _ in choice.skipped] == ["pyvrp", "reld", "polynet", "ortools"]
    assert "time limit" in dict(choice.skipped)["pyvrp"]


def test_missing_checkpoints_fall_back_to_the_next_choice(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(checkpoints, "checkpoint_path", lambda s, p: tmp_path / f"{s}_{p}.pt")
    choice = choose_for("tsp", 100, 1.0)
    assert choice.picked == "pyvrp"
    assert [name for name, _ in choice.skipped] == ["polynet", "reld"]
    assert choice.to_dict()["skipped"][0]["solver"] == "polynet"


def test_no_solver_that_fits_raises_the_preferred_ones_reason() -> None:
    with pytest.raises(CosolveError, match="pyvrp"):
        choose_for("cvrptw", 50_000, 5.0)


def test_auto_solves_each_problem_and_says_what_it_picked() -> None:
    rng = np.random.default_rng(0)
    coords = rng.random((8, 2))
    demands = np.r_[0, rng.integers(1, 5, 7)]
    for instance in (TSPInstance(coords=coords),
                     CVRPInstance(coords=coords, demands=demands, capacity=10, max_vehicles=3),
                     random_cvrptw(rng, 8)[0]):
        solution = solve(instance, auto.AUTO, Budget(time_limit=0.5))
        assert solution.feasible
        assert solution.solver == solution.auto["picked"] == auto.choose(instance, 0.5).picked
        document = solution_to_dict(solution, instance)
        assert document["solver"] == document["auto"]["picked"]
        assert document["auto"]["reason"]


def test_compare_takes_auto_in_its_list() -> None:
    instance = TSPInstance(coords=np.random.default_rng(1).random((8, 2)))
    result = compare(instance, ["auto", "nearest_neighbor"], Budget(time_limit=0.3))
    row = result.rows[0]
    assert row.solver == "auto" and row.solution is not None
    assert row.solution.auto is not None and row.solution.solver == row.solution.auto["picked"]


def test_listing_the_solvers_does_not_import_torch() -> None:
    """`cosolve solvers` answers from the registry: availability from the checkpoint files'
    names, never torch (3.5 s of the 4.8 s it took)."""
    code = ("import sys\nfrom cli.main import app\n"
            "try:\n    app(['solvers', '--json'])\nexcept SystemExit:\n    pass\n"
            "print('torch imported' if 'torch' in sys.modules else 'no torch', "
            "file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().endswith("no torch"), proc.stderr
    listed = {row["name"]: row for row in json.loads(proc.stdout)}
    shipped = (REPO / "weights" / "reld_tsp.pt").exists()
    assert listed["reld"]["available"] is shipped
