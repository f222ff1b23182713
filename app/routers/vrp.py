"""VROOM documents over HTTP: ``POST /v1/routing/vrp/solve`` takes VROOM's input document as
the body, unchanged, with the options as query parameters (``solver``, ``time_limit``,
``seed``, ``geometry=geojson``), and answers VROOM's output document plus cosolve's check;
``/compare`` runs several solvers at equal time. Jobs take the same documents
(``POST /v1/jobs`` with ``problem: vrp``).

Parsing and solving run in a worker thread, never on the event loop, and a client that
disconnects cancels its solve.
"""

from __future__ import annotations

import threading
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from app.concurrency import run_while_connected
from app.encoding import finite_or_none, json_safe
from app.errors import ApiError, problem_responses
from app.intake.uploads import BodyFormat, require_format
from app.intake.vrp import VrpTask, compare_task, domain_refusal, solve_task
from app.schemas.vrp import (
    VrpCompareResponse,
    VrpCompareRow,
    VrpDocument,
    VrpJobRequest,
    VrpSolution,
)
from app.settings import Settings, get_settings
from jobs.vrp import VrpComparison, compare_vrp, summary_cost, unassigned_count
from solvers.contract import MAX_SEED, Budget
from solvers.errors import CosolveError, InstanceError
from solvers.routing.vrp.output import to_geojson
from solvers.routing.vrp.solve import VRP_SOLVERS, solve_vrp

router = APIRouter(prefix="/routing/vrp", tags=["routing"])
SettingsDep = Annotated[Settings, Depends(get_settings)]

SolverQuery = Annotated[str, Query(min_length=1, max_length=100, description=(
    "A solver of VROOM documents: " + ", ".join(VRP_SOLVERS) + " (GET /v1/solvers says "
    "which parts of the model each takes)."))]
TimeLimitQuery = Annotated[float | None, Query(gt=0, allow_inf_nan=False, description=(
    "Seconds per solver (the server's default when omitted)."))]
SeedQuery = Annotated[int, Query(ge=0, le=MAX_SEED, description="Seeds the solver's random "
                                 "choices.")]
GeometryQuery = Annotated[Literal["geojson"] | None, Query(description=(
    "geojson: add `geojson`, a FeatureCollection with a LineString per route and a Point per "
    "task (arrival, load); needs coordinates in the document."))]

_BODY = {"requestBody": {"required": True, "content": {"application/json": {
    "schema": {"$ref": "#/components/schemas/VrpDocument"}}}}}
_SEND = "application/json: a VROOM document (jobs, shipments, vehicles, matrices)"


async def _read(request: Request) -> bytes:
    require_format(request, BodyFormat.JSON, _SEND)
    return await request.body()


# -- solve ---------------------------------------------------------------------------------
def _solve(task: VrpTask, cancel: threading.Event) -> dict[str, Any]:
    budget = Budget(time_limit=task.time_limit, seed=task.seed, cancel=cancel)
    try:
        result = solve_vrp(task.problem, task.solvers[0], budget, seed=task.seed)
    except CosolveError as exc:
        raise domain_refusal(exc) from None
    body = json_safe(result.output)
    if task.geojson:
        try:
            body["geojson"] = json_safe(to_geojson(task.problem, result.plan, result.check,
                                                   result.reasons))
        except InstanceError as exc:
            raise domain_refusal(exc) from None
    return body


@router.post("/solve", name="solve_vrp", summary="Solve a VROOM document",
             description="The body is VROOM's input document as VROOM takes it; the answer is "
             "VROOM's output document (summary, routes with arrival, waiting and load per "
             "step, unassigned tasks each with a `reason` code) and `cosolve`: the solver, "
             "the independent check, the tasks a warm start moved. A field of VROOM's format "
             "that is not supported is a 422 naming it. Documents above the in-request task "
             "cap go as jobs (POST /v1/jobs, problem vrp).",
             response_model=VrpSolution, response_model_exclude_none=True,
             responses=problem_responses(404, 413, 415, 422, 503), openapi_extra=_BODY)
