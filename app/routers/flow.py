"""Min-cost-flow endpoints: solve a network in the request, or compare solvers on one.

Like the routing endpoints, each takes EITHER a JSON body (the network inline) or a multipart
upload (``file``: a DIMACS ``.min`` or a ``.json`` network, optionally ``.gz``, plus form
fields), checks cheapest first (options, solver names, then the network), and solves in a
worker thread that a client disconnect cancels. An infeasible network is an answer, not an
error: 200 with ``status: infeasible`` and the blocking cut that proves it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, NoReturn, TypeVar

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel
from pydantic_core import from_json
from starlette.concurrency import run_in_threadpool

from app.concurrency import run_while_connected
from app.encoding import json_safe
from app.errors import (
    ApiError,
    domain_problem,
    instance_problem,
    problem_responses,
    refused_comparison,
)
from app.intake import (
    BodyFormat,
    body_format,
    check_solver_list,
    check_solver_name,
    read_upload,
    request_time_limit,
    single_values,
    validate_fields,
    validate_json,
)
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
from solvers.contract import Budget
from solvers.device import torch_device_name
from solvers.errors import CosolveError, InstanceError, InstanceTooLargeError
from solvers.flow.io import network_from_dict, parse_network_bytes
from solvers.flow.options import FlowOptions
from solvers.flow.problem import FlowNetwork
from solvers.flow.solution import Certificate
from solvers.flow.solve import PROBLEM, compare, solve

router = APIRouter(prefix="/flow", tags=["flow"])

T = TypeVar("T")
SettingsDep = Annotated[Settings, Depends(get_settings)]
_MAX_FORM_FIELDS = 16


#: What the flow endpoints accept, for the 415 and missing-file messages.
NETWORK_BODY = ("a network object",
                "the network (DIMACS .min or .json, optionally .gz)")


@dataclass(frozen=True)
class FlowTask:
    network: FlowNetwork
    solvers: list[str]
    time_limit: float
    seed: int
    tolerance: float
    #: where the network came from, for an error the solve finds in it: ``network`` (a JSON
    #: body) or ``file`` (an upload), as the errors found while reading it
    source: str = "network"


# -- reading the request -------------------------------------------------------------------------
def _network(build: Callable[[int], FlowNetwork], source: str,
             settings: Settings, cli: str) -> FlowNetwork:
    """Build the network (refusing more nodes than a request may solve before reading them);
    every failure is a 422 naming the field (or the file's line), too many nodes a 413."""
    try:
        return build(settings.max_sync_nodes)
    except InstanceTooLargeError as exc:
        _too_large(exc, source, cli)
    except InstanceError as exc:
        if source == "file" and exc.field.startswith("line "):
            line = int(exc.field.split()[1])
            raise ApiError(422, f"file, line {line}: {exc.message}", kind="invalid-instance",
                           title="Invalid network", field="file", extra={"line": line}) from None
        raise instance_problem(exc, source) from None
    except (ValueError, TypeError, OverflowError, IndexError) as exc:
        raise instance_problem(InstanceError(source, f"cannot read the network: {exc}"),
                               source) from None


def _too_large(exc: InstanceTooLargeError, source: str, cli: str) -> NoReturn:
    """The 413, naming the CLI command that does what was asked (QA review: a comparison
    was told to use ``cosolve flow solve``)."""
    doing = "Compare the solvers on it" if cli == "cosolve flow compare" else "Solve it"
    raise ApiError(
        413, f"the network has {exc.nodes} {exc.unit}; requests solve at most {exc.limit} "
        f"{exc.unit} while you wait. {doing} with the CLI ({cli}).",
        kind="instance-too-large", title="Instance too large for in-request solving",
        field=source, extra={exc.unit: exc.nodes, "limit": exc.limit})


def _task(options: FlowOptionsIn | FlowCompareOptionsIn, names: list[str],
          build: Callable[[int], FlowNetwork], source: str, settings: Settings,
          compare_fields: bool) -> FlowTask:
    if compare_fields:
        check_solver_list(names, PROBLEM, settings)
    else:
        check_solver_name(names[0], PROBLEM, "solver")
    cli = "cosolve flow compare" if compare_fields else "cosolve flow solve"
    time_limit = request_time_limit(options.time_limit, settings, runs=len(names), cli=cli)
    network = _network(build, source, settings, cli)
    return FlowTask(network, names, time_limit, options.seed, options.tolerance, source)


def _network_dict(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(exclude_none=True, exclude={"problem"})


def _arcs_past_the_limit(raw: bytes, limit: int) -> tuple[dict[str, Any], int] | None:
    """(the body without its network, the arc count) when a JSON body has more arcs than a
    request may solve; None otherwise, and for anything ``validate_json`` should word.

    Counted before pydantic builds and checks an object per arc (QA sweep: the 413 for
    1,000,001 arcs came after 6.6 s of that). Every arc names its "tail", so the word's count
    bounds a valid body's arcs from above at memchr speed; only past the limit is the body
    parsed, as plain JSON, to count exactly. An arc that spells the key with an escape
    ("\\u0074ail") is not counted here and meets the same 413 after validation."""
    if raw.count(b'"tail"') <= limit:
        return None
    try:
        body = from_json(raw)
    except ValueError:
        return None
    network = body.get("network") if isinstance(body, dict) else None
    arcs = network.get("arcs") if isinstance(network, dict) else None
    if not isinstance(arcs, list) or len(arcs) <= limit:
        return None
    return {key: value for key, value in body.items() if key != "network"}, len(arcs)


def _refuse_too_many_arcs(raw: bytes, settings: Settings, compare_fields: bool) -> None:
    """The 413 for too many arcs before the arcs are read, after the cheaper checks of the
    options, solver names and time limit (in that order, as for a valid body)."""
    found = _arcs_past_the_limit(raw, settings.max_sync_arcs)
    if found is None:
        return
    options_only, arcs = found
    limit = settings.max_sync_arcs
    encoded = json.dumps(options_only).encode()  # the options as validate_json reads them
    options: FlowOptionsIn | FlowCompareOptionsIn
    if compare_fields:
        options = validate_json(FlowCompareOptionsIn, encoded)
        names = list(options.solvers)
    else:
        options = validate_json(FlowOptionsIn, encoded)
        names = [options.solver]

    def refuse(_max_nodes: int) -> FlowNetwork:
        raise InstanceTooLargeError(f"arcs: the network has {arcs} arcs; the limit here is "
                                    f"{limit}", arcs, limit, unit="arcs")

    _task(options, names, refuse, "network", settings, compare_fields)  # QA sweep: raises 413


def solve_task_from_json(raw: bytes, settings: Settings) -> FlowTask:
    _refuse_too_many_arcs(raw, settings, compare_fields=False)
    request = validate_json(FlowSolveRequest, raw)
    return _task(request, [request.solver],
                 lambda limit: network_from_dict(_network_dict(request.network),
                                                 max_nodes=limit,
                                                 max_arcs=settings.max_sync_arcs), "network",
                 settings, compare_fields=False)


def solve_task_from_upload(filename: str, data: bytes, fields: dict[str, list[str]],
                           settings: Settings) -> FlowTask:
    options = validate_fields(FlowOptionsIn, single_values(fields))
    return _task(options, [options.solver],
                 lambda limit: parse_network_bytes(data, filename,
                                                  max_bytes=settings.max_decompressed_bytes,
                                                  max_nodes=limit,
                                                 max_arcs=settings.max_sync_arcs),
                 "file", settings, compare_fields=False)


def compare_task_from_json(raw: bytes, settings: Settings) -> FlowTask:
    _refuse_too_many_arcs(raw, settings, compare_fields=True)
    request = validate_json(FlowCompareRequest, raw)
    return _task(request, list(request.solvers),
                 lambda limit: network_from_dict(_network_dict(request.network),
                                                 max_nodes=limit,
                                                 max_arcs=settings.max_sync_arcs), "network",
                 settings, compare_fields=True)


def compare_task_from_upload(filename: str, data: bytes, fields: dict[str, list[str]],
                             settings: Settings) -> FlowTask:
    plain: dict[str, Any] = single_values({k: v for k, v in fields.items() if k != "solvers"})
    names = [name.strip() for name in ",".join(fields.get("solvers", [])).split(",")
             if name.strip()]
    if names:  # a blank field (a form left empty) is the default, as when it is left out
        plain["solvers"] = names
    options = validate_fields(FlowCompareOptionsIn, plain)
    return _task(options, list(options.solvers),
                 lambda limit: parse_network_bytes(data, filename,
                                                  max_bytes=settings.max_decompressed_bytes,
                                                  max_nodes=limit,
                                                 max_arcs=settings.max_sync_arcs),
                 "file", settings, compare_fields=True)


async def _read_task(request: Request, settings: Settings,
                     from_json: Callable[[bytes, Settings], FlowTask],
                     from_upload: Callable[[str, bytes, dict[str, list[str]], Settings],
                                           FlowTask]) -> FlowTask:
    if body_format(request, NETWORK_BODY) is BodyFormat.JSON:
        raw = await request.body()
        return await run_in_threadpool(from_json, raw, settings)
    upload = await read_upload(request, NETWORK_BODY)
    return await run_in_threadpool(from_upload, upload.filename, upload.data, upload.fields,
                                   settings)


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
    task = await _read_task(request, settings, solve_task_from_json, solve_task_from_upload)
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
    task = await _read_task(request, settings, compare_task_from_json, compare_task_from_upload)
    device = torch_device_name(settings.device)
    return await run_while_connected(request,
                                     lambda cancel: _compare_response(task, cancel, device))
