"""What ``cosolve.Client`` returns and raises: the server's JSON documents wrapped in light
dataclasses (the main fields typed, the whole document in ``.raw``), and the RFC 9457 problem
details of a failed request as typed exceptions.

The field names are the API's (app/schemas/), so the OpenAPI description at ``/docs`` documents
them too; a field the server adds later is in ``.raw`` before it is here.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from typing import Any

from solvers.routing.solution import Solution, format_number

#: The job states after which nothing changes (the server's FINAL_STATES).
FINAL_STATES = frozenset({"succeeded", "failed", "cancelled"})


# -- errors ------------------------------------------------------------------------------
class ApiError(Exception):
    """A request the server refused or failed, with its RFC 9457 problem details: ``status``
    (HTTP), ``title``, ``detail`` (what went wrong and what to do), ``field`` (the part of the
    request at fault, e.g. ``instance.coords[3]``, ``file``, ``time_limit``), ``type`` (a
    stable URN to switch on) and the whole body in ``raw``."""

    def __init__(self, status: int, title: str, detail: str, *, field: str | None = None,
                 type: str = "about:blank", raw: dict[str, Any] | None = None) -> None:
        super().__init__(f"{status} {title}: {detail}" + (f" (field: {field})" if field else ""))
        self.status = status
        self.title = title
        self.detail = detail
        self.field = field
        self.type = type
        self.raw: dict[str, Any] = raw if raw is not None else {}

    @property
    def errors(self) -> list[dict[str, Any]]:
        """Every invalid field of a validation error (``field`` and ``message`` each)."""
        return list(self.raw.get("errors") or [])


class InvalidRequestError(ApiError):
    """400 or 422: the request (an instance, a file, an option) is invalid; ``field`` names
    the part to fix."""


class AuthenticationError(ApiError):
    """401 or 403: no API key, or one the server does not accept."""


class NotFoundError(ApiError):
    """404: no such solver, job, batch or solution (jobs expire after a while)."""


class ConflictError(ApiError):
    """409: the resource is not in a state that allows it (a job not finished yet)."""


class PayloadTooLargeError(ApiError):
    """413: the body or the instance is above the server's limits (use a job, or split)."""


class RateLimitError(ApiError):
    """429: too many jobs queued or running; ``retry_after`` says when to try again."""

    @property
    def retry_after(self) -> float | None:
        value = self.raw.get("retry_after")
        return float(value) if isinstance(value, (int, float)) else None


class UnavailableError(ApiError):
    """503: a solver cannot run here (missing weights) or the service is warming up."""


class ServerUnreachableError(ConnectionError):
    """No answer from the server at all: not running, a wrong URL, the connection lost."""


_ERRORS: dict[int, type[ApiError]] = {
    400: InvalidRequestError, 422: InvalidRequestError, 401: AuthenticationError,
    403: AuthenticationError, 404: NotFoundError, 409: ConflictError,
    413: PayloadTooLargeError, 429: RateLimitError, 503: UnavailableError,
}


def api_error(status: int, body: Any, text: str, reason: str,
              retry_after: str | None = None) -> ApiError:
    """The typed exception for a failed response: its problem details when the body is one,
    otherwise (a proxy's HTML page) the status and the start of the text."""
    raw: dict[str, Any] = dict(body) if isinstance(body, dict) else {}
    if retry_after is not None:
        with contextlib.suppress(ValueError):  # an HTTP date instead of seconds
            raw.setdefault("retry_after", float(retry_after))
    detail = raw.get("detail")
    if not isinstance(detail, str):
        detail = " ".join(text.split())[:300] or reason or "no detail"
    cls = _ERRORS.get(status, ApiError)
    return cls(status, str(raw.get("title") or reason or "Error"), detail,
               field=raw.get("field"), type=str(raw.get("type") or "about:blank"), raw=raw)


# -- solvers -----------------------------------------------------------------------------
@dataclass
class SolverInfo:
    """One registered solver (``GET /v1/solvers``) and whether it can run on this server."""

    name: str
    family: str
    problems: list[str]
    kind: str
    description: str
    available: bool
    unavailable_reason: str | None
    max_nodes: dict[str, int]
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> SolverInfo:
        return cls(name=doc["name"], family=doc["family"], problems=list(doc["problems"]),
                   kind=doc["kind"], description=doc["description"],
                   available=bool(doc["available"]),
                   unavailable_reason=doc.get("unavailable_reason"),
                   max_nodes=dict(doc.get("max_nodes") or {}), raw=doc)


