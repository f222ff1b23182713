"""Routing endpoints: solve a TSP, CVRP or CVRPTW in the request, or compare several solvers
on one.

Each endpoint takes EITHER a JSON body or a multipart upload (``file`` + form fields), so it
reads the Request itself; both bodies are documented through ``openapi_extra``. Parsing and
solving run in a worker thread, never on the event loop, and a client that disconnects
cancels its solve.
"""

import threading
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from app.concurrency import run_while_connected
from app.encoding import finite_or_none, json_safe
from app.errors import ApiError, instance_problem, problem_responses, refused_comparison
from app.intake.routing import (
    PROBLEMS,
    CompareTask,
    SolveTask,
    compare_task_from_json,
    compare_task_from_upload,
    solve_task_from_json,
    solve_task_from_upload,
)
from app.intake.uploads import BodyFormat, Upload, body_format, read_upload
from app.schemas.routing import (
    CompareResponse,
    CompareRow,
    CompareUpload,
    CVRPCompareRequest,
    CVRPSolveRequest,
    CVRPSolveResponse,
    CVRPTWCompareRequest,
    CVRPTWSolveRequest,
    CVRPTWSolveResponse,
    SolveResponse,
    SolveUpload,
    TSPCompareRequest,
    TSPSolveRequest,
    TSPSolveResponse,
)
from app.settings import Settings, get_settings
from solvers.contract import Budget
from solvers.device import torch_device_name
from solvers.errors import InstanceError, NoSolutionError
from solvers.routing.io.documents import solution_to_dict
from solvers.routing.render import comparison_plot_svg, solution_svg
from solvers.routing.solve import REFUSALS, compare, solve

router = APIRouter(prefix="/routing", tags=["routing"])

T = TypeVar("T")
SettingsDep = Annotated[Settings, Depends(get_settings)]


# -- reading requests ------------------------------------------------------------------------
async def _read_task(
    request: Request,
    problem: str,
    settings: Settings,
    from_json: Callable[[bytes, str, Settings], T],
    from_upload: Callable[[Upload, str, Settings], T],
    extra_files: tuple[str, ...] = (),
) -> T:
    """Read the body in its format (async), then check and parse it in a worker thread."""
    if body_format(request) is BodyFormat.JSON:
        raw = await request.body()
        return await run_in_threadpool(from_json, raw, problem, settings)
    upload = await read_upload(request, extra_files=extra_files)
    return await run_in_threadpool(from_upload, upload, problem, settings)


# -- solve ---------------------------------------------------------------------------------
def _solve_response(task: SolveTask, cancel: threading.Event, device: str) -> dict[str, Any]:
    budget = Budget(time_limit=task.time_limit, seed=task.seed, cancel=cancel,
                    max_solutions=task.max_solutions, device=device)
    try:
        solution = solve(task.instance, task.solver, budget)
    except InstanceError as exc:  # named where this request put the instance
        raise instance_problem(exc, task.source) from None
    except NoSolutionError as exc:
        if exc.field == "max_vehicles":  # named where this request put the fleet cap
            exc.field = task.fleet_field
        raise
    body = solution_to_dict(solution, task.instance)
    body.update(
        nodes=task.instance.n,
        time_limit=task.time_limit,
        seed=task.seed,
        cost=finite_or_none(solution.cost),
        stats=json_safe(solution.stats),
    )
    return body


def _solve_endpoint(problem: str) -> Callable[..., Awaitable[dict[str, Any]]]:
    async def solve_instance(request: Request, settings: SettingsDep) -> dict[str, Any]:
        task = await _read_task(request, problem, settings, solve_task_from_json,
                                solve_task_from_upload)
        device = torch_device_name(settings.device)
        return await run_while_connected(request,
                                         lambda cancel: _solve_response(task, cancel, device))

    return solve_instance


# -- compare -------------------------------------------------------------------------------
def _compare_response(task: CompareTask, cancel: threading.Event,
                      device: str) -> CompareResponse:
    budget = Budget(time_limit=task.time_limit, seed=task.seed, cancel=cancel, device=device)
    result = compare(task.instance, task.solvers, budget, reference=task.reference)
    refusal = result.refusal
    if isinstance(refusal, NoSolutionError):
        # no plan exists (e.g. no partition meets the fleet cap): the input's fault, a 422
        # on the field as from a solve (and exit 2 from `cosolve compare`), not a 200 whose
        # rows all failed
        raise NoSolutionError(result.refusal_message(), field=task.fleet_field,
                              more_time_helps=False, proven=True)
    if refusal is not None:
        # every solver refused the request (a time limit too short for this size, an
        # instance too large): the status and field a solve gives, every solver's reason
        raise refused_comparison([r.refusal for r in result.rows if r.refusal is not None],
                                 result.refusal_message(), task.source)
    rows = []
    for row in result.rows:
        solution = row.solution
        plan = solution_to_dict(solution, task.instance) if solution else {}
        rows.append(
            CompareRow(
                solver=row.solver,
                cost=finite_or_none(row.cost),
                gap_to_best=finite_or_none(row.gap_to_best),
                gap_to_reference=finite_or_none(row.gap_to_reference),
                wall_time=None if isinstance(row.refusal, REFUSALS) else row.elapsed,
                feasible=row.feasible,
                violations=solution.violations if solution else [],
                error=row.error,
                # the plan and the solver's statistics, so a row can be checked and its
                # settings seen, as in the CLI's rows
                distance=solution.distance if solution else task.instance.distance,
                routes=plan.get("routes"),
                route_ids=plan.get("route_ids"),
                route_details=plan.get("route_details"),
                summary=plan.get("summary"),
                units=plan.get("units"),
                stats=json_safe(solution.stats) if solution else {},
                auto=plan.get("auto"),  # the "auto" row: which solver it ran, and why
                svg=(solution_svg(task.instance, solution, reference=task.reference)
                     if task.svg and solution else None),
                progress=row.progress,
            )
        )
    return CompareResponse(
        problem=task.instance.problem,
        instance=task.instance.name,
        nodes=task.instance.n,
        distance=task.instance.distance,
        time_limit=task.time_limit,
        seed=task.seed,
        reference=task.reference,
        reference_file=task.reference_file,
        best_solver=result.best_solver,
        rows=rows,
        plot=comparison_plot_svg(result) if task.svg else None,
    )


