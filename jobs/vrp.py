"""VROOM documents wherever they are solved: told apart from the other instance files, read
within the server's limits, compared solver by solver at equal time, and solved as a job.

The HTTP API, the CLI and a job's worker read them here, so a document is recognised, parsed
and compared the same way whichever door it came in by; the model, the solvers and the
independent checker are ``solvers.routing.vrp``'s.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from jobs.settings import Settings
from solvers.contract import Budget, ProgressCallback, ProgressEvent
from solvers.errors import (
    BudgetTooSmallError,
    CheckFailedError,
    CosolveError,
    InstanceError,
    InstanceTooLargeError,
    NoSolutionError,
    ProblemMismatchError,
    SolverUnavailableError,
    UnknownSolverError,
)
from solvers.routing.io.documents import load_json
from solvers.routing.io.formats import DEFAULT_MAX_TEXT_BYTES, decode_bytes
from solvers.routing.vrp.model import VrpProblem
from solvers.routing.vrp.parse import DEFAULT_SPEEDS_KMH, ParseParams, parse_document
from solvers.routing.vrp.solve import VRP_SOLVERS, VrpResult, solve_vrp

#: The job kind (``JobRecord.problem``) of a VROOM document.
VRP_PROBLEM = "vrp"
#: The key that makes a JSON object a VROOM document rather than one of cosolve's TSP/CVRP
#: instances (whose JSON has ``coords``/``matrix`` and never ``vehicles``).
VROOM_KEY = "vehicles"
#: Errors that are the request's fault, not the solver's: a comparison whose every row has
#: one is refused as bad input rather than answered with failed rows.
REFUSALS = (BudgetTooSmallError, InstanceTooLargeError, ProblemMismatchError, InstanceError,
            UnknownSolverError, SolverUnavailableError)


def is_vroom_document(doc: Any) -> bool:
    """A JSON object with a ``vehicles`` key is a VROOM document."""
    return isinstance(doc, dict) and VROOM_KEY in doc


def is_json_name(filename: str) -> bool:
    """``.json`` or ``.json.gz``: the only files that may hold a VROOM document."""
    lower = filename.lower()
    return lower.endswith(".json") or lower.endswith(".json.gz")


def read_document(data: bytes, filename: str, field: str = "file",
                  max_bytes: int = DEFAULT_MAX_TEXT_BYTES) -> dict[str, Any]:
    """The JSON object of a file or a body (gzipped or not); every failure an
    ``InstanceError`` naming ``field`` (or the place of an unreadable number)."""
    text = decode_bytes(data, filename, max_bytes)
    doc = load_json(text, filename, field=field)
    if not isinstance(doc, dict):
        raise InstanceError(field, f"{filename} must hold a JSON object (a VROOM document "
                            f"with jobs, shipments and vehicles), not {type(doc).__name__}")
    return doc


def vroom_file(filename: str, data: bytes,
               max_bytes: int = DEFAULT_MAX_TEXT_BYTES) -> dict[str, Any] | None:
    """The VROOM document a .json file holds, or None when it holds anything else (one of
    cosolve's own instances, or text that is no JSON: the other readers name the fault)."""
    if not is_json_name(filename):
        return None
    try:
        doc = read_document(data, filename, "file", max_bytes)
    except InstanceError:
        return None
    return doc if is_vroom_document(doc) else None


def configured_speeds() -> dict[str, float]:
    """``COSOLVE_VRP_SPEEDS_KMH`` (the parser's defaults where the environment does not
    read: the server and ``cosolve serve`` refuse such a setting at start)."""
    try:
        return dict(Settings().vrp_speeds_kmh)
    except ValidationError:
        return dict(DEFAULT_SPEEDS_KMH)


def parse(doc: dict[str, Any], speeds_kmh: Mapping[str, float] | None = None) -> VrpProblem:
    """The model of a document; travel times from coordinates at ``speeds_kmh`` per profile
    (the ``COSOLVE_VRP_SPEEDS_KMH`` setting when None)."""
    speeds = configured_speeds() if speeds_kmh is None else dict(speeds_kmh)
    return parse_document(doc, ParseParams(speed_kmh=speeds))


def check_solver(name: str, field: str = "solver") -> None:
    """An unknown VRP solver names the ones that take VROOM documents."""
    if name not in VRP_SOLVERS:
        error = UnknownSolverError(name, sorted(VRP_SOLVERS))
        error.field = field
        raise error


# -- results ---------------------------------------------------------------------------------
def summary_cost(result: VrpResult) -> float | None:
    return result.output.get("summary", {}).get("cost")


def unassigned_count(result: VrpResult) -> int:
    return len(result.output.get("unassigned", []))


@dataclass
class VrpRow:
    """One solver's run in a comparison: its answer, or why it has none."""

    solver: str
    result: VrpResult | None = None
    error: str | None = None
    #: the error behind ``error`` when the request is at fault (see ``REFUSALS``)
    refusal: CosolveError | None = None
    elapsed: float = 0.0
    #: the best cost over time as [elapsed s, best] pairs, from the solver's reports
    progress: list[list[float]] = field(default_factory=list)

    @property
    def feasible(self) -> bool:
        return self.result is not None and bool(self.result.check.feasible)


@dataclass
class VrpComparison:
    rows: list[VrpRow]
    #: the feasible row with the fewest unassigned tasks, then the lowest cost
    best_solver: str | None

    @property
    def refusal(self) -> CosolveError | None:
        """The first refusal when every row was refused (the request's fault), else None."""
        if self.rows and all(r.refusal is not None for r in self.rows):
            return self.rows[0].refusal
        return None

    def refusal_message(self) -> str:
        return "no solver could run on this document: " + "; ".join(
            f"{r.solver}: {r.error}" for r in self.rows)


def _rank(row: VrpRow) -> tuple[int, float]:
    assert row.result is not None
    return unassigned_count(row.result), float(summary_cost(row.result) or 0.0)


def compare_vrp(problem: VrpProblem, names: Sequence[str], budget: Budget,
                on_progress: ProgressCallback | None = None) -> VrpComparison:
    """Each solver in turn on the same document with the same time limit and seed; a solver
    that fails or refuses gives a row with its reason, never a partial answer. Ranked by
    assigned tasks first (an answer that drops a task is not cheaper), then by cost."""
    rows: list[VrpRow] = []
    for name in names:
        if budget.cancelled():
            break
        row = VrpRow(name)
        points: list[list[float]] = []

        def report(event: ProgressEvent, points: list[list[float]] = points) -> None:
            if event.best_cost is not None and (not points or event.best_cost < points[-1][1]):
                points.append([event.elapsed, float(event.best_cost)])
            if on_progress is not None:
                on_progress(event)

        started = time.perf_counter()
        try:
            row.result = solve_vrp(problem, name, budget, seed=budget.seed, on_progress=report)
        except CheckFailedError as exc:  # our bug: said in the row, never shown as an answer
            row.error = str(exc)
        except CosolveError as exc:
            row.error = str(exc)
            row.refusal = exc if isinstance(exc, REFUSALS) else None
        row.elapsed = time.perf_counter() - started
        if row.result is not None:
            cost = summary_cost(row.result)
            if cost is not None and (not points or cost < points[-1][1]):
                points.append([row.result.elapsed_s, float(cost)])
        row.progress = points
        rows.append(row)
    feasible = [r for r in rows if r.feasible]
    best = min(feasible, key=_rank).solver if feasible else None
    return VrpComparison(rows, best)


# -- jobs --------------------------------------------------------------------------------------
def execute_vrp(solver: str, time_limit: float, seed: int, data: bytes, filename: str,
                progress: Callable[[ProgressEvent], None], cancel: Any) -> dict[str, Any]:
    """A VROOM document's job, as the keyword arguments of the worker's ``JobOutcome``: the
    solution is VROOM's output document (with cosolve's check and reasons); never raises."""
    try:
        problem = parse(read_document(data, filename))
        progress(ProgressEvent(solver, 0.0, 0, None,
                               f"solving {problem.task_count} tasks"))
        budget = Budget(time_limit=time_limit, seed=seed, cancel=cancel)
        result = solve_vrp(problem, solver, budget, seed=seed, on_progress=progress)
    except NoSolutionError as exc:
        state = "cancelled" if cancel.is_set() else "failed"
        return {"state": state, "error": str(exc), "message": "no solution"}
    except CosolveError as exc:
        return {"state": "failed", "error": str(exc), "message": "failed"}
    except Exception as exc:
        return {"state": "failed", "error": f"{type(exc).__name__}: {exc}",
                "message": "internal error", "extra": {"traceback": traceback.format_exc()}}
    partial = bool(cancel.is_set())
    payload = dict(result.output)
    payload["partial"] = partial
    cost = summary_cost(result)
    progress(ProgressEvent(solver, result.elapsed_s, 0, cost,
                           "cancelled: best so far kept" if partial else "done"))
    # the worker's throttle keeps every improvement the solver reported; the checked cost
    # closes the curve
    kept = getattr(progress, "series", None)
    if kept is not None:
        kept.add(result.elapsed_s, cost)
    series = kept.to_json() if kept is not None else (
        [[result.elapsed_s, float(cost)]] if cost is not None else [])
    return {"state": "cancelled" if partial else "succeeded", "solution": payload,
            "cost": cost, "feasible": bool(result.check.feasible), "partial": partial,
            "message": "cancelled; the best solution found so far is kept" if partial
            else "solved", "progress": series}
