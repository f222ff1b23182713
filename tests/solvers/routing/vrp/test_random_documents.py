"""Random documents using every part of the model: each library solver answers through
``solve_vrp`` (so the checker passes every plan) or refuses by name, and never leaves more
tasks unassigned than VROOM does."""

from __future__ import annotations

import pytest

from solvers.contract import Budget
from solvers.errors import CosolveError, NoSolutionError, ProblemMismatchError
from solvers.routing.vrp.parse import parse_document
from solvers.routing.vrp.solve import solve_vrp
from tests.solvers.routing.vrp.rich_docs import random_document

pytestmark = pytest.mark.heavy


@pytest.mark.parametrize("seed", range(24))
def test_every_answer_checks_and_assigns_what_vroom_assigns(seed: int) -> None:
    try:
        problem = parse_document(random_document(seed))
    except CosolveError:
        pytest.skip("the draw made a document the parser refuses")
    unassigned = {}
    for solver in ("vroom", "ortools", "pyvrp", "warmstart"):
        try:
            result = solve_vrp(problem, solver, Budget(time_limit=1.0))
        except ProblemMismatchError:
            continue
        except NoSolutionError:
            assert solver == "vroom" and problem.task_count == 0  # VROOM wants a task
            continue
        assert result.check.feasible  # solve_vrp raises CheckFailedError otherwise
        unassigned[solver] = len(result.plan.unassigned)
    if "vroom" in unassigned:
        for solver in ("ortools", "pyvrp"):
            if solver in unassigned:
                assert unassigned[solver] <= unassigned["vroom"], (solver, unassigned)
