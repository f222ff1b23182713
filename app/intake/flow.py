"""Turn a min-cost-flow request (a JSON body with the network inline, or a multipart upload
of a DIMACS ``.min`` or ``.json`` network, optionally ``.gz``) into a checked task, cheapest
checks first: options, solver names, the time limit, then the network, whose nodes and arcs
are refused past the request's caps before they are read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from fastapi import Request
from pydantic import BaseModel
from pydantic_core import from_json
from starlette.concurrency import run_in_threadpool

from app.errors import ApiError, instance_problem
from app.intake.options import check_solver_list, check_solver_name, request_time_limit
from app.intake.uploads import (
    BodyFormat,
    body_format,
    read_upload,
    single_values,
    validate_fields,
    validate_json,
)
from app.schemas.flow import (
    FlowCompareOptionsIn,
    FlowCompareRequest,
    FlowOptionsIn,
    FlowSolveRequest,
)
from app.settings import Settings
from solvers.errors import InstanceError, InstanceTooLargeError
from solvers.flow.io import network_from_dict, parse_network_bytes
from solvers.flow.problem import FlowNetwork
from solvers.flow.solve import PROBLEM

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
    """The 413, naming the CLI command that does what was asked (``cosolve flow compare``
    for a comparison)."""
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


def arcs_past_the_limit(raw: bytes, limit: int) -> tuple[dict[str, Any], int] | None:
    """(the body without its network, the arc count) when a JSON body has more arcs than a
    request may solve; None otherwise, and for anything ``validate_json`` should word.

    Counted before pydantic builds and checks an object per arc (the 413 for 1,000,001 arcs
    would come after 6.6 s of that). Every arc names its "tail", so the word's count
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
    found = arcs_past_the_limit(raw, settings.max_sync_arcs)
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

    _task(options, names, refuse, "network", settings, compare_fields)  # raises the 413


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


async def read_task(request: Request, settings: Settings,
                     from_json: Callable[[bytes, Settings], FlowTask],
                     from_upload: Callable[[str, bytes, dict[str, list[str]], Settings],
                                           FlowTask]) -> FlowTask:
    if body_format(request, NETWORK_BODY) is BodyFormat.JSON:
        raw = await request.body()
        return await run_in_threadpool(from_json, raw, settings)
    upload = await read_upload(request, NETWORK_BODY)
    return await run_in_threadpool(from_upload, upload.filename, upload.data, upload.fields,
                                   settings)
