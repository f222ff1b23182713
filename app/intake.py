"""Turn a routing request — a JSON body or a multipart file upload — into checked domain input.

Both body formats end in the same task objects, so the endpoints have one code path after
intake. Checks run cheapest first (options, solver names, then the instance), every failure is
an ``ApiError`` naming the field at fault, and the parsing functions are synchronous so the
routes can run them off the event loop.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError
from starlette.datastructures import FormData, UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.errors import (
    ApiError,
    domain_problem,
    instance_problem,
    invalid_request,
    validation_problem,
)
from app.schemas.jobs import CVRPJobRequest, CVRPTWJobRequest, JobUpload, TSPJobRequest
from app.schemas.routing import (
    CompareOptions,
    CompareUploadOptions,
    CVRPCompareRequest,
    CVRPSolveRequest,
    CVRPTWCompareRequest,
    CVRPTWSolveRequest,
    SolveUploadOptions,
    TSPCompareRequest,
    TSPSolveRequest,
)
from app.settings import Settings
from jobs.store import safe_filename
from solvers.catalog import all_specs, get_solver, get_spec, specs_for
from solvers.errors import CosolveError, InstanceError, UnknownSolverError
from solvers.routing.io.documents import instance_from_dict, instance_to_dict, load_json
from solvers.routing.io.formats import parse_instance_bytes
from solvers.routing.io.references import reference_cost_bytes
from solvers.routing.problem import CVRPInstance, Instance

PROBLEMS: tuple[str, ...] = ("tsp", "cvrp", "cvrptw")
#: The JSON request model of each problem, per kind of request.
_SOLVE_REQUESTS: dict[str, type[TSPSolveRequest | CVRPSolveRequest | CVRPTWSolveRequest]] = {
    "tsp": TSPSolveRequest, "cvrp": CVRPSolveRequest, "cvrptw": CVRPTWSolveRequest}
_COMPARE_REQUESTS: dict[
    str, type[TSPCompareRequest | CVRPCompareRequest | CVRPTWCompareRequest]] = {
    "tsp": TSPCompareRequest, "cvrp": CVRPCompareRequest, "cvrptw": CVRPTWCompareRequest}
_JOB_REQUESTS: dict[str, type[TSPJobRequest | CVRPJobRequest | CVRPTWJobRequest]] = {
    "tsp": TSPJobRequest, "cvrp": CVRPJobRequest, "cvrptw": CVRPTWJobRequest}
#: Form fields an upload may carry besides the file; a generous cap on a hostile form.
_MAX_FORM_FIELDS = 16

ModelT = TypeVar("ModelT", bound=BaseModel)
logger = logging.getLogger("cosolve.api")


class BodyFormat(StrEnum):
    JSON = "json"
    MULTIPART = "multipart"


@dataclass(frozen=True)
class Upload:
    """A multipart request: the instance file and the other form fields (as sent)."""

    filename: str
    data: bytes
    fields: dict[str, list[str]]
    #: Further file parts an endpoint takes besides ``file`` (a compare's ``reference_file``),
    #: by part name: (filename, data).
    extras: dict[str, tuple[str, bytes]] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class SolveTask:
    instance: Instance
    solver: str
    time_limit: float
    seed: int
    max_solutions: int | None = None
    #: where the fleet cap came from, for an error about it: ``instance.max_vehicles`` in a
    #: JSON body, the ``max_vehicles`` form field, or the uploaded ``file``'s VEHICLES
    fleet_field: str = "max_vehicles"
    #: where the instance came from, for a fault the solver finds in it: ``instance`` (a JSON
    #: body) or ``file`` (an upload)
    source: str = "instance"


@dataclass(frozen=True)
class CompareTask:
    instance: Instance
    solvers: list[str]
    time_limit: float
    seed: int
    reference: float | None
    svg: bool
    #: where the fleet cap came from, as SolveTask.fleet_field
    fleet_field: str = "max_vehicles"
    #: where the instance came from, for a fault a solver finds in it: ``instance`` (a JSON
    #: body) or ``file`` (an upload; QA sweep: a comparison named ``instance.coords`` there)
    source: str = "instance"
    #: the name of the known solution the reference was checked and costed from, if any
    reference_file: str | None = None


# -- reading the request -----------------------------------------------------------------
#: What routing endpoints accept, for the 415 and missing-file messages.
INSTANCE_BODY = ("an instance object",
                 "the instance (.tsp, .vrp, .vrptw or .json, optionally .gz)")


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def _format_of(media_type: str) -> BodyFormat | None:
    if media_type == "application/json" or (
        media_type.startswith("application/") and media_type.endswith("+json")
    ):
        return BodyFormat.JSON
    if media_type == "multipart/form-data":
        return BodyFormat.MULTIPART
    return None


def _unsupported(media_type: str, send: str, accept: str) -> ApiError:
    return ApiError(415, f"Content-Type {media_type or '(none)'} is not accepted here. Send "
                    f"{send}.", kind="unsupported-media-type", field="content-type",
                    headers={"Accept-Post": accept})


def body_format(request: Request, accepts: tuple[str, str] = INSTANCE_BODY) -> BodyFormat:
    """JSON or multipart, from the Content-Type; anything else is a 415. ``accepts`` names
    the JSON object and the file the endpoint takes."""
    media_type = _media_type(request)
    found = _format_of(media_type)
    if found is None:
        raise _unsupported(media_type, f"application/json ({accepts[0]}) or multipart/form-data "
                           f"(a 'file' part holding {accepts[1]}, and form fields for the "
                           "options)", "application/json, multipart/form-data")
    return found


def require_format(request: Request, expected: BodyFormat, send: str) -> None:
    """A 415 unless the body is ``expected``, for endpoints that take only one of the two;
    ``send`` says what to send instead."""
    media_type = _media_type(request)
    if _format_of(media_type) is not expected:
        raise _unsupported(media_type, send, "application/json" if expected is BodyFormat.JSON
                           else "multipart/form-data")


@asynccontextmanager
async def form_parts(request: Request, max_files: int, max_fields: int,
                     file_field: str = "file", takes: str | None = None
                     ) -> AsyncIterator[FormData]:
    """The parsed multipart form, closed after use. Starlette's own refusals (too many files
    or fields, a malformed body) were bare 400s without a field; they are 422s naming the
    part, like every other invalid request."""
    try:
        form = await request.form(max_files=max_files, max_fields=max_fields)
    except StarletteHTTPException as exc:
        if exc.status_code != 400:
            raise
        detail = str(exc.detail)
        field = file_field if "files" in detail.lower() else "body"
        if field == "files":  # a batch's parts: the same 413 as too many archive members
            raise ApiError(413, f"more than {max_files} 'files' parts; a batch holds at most "
                           f"{max_files} files (COSOLVE_MAX_BATCH_FILES): split it",
                           kind="batch-too-large", title="Too many files", field="files",
                           extra={"limit": max_files}) from None
        parts = takes or f"{max_files} '{file_field}' part{'s' if max_files != 1 else ''}"
        raise invalid_request(f"{detail.rstrip('.')} (this endpoint takes at most {parts} "
                              f"and {max_fields} form fields)", field=field) from None
    try:
        yield form
    finally:
        await form.close()


async def read_upload(request: Request, accepts: tuple[str, str] = INSTANCE_BODY,
                      extra_files: tuple[str, ...] = ()) -> Upload:
    """The file part and form fields of a multipart request (exactly one file, named ``file``,
    plus at most one of each part named in ``extra_files``)."""
    file: UploadFile | None = None
    fields: dict[str, list[str]] = {}
    extras: dict[str, UploadFile] = {}
    takes = "1 'file' part" + "".join(f", 1 {e!r} part" for e in extra_files)
    async with form_parts(request, max_files=1 + len(extra_files),
                          max_fields=_MAX_FORM_FIELDS, takes=takes) as form:
        for name, value in form.multi_items():
            if isinstance(value, UploadFile):
                if name in extra_files and name not in extras:
                    extras[name] = value
                    continue
                if name == "file" and file is None:
                    file = value
                    continue
                if name == "file" or name in extra_files:  # one too many of a part we take
                    raise invalid_request(f"Too many files: this endpoint takes at most "
                                          f"{takes}", field=name)
                raise invalid_request(
                    f"unexpected file part {name!r}; send {accepts[1]} as the part named "
                    f"'file'" + "".join(f" (and '{e}')" for e in extra_files), field=name)
            else:
                fields.setdefault(name, []).append(value)
        if file is None:
            # (QA sweep: a body cut off before its closing boundary lands here too)
            hint = (" (it was sent as a plain field, not a file)" if "file" in fields
                    else " (none arrived: the part is missing, or the body was cut short)")
            raise invalid_request(f"a multipart request needs a 'file' part holding "
                                  f"{accepts[1]}{hint}", field="file")
        fields.pop("file", None)
        if not file.filename:
            raise invalid_request("the 'file' part needs a filename; its extension says the "
                                  "format", field="file")
        data = await file.read()
        extra_data = {name: (part.filename or name, await part.read())
                      for name, part in extras.items()}
    return Upload(filename=file.filename, data=data, fields=fields, extras=extra_data)


# -- building tasks ----------------------------------------------------------------------
def solve_task_from_json(raw: bytes, problem: str, settings: Settings) -> SolveTask:
    """A solve request posted as JSON."""
    request = validate_json(_SOLVE_REQUESTS[problem], raw)
    time_limit = request_time_limit(request.time_limit, settings)
    check_solver_name(request.solver, problem, "solver")
    _check_solution_budget(request.solver, request.max_solutions)
    instance = instance_from_json(request.instance, problem)
    _check_sync_size(instance, settings, "instance")
    return SolveTask(instance, request.solver, time_limit, request.seed, request.max_solutions,
                     "instance.max_vehicles")


def solve_task_from_upload(upload: Upload, problem: str, settings: Settings) -> SolveTask:
    """A solve request posted as a file plus form fields."""
    options = validate_fields(SolveUploadOptions, single_values(upload.fields))
    time_limit = request_time_limit(options.time_limit, settings)
    check_solver_name(options.solver, problem, "solver")
    _check_solution_budget(options.solver, options.max_solutions)
    instance = _instance_from_upload(upload, problem, settings, options.max_vehicles)
    _check_sync_size(instance, settings, "file")
    _check_reads_instance(options.solver, instance, "file")
    return SolveTask(instance, options.solver, time_limit, options.seed, options.max_solutions,
                     "max_vehicles" if options.max_vehicles is not None else "file", "file")


def compare_task_from_json(raw: bytes, problem: str, settings: Settings) -> CompareTask:
    """A compare request posted as JSON."""
    request = validate_json(_COMPARE_REQUESTS[problem], raw)
    return _compare_task(request, problem, settings,
                         lambda: instance_from_json(request.instance, problem), "instance",
                         "instance.max_vehicles")


def compare_task_from_upload(upload: Upload, problem: str, settings: Settings) -> CompareTask:
    """A compare request posted as a file; ``solvers`` is comma-separated (or repeated)."""
    fields: dict[str, Any] = single_values(
        {k: v for k, v in upload.fields.items() if k != "solvers"}
    )
    if "solvers" in upload.fields:
        joined = ",".join(upload.fields["solvers"])
        fields["solvers"] = [name.strip() for name in joined.split(",") if name.strip()]
    options = validate_fields(CompareUploadOptions, fields)
    known = upload.extras.get("reference_file")
    if known is not None and options.reference is not None:
        raise invalid_request("give reference or reference_file, not both",
                              field="reference_file")
    task = _compare_task(options, problem, settings,
                         lambda: _instance_from_upload(upload, problem, settings,
                                                       options.max_vehicles), "file",
                         "max_vehicles" if options.max_vehicles is not None else "file")
    if known is None:
        return task
    cost, name = _upload_reference(upload, task.instance, settings)
    return dataclasses.replace(task, reference=cost, reference_file=name)


def _compare_task(options: CompareOptions, problem: str, settings: Settings,
                  load_instance: Callable[[], Instance], source: str,
                  fleet_field: str) -> CompareTask:
    names = options.solvers
    check_solver_list(names, problem, settings)
    time_limit = request_time_limit(options.time_limit, settings, runs=len(names),
                                    cli="cosolve compare")
    instance = load_instance()
    _check_sync_size(instance, settings, source)
    return CompareTask(instance, list(names), time_limit, options.seed, options.reference,
                       options.svg, fleet_field, source)


# -- checks ------------------------------------------------------------------------------
def validate_json(model: type[ModelT], raw: bytes) -> ModelT:
    """A JSON body, strictly: a number written as text ("seed": "3") or an integer written as
    a float (3.0) is refused as the OpenAPI document's types say (an OpenAPI conformance check
    found options read leniently beside instance data that were not); form fields, which are
    all text, go through ``validate_fields``."""
    try:
        return model.model_validate_json(raw, strict=True)
    except ValidationError as exc:
        raise validation_problem(exc.errors(include_url=False)) from None


def validate_fields(model: type[ModelT], fields: Mapping[str, Any]) -> ModelT:
    try:
        return model.model_validate(dict(fields))
    except ValidationError as exc:
        raise validation_problem(exc.errors(include_url=False)) from None


def single_values(fields: Mapping[str, list[str]]) -> dict[str, str]:
    """Form fields that must appear once."""
    out: dict[str, str] = {}
    for name, values in fields.items():
        if len(values) > 1:
            raise invalid_request(f"form field {name!r} was sent {len(values)} times; send it "
                                  "once", field=name)
        out[name] = values[0]
    return out


def request_time_limit(requested: float | None, settings: Settings, runs: int = 1,
                       cli: str = "cosolve solve") -> float:
    """The per-solver time limit: the server default when omitted, and never more than the
    server lets one request run (``runs`` solvers run one after another)."""
    limit = settings.default_time_limit if requested is None else requested
    if limit * runs > settings.max_time_limit:
        if runs == 1:
            detail = (f"time_limit {limit:.15g} s is above this server's maximum of "
                      f"{settings.max_time_limit:g} s")
        else:
            detail = (f"{runs} solvers × {limit:.15g} s = {limit * runs:.15g} s is above the "
                      f"{settings.max_time_limit:g} s one request may run; lower time_limit")
        # a job only where the server lets jobs run longer than the request asked for (QA
        # sweep: with COSOLVE_MAX_JOB_TIME_LIMIT below the request's maximum it advised a job
        # "up to" less than the limit just refused)
        jobs = ("submit a job (POST /v1/jobs, up to "
                f"{settings.max_job_time_limit:g} s) or "
                if runs == 1 and "flow" not in cli and settings.max_job_time_limit >= limit
                else "")
        raise invalid_request(detail + f"; for longer runs {jobs}use the CLI ({cli})",
                              field="time_limit")
    return limit


def check_solver_list(names: list[str], problem: str, settings: Settings) -> None:
    """A comparison's solvers: not too many, none twice, each one solving ``problem``."""
    if len(names) > settings.max_compare_solvers:
        raise invalid_request(f"{len(names)} solvers asked for; a comparison runs at most "
                              f"{settings.max_compare_solvers}", field="solvers")
    first_seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in first_seen:
            raise invalid_request(f"solver {name!r} is listed twice (solvers[{first_seen[name]}]"
                                  f" and solvers[{i}])", field=f"solvers[{i}]")
        first_seen[name] = i
        check_solver_name(name, problem, f"solvers[{i}]")


