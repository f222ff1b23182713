"""Turn a routing request — a JSON body or a multipart file upload — into checked domain input.

Both body formats end in the same task objects, so the endpoints have one code path after
intake. Checks run cheapest first (options, solver names, then the instance), every failure is
an ``ApiError`` naming the field at fault, and the parsing functions are synchronous so the
routes can run them off the event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

from fastapi import Request
from pydantic import BaseModel, ValidationError
from starlette.datastructures import UploadFile

from app.errors import ApiError, instance_problem, invalid_request, validation_problem
from app.schemas.routing import (
    CompareOptions,
    CVRPCompareRequest,
    CVRPSolveRequest,
    SolveOptions,
    TSPCompareRequest,
    TSPSolveRequest,
)
from app.settings import Settings
from solvers.base import get_spec
from solvers.errors import InstanceError, UnknownSolverError
from solvers.routing.io import instance_from_dict, parse_instance_bytes
from solvers.routing.problem import Instance

PROBLEMS: tuple[str, ...] = ("tsp", "cvrp")
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


@dataclass(frozen=True)
class SolveTask:
    instance: Instance
    solver: str
    time_limit: float
    seed: int


@dataclass(frozen=True)
class CompareTask:
    instance: Instance
    solvers: list[str]
    time_limit: float
    seed: int
    reference: float | None
    svg: bool


# -- reading the request -----------------------------------------------------------------
def body_format(request: Request) -> BodyFormat:
    """JSON or multipart, from the Content-Type; anything else is a 415."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type == "application/json" or (
        media_type.startswith("application/") and media_type.endswith("+json")
    ):
        return BodyFormat.JSON
    if media_type == "multipart/form-data":
        return BodyFormat.MULTIPART
    raise ApiError(
        415,
        f"Content-Type {media_type or '(none)'} is not accepted here. Send application/json "
        "(an instance object) or multipart/form-data (a 'file' part with a .tsp, .vrp or .json "
        "file, optionally .gz, and form fields for the options).",
        kind="unsupported-media-type",
        headers={"Accept-Post": "application/json, multipart/form-data"},
    )


async def read_upload(request: Request) -> Upload:
    """The file part and form fields of a multipart request (exactly one file, named ``file``)."""
    file: UploadFile | None = None
    fields: dict[str, list[str]] = {}
    async with request.form(max_files=1, max_fields=_MAX_FORM_FIELDS) as form:
        for name, value in form.multi_items():
            if isinstance(value, UploadFile):
                if name != "file":
                    raise invalid_request(
                        f"unexpected file part {name!r}; send the instance as the part named "
                        "'file'", field=name)
                file = value
            else:
                fields.setdefault(name, []).append(value)
        if file is None:
            hint = " (it was sent as a plain field, not a file)" if "file" in fields else ""
            raise invalid_request("a multipart request needs a 'file' part holding the "
                                  f"instance (.tsp, .vrp or .json, optionally .gz){hint}",
                                  field="file")
        fields.pop("file", None)
        if not file.filename:
            raise invalid_request("the 'file' part needs a filename; its extension says the "
                                  "format", field="file")
        data = await file.read()
    return Upload(filename=file.filename, data=data, fields=fields)


# -- building tasks ----------------------------------------------------------------------
def solve_task_from_json(raw: bytes, problem: str, settings: Settings) -> SolveTask:
    """A solve request posted as JSON."""
    model = TSPSolveRequest if problem == "tsp" else CVRPSolveRequest
    request = _validate_json(model, raw)
    time_limit = _time_limit(request.time_limit, settings)
    _check_solver(request.solver, problem, "solver")
    instance = _instance_from_json(request.instance, problem)
    _check_sync_size(instance, settings, "instance")
    return SolveTask(instance, request.solver, time_limit, request.seed)


def solve_task_from_upload(upload: Upload, problem: str, settings: Settings) -> SolveTask:
    """A solve request posted as a file plus form fields."""
    options = _validate_fields(SolveOptions, _single_values(upload.fields))
    time_limit = _time_limit(options.time_limit, settings)
    _check_solver(options.solver, problem, "solver")
    instance = _instance_from_upload(upload, problem, settings)
    _check_sync_size(instance, settings, "file")
    return SolveTask(instance, options.solver, time_limit, options.seed)


def compare_task_from_json(raw: bytes, problem: str, settings: Settings) -> CompareTask:
    """A compare request posted as JSON."""
    model = TSPCompareRequest if problem == "tsp" else CVRPCompareRequest
    request = _validate_json(model, raw)
    return _compare_task(request, problem, settings,
                         lambda: _instance_from_json(request.instance, problem), "instance")


