"""cosolve's public Python face: load an instance, solve or compare with any registered
solver under a Budget, and read the checked Solution.

    from cosolve import Budget, compare, load_instance, solve

    instance = load_instance("tests/data/X-n101-k25.vrp")
    solution = solve(instance, "ils", Budget(time_limit=5, seed=1))

Everything here is re-exported from the solver core (``solvers``); user code imports from
``cosolve`` so the core can be rearranged without breaking it. ``Client`` is the HTTP API from
Python (cosolve/client.py), and ``draw(instance, solution)`` a solution's route drawing, which
a notebook shows as the picture.
"""

from cosolve.client import Batch, Client, Job
from cosolve.drawing import Drawing, draw
from cosolve.responses import (
    ApiError,
    AuthenticationError,
    BatchStatus,
    CompareResult,
    ConflictError,
    InvalidRequestError,
    JobEvent,
    JobStatus,
    NotFoundError,
    PayloadTooLargeError,
    RateLimitError,
    ServerUnreachableError,
    SolutionDocument,
    SolverInfo,
    UnavailableError,
    VrpAnswer,
    VrpCompareResult,
)
from solvers.catalog import all_specs, get_spec, warm_up
from solvers.contract import Budget, ProgressEvent, SolverSpec
from solvers.errors import CosolveError, InstanceError, NoSolutionError
from solvers.routing.details import solution_details
from solvers.routing.io import load_instance, parse_instance_bytes, write_solution_file
from solvers.routing.problem import CVRPInstance, CVRPTWInstance, RoutingInstance, TSPInstance
from solvers.routing.solution import Solution
from solvers.routing.solve import Comparison, ComparisonRow, compare, gap_percent, solve
from solvers.routing.vrp.model import VrpProblem
from solvers.routing.vrp.parse import ParseParams, parse_document
from solvers.routing.vrp.solve import VRP_SOLVERS, VrpResult, solve_vrp

__all__ = [
    "VRP_SOLVERS",
    "ApiError",
    "AuthenticationError",
    "Batch",
    "BatchStatus",
    "Budget",
    "CVRPInstance",
    "CVRPTWInstance",
    "Client",
    "CompareResult",
    "Comparison",
    "ComparisonRow",
    "ConflictError",
    "CosolveError",
    "Drawing",
    "InstanceError",
    "InvalidRequestError",
    "Job",
    "JobEvent",
    "JobStatus",
    "NoSolutionError",
    "NotFoundError",
    "ParseParams",
    "PayloadTooLargeError",
    "ProgressEvent",
    "RateLimitError",
    "RoutingInstance",
    "ServerUnreachableError",
    "Solution",
    "SolutionDocument",
    "SolverInfo",
    "SolverSpec",
    "TSPInstance",
    "UnavailableError",
    "VrpAnswer",
    "VrpCompareResult",
    "VrpProblem",
    "VrpResult",
    "all_specs",
    "compare",
    "draw",
    "gap_percent",
    "get_spec",
    "load_instance",
    "parse_document",
    "parse_instance_bytes",
    "solution_details",
    "solve",
    "solve_vrp",
    "warm_up",
    "write_solution_file",
]