def _check_solution_budget(solver: str, max_solutions: int | None) -> None:
    """A budget in solutions only for a solver that counts its solutions (after the name
    check, so the solver exists)."""
    if max_solutions is not None and not get_spec(solver).solution_budget:
        takes = [s.name for s in all_specs() if s.solution_budget]
        raise invalid_request(f"solver {solver!r} takes a time limit only; max_solutions is for "
                              f"{', '.join(takes)}", field="max_solutions")


def check_solver_name(name: str, problem: str, field: str) -> None:
    """Fail fast, before parsing the instance, on a solver that does not exist or does not
    solve this problem. Availability and size limits are left to the solve itself."""
    try:
        spec = get_spec(name)
    except UnknownSolverError:
        # the names that solve this problem, not the whole registry (QA: a TSP's 404 listed
        # the min-cost-flow solvers)
        known = ", ".join(s.name for s in specs_for(problem))
        raise ApiError(404, f"unknown solver {name!r}; the {problem} solvers: {known}. "
                       "GET /v1/solvers lists them.", kind="unknown-solver",
                       title="Unknown solver", field=field) from None
    if problem not in spec.problems:
        raise ApiError(422, f"solver {name!r} does not solve {problem}; it solves: "
                       f"{', '.join(spec.problems)}", kind="problem-mismatch",
                       title="Solver does not solve this problem", field=field)