def _compare_endpoint(problem: str) -> Callable[..., Awaitable[CompareResponse]]:
    async def compare_solvers(request: Request, settings: SettingsDep) -> CompareResponse:
        task = await _read_task(request, problem, settings, compare_task_from_json,
                                compare_task_from_upload, extra_files=("reference_file",))
        device = torch_device_name(settings.device)
        return await run_while_connected(request,
                                          lambda cancel: _compare_response(task, cancel, device))

    return compare_solvers


# -- OpenAPI: two body formats per operation --------------------------------------------------
def _request_body(json_model: type[BaseModel], upload_model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` documenting both accepted bodies (``app.main`` adds the schemas)."""
    def ref(model: type[BaseModel]) -> dict[str, str]:
        return {"$ref": f"#/components/schemas/{model.__name__}"}

    return {
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": ref(json_model)},
                "multipart/form-data": {"schema": ref(upload_model)},
            },
        }
    }


_SOLVE_MODELS: dict[str, tuple[type[BaseModel], type[SolveResponse]]] = {
    "tsp": (TSPSolveRequest, TSPSolveResponse),
    "cvrp": (CVRPSolveRequest, CVRPSolveResponse),
    "cvrptw": (CVRPTWSolveRequest, CVRPTWSolveResponse),
}
_COMPARE_REQUESTS: dict[str, type[BaseModel]] = {
    "tsp": TSPCompareRequest,
    "cvrp": CVRPCompareRequest,
    "cvrptw": CVRPTWCompareRequest,
}
#: Request-body models the operations reference through ``openapi_extra``; ``app.main`` adds
#: them to the OpenAPI components.
OPENAPI_BODY_MODELS: tuple[type[BaseModel], ...] = (
    *(request for request, _ in _SOLVE_MODELS.values()),
    *_COMPARE_REQUESTS.values(),
    SolveUpload,
    CompareUpload,
)

for _problem in PROBLEMS:
    _upper = _problem.upper()
    router.add_api_route(
        f"/{_problem}/solve",
        _solve_endpoint(_problem),
        methods=["POST"],
        name=f"solve_{_problem}",
        summary=f"Solve a {_upper} instance in the request",
        description=(
            f"Post the instance as JSON ({_upper}SolveRequest) or upload it as a file "
            "(multipart/form-data: `file` plus the form fields `solver`, `time_limit`, `seed`"
            + (", and `max_vehicles` for a fleet cap" if _problem != "tsp" else "") + "). "
            "Instances above the server's in-request node cap are refused with 413."
        ),
        response_model=_SOLVE_MODELS[_problem][1],
        responses=problem_responses(404, 413, 415, 422, 503),
        openapi_extra=_request_body(_SOLVE_MODELS[_problem][0], SolveUpload),
    )
    router.add_api_route(
        f"/{_problem}/compare",
        _compare_endpoint(_problem),
        methods=["POST"],
        name=f"compare_{_problem}",
        summary=f"Compare several solvers on one {_upper} instance",
        description=(
            "Runs each solver in turn with the same time limit and seed, and reports cost, gap "
            "to the best feasible row and to an optional reference, wall time and (svg=true) a "
            f"drawing of each solution. JSON ({_upper}CompareRequest) or multipart (`file` plus "
            "`solvers` comma-separated and the other fields"
            + (", `max_vehicles` among them" if _problem != "tsp" else "") + "; the reference "
            "as a number, or as a known solution's file, `reference_file`, checked and "
            "costed)."
        ),
        response_model=CompareResponse,
        responses=problem_responses(404, 413, 415, 422, 503),
        openapi_extra=_request_body(_COMPARE_REQUESTS[_problem], CompareUpload),
    )


@router.post("/{problem}/{action}", include_in_schema=False)
async def unknown_routing_endpoint(problem: str, action: str) -> None:
    """Say which problems exist instead of a bare 404 for /v1/routing/<typo>/solve."""
    if problem not in PROBLEMS:
        raise ApiError(
            404, f"unknown routing problem {problem!r}; this service solves: {', '.join(PROBLEMS)}",
            kind="unknown-problem", title="Unknown problem", field="problem",
        )
    raise ApiError(404, f"no routing action {action!r}; use solve or compare")

