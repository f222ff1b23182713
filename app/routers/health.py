"""Liveness and readiness probes.

``/healthz`` answers as long as the process serves requests, from the moment the port opens.
``/readyz`` answers 503 ``warming-up`` (saying what is left) while the solvers warm up in the
background, then proves the solving path works end to end by solving a bundled 5-node TSP with
``nearest_neighbor`` through the same registry the API uses, and lists which solvers can run on
this machine. ``/metrics`` serves the Prometheus metrics (app.metrics).
"""

import time
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response

from app.encoding import finite_or_none
from app.errors import RETRY_AFTER_HEADER, ApiError, problem_responses, with_headers
from app.metrics import CONTENT_TYPE
from app.schemas.health import (
    HealthResponse,
    ReadinessCheck,
    ReadinessResponse,
    SolverAvailability,
)
from app.settings import Settings, get_settings
from app.startup import RETRY_AFTER_S, WarmUp
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


def _check_warm(warm: WarmUp | None) -> None:
    """503 while the warm-up runs (what is left, seconds so far), or when it failed."""
    if warm is None:
        return  # an app whose lifespan has not run
    if not warm.done:
        left = warm.left()
        raise ApiError(503, f"warming up: {warm.describe_left()}; {warm.elapsed():.0f} s so "
                       "far. /healthz answers meanwhile, jobs are accepted, and solving "
                       "requests are refused with Retry-After until their solvers are warm.",
                       kind="warming-up", title="Warming up",
                       headers={"Retry-After": str(RETRY_AFTER_S)},
                       extra={"warming": [i.name for i in left],
                              "warming_seconds": round(warm.elapsed(), 1)})
    failed = warm.failed()
    if failed:
        raise ApiError(503, "the warm-up failed for " + "; ".join(
            f"{i.name}: {i.error}" for i in failed) + " (the server log has the traceback)",
            kind="not-ready", title="Not ready")


@router.get("/readyz", response_model=ReadinessResponse,
            responses=with_headers(problem_responses(503), 503, RETRY_AFTER_HEADER,
                                   "Not ready: warming up (with Retry-After), or the "
                                   "readiness solve failed."))
def readyz(request: Request,
           settings: Annotated[Settings, Depends(get_settings)]) -> ReadinessResponse:
    """Readiness: the solvers are warm and a real solve succeeds; 503 (with the reason, and
    what is still warming) when not."""
    _check_warm(getattr(request.app.state, "warm_up", None))
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


@router.get("/metrics", response_class=Response, responses={200: {
    "description": "Prometheus text exposition format 0.0.4.",
    "content": {CONTENT_TYPE: {"schema": {"type": "string"}}}}})
def metrics(request: Request) -> Response:
    """Prometheus metrics: requests by route and status with latency histograms, jobs by
    state, queue depth, solver seconds by solver, the warm-up's state. Open, as /healthz."""
    return Response(request.app.state.metrics.render(), media_type=CONTENT_TYPE)