def instance_from_json(model: BaseModel, problem: str) -> Instance:
    obj = model.model_dump(exclude_none=True, exclude={"problem"})
    return checked_instance(lambda: instance_from_dict({"problem": problem, **obj}), "instance")


def _instance_from_upload(upload: Upload, problem: str, settings: Settings,
                          max_vehicles: int | None = None) -> Instance:
    """The uploaded file's instance for this endpoint, with the ``max_vehicles`` form field
    (when sent) as its fleet cap."""
    instance = checked_instance(
        lambda: parse_instance_bytes(upload.data, upload.filename,
                                     max_bytes=settings.max_decompressed_bytes),
        "file",
    )
    if instance.problem != problem:
        raise ApiError(
            422,
            f"{upload.filename} holds a {instance.problem.upper()} instance, but this endpoint "
            f"solves {problem.upper()}; post it to /v1/routing/{instance.problem}/… instead",
            kind="problem-mismatch", title="Wrong problem for this endpoint", field="file",
        )
    return _with_upload_fleet(instance, max_vehicles)


def _with_upload_fleet(instance: Instance, max_vehicles: int | None) -> Instance:
    """An uploaded instance with the ``max_vehicles`` form field as its fleet cap."""
    if max_vehicles is None:
        return instance
    if not isinstance(instance, CVRPInstance):
        raise invalid_request("max_vehicles applies to CVRP and CVRPTW uploads; a TSP has one "
                              "vehicle", field="max_vehicles")
    try:
        return instance.with_fleet(max_vehicles)
    except InstanceError as exc:
        raise invalid_request(f"max_vehicles: {exc.message}", field="max_vehicles") from None


