"""Turn a VROOM document — a request body, a job's ``instance`` or an uploaded .json — into a
checked task, every failure an ``ApiError`` naming the field at fault.

The body of ``/v1/routing/vrp/solve`` is VROOM's document itself (the options travel as query
parameters), so a fault in it is named by VROOM's own path (``jobs[3].location_index``); in a
job's JSON it sits under ``instance.`` and in an upload under ``file.``, as for the other
routing problems. Checks run cheapest first: options, solver names, then the document.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from app.errors import ApiError, domain_problem, instance_problem, invalid_request
from app.intake.options import request_time_limit
from app.intake.uploads import Upload, single_values, validate_fields, validate_json
from app.schemas.jobs import JobUpload
from app.schemas.vrp import VrpJobRequest
from app.settings import Settings
from jobs.batches import BatchSolvers, parse_batch_solvers
from jobs.service import JobInput
from jobs.store import safe_filename
from jobs.vrp import VRP_PROBLEM, check_solver, parse, read_document, vroom_file
from solvers.catalog import all_specs
from solvers.errors import CosolveError, InstanceError, UnknownSolverError
from solvers.routing.vrp.model import VrpProblem
from solvers.routing.vrp.solve import VRP_SOLVERS

logger = logging.getLogger("cosolve.api")


@dataclass(frozen=True)
class VrpTask:
    """A checked solve or comparison of one VROOM document."""

    problem: VrpProblem
    solvers: list[str]
    time_limit: float
    seed: int
    geojson: bool = False


# -- solvers ---------------------------------------------------------------------------------
def _solver_404(name: str, field: str) -> ApiError:
    return ApiError(404, f"unknown solver {name!r}; the solvers of VROOM documents: "
                    f"{', '.join(VRP_SOLVERS)}. GET /v1/solvers lists them.",
                    kind="unknown-solver", title="Unknown solver", field=field)


def check_vrp_solver(name: str, field: str = "solver") -> None:
    try:
        check_solver(name, field)
    except UnknownSolverError:
        raise _solver_404(name, field) from None


def solver_list(text: str, settings: Settings) -> list[str]:
    """``solvers=vroom,ortools``: each a VRP solver, none twice, at most the server's
    number; empty means every VRP solver."""
    names = [n.strip() for n in text.split(",") if n.strip()] if text.strip() else []
    names = names or list(VRP_SOLVERS)
    if len(names) > settings.max_compare_solvers:
        raise invalid_request(f"{len(names)} solvers asked for; a comparison runs at most "
                              f"{settings.max_compare_solvers}", field="solvers")
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise invalid_request(f"solver {name!r} is listed twice (solvers[{seen[name]}] and "
                                  f"solvers[{i}])", field=f"solvers[{i}]")
        seen[name] = i
        check_vrp_solver(name, f"solvers[{i}]")
    return names


# -- documents -----------------------------------------------------------------------------
def _named(error: InstanceError, source: str | None) -> ApiError:
    """A parser's fault as a 422: VROOM's own path for a body that is the document, under
    ``source`` (``instance``, ``file``) where the document sits inside the request."""
    if source is not None:
        return instance_problem(error, source)
    return ApiError(error.status, f"{error.field}: {error.message}", kind=error.kind,
                    title=error.title, field=error.field)


def checked_problem(doc: dict[str, Any], source: str | None,
                    settings: Settings) -> VrpProblem:
    """The model of ``doc``; every fault a 422 naming its field."""
    try:
        return parse(doc, settings.vrp_speeds_kmh)
    except InstanceError as exc:
        raise _named(exc, source) from None
    except (ValueError, TypeError, OverflowError, IndexError, KeyError,
            RecursionError) as exc:
        # the parser names every fault it expects; anything else is still bad input, and
        # worth a log line so the parser can learn to name it
        logger.warning("unclassified VROOM document error: %r", exc)
        raise _named(InstanceError(source or "body", f"cannot read the document: {exc}"),
                     source) from None


def body_document(raw: bytes) -> dict[str, Any]:
    """The posted VROOM document (a JSON object), a 422 naming ``body`` otherwise."""
    try:
        return read_document(raw, "the body", field="body")
    except InstanceError as exc:
        message = exc.message if exc.field == "body" else f"{exc.field}: {exc.message}"
        raise invalid_request(message, field=exc.field) from None


def _check_sync_size(problem: VrpProblem, settings: Settings, source: str) -> None:
    if problem.task_count > settings.max_sync_nodes:
        raise ApiError(
            413, f"the document has {problem.task_count} tasks; requests solve at most "
            f"{settings.max_sync_nodes} while you wait (COSOLVE_MAX_SYNC_NODES). Submit it "
            "as a job (POST /v1/jobs with problem vrp) or solve it with the CLI "
            "(cosolve solve FILE.json).", kind="instance-too-large",
            title="Instance too large for in-request solving", field=source,
            extra={"nodes": problem.task_count, "limit": settings.max_sync_nodes})


def solve_task(raw: bytes, solver: str, time_limit: float | None, seed: int, geojson: bool,
               settings: Settings) -> VrpTask:
    limit = request_time_limit(time_limit, settings)
    check_vrp_solver(solver)
    problem = checked_problem(body_document(raw), None, settings)
    _check_sync_size(problem, settings, "body")
    if geojson and problem.locations is None:
        raise invalid_request("geometry=geojson draws the routes from coordinates, and this "
                              "document gives only matrices (no location, start or end)",
                              field="geometry")
    return VrpTask(problem, [solver], limit, seed, geojson)


def compare_task(raw: bytes, solvers: str, time_limit: float | None, seed: int,
                 settings: Settings) -> VrpTask:
    names = solver_list(solvers, settings)
    limit = request_time_limit(time_limit, settings, runs=len(names), cli="cosolve compare")
    problem = checked_problem(body_document(raw), None, settings)
    _check_sync_size(problem, settings, "body")
    return VrpTask(problem, names, limit, seed)


# -- jobs ------------------------------------------------------------------------------------
def _job_time_limit(requested: float | None, settings: Settings) -> float:
    limit = settings.default_time_limit if requested is None else requested
    if limit > settings.max_job_time_limit:
        raise invalid_request(
            f"time_limit {limit:.15g} s is above this server's maximum for jobs of "
            f"{settings.max_job_time_limit:g} s (COSOLVE_MAX_JOB_TIME_LIMIT)",
            field="time_limit")
    return limit


def vrp_job_from_json(raw: bytes, settings: Settings) -> JobInput:
    """``{"problem": "vrp", "instance": <VROOM document>, "solver", "time_limit", "seed"}``."""
    request = validate_json(VrpJobRequest, raw)
    time_limit = _job_time_limit(request.time_limit, settings)
    check_vrp_solver(request.solver)
    problem = checked_problem(request.instance, "instance", settings)
    data = json.dumps(request.instance).encode()
    return JobInput(VRP_PROBLEM, request.solver, time_limit, request.seed, "problem.json",
                    data, problem.task_count)


def vrp_job_from_upload(upload: Upload, doc: dict[str, Any], settings: Settings,
                        solver: str | None = None) -> JobInput:
    """An uploaded .json that holds a VROOM document (``doc``, read from it); a batch gives
    its ``solver``. The form fields are the routing jobs' own."""
    options = validate_fields(JobUpload, {**single_values(upload.fields), "file": b""})
    time_limit = _job_time_limit(options.time_limit, settings)
    name = solver or options.solver
    check_vrp_solver(name)
    if options.problem is not None:
        raise invalid_request(f"{upload.filename} holds a VROOM document (problem vrp), not "
                              f"{options.problem.upper()}", field="problem")
    if options.max_vehicles is not None or options.max_solutions is not None:
        field = "max_vehicles" if options.max_vehicles is not None else "max_solutions"
        raise invalid_request(f"{field} is not taken by a VROOM document (its vehicles are "
                              "its fleet)", field=field)
    problem = checked_problem(doc, "file", settings)
    return JobInput(VRP_PROBLEM, name, time_limit, options.seed,
                    safe_filename(upload.filename), upload.data, problem.task_count)