def compare_task_from_upload(upload: Upload, problem: str, settings: Settings) -> CompareTask:
    """A compare request posted as a file; ``solvers`` is comma-separated (or repeated)."""
    fields: dict[str, Any] = _single_values(
        {k: v for k, v in upload.fields.items() if k != "solvers"}
    )
    if "solvers" in upload.fields:
        joined = ",".join(upload.fields["solvers"])
        fields["solvers"] = [name.strip() for name in joined.split(",") if name.strip()]
    options = _validate_fields(CompareOptions, fields)
    return _compare_task(options, problem, settings,
                         lambda: _instance_from_upload(upload, problem, settings), "file")


def _compare_task(options: CompareOptions, problem: str, settings: Settings,
                  load_instance: Callable[[], Instance], source: str) -> CompareTask:
    names = options.solvers
    if len(names) > settings.max_compare_solvers:
        raise invalid_request(f"{len(names)} solvers asked for; a comparison runs at most "
                              f"{settings.max_compare_solvers}", field="solvers")
    first_seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in first_seen:
            raise invalid_request(f"solver {name!r} is listed twice (solvers[{first_seen[name]}]"
                                  f" and solvers[{i}])", field=f"solvers[{i}]")
        first_seen[name] = i
        _check_solver(name, problem, f"solvers[{i}]")
    time_limit = _time_limit(options.time_limit, settings, runs=len(names))
    instance = load_instance()
    _check_sync_size(instance, settings, source)
    return CompareTask(instance, list(names), time_limit, options.seed, options.reference,
                       options.svg)


# -- checks ------------------------------------------------------------------------------
def _validate_json(model: type[ModelT], raw: bytes) -> ModelT:
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise validation_problem(exc.errors(include_url=False)) from None


def _validate_fields(model: type[ModelT], fields: Mapping[str, Any]) -> ModelT:
    try:
        return model.model_validate(dict(fields))
    except ValidationError as exc:
        raise validation_problem(exc.errors(include_url=False)) from None


def _single_values(fields: Mapping[str, list[str]]) -> dict[str, str]:
    """Form fields that must appear once."""
    out: dict[str, str] = {}
    for name, values in fields.items():
        if len(values) > 1:
            raise invalid_request(f"form field {name!r} was sent {len(values)} times; send it "
                                  "once", field=name)
        out[name] = values[0]
    return out


def _time_limit(requested: float | None, settings: Settings, runs: int = 1) -> float:
    """The per-solver time limit: the server default when omitted, and never more than the
    server lets one request run (``runs`` solvers run one after another)."""
    limit = settings.default_time_limit if requested is None else requested
    if limit * runs > settings.max_time_limit:
        if runs == 1:
            detail = (f"time_limit {limit:g} s is above this server's maximum of "
                      f"{settings.max_time_limit:g} s")
        else:
            detail = (f"{runs} solvers × {limit:g} s = {limit * runs:g} s is above the "
                      f"{settings.max_time_limit:g} s one request may run; lower time_limit")
        raise invalid_request(detail + "; for longer runs use the CLI (cosolve solve)",
                              field="time_limit")
    return limit


def _check_solver(name: str, problem: str, field: str) -> None:
    """Fail fast, before parsing the instance, on a solver that does not exist or does not
    solve this problem. Availability and size limits are left to the solve itself."""
    try:
        spec = get_spec(name)
    except UnknownSolverError as exc:
        raise ApiError(404, f"{exc}. GET /v1/solvers lists them.", kind="unknown-solver",
                       title="Unknown solver", field=field) from None
    if problem not in spec.problems:
        raise ApiError(422, f"solver {name!r} does not solve {problem}; it solves: "
                       f"{', '.join(spec.problems)}", kind="problem-mismatch",
                       title="Solver does not solve this problem", field=field)


def _instance_from_json(model: BaseModel, problem: str) -> Instance:
    obj = model.model_dump(exclude_none=True, exclude={"problem"})
    return _checked_instance(lambda: instance_from_dict({"problem": problem, **obj}), "instance")


def _instance_from_upload(upload: Upload, problem: str, settings: Settings) -> Instance:
    instance = _checked_instance(
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
    return instance


def _checked_instance(build: Callable[[], Instance], source: str) -> Instance:
    """Build an instance; every failure is a 422 naming the field under ``source``."""
    try:
        instance = build()
    except InstanceError as exc:
        raise instance_problem(exc, source) from None
    except (ValueError, TypeError, OverflowError, IndexError) as exc:
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
            "(POST /v1/jobs, coming soon) or solve it with the CLI (cosolve solve).",
            kind="instance-too-large", title="Instance too large for in-request solving",
            field=source, extra={"nodes": instance.n, "limit": settings.max_sync_nodes},
        )