async def solve_document(request: Request, settings: SettingsDep,
                         solver: SolverQuery = "vroom", time_limit: TimeLimitQuery = None,
                         seed: SeedQuery = 0, geometry: GeometryQuery = None) -> Any:
    raw = await _read(request)
    task = await run_in_threadpool(solve_task, raw, solver, time_limit, seed,
                                   geometry == "geojson", settings)
    return await run_while_connected(request, lambda cancel: _solve(task, cancel))


# -- compare -------------------------------------------------------------------------------
def _gap(cost: float | None, best: float | None) -> float | None:
    if cost is None or best is None or best <= 0:
        return None
    return 100.0 * (cost - best) / best


def _compare_response(task: VrpTask, comparison: VrpComparison) -> VrpCompareResponse:
    best = next((r for r in comparison.rows if r.solver == comparison.best_solver), None)
    best_cost = summary_cost(best.result) if best is not None and best.result else None
    best_unassigned = unassigned_count(best.result) if best is not None and best.result else None
    rows = []
    for row in comparison.rows:
        result = row.result
        cost = summary_cost(result) if result else None
        unassigned = unassigned_count(result) if result else None
        rows.append(VrpCompareRow(
            solver=row.solver, cost=finite_or_none(cost), unassigned=unassigned,
            feasible=row.feasible,
            violations=list(result.check.violations) if result else [],
            wall_time=row.elapsed, error=row.error,
            gap_to_best=(_gap(cost, best_cost) if row.feasible and unassigned == best_unassigned
                         else None),
            progress=[(float(t), float(c)) for t, c in row.progress],
            solution=VrpSolution.model_validate(json_safe(result.output)) if result else None))
    return VrpCompareResponse(time_limit=task.time_limit, seed=task.seed,
                              tasks=task.problem.task_count,
                              vehicles=len(task.problem.vehicles),
                              best_solver=comparison.best_solver, rows=rows)


def _compare(task: VrpTask, cancel: threading.Event) -> VrpCompareResponse:
    budget = Budget(time_limit=task.time_limit, seed=task.seed, cancel=cancel)
    comparison = compare_vrp(task.problem, task.solvers, budget)
    refusal = comparison.refusal
    if refusal is not None:
        # every solver refused (the document uses a part none of them takes, a time limit
        # too short): the request's fault, as a solve of one of them answers
        error = domain_refusal(refusal)
        if error.field == "solver":
            error.field = "solvers"
        error.detail = comparison.refusal_message()
        raise error
    return _compare_response(task, comparison)


@router.post("/compare", name="compare_vrp", summary="Compare solvers on one VROOM document",
             description="Runs each solver in turn with the same time limit and seed "
             "(`solvers` comma-separated; all VRP solvers when omitted) and reports each "
             "one's VROOM output, cost, unassigned tasks, check and time; the best row "
             "assigns the most tasks, then costs least.",
             response_model=VrpCompareResponse,
             responses=problem_responses(404, 413, 415, 422, 503), openapi_extra=_BODY)
async def compare_documents(request: Request, settings: SettingsDep,
                            solvers: Annotated[str, Query(max_length=1000, description=(
                                "Comma-separated solver names, e.g. vroom,ortools,pyvrp."))] = "",
                            time_limit: TimeLimitQuery = None,
                            seed: SeedQuery = 0) -> VrpCompareResponse:
    raw = await _read(request)
    task = await run_in_threadpool(compare_task, raw, solvers, time_limit, seed, settings)
    return await run_while_connected(request, lambda cancel: _compare(task, cancel))


@router.post("/{action}", include_in_schema=False)
async def unknown_vrp_action(action: str) -> None:
    """A typo in the action gets the two that exist, not the routing problems' list."""
    raise ApiError(404, f"no VRP action {action!r}; use /v1/routing/vrp/solve or "
                   "/v1/routing/vrp/compare")


#: Models the operations reference by hand; ``app.main`` adds them to the OpenAPI document.
OPENAPI_BODY_MODELS: tuple[type[BaseModel], ...] = (VrpDocument, VrpJobRequest)