def checked_instance(build: Callable[[], Instance], source: str) -> Instance:
    """Build an instance; every failure is a 422 naming the field under ``source``."""
    try:
        instance = build()
    except InstanceError as exc:
        raise instance_problem(exc, source) from None
    except (ValueError, TypeError, OverflowError, IndexError, RecursionError) as exc:
        # The domain names the field for every error it expects; anything else is still bad
        # input (never a 500), but worth a log line so the domain can learn to name it.
        logger.warning("unclassified instance error from %s: %r", source, exc)
        raise instance_problem(InstanceError(source, f"cannot read the instance: {exc}"),
                               source) from None
    return instance


def _check_sync_size(instance: Instance, settings: Settings, source: str) -> None:
    if instance.n > settings.max_sync_nodes:
        raise ApiError(
            413,
            f"the instance has {instance.n} nodes; requests solve at most "
            f"{settings.max_sync_nodes} nodes while you wait. Submit it as a job "
            "(POST /v1/jobs: progress, cancel, the best solution so far) or solve it with the "
            "CLI (cosolve solve).",
            kind="instance-too-large", title="Instance too large for in-request solving",
            field=source, extra={"nodes": instance.n, "limit": settings.max_sync_nodes},
        )


# -- jobs ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class JobInput:
    """A checked job submission: what the store persists and the executor runs."""

    problem: str
    solver: str
    time_limit: float
    seed: int
    filename: str
    data: bytes
    nodes: int
    #: The instance's fleet cap, echoed in the job's status.
    max_vehicles: int | None = None
    #: The budget in solutions (polynet), echoed in the job's status.
    max_solutions: int | None = None
    #: The checked cost of a known solution uploaded with the file (a batch's NAME.sol or
    #: NAME.opt.tour), and the name it came as: a batch reports the gap to it.
    reference: float | None = None
    reference_file: str | None = None


