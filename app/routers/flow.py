"""Min-cost-flow endpoints: solve a network in the request, or compare solvers on one.

Like the routing endpoints, each takes EITHER a JSON body (the network inline) or a multipart
upload (``file``: a DIMACS ``.min`` or a ``.json`` network, optionally ``.gz``, plus form
fields), checks cheapest first (options, solver names, then the network), and solves in a
worker thread that a client disconnect cancels. An infeasible network is an answer, not an
error: 200 with ``status: infeasible`` and the blocking cut that proves it.
"""

from __future__ import annotations

import threading
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel

from app.concurrency import run_while_connected
from app.encoding import json_safe
from app.errors import (
    domain_problem,
    instance_problem,
    problem_responses,
    refused_comparison,
)
from app.intake.flow import (
    FlowTask,
    compare_task_from_json,
    compare_task_from_upload,
    read_task,
    solve_task_from_json,
    solve_task_from_upload,
)
from app.schemas.flow import (
    CertificateOut,
    FlowCompareRequest,
    FlowCompareResponse,
    FlowCompareRow,
    FlowCompareUpload,
    FlowSolveRequest,
    FlowSolveResponse,
    FlowSolveUpload,
    InfeasibilityOut,
)
from app.settings import Settings, get_settings
from solvers.contract import Budget
from solvers.device import torch_device_name
from solvers.errors import CosolveError, InstanceError
from solvers.flow.options import FlowOptions
from solvers.flow.solution import Certificate
from solvers.flow.solve import compare, solve

router = APIRouter(prefix="/flow", tags=["flow"])

SettingsDep = Annotated[Settings, Depends(get_settings)]


# -- responses -----------------------------------------------------------------------------------
def _certificate(cert: Certificate | None) -> CertificateOut | None:
    return CertificateOut(**cert.to_dict()) if cert is not None else None


def _solve_response(task: FlowTask, cancel: threading.Event,
                    device: str) -> FlowSolveResponse:
    budget = Budget(time_limit=task.time_limit, seed=task.seed, cancel=cancel, device=device)
    try:
        solution = solve(task.network, task.solvers[0], budget,
                         options=FlowOptions(tolerance=task.tolerance))
    except InstanceError as exc:
        raise instance_problem(exc, task.source) from None
    except CosolveError as exc:
        raise domain_problem(exc) from None
    net = task.network
    return FlowSolveResponse(
        network=net.name, nodes=net.n, arcs=net.m, solver=solution.solver,
        status=solution.status,  # type: ignore[arg-type]
        feasible=solution.feasible, cost=solution.cost,
        flow=solution.flow.tolist() if solution.flow is not None else None,
        violations=solution.violations, wall_time=solution.wall_time,
        time_limit=task.time_limit, seed=task.seed, tolerance=task.tolerance,
        certificate=_certificate(solution.certificate),
        infeasibility=InfeasibilityOut(**solution.cut.to_dict()) if solution.cut else None,
        stats=json_safe(solution.stats),
    )


def _compare_response(task: FlowTask, cancel: threading.Event,
                      device: str) -> FlowCompareResponse:
    budget = Budget(time_limit=task.time_limit, seed=task.seed, cancel=cancel, device=device)
    try:
        result = compare(task.network, task.solvers, budget,
                         options=FlowOptions(tolerance=task.tolerance))
    except InstanceError as exc:
        raise instance_problem(exc, task.source) from None
    if result.refusal is not None:
        # every solver refused the request (e.g. a time limit below what each needs at this
        # size): 4xx as from a solve and as routing's compare, not a 200 whose rows all failed
        raise refused_comparison([r.refusal for r in result.rows if r.refusal is not None],
                                 result.refusal_message(), task.source)
    rows = []
    cut = None
    for row in result.rows:
        sol = row.solution
        if sol is not None and sol.cut is not None and cut is None:
            cut = InfeasibilityOut(**sol.cut.to_dict())
        rows.append(FlowCompareRow(
            solver=row.solver, status=sol.status if sol else None,
            cost=sol.cost if sol else None, feasible=bool(sol and sol.feasible),
            gap_to_best=row.gap_to_best, wall_time=sol.wall_time if sol else None,
            certificate=_certificate(sol.certificate) if sol else None,
            violations=sol.violations if sol else [], error=row.error,
            stats=json_safe(sol.stats) if sol else {}))
    net = task.network
    return FlowCompareResponse(
        network=net.name, nodes=net.n, arcs=net.m, time_limit=task.time_limit,
        seed=task.seed, tolerance=task.tolerance, best_solver=result.best_solver,
        best_cost=result.best_cost, agree=result.agree, infeasibility=cut, rows=rows)


# -- routes ------------------------------------------------------------------------------------
def _request_body(json_model: type[BaseModel], upload_model: type[BaseModel]) -> dict[str, Any]:
    def ref(model: type[BaseModel]) -> dict[str, str]:
        return {"$ref": f"#/components/schemas/{model.__name__}"}

    return {"requestBody": {"required": True, "content": {
        "application/json": {"schema": ref(json_model)},
        "multipart/form-data": {"schema": ref(upload_model)}}}}


#: Request-body models the operations reference by hand; ``app.main`` adds them to OpenAPI.
OPENAPI_BODY_MODELS: tuple[type[BaseModel], ...] = (
    FlowSolveRequest, FlowSolveUpload, FlowCompareRequest, FlowCompareUpload)


@router.post(
    "/min-cost", name="solve_min_cost_flow", response_model=FlowSolveResponse,
    summary="Solve a min-cost flow network in the request",
    description=(
        "Post the network as JSON (FlowSolveRequest) or upload it (multipart/form-data: `file` "
        "— DIMACS .min or .json, optionally .gz — plus `solver`, `time_limit`, `seed`, "
        "`tolerance`). Returns an exactly checked integer flow with its cost and a dual "
        "certificate, or `status: infeasible` with the blocking cut."),
    responses=problem_responses(404, 413, 415, 422, 503),
    openapi_extra=_request_body(FlowSolveRequest, FlowSolveUpload),
)
async def solve_min_cost_flow(request: Request, settings: SettingsDep) -> FlowSolveResponse:
    task = await read_task(request, settings, solve_task_from_json, solve_task_from_upload)
    device = torch_device_name(settings.device)
    return await run_while_connected(request, lambda cancel: _solve_response(task, cancel, device))


@router.post(
    "/min-cost/compare", name="compare_min_cost_flow", response_model=FlowCompareResponse,
    summary="Compare min-cost-flow solvers on one network",
    description=(
        "Runs each solver in turn (default: ortools_mcf, networkx_simplex, oft_sinkhorn) with "
        "the same time limit, seed and tolerance, and reports cost, gap to the best, wall time "
        "and certificate per solver, and whether they agree. JSON (FlowCompareRequest) or "
        "multipart (`file` plus `solvers` comma-separated and the other fields)."),
    responses=problem_responses(404, 413, 415, 422, 503),
    openapi_extra=_request_body(FlowCompareRequest, FlowCompareUpload),
)
async def compare_min_cost_flow(request: Request, settings: SettingsDep) -> FlowCompareResponse:
    task = await read_task(request, settings, compare_task_from_json, compare_task_from_upload)
    device = torch_device_name(settings.device)
    return await run_while_connected(request,
                                     lambda cancel: _compare_response(task, cancel, device))
