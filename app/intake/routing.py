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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from app.errors import (
    ApiError,
    domain_problem,
    instance_problem,
    invalid_request,
)
from app.intake.options import (
    check_solution_budget,
    check_solver_list,
    check_solver_name,
    request_time_limit,
)
from app.intake.uploads import Upload, single_values, validate_fields, validate_json
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
from jobs.batches import BatchSolvers, parse_batch_solvers
from jobs.service import JobInput
from jobs.store import safe_filename
from solvers.catalog import all_specs, get_solver, get_spec
from solvers.errors import CosolveError, InstanceError, UnknownSolverError
from solvers.routing.auto import AUTO, resolve
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
logger = logging.getLogger("cosolve.api")


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
    #: body) or ``file`` (an upload, where ``instance.coords`` would name nothing sent)
    source: str = "instance"
    #: the name of the known solution the reference was checked and costed from, if any
    reference_file: str | None = None


# -- building tasks ----------------------------------------------------------------------
def solve_task_from_json(raw: bytes, problem: str, settings: Settings) -> SolveTask:
    """A solve request posted as JSON."""
    request = validate_json(_SOLVE_REQUESTS[problem], raw)
    time_limit = request_time_limit(request.time_limit, settings)
    check_solver_name(request.solver, problem, "solver")
    check_solution_budget(request.solver, request.max_solutions)
    instance = instance_from_json(request.instance, problem)
    _check_sync_size(instance, settings, "instance")
    return SolveTask(instance, request.solver, time_limit, request.seed, request.max_solutions,
                     "instance.max_vehicles")


def solve_task_from_upload(upload: Upload, problem: str, settings: Settings) -> SolveTask:
    """A solve request posted as a file plus form fields."""
    options = validate_fields(SolveUploadOptions, single_values(upload.fields))
    time_limit = request_time_limit(options.time_limit, settings)
    check_solver_name(options.solver, problem, "solver")
    check_solution_budget(options.solver, options.max_solutions)
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
def _job_time_limit(requested: float | None, settings: Settings) -> float:
    limit = settings.default_time_limit if requested is None else requested
    if limit > settings.max_job_time_limit:
        raise invalid_request(
            f"time_limit {limit:.15g} s is above this server's maximum for jobs of "
            f"{settings.max_job_time_limit:g} s (COSOLVE_MAX_JOB_TIME_LIMIT)",
            field="time_limit")
    return limit


def check_batch_options(solver: str, time_limit: float | None, settings: Settings,
                        max_solutions: int | None = None) -> BatchSolvers:
    """What is wrong for every file of a batch is the request's fault, not each file's: an
    unknown solver (404 on ``solver``), a per-problem form that cannot be read (422), a time
    limit above the jobs' maximum (422 on ``time_limit``) or a budget in solutions for a
    solver that takes none (422 on ``max_solutions``). The solver of each problem kind:
    one name or ``auto`` for every file, or ``tsp=ils,cvrp=pyvrp,cvrptw=auto``."""
    try:
        solvers = parse_batch_solvers(solver)
    except UnknownSolverError as exc:
        _check_batch_solver(exc.name)  # the 404 naming the routing solvers
        raise
    except CosolveError as exc:
        raise domain_problem(exc) from None
    for name in solvers.names:
        if name != AUTO:
            _check_batch_solver(name)
        check_solution_budget(name, max_solutions)
    _job_time_limit(time_limit, settings)
    return solvers


def _check_batch_solver(solver: str) -> None:
    """A solver named for a batch exists and solves routing problems."""
    routing = [spec.name for spec in all_specs()
               if set(spec.problems) & set(PROBLEMS)]
    try:
        spec = get_spec(solver)
    except UnknownSolverError:
        # the routing solvers, not the whole registry with the flow solvers
        raise ApiError(404, f"unknown solver {solver!r}; the routing solvers: "
                       f"{', '.join(routing)}. GET /v1/solvers lists them.",
                       kind="unknown-solver", title="Unknown solver", field="solver") from None
    if spec.name not in routing:
        raise ApiError(422, f"solver {solver!r} does not solve routing problems (it solves: "
                       f"{', '.join(spec.problems)}); a batch takes TSP, CVRP and CVRPTW "
                       f"files, for: {', '.join(routing)}", kind="problem-mismatch",
                       title="Solver does not solve this problem", field="solver")


def _check_reads_instance(solver: str, instance: Instance, source: str) -> None:
    """A solver that reads coordinates, given a file with only a distance matrix: refused
    naming the file, not the ``instance`` of a JSON body the request did not have."""
    if solver == AUTO:  # it picks among the solvers this instance suits
        return
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
    instance gives (coordinates or only a matrix; a fault there names ``source``). For
    ``auto``: that one of its solvers can take the request."""
    check_solver_name(solver, instance.problem, "solver")
    try:
        solver = resolve(solver, instance, time_limit)
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
        # as every other JSON body says it, rather than "'problem' must be" for `null` or `[]`
        raise invalid_request("body: Input should be an object", field="body")
    problem = peek.get("problem")
    if problem not in PROBLEMS:
        raise invalid_request("'problem' must be 'tsp', 'cvrp' or 'cvrptw'", field="problem")
    # strictly, as every other JSON body: "seed": "3" is a 422 here as on /solve
    request = validate_json(_JOB_REQUESTS[problem], raw)
    time_limit = _job_time_limit(request.time_limit, settings)
    check_solver_name(request.solver, problem, "solver")
    check_solution_budget(request.solver, request.max_solutions)
    instance = instance_from_json(request.instance, problem)
    _check_job_solver(request.solver, instance, time_limit)
    data = json.dumps({"problem": problem,
                       **request.instance.model_dump(exclude_none=True, exclude={"problem"})})
    return JobInput(problem, request.solver, time_limit, request.seed, "instance.json",
                    data.encode(), instance.n, getattr(instance, "max_vehicles", None),
                    request.max_solutions)


def job_from_upload(upload: Upload, settings: Settings,
                    solvers: BatchSolvers | None = None) -> JobInput:
    """A job uploaded as a file; the file says the problem. A batch's file gets the solver
    ``solvers`` gives its problem kind (the batch checked the names)."""
    options = validate_fields(JobUpload, {**single_values(upload.fields), "file": b""})
    time_limit = _job_time_limit(options.time_limit, settings)
    if solvers is None:
        _check_upload_solver_before_parsing(options.solver, options.problem,
                                            options.max_solutions)
    instance = job_file_instance(upload.filename, upload.data, settings)
    if solvers is not None:
        solver = solvers.for_problem(instance.problem)
        if solver is None:
            raise invalid_request(solvers.missing(instance.problem), field="solver")
        options = options.model_copy(update={"solver": solver})
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
    check_solution_budget(options.solver, options.max_solutions)
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
    check_solution_budget(solver, max_solutions)


def job_file_instance(filename: str, data: bytes, settings: Settings) -> Instance:
    """Parse an uploaded instance file, every failure a 422 naming ``file``."""
    return checked_instance(
        lambda: parse_instance_bytes(data, filename, max_bytes=settings.max_decompressed_bytes),
        "file",
    )