def _job_time_limit(requested: float | None, settings: Settings) -> float:
    limit = settings.default_time_limit if requested is None else requested
    if limit > settings.max_job_time_limit:
        raise invalid_request(
            f"time_limit {limit:.15g} s is above this server's maximum for jobs of "
            f"{settings.max_job_time_limit:g} s (COSOLVE_MAX_JOB_TIME_LIMIT)",
            field="time_limit")
    return limit


def check_batch_options(solver: str, time_limit: float | None, settings: Settings,
                        max_solutions: int | None = None) -> None:
    """What is wrong for every file of a batch is the request's fault, not each file's: an
    unknown solver (404 on ``solver``), a time limit above the jobs' maximum (422 on
    ``time_limit``) or a budget in solutions for a solver that takes none (422 on
    ``max_solutions``)."""
    routing = [spec.name for spec in all_specs()
               if set(spec.problems) & set(PROBLEMS)]
    try:
        spec = get_spec(solver)
    except UnknownSolverError:
        # the routing solvers, not the whole registry (QA sweep: the flow solvers were listed)
        raise ApiError(404, f"unknown solver {solver!r}; the routing solvers: "
                       f"{', '.join(routing)}. GET /v1/solvers lists them.",
                       kind="unknown-solver", title="Unknown solver", field="solver") from None
    if spec.name not in routing:
        raise ApiError(422, f"solver {solver!r} does not solve routing problems (it solves: "
                       f"{', '.join(spec.problems)}); a batch takes TSP, CVRP and CVRPTW "
                       f"files, for: {', '.join(routing)}", kind="problem-mismatch",
                       title="Solver does not solve this problem", field="solver")
    _job_time_limit(time_limit, settings)
    _check_solution_budget(solver, max_solutions)


