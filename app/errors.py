"""One error shape for the whole API: RFC 9457 problem details.

Every failure — a malformed instance, an unknown solver, an oversized body, an unknown route, a
bug — reaches the client as ``application/problem+json`` with ``type``, ``title``, ``status``,
``detail``, ``instance`` (the request path) and, where one part of the request is at fault,
``field`` (e.g. ``instance.coords[3]``, ``file``, ``time_limit``). Request validation errors also
list every problem in ``errors``. Clients therefore need one parser and can point a user at the
exact field to fix.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import Match

from jobs.validation import field_problems
from solvers.errors import (
    BudgetTooSmallError,
    CheckFailedError,
    CosolveError,
    InstanceError,
    NoSolutionError,
)

PROBLEM_JSON = "application/problem+json"
#: Problem types are URNs: stable identifiers clients can switch on, never dereferenced.
TYPE_PREFIX = "urn:cosolve:problem:"

logger = logging.getLogger("cosolve.api")


class FieldProblem(BaseModel):
    """One invalid part of a request."""

    field: str = Field(description="Dotted path of the field at fault, e.g. instance.coords[3].")
    message: str


class ProblemDetails(BaseModel):
    """RFC 9457 problem details, the body of every error response."""

    type: str = Field(description="URI identifying the kind of problem (about:blank if generic).")
    title: str = Field(description="Short summary of the kind of problem.")
    status: int = Field(description="The HTTP status code.")
    detail: str = Field(description="What went wrong in this request and what to do about it.")
    instance: str = Field(description="The request path.")
    field: str | None = Field(default=None, description="The part of the request at fault.")
    errors: list[FieldProblem] | None = Field(
        default=None, description="Every invalid field (validation errors only)."
    )
    # the extras some kinds carry, documented so that a typed client reaches them (a
    # session's assignments in its 422)
    nodes: int | None = Field(default=None, description="413: the instance's node count.")
    arcs: int | None = Field(default=None, description="413: the network's arc count.")
    tasks: int | None = Field(default=None, description="413: the workflows' task count.")
    files: int | None = Field(default=None, description="413: the batch's file count.")
    active: int | None = Field(default=None, description="429: jobs queued or running.")
    limit: float | None = Field(
        default=None, description="413/429: the limit that was exceeded (in the unit of the "
        "count beside it; bytes for a body, seconds beside estimated_seconds).")
    estimated_seconds: float | None = Field(
        default=None, description="413: how long the simulation or session request would run.")
    needed: float | None = Field(
        default=None, description="422 time-limit-too-small: the least time limit, seconds.")
    line: int | None = Field(default=None, description="422: the file's line at fault.")
    state: str | None = Field(default=None, description="409: the job's state.")
    applied: int | None = Field(
        default=None, description="Session events 4xx: how many events of the request were "
        "applied before the refused one (events[applied]).")
    workflow_ids: list[str] | None = Field(
        default=None, description="Session events 4xx: ids of the workflows those applied "
        "events created.")
    assignments: list[dict[str, Any]] | None = Field(
        default=None, description="Session events 4xx: the assignments those applied events "
        "produced (as in a 200's assignments), to carry out.")
    violations: list[str] | None = Field(
        default=None, description="500 check-failed: what the independent checker found wrong "
        "in an answer that was therefore not returned.")
    warming: list[str] | None = Field(
        default=None, description="503 warming-up: the solvers (and policy models) still to "
        "warm up, the one warming first.")
    warming_seconds: float | None = Field(
        default=None, description="503 warming-up: seconds since the warm-up began.")


class ApiError(Exception):
    """An error the HTTP layer raises on purpose, rendered as problem details."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        kind: str | None = None,
        title: str | None = None,
        field: str | None = None,
        errors: Sequence[FieldProblem] | None = None,
        headers: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.kind = kind
        self.title = title or HTTPStatus(status).phrase
        self.field = field
        self.errors = list(errors) if errors else None
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})


