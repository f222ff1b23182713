"""cosolve's public Python face: load an instance, solve or compare with any registered
solver under a Budget, and read the checked Solution.

    from cosolve import Budget, compare, load_instance, solve

    instance = load_instance("tests/data/X-n101-k25.vrp")
    solution = solve(instance, "ils", Budget(time_limit=5, seed=1))

Everything here is re-exported from the solver core (``solvers``); user code imports from
``cosolve`` so the core can be rearranged without breaking it.
"""

from solvers.catalog import all_specs, get_spec, warm_up
from solvers.contract import Budget, ProgressEvent, SolverSpec
from solvers.errors import CosolveError, InstanceError, NoSolutionError
from solvers.routing.io import load_instance, parse_instance_bytes, write_solution_file
from solvers.routing.problem import CVRPInstance, CVRPTWInstance, RoutingInstance, TSPInstance
from solvers.routing.solution import Solution
from solvers.routing.solve import Comparison, ComparisonRow, compare, gap_percent, solve

__all__ = [
    "Budget",
    "CVRPInstance",
    "CVRPTWInstance",
    "Comparison",
    "ComparisonRow",
    "CosolveError",
    "InstanceError",
    "NoSolutionError",
    "ProgressEvent",
    "RoutingInstance",
    "Solution",
    "SolverSpec",
    "TSPInstance",
    "all_specs",
    "compare",
    "gap_percent",
    "get_spec",
    "load_instance",
    "parse_instance_bytes",
    "solve",
    "warm_up",
    "write_solution_file",
]