def _check_reads_instance(solver: str, instance: Instance, source: str) -> None:
    """A solver that reads coordinates, given a file with only a distance matrix: refused
    naming the file, not the ``instance`` of a JSON body the request did not have (QA sweep:
    an EXPLICIT TSPLIB upload to ils answered ``instance.coords``)."""
    try:
        get_solver(solver, problem=instance.problem, has_coordinates=instance.coords is not None)
    except InstanceError as exc:
        raise instance_problem(exc, source) from None
    except CosolveError as exc:
        raise domain_problem(exc) from None


def _check_job_solver(solver: str, instance: Instance, time_limit: float,
                      source: str = "instance") -> None:
    """Everything about the solver that can be known before running it: exists, solves this
    problem, available here, handles this size within this time limit, reads what the
    instance gives (coordinates or only a matrix; a fault there names ``source``)."""
    check_solver_name(solver, instance.problem, "solver")
    try:
        get_solver(solver, problem=instance.problem, nodes=instance.n, time_limit=time_limit,
                   has_coordinates=instance.coords is not None)
    except InstanceError as exc:
        raise instance_problem(exc, source) from None
    except CosolveError as exc:
        raise domain_problem(exc) from None


def job_from_json(raw: bytes, settings: Settings) -> JobInput:
    """A job posted as JSON: ``{"problem", "instance", "solver", "time_limit", "seed",
    "max_solutions"}``."""
    try:
        peek = load_json(raw, "the body", field="body")
    except InstanceError as exc:  # not JSON, nested too deeply, an integer too long to read
        message = exc.message if exc.field == "body" else f"{exc.field}: {exc.message}"
        raise invalid_request(message, field=exc.field) from None
    if not isinstance(peek, dict):
        # as every other JSON body says it (QA sweep: `null` or `[]` was "'problem' must be")
        raise invalid_request("body: Input should be an object", field="body")
    problem = peek.get("problem")
    if problem not in PROBLEMS:
        raise invalid_request("'problem' must be 'tsp', 'cvrp' or 'cvrptw'", field="problem")
    # strictly, as every other JSON body (QA sweep: "seed": "3" was a 202 here, a 422 on
    # /solve)
    request = validate_json(_JOB_REQUESTS[problem], raw)
    time_limit = _job_time_limit(request.time_limit, settings)
    check_solver_name(request.solver, problem, "solver")
    _check_solution_budget(request.solver, request.max_solutions)
    instance = instance_from_json(request.instance, problem)
    _check_job_solver(request.solver, instance, time_limit)
    data = json.dumps({"problem": problem,
                       **request.instance.model_dump(exclude_none=True, exclude={"problem"})})
    return JobInput(problem, request.solver, time_limit, request.seed, "instance.json",
                    data.encode(), instance.n, getattr(instance, "max_vehicles", None),
                    request.max_solutions)