# -- solutions ---------------------------------------------------------------------------
@dataclass
class SolutionDocument:
    """A solution as the server sends it (a solve's answer, a job's solution): the cost
    recomputed and the plan checked by the server's independent checker. ``routes`` are
    0-based node indices (TSP: one closed tour; CVRP, CVRPTW: customers per route, the depot
    implicit); ``route_ids`` the same in the instance's own ids when it had ids."""

    problem: str
    instance: str
    solver: str
    cost: float | None
    distance: str
    feasible: bool
    violations: list[str]
    routes: list[list[int]]
    wall_time: float
    stats: dict[str, Any]
    route_ids: list[list[int]] | None
    nodes: int | None
    #: a job's solution: the best found before a cancel
    partial: bool
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> SolutionDocument:
        return cls(problem=doc["problem"], instance=doc["instance"], solver=doc["solver"],
                   cost=doc.get("cost"), distance=doc["distance"],
                   feasible=bool(doc["feasible"]), violations=list(doc.get("violations") or []),
                   routes=[list(r) for r in doc["routes"]], wall_time=float(doc["wall_time"]),
                   stats=dict(doc.get("stats") or {}), route_ids=doc.get("route_ids"),
                   nodes=doc.get("nodes"), partial=bool(doc.get("partial", False)), raw=doc)

    @property
    def tour(self) -> list[int]:
        if self.problem != "tsp":
            raise AttributeError("only a TSP solution has a tour")
        return self.routes[0]

    def to_solution(self) -> Solution:
        """The same plan as the library's ``Solution`` (its readable repr, and
        ``cosolve.draw(instance, solution)`` for the drawing)."""
        return Solution(problem=self.problem, instance_name=self.instance, routes=self.routes,
                        cost=math.nan if self.cost is None else float(self.cost),
                        distance=self.distance, feasible=self.feasible,
                        violations=list(self.violations), solver=self.solver,
                        wall_time=self.wall_time, stats=dict(self.stats))

    def __repr__(self) -> str:
        return repr(self.to_solution()).replace("<Solution", "<SolutionDocument", 1)


@dataclass
class CompareRow:
    """One solver's row of a comparison; ``error`` says why it has no solution."""

    solver: str
    cost: float | None
    gap_to_best: float | None
    gap_to_reference: float | None
    wall_time: float | None
    feasible: bool
    violations: list[str]
    error: str | None
    routes: list[list[int]] | None
    svg: str | None = field(repr=False)
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> CompareRow:
        return cls(solver=doc["solver"], cost=doc.get("cost"), gap_to_best=doc.get("gap_to_best"),
                   gap_to_reference=doc.get("gap_to_reference"), wall_time=doc.get("wall_time"),
                   feasible=bool(doc["feasible"]), violations=list(doc.get("violations") or []),
                   error=doc.get("error"), routes=doc.get("routes"), svg=doc.get("svg"), raw=doc)


@dataclass
class CompareResult:
    """Several solvers on one instance and budget (``POST /v1/routing/{problem}/compare``)."""

    problem: str
    instance: str
    nodes: int
    distance: str
    time_limit: float
    seed: int
    reference: float | None
    best_solver: str | None
    rows: list[CompareRow]
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> CompareResult:
        return cls(problem=doc["problem"], instance=doc["instance"], nodes=doc["nodes"],
                   distance=doc["distance"], time_limit=doc["time_limit"], seed=doc["seed"],
                   reference=doc.get("reference"), best_solver=doc.get("best_solver"),
                   rows=[CompareRow.from_json(r) for r in doc["rows"]], raw=doc)

    def row(self, solver: str) -> CompareRow:
        """The row of ``solver`` (KeyError if it was not compared)."""
        for row in self.rows:
            if row.solver == solver:
                return row
        raise KeyError(solver)

    def __str__(self) -> str:
        """A small table, best first as the server ranked them."""
        lines = [f"{self.problem.upper()} {self.instance} ({self.nodes} nodes), "
                 f"{self.time_limit:g} s each, best: {self.best_solver or 'none'}"]
        for r in self.rows:
            cost = "–" if r.cost is None else format_number(r.cost)
            gap = "" if r.gap_to_reference is None else f"  gap {r.gap_to_reference:.2f} %"
            note = f"  {r.error}" if r.error else ("" if r.feasible else "  infeasible")
            lines.append(f"  {r.solver:<20} {cost:>12}{gap}{note}")
        return "\n".join(lines)


# -- VROOM documents ------------------------------------------------------------------------
@dataclass
class VrpAnswer:
    """A VROOM document's answer (``POST /v1/routing/vrp/solve``, a ``vrp`` job's solution):
    VROOM's output document, whose ``summary``, ``routes`` and ``unassigned`` (each with its
    ``reason`` code) are kept as VROOM writes them, and the server's independent check."""

    solver: str
    cost: float | None
    feasible: bool
    violations: list[str]
    routes: list[dict[str, Any]]
    unassigned: list[dict[str, Any]]
    summary: dict[str, Any]
    geojson: dict[str, Any] | None = field(repr=False)
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> VrpAnswer:
        mine = doc.get("cosolve") or {}
        check = mine.get("check") or {}
        summary = dict(doc.get("summary") or {})
        return cls(solver=str(mine.get("solver", "")), cost=summary.get("cost"),
                   feasible=bool(check.get("feasible", False)),
                   violations=list(check.get("violations") or []),
                   routes=list(doc.get("routes") or []),
                   unassigned=list(doc.get("unassigned") or []), summary=summary,
                   geojson=doc.get("geojson"), raw=doc)