def vrp_batch_solvers(solver: str, time_limit: float | None,
                      settings: Settings) -> BatchSolvers | None:
    """A batch whose one solver takes VROOM documents only (``vroom``): its options checked
    here, since the routing batch's checks know no such solver; None for any other solver
    (the routing checks apply, and its VROOM files get it when it takes them)."""
    name = solver.strip()
    if name not in VRP_SOLVERS or name in {spec.name for spec in all_specs()}:
        return None
    _job_time_limit(time_limit, settings)
    return parse_batch_solvers(name)


def vrp_batch_job(upload: Upload, settings: Settings,
                  solvers: BatchSolvers) -> JobInput | None:
    """A batch's file that holds a VROOM document, as a ``vrp`` job with the batch's
    solver; None for any other file."""
    doc = vroom_file(upload.filename, upload.data, settings.max_decompressed_bytes)
    if doc is None:
        return None
    if solvers.default is None:
        raise invalid_request(f"{upload.filename} is a VROOM document, and the batch's solver "
                              f"({solvers.text}) names one per problem kind; VROOM documents "
                              "take one solver for the whole batch (e.g. solver=ortools)",
                              field="solver")
    return vrp_job_from_upload(upload, doc, settings, solvers.default)


def json_problem(raw: bytes) -> bool:
    """Whether a job's JSON body says ``"problem": "vrp"`` (a cheap look first: most bodies
    are routing instances that never mention it)."""
    if b'"vrp"' not in raw:
        return False
    try:
        peek = json.loads(raw)
    except (ValueError, RecursionError):
        return False
    return isinstance(peek, dict) and peek.get("problem") == VRP_PROBLEM


# -- the solver catalogue ------------------------------------------------------------------
def vrp_support(name: str) -> list[str] | None:
    """The parts of the model a solver takes, or None when it takes no VROOM documents."""
    entry = VRP_SOLVERS.get(name)
    return None if entry is None else sorted(entry.features)


def vrp_only_solvers() -> list[tuple[str, str, list[str]]]:
    """(name, description, features) of the VRP solvers that are not in the routing
    catalogue (vroom)."""
    known = {spec.name for spec in all_specs()}
    return [(name, entry.description, sorted(entry.features))
            for name, entry in VRP_SOLVERS.items() if name not in known]


def domain_refusal(exc: CosolveError) -> ApiError:
    """A domain error of a VROOM solve as problem details; a fault in the document is named
    by VROOM's path."""
    if isinstance(exc, InstanceError):
        return _named(exc, None)
    return domain_problem(exc)