def job_from_upload(upload: Upload, settings: Settings) -> JobInput:
    """A job uploaded as a file; the file says the problem."""
    options = validate_fields(JobUpload, {**single_values(upload.fields), "file": b""})
    time_limit = _job_time_limit(options.time_limit, settings)
    _check_upload_solver_before_parsing(options.solver, options.problem, options.max_solutions)
    instance = job_file_instance(upload.filename, upload.data, settings)
    if options.problem is not None and options.problem != instance.problem:
        raise invalid_request(f"{upload.filename} holds a {instance.problem.upper()} instance, "
                              f"not {options.problem.upper()}", field="problem")
    filename, data = safe_filename(upload.filename), upload.data
    if options.max_vehicles is not None:
        # the stored file is what the worker solves: the capped instance, as JSON
        instance = _with_upload_fleet(instance, options.max_vehicles)
        data = json.dumps(instance_to_dict(instance)).encode()
        filename = f"{filename.removesuffix('.gz')}.json"  # X-n101-k25.vrp.json
    _check_job_solver(options.solver, instance, time_limit, "file")
    _check_solution_budget(options.solver, options.max_solutions)
    reference, reference_file = _upload_reference(upload, instance, settings)
    return JobInput(instance.problem, options.solver, time_limit, options.seed,
                    filename, data, instance.n, getattr(instance, "max_vehicles", None),
                    options.max_solutions, reference, reference_file)


def _upload_reference(upload: Upload, instance: Instance,
                      settings: Settings) -> tuple[float | None, str | None]:
    """The cost of the known solution sent as the ``reference_file`` part, if any (CVRPLIB's
    NAME.sol, TSPLIB's NAME.opt.tour, LKH-3's tour), checked by the independent checker and
    costed in the instance's convention, with its name; a 422 naming ``reference_file`` when
    it is not a feasible solution of the instance (its fleet cap included)."""
    known = upload.extras.get("reference_file")
    if known is None:
        return None, None
    try:
        cost = reference_cost_bytes(known[1], known[0], instance,
                                    max_bytes=settings.max_decompressed_bytes)
    except InstanceError as exc:
        raise invalid_request(exc.message, field="reference_file") from None
    return cost, known[0]


def _check_upload_solver_before_parsing(solver: str, problem: str | None,
                                        max_solutions: int | None) -> None:
    """What an upload's form says about its solver, checked before the file is parsed (a
    100K-node file takes half a second), so that a bad budget is named first, as in a JSON
    job: the solver's name, when the form gives the problem, and a budget in solutions for a
    solver that takes none. An unknown name without the problem waits for the file, whose
    problem picks the solvers its 404 lists."""
    if problem is not None:
        check_solver_name(solver, problem, "solver")
    try:
        get_spec(solver)
    except UnknownSolverError:
        return
    _check_solution_budget(solver, max_solutions)


def job_file_instance(filename: str, data: bytes, settings: Settings) -> Instance:
    """Parse an uploaded instance file, every failure a 422 naming ``file``."""
    return checked_instance(
        lambda: parse_instance_bytes(data, filename, max_bytes=settings.max_decompressed_bytes),
        "file",
    )