@dataclass
class VrpCompareResult:
    """Several solvers on one VROOM document at equal time (``/v1/routing/vrp/compare``);
    each row's ``solution`` is its ``VrpAnswer`` (None when it has no answer)."""

    time_limit: float
    seed: int
    tasks: int
    best_solver: str | None
    rows: list[dict[str, Any]]
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> VrpCompareResult:
        rows = []
        for row in doc.get("rows") or []:
            row = dict(row)
            if row.get("solution"):
                row["solution"] = VrpAnswer.from_json(row["solution"])
            rows.append(row)
        return cls(time_limit=doc["time_limit"], seed=doc["seed"], tasks=doc["tasks"],
                   best_solver=doc.get("best_solver"), rows=rows, raw=doc)

    def row(self, solver: str) -> dict[str, Any]:
        """The row of ``solver`` (KeyError if it was not compared)."""
        for row in self.rows:
            if row["solver"] == solver:
                return row
        raise KeyError(solver)


# -- jobs and batches ----------------------------------------------------------------------
@dataclass
class JobProgress:
    elapsed: float | None
    iterations: int | None
    best_cost: float | None
    message: str | None


@dataclass
class JobStatus:
    """A job's state and progress (``GET /v1/jobs/{id}``); ``partial`` marks the best solution
    so far kept after a cancel."""

    id: str
    state: str
    problem: str
    solver: str
    filename: str
    nodes: int
    time_limit: float
    seed: int
    progress: JobProgress
    cost: float | None
    feasible: bool | None
    partial: bool
    error: str | None
    reference: float | None
    gap_percent: float | None
    batch_id: str | None
    cancel_requested: bool
    #: seconds since the epoch (UTC); None until the job starts or ends
    created_at: float
    started_at: float | None
    finished_at: float | None
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> JobStatus:
        p = doc.get("progress") or {}
        return cls(id=doc["id"], state=doc["state"], problem=doc["problem"],
                   solver=doc["solver"], filename=doc["filename"], nodes=doc["nodes"],
                   time_limit=doc["time_limit"], seed=doc["seed"],
                   progress=JobProgress(elapsed=p.get("elapsed"), iterations=p.get("iterations"),
                                        best_cost=p.get("best_cost"), message=p.get("message")),
                   cost=doc.get("cost"), feasible=doc.get("feasible"),
                   partial=bool(doc.get("partial", False)), error=doc.get("error"),
                   reference=doc.get("reference"), gap_percent=doc.get("gap_percent"),
                   batch_id=doc.get("batch_id"),
                   cancel_requested=bool(doc.get("cancel_requested", False)),
                   created_at=doc["created_at"], started_at=doc.get("started_at"),
                   finished_at=doc.get("finished_at"), raw=doc)

    @property
    def final(self) -> bool:
        """Succeeded, failed or cancelled: nothing changes after."""
        return self.state in FINAL_STATES


@dataclass
class JobEvent:
    """One server-sent event of a job: ``progress`` and ``end`` carry the job's status
    (``end`` with ``status`` None when the job expired meanwhile); ``shutdown`` (the server
    is stopping; the job resumes when it restarts) carries a message in ``data``."""

    event: str
    status: JobStatus | None
    data: dict[str, Any] = field(repr=False)
    id: str | None = None


@dataclass
class BatchFileResult:
    """One file of a batch: its job's outcome (the gap when a known solution came with it)."""

    filename: str
    job_id: str
    state: str
    nodes: int
    cost: float | None
    feasible: bool | None
    wall_time: float | None
    error: str | None
    reference: float | None
    gap_percent: float | None
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> BatchFileResult:
        return cls(filename=doc["filename"], job_id=doc["job_id"], state=doc["state"],
                   nodes=doc["nodes"], cost=doc.get("cost"), feasible=doc.get("feasible"),
                   wall_time=doc.get("wall_time"), error=doc.get("error"),
                   reference=doc.get("reference"), gap_percent=doc.get("gap_percent"), raw=doc)


@dataclass
class BatchStatus:
    """A batch's per-file results and summary (``GET /v1/batches/{id}``); ``rejected`` lists
    the files refused at submission with the reason."""

    id: str
    solver: str
    time_limit: float
    done: bool
    summary: dict[str, Any]
    results: list[BatchFileResult]
    rejected: list[dict[str, Any]]
    raw: dict[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> BatchStatus:
        return cls(id=doc["id"], solver=doc["solver"], time_limit=doc["time_limit"],
                   done=bool(doc["done"]), summary=dict(doc["summary"]),
                   results=[BatchFileResult.from_json(r) for r in doc["results"]],
                   rejected=list(doc.get("rejected") or []), raw=doc)
