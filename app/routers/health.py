"""Liveness and readiness probes.

``/healthz`` answers as long as the process serves requests. ``/readyz`` proves the solving path
works end to end by solving a bundled 5-node TSP with ``nearest_neighbor`` through the same
registry the API uses, and lists which solvers can run on this machine.
"""

import time
from typing import Annotated

from fastapi import APIRouter, Depends

from app.encoding import finite_or_none
from app.errors import ApiError, problem_responses
from app.schemas.health import (
    HealthResponse,
    ReadinessCheck,
    ReadinessResponse,
    SolverAvailability,
)
from app.settings import Settings, get_settings
from solvers.catalog import all_specs
from solvers.contract import Budget
from solvers.device import describe, torch_device_name
from solvers.routing.io.documents import instance_from_dict
from solvers.routing.solve import solve

router = APIRouter(tags=["health"])

#: A unit square with its centre: small enough to solve in microseconds, big enough to route.
SMOKE_TEST_INSTANCE = {
    "problem": "tsp",
    "name": "readiness-square",
    "coords": [[0.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 0.0], [0.5, 0.5]],
}
SMOKE_TEST_SOLVER = "nearest_neighbor"


@router.get("/healthz", response_model=HealthResponse)
def healthz() -> HealthResponse:
    """Liveness: the process is up."""
    return HealthResponse()


@router.get("/readyz", response_model=ReadinessResponse, responses=problem_responses(503))
def readyz(settings: Annotated[Settings, Depends(get_settings)]) -> ReadinessResponse:
    """Readiness: a real solve succeeds; 503 (with the reason) when it does not."""
    started = time.perf_counter()
    try:
        solvers = [
            SolverAvailability(name=s.name, available=reason is None, unavailable_reason=reason)
            for s in all_specs()
            for reason in [s.unavailable_reason()]
        ]
        instance = instance_from_dict(SMOKE_TEST_INSTANCE)
        solution = solve(instance, SMOKE_TEST_SOLVER, Budget(time_limit=1.0))
    except Exception as exc:  # any failure here means "not ready", with the reason
        raise ApiError(503, f"the readiness solve failed: {type(exc).__name__}: {exc}",
                       kind="not-ready", title="Not ready") from exc
    cost = finite_or_none(solution.cost)
    if not solution.feasible or cost is None:
        raise ApiError(503, f"the readiness solve returned an unusable solution: cost "
                       f"{solution.cost}, violations {solution.violations}",
                       kind="not-ready", title="Not ready")
    check = ReadinessCheck(solver=SMOKE_TEST_SOLVER, instance=instance.name, nodes=instance.n,
                           cost=cost, feasible=True,
                           seconds=round(time.perf_counter() - started, 6))
    return ReadinessResponse(check=check, solvers=solvers,
                             device=describe(torch_device_name(settings.device)))