def problem_body(
    *,
    status: int,
    detail: str,
    path: str,
    kind: str | None = None,
    title: str | None = None,
    field: str | None = None,
    errors: Sequence[FieldProblem] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON object of a problem; also used by the ASGI middleware, which has no Request."""
    body: dict[str, Any] = {
        "type": TYPE_PREFIX + kind if kind else "about:blank",
        "title": title or HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "instance": path,
    }
    if field is not None:
        body["field"] = field
    if errors:
        body["errors"] = [e.model_dump() for e in errors]
    if extra:
        body.update(extra)
    return body


def problem_bytes(**kwargs: Any) -> bytes:
    """``problem_body`` serialized, for senders that write raw ASGI messages."""
    return json.dumps(problem_body(**kwargs), allow_nan=False).encode()


def problem_response(request: Request, error: ApiError) -> JSONResponse:
    return JSONResponse(
        problem_body(
            status=error.status,
            detail=error.detail,
            path=request.url.path,
            kind=error.kind,
            title=error.title,
            field=error.field,
            errors=error.errors,
            extra=error.extra,
        ),
        status_code=error.status,
        headers=error.headers,
        media_type=PROBLEM_JSON,
    )


# -- translating errors ------------------------------------------------------------------
def validation_problem(errors: Sequence[Mapping[str, Any]], prefix: str | None = None) -> ApiError:
    """A 422 listing the pydantic errors (at most ``LISTED_ERRORS``, the rest counted);
    ``field`` is the first one's path."""
    problems, detail = field_problems(errors, prefix)
    listed = [FieldProblem(field=field, message=message) for field, message in problems]
    return ApiError(422, detail, kind="invalid-request", title="Invalid request",
                    field=listed[0].field, errors=listed)


def invalid_request(detail: str, field: str) -> ApiError:
    """A 422 for one invalid part of a request that the schema alone could not catch."""
    return ApiError(422, detail, kind="invalid-request", title="Invalid request", field=field)


def reject_unknown_query(request: Request) -> None:
    """An app-wide dependency: a query parameter the endpoint does not take is a 422 naming
    it, not silently ignored (a mistyped ``?fromat=sol`` served JSON, ``?limt=500`` the first
    50 jobs)."""
    if not request.query_params:
        return
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if dependant is None or not getattr(route, "include_in_schema", True):
        return  # the documentation pages (Swagger's OAuth redirect takes any parameters)
    known = _query_names(dependant)
    for name in request.query_params:
        if name not in known:
            takes = ", ".join(sorted(known)) or "no query parameters"
            raise invalid_request(f"unknown query parameter {name!r}; this endpoint takes "
                                  f"{takes}", field=name)


def _query_names(dependant: Any) -> set[str]:
    """The query parameters an endpoint and its dependencies declare."""
    names = {param.alias for param in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return names


def instance_problem(error: InstanceError, source: str) -> ApiError:
    """A domain ``InstanceError`` as a 422 whose field says where the instance came from.

    ``source`` is ``instance`` for a JSON body and ``file`` for an upload, so ``coords[3]``
    becomes ``instance.coords[3]`` or ``file.coords[3]``; a fault in the file as a whole stays
    ``file``.
    """
    if error.field == source:
        field = source
    elif error.field.startswith("["):
        field = source + error.field
    else:
        field = f"{source}.{error.field}"
    return ApiError(error.status, f"{field}: {error.message}", kind=error.kind,
                    title=error.title, field=field)


def refused_comparison(refusals: Sequence[CosolveError], detail: str, source: str) -> ApiError:
    """The problem for a comparison whose every solver refused the request, as a solve of one
    of them answers (routing and flow alike): the first refusal's status, kind and field (a
    solver's own limit names ``solvers``, the field a comparison has; a fault in the instance
    is named under ``source``, ``instance``/``network`` or ``file``), every solver's reason in
    ``detail``, and ``needed`` when each wants a longer time limit."""
    first = refusals[0]
    error = (instance_problem(first, source) if isinstance(first, InstanceError)
             else domain_problem(first))
    if error.field == "solver":
        error.field = "solvers"
    error.detail = detail
    needed = [r.needed for r in refusals if isinstance(r, BudgetTooSmallError)]
    if needed and len(needed) == len(refusals):
        error.extra["needed"] = max(needed)
    return error


def check_failed(detail: str, violations: list[str],
                 extra: Mapping[str, Any] | None = None) -> ApiError:
    """The 500 of an answer that failed its independent check (a bug of ours): its
    violations, and nothing of the answer."""
    return ApiError(500, f"{detail}. The answer was withheld; this is a bug in cosolve, "
                    "please report it.", kind="check-failed",
                    title="Answer failed its independent check",
                    extra={**(extra or {}), "violations": violations})


#: What the HTTP answer adds to a domain error's own words: where to look next.
_ADVICE = {
    "unknown-solver": ". GET /v1/solvers lists them.",
    "solver-unavailable": ". Choose another solver (GET /v1/solvers shows which are "
                          "available) or ask the operator to install what is missing.",
}


def domain_problem(error: CosolveError) -> ApiError:
    """A domain error as problem details: its own status, type, title, field and extras
    (``solvers.errors``), its words with the advice this API adds."""
    if isinstance(error, InstanceError):
        return instance_problem(error, "instance")
    if isinstance(error, CheckFailedError):
        # our bug, not the request's: logged, and never returned as if it were an answer
        logger.error("an answer failed its independent check: %s", error)
        return check_failed(str(error), error.violations)
    message = str(error) + _ADVICE.get(error.kind, "")
    if isinstance(error, NoSolutionError) and error.more_time_helps:
        if "more time" not in message:
            message += "; give it more time (a larger time_limit)"
        elif "(a larger time_limit)" not in message:
            message += " (a larger time_limit)"
    retry_after = getattr(error, "retry_after", None)  # a temporary refusal says when
    return ApiError(error.status, message, kind=error.kind, title=error.title,
                    field=error.field, extra=error.problem_extra(),
                    headers={"Retry-After": str(retry_after)} if retry_after else None)


# -- handlers ----------------------------------------------------------------------------
async def _api_error_handler(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return problem_response(request, exc)


async def _domain_error_handler(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, CosolveError)
    return problem_response(request, domain_problem(exc))


async def _validation_error_handler(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return problem_response(request, validation_problem(exc.errors()))


async def _http_error_handler(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    status = exc.status_code
    detail = str(exc.detail) if exc.detail else HTTPStatus(status).phrase
    if status == 404 and detail == HTTPStatus.NOT_FOUND.phrase:
        detail = f"No endpoint at {request.url.path}; the API is described at /docs."
    elif status == 405 and detail == HTTPStatus.METHOD_NOT_ALLOWED.phrase:
        headers = {k: v for k, v in (exc.headers or {}).items() if k.lower() != "allow"}
        allowed = _allowed_methods(request) or (exc.headers or {}).get("Allow", "")
        if allowed:
            headers["Allow"] = allowed
        detail = f"{request.method} is not allowed on {request.url.path}" + (
            f"; allowed: {allowed}" if allowed else ""
        )
        return problem_response(request, ApiError(status, detail, headers=headers))
    return problem_response(request, ApiError(status, detail, headers=exc.headers))


_METHOD_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _allowed_methods(request: Request) -> str:
    """Every method the request's path accepts, for a 405's Allow header: FastAPI makes a
    route per method, and Starlette's 405 named only the first route matching the path.
    Each method is tried against the routes' own matching (included routers nest theirs)."""
    routes = request.app.router.routes
    return ", ".join(
        method for method in _METHOD_ORDER
        if any(route.matches({**request.scope, "method": method})[0] == Match.FULL
               for route in routes))


async def _client_disconnect_handler(request: Request, exc: Exception) -> JSONResponse:
    """A client gone before its body arrived is its own doing: one line, not the two ERROR
    tracebacks it made (ours as an unhandled error, the server's as the exception left the
    app). The answer goes nowhere; it only ends the request."""
    logger.info("client disconnected before sending the whole body of %s %s",
                request.method, request.url.path)
    return problem_response(request, ApiError(
        400, "The client disconnected before sending the whole body.", field="body"))


async def _unexpected_error_handler(request: Request, exc: Exception) -> JSONResponse:
    logger.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return problem_response(
        request,
        ApiError(500, "The server failed to handle this request; the error was logged.",
                 kind="internal-error", title="Internal server error"),
    )


def install_error_handlers(app: FastAPI) -> None:
    """Route every kind of error through the one problem-details shape."""
    app.add_exception_handler(ApiError, _api_error_handler)
    app.add_exception_handler(CosolveError, _domain_error_handler)
    app.add_exception_handler(RequestValidationError, _validation_error_handler)
    app.add_exception_handler(StarletteHTTPException, _http_error_handler)
    app.add_exception_handler(ClientDisconnect, _client_disconnect_handler)
    app.add_exception_handler(Exception, _unexpected_error_handler)


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries documenting each status as problem details.

    ProblemDetails is added to the schema components by ``app.main``'s OpenAPI builder.
    """
    schema = {"$ref": "#/components/schemas/ProblemDetails"}
    return {
        status: {
            "description": HTTPStatus(status).phrase,
            "content": {PROBLEM_JSON: {"schema": schema}},
        }
        for status in statuses
    }


#: The header a created or accepted resource's answer carries, for the OpenAPI document.
LOCATION_HEADER = {"Location": {"description": "Where the new resource answers GET.",
                                "schema": {"type": "string"}}}
#: The header of a 429 for a full queue.
RETRY_AFTER_HEADER = {"Retry-After": {"description": "Seconds to wait before trying again.",
                                      "schema": {"type": "integer"}}}


def with_headers(responses: dict[int | str, dict[str, Any]], status: int,
                 headers: dict[str, Any], description: str | None = None
                 ) -> dict[int | str, dict[str, Any]]:
    """``responses`` with ``headers`` documented on ``status`` (FastAPI merges an entry for
    the route's own status code with its response model)."""
    entry = dict(responses.get(status, {}))
    entry["headers"] = {**entry.get("headers", {}), **headers}
    if description is not None or "description" not in entry:
        entry["description"] = description or HTTPStatus(status).phrase
    return {**responses, status: entry}
