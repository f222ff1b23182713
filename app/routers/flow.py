"""Min-cost-flow endpoints: solve a network in the request, or compare solvers on one.

Like the routing endpoints, each takes EITHER a JSON body (the network inline) or a multipart
upload (``file``: a DIMACS ``.min`` or a ``.json`` network, optionally ``.gz``, plus form
fields), checks cheapest first (options, solver names, then the network), and solves in a
worker thread that a client disconnect cancels. An infeasible network is an answer, not an
error: 200 with ``status: infeasible`` and the blocking cut that proves it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from app.encoding import json_safe
from app.errors import (
    ApiError,
    domain_problem,
    instance_problem,
    invalid_request,
    problem_responses,
)
from app.intake import check_solver_name, single_values, validate_fields, validate_json
from app.schemas.flow import (
    CertificateOut,
    FlowCompareOptionsIn,
    FlowCompareRequest,
    FlowCompareResponse,
    FlowCompareRow,
    FlowCompareUpload,
    FlowOptionsIn,
    FlowSolveRequest,
    FlowSolveResponse,
    FlowSolveUpload,
    InfeasibilityOut,
)
from app.settings import Settings, get_settings
from solvers.base import Budget
from solvers.errors import CosolveError, InstanceError
from solvers.flow.io import network_from_dict, parse_network_bytes
from solvers.flow.options import FlowOptions
from solvers.flow.problem import Certificate, FlowNetwork
from solvers.flow.solve import PROBLEM, compare, solve

router = APIRouter(prefix="/flow", tags=["flow"])

T = TypeVar("T")
SettingsDep = Annotated[Settings, Depends(get_settings)]
_DISCONNECT_POLL_S = 0.25
_MAX_FORM_FIELDS = 16


@dataclass(frozen=True)
class FlowTask:
    network: FlowNetwork
    solvers: list[str]
    time_limit: float
    seed: int
    tolerance: float


# -- reading the request -------------------------------------------------------------------------
def _is_json(request: Request) -> bool:
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media == "application/json" or (media.startswith("application/") and
                                       media.endswith("+json")):
        return True
    if media == "multipart/form-data":
        return False
    raise ApiError(
        415, f"Content-Type {media or '(none)'} is not accepted here. Send application/json "
        "(a network object) or multipart/form-data (a 'file' part with a DIMACS .min or .json "
        "network, optionally .gz, and form fields for the options).",
        kind="unsupported-media-type",
        headers={"Accept-Post": "application/json, multipart/form-data"})


async def _read_upload(request: Request) -> tuple[str, bytes, dict[str, list[str]]]:
    file: UploadFile | None = None
    fields: dict[str, list[str]] = {}
    async with request.form(max_files=1, max_fields=_MAX_FORM_FIELDS) as form:
        for name, value in form.multi_items():
            if isinstance(value, UploadFile):
                if name != "file":
                    raise invalid_request(f"unexpected file part {name!r}; send the network as "
                                          "the part named 'file'", field=name)
                file = value
            else:
                fields.setdefault(name, []).append(value)
        if file is None or not file.filename:
            raise invalid_request("a multipart request needs a 'file' part (with a filename) "
                                  "holding the network: DIMACS .min or .json, optionally .gz",
                                  field="file")
        data = await file.read()
    return file.filename, data, fields


def _network(build: Callable[[], FlowNetwork], source: str) -> FlowNetwork:
    """Build the network; every failure is a 422 naming the field (or the file's line)."""
    try:
        return build()
    except InstanceError as exc:
        if source == "file" and exc.field.startswith("line "):
            line = int(exc.field.split()[1])
            raise ApiError(422, f"file, line {line}: {exc.message}", kind="invalid-instance",
                           title="Invalid network", field="file", extra={"line": line}) from None
        raise instance_problem(exc, source) from None
    except (ValueError, TypeError, OverflowError, IndexError) as exc:
        raise instance_problem(InstanceError(source, f"cannot read the network: {exc}"),
                               source) from None


def _time_limit(requested: float | None, settings: Settings, runs: int = 1) -> float:
    limit = settings.default_time_limit if requested is None else requested
    if limit * runs > settings.max_time_limit:
        what = (f"time_limit {limit:g} s" if runs == 1 else
                f"{runs} solvers × {limit:g} s = {limit * runs:g} s")
        raise invalid_request(f"{what} is above the {settings.max_time_limit:g} s one request "
                              "may run; lower time_limit, or use the CLI (cosolve flow solve)",
                              field="time_limit")
    return limit


def _check_size(net: FlowNetwork, settings: Settings, source: str) -> None:
    if net.n > settings.max_sync_nodes:
        raise ApiError(
            413, f"the network has {net.n} nodes; requests solve at most "
            f"{settings.max_sync_nodes} nodes while you wait. Solve it with the CLI "
            "(cosolve flow solve).", kind="instance-too-large",
            title="Instance too large for in-request solving", field=source,
            extra={"nodes": net.n, "limit": settings.max_sync_nodes})


def _task(options: FlowOptionsIn | FlowCompareOptionsIn, names: list[str],
          build: Callable[[], FlowNetwork], source: str, settings: Settings,
          compare_fields: bool) -> FlowTask:
    if compare_fields:
        if len(names) > settings.max_compare_solvers:
            raise invalid_request(f"{len(names)} solvers asked for; a comparison runs at most "
                                  f"{settings.max_compare_solvers}", field="solvers")
        seen: dict[str, int] = {}
        for i, name in enumerate(names):
            if name in seen:
                raise invalid_request(f"solver {name!r} is listed twice (solvers[{seen[name]}] "
                                      f"and solvers[{i}])", field=f"solvers[{i}]")
            seen[name] = i
            check_solver_name(name, PROBLEM, f"solvers[{i}]")
    else:
        check_solver_name(names[0], PROBLEM, "solver")
    time_limit = _time_limit(options.time_limit, settings, runs=len(names))
    network = _network(build, source)
    _check_size(network, settings, source)
    return FlowTask(network, names, time_limit, options.seed, options.tolerance)


def _network_dict(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(exclude_none=True, exclude={"problem"})


def solve_task_from_json(raw: bytes, settings: Settings) -> FlowTask:
    request = validate_json(FlowSolveRequest, raw)
    return _task(request, [request.solver],
                 lambda: network_from_dict(_network_dict(request.network)), "network",
                 settings, compare_fields=False)


def solve_task_from_upload(filename: str, data: bytes, fields: dict[str, list[str]],
                           settings: Settings) -> FlowTask:
    options = validate_fields(FlowOptionsIn, single_values(fields))
    return _task(options, [options.solver],
                 lambda: parse_network_bytes(data, filename,
                                             max_bytes=settings.max_decompressed_bytes),
                 "file", settings, compare_fields=False)


def compare_task_from_json(raw: bytes, settings: Settings) -> FlowTask:
    request = validate_json(FlowCompareRequest, raw)
    return _task(request, list(request.solvers),
                 lambda: network_from_dict(_network_dict(request.network)), "network",
                 settings, compare_fields=True)


def compare_task_from_upload(filename: str, data: bytes, fields: dict[str, list[str]],
                             settings: Settings) -> FlowTask:
    plain: dict[str, Any] = single_values({k: v for k, v in fields.items() if k != "solvers"})
    if "solvers" in fields:
        joined = ",".join(fields["solvers"])
        plain["solvers"] = [name.strip() for name in joined.split(",") if name.strip()]
    options = validate_fields(FlowCompareOptionsIn, plain)
    return _task(options, list(options.solvers),
                 lambda: parse_network_bytes(data, filename,
                                             max_bytes=settings.max_decompressed_bytes),
                 "file", settings, compare_fields=True)


async def _read_task(request: Request, settings: Settings,
                     from_json: Callable[[bytes, Settings], FlowTask],
                     from_upload: Callable[[str, bytes, dict[str, list[str]], Settings],
                                           FlowTask]) -> FlowTask:
    if _is_json(request):
        raw = await request.body()
        return await run_in_threadpool(from_json, raw, settings)
    filename, data, fields = await _read_upload(request)
    return await run_in_threadpool(from_upload, filename, data, fields, settings)


# -- running off the event loop --------------------------------------------------------------
async def _watch_disconnect(request: Request, cancel: threading.Event) -> None:
    while not cancel.is_set():
        if await request.is_disconnected():
            cancel.set()
            return
        await asyncio.sleep(_DISCONNECT_POLL_S)


async def _run_while_connected(request: Request, work: Callable[[threading.Event], T]) -> T:
    """Run ``work`` in a worker thread; a client that goes away sets its cancel flag."""
    cancel = threading.Event()
    watcher = asyncio.create_task(_watch_disconnect(request, cancel))
    try:
        return await run_in_threadpool(work, cancel)
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


def _certificate(cert: Certificate | None) -> CertificateOut | None:
    return CertificateOut(**cert.to_dict()) if cert is not None else None


def _solve_response(task: FlowTask, cancel: threading.Event) -> FlowSolveResponse:
    budget = Budget(time_limit=task.time_limit, seed=task.seed, cancel=cancel)
    try:
        solution = solve(task.network, task.solvers[0], budget,
                         options=FlowOptions(tolerance=task.tolerance))
    except InstanceError as exc:
        raise instance_problem(exc, "network") from None
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


def _compare_response(task: FlowTask, cancel: threading.Event) -> FlowCompareResponse:
    budget = Budget(time_limit=task.time_limit, seed=task.seed, cancel=cancel)
    try:
        result = compare(task.network, task.solvers, budget,
                         options=FlowOptions(tolerance=task.tolerance))
    except InstanceError as exc:
        raise instance_problem(exc, "network") from None
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
    task = await _read_task(request, settings, solve_task_from_json, solve_task_from_upload)
    return await _run_while_connected(request, lambda cancel: _solve_response(task, cancel))


@router.post(
    "/min-cost/compare", name="compare_min_cost_flow", response_model=FlowCompareResponse,
    summary="Compare min-cost-flow solvers on one network",
    description=(
        "Runs each solver in turn (default: ortools_mcf, networkx_simplex, oft_sinkhorn) with "
        "the same time limit, seed and tolerance, and reports cost, gap to the best, wall time "
        "and certificate per solver, and whether they agree. JSON (FlowCompareRequest) or "
        "multipart (`file` plus `solvers` comma-separated and the other fields)."),
    responses=problem_responses(404, 413, 415, 422),
    openapi_extra=_request_body(FlowCompareRequest, FlowCompareUpload),
)
async def compare_min_cost_flow(request: Request, settings: SettingsDep) -> FlowCompareResponse:
    task = await _read_task(request, settings, compare_task_from_json, compare_task_from_upload)
    return await _run_while_connected(request, lambda cancel: _compare_response(task, cancel))
