"""Solving and comparing through the registry: the one code path the API, the CLI and the
benchmarks share, so a number shown anywhere was produced the same way."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from solvers.catalog import get_solver, get_spec
from solvers.contract import Budget, ProgressCallback, ProgressEvent, no_progress
from solvers.errors import (
    BudgetTooSmallError,
    CosolveError,
    InstanceError,
    InstanceTooLargeError,
    NoSolutionError,
    ProblemMismatchError,
    SolverUnavailableError,
    UnknownSolverError,
)
from solvers.progress import CostSeries
from solvers.routing.auto import AUTO, choose
from solvers.routing.isolation import pool_for
from solvers.routing.problem import Instance, TSPInstance
from solvers.routing.solution import Solution, build_solution


def solve(
    instance: Instance,
    solver: str,
    budget: Budget,
    progress: ProgressCallback = no_progress,
) -> Solution:
    """Solve with a registered solver after checking it supports this problem and size.

    ``progress`` is called on the caller's thread, inside the solve; an exception raised in
    it ends the solve and propagates (to stop early without one, set ``budget.cancel``: the
    best plan so far is returned). Raises UnknownSolverError, ProblemMismatchError,
    SolverUnavailableError, InstanceTooLargeError, BudgetTooSmallError (the time limit is
    below what the solver needs at this size), InstanceError (e.g. coordinates needed) and
    NoSolutionError (no plan within the budget or the fleet), all CosolveErrors; the first
    solve of a solver in a process warms it up first, outside its clock (see ``_warm``).
    ``solver="auto"`` picks one from the measured table (``solvers.routing.auto``) and says
    which and why in ``Solution.auto``."""
    if solver == AUTO:
        choice = choose(instance, budget.time_limit)
        solution = solve(instance, choice.picked, budget, progress)
        solution.auto = choice.to_dict()
        return solution
    impl = get_solver(solver, problem=instance.problem, nodes=instance.n,
                      time_limit=budget.time_limit,
                      has_coordinates=instance.coords is not None)
    _warm(solver, impl)
    # on a server, a solver whose search holds the interpreter lock solves in a child
    # process (``isolation``); None there: every child busy, or no pool for it
    pool = pool_for(solver)
    pooled = pool.run(solver, instance, budget, progress) if pool is not None else None
    solution = pooled if pooled is not None else impl.solve(instance, budget, progress)
    # an exact answer (a tiny instance's DP) used the instance's own distances, not the
    # coordinates' geometry (a proven optimum carried the warning)
    if get_spec(solver).needs_coordinates and "exact" not in solution.stats:
        mismatch = instance.coordinates_mismatch()
        if mismatch is not None and mismatch > MISMATCH_WARNING:
            # its cost is the matrix's, but it searched on the coordinates' geometry
            solution.stats["warning"] = (
                f"{solver} reads only the coordinates, and this instance's distance_matrix "
                f"differs from their straight-line distances by {100 * mismatch:.0f}% on "
                "average: it optimized another objective (the cost shown is the matrix's). "
                "ortools, pyvrp and nearest_neighbor use the matrix.")
            solution.stats["coordinates_mismatch"] = round(mismatch, 4)
        if isinstance(instance, TSPInstance) and instance.matrix is not None:
            solution = _cheaper_direction(instance, solution)
    return solution


def _cheaper_direction(instance: TSPInstance, solution: Solution) -> Solution:
    """A tour from the coordinates' geometry, run the other way when an asymmetric matrix
    makes that cheaper: the geometry cannot tell the directions apart, the matrix can, and
    reversing costs nothing (872 against 575 on a 25-node matrix with the back
    direction 2.5 times the forward one)."""
    if not solution.feasible or len(solution.routes[0]) < 3:
        return solution
    tour = solution.routes[0]
    reverse = [tour[0], *tour[:0:-1]]
    cost = instance.tour_cost(reverse)
    if not cost < solution.cost:
        return solution
    reversed_solution = build_solution(instance, [reverse], solver=solution.solver,
                                       wall_time=solution.wall_time,
                                       stats={**solution.stats, "reversed_for_matrix": True})
    return reversed_solution if reversed_solution.feasible else solution


_WARMED: set[str] = set()
_WARM_LOCK = threading.Lock()


def _warm(name: str, impl: Any) -> None:
    """``solvers.catalog.warm_up`` once per solver and process before its first solve, so a
    library user's first call searches for its whole time limit as the server's and the
    CLI's do (a first ``ils`` call at 0.3 s took 4.4 s, numba compiling inside the
    clock). The warm-up itself comes on top of that first call, outside the solver's clock
    (seconds; up to a minute of numba compiling in a fresh checkout); call
    ``solvers.catalog.warm_up(name)`` beforehand to keep it out of a timed call."""
    if name in _WARMED:
        return
    with _WARM_LOCK:
        if name not in _WARMED:
            warm = getattr(impl, "warm_up", None)
            if warm is not None:
                warm()
            _WARMED.add(name)


#: Above this mean relative difference between an explicit matrix and the coordinates'
#: straight-line distances (at the best scale), a solver that reads only the coordinates
#: says so in its solution: rounding and a unit change stay far below it.
MISMATCH_WARNING = 0.05


def gap_percent(cost: float, reference: float | None) -> float | None:
    """(cost − reference) / reference in percent; 0 when they are equal (all points
    identical: both 0); None when either side is unknown, or when the ratio overflows (a
    reference such as 1e-320 gave an infinite gap). Computed as cost/reference − 1, so a
    reference of 1e308 gives −100 rather than overflowing in the difference."""
    if reference is None or not math.isfinite(cost):
        return None
    if cost == reference:
        return 0.0
    if reference == 0:
        return None
    gap = 100.0 * (cost / reference - 1.0)
    return gap if math.isfinite(gap) else None


#: Errors that keep a solver from running this request (see ``ComparisonRow.refusal``); an
#: unknown solver name too (compare with only unknown names had no refusal), and a
#: solver that cannot run here (missing weights: a comparison of only such solvers answered
#: 200 with every row failed, where a solve of one answers 503).
REFUSALS = (BudgetTooSmallError, InstanceTooLargeError, ProblemMismatchError, InstanceError,
            UnknownSolverError, SolverUnavailableError)


@dataclass
class ComparisonRow:
    solver: str
    solution: Solution | None
    error: str | None = None
    gap_to_best: float | None = None
    gap_to_reference: float | None = None
    #: the error is a proof that no solution exists (the input's fault, not the solver's)
    proven_impossible: bool = False
    #: the error behind ``error`` when it is the request's fault rather than the solver's (a
    #: time limit below what the solver needs at this size, an instance above its limit, a
    #: proof that no plan exists); when every row has one, the comparison as a whole is
    #: refused as bad input (all rows refused a 0.2 s limit and the API said 200)
    refusal: CosolveError | None = None
    #: seconds this row took, also when it failed (a failure may use its whole budget)
    elapsed: float | None = None
    #: the best cost over time as (elapsed s, best) pairs, never increasing: the solver's
    #: progress reports, ending at its checked final cost when that is lower
    progress: list[tuple[float, float]] = field(default_factory=list)

    @property
    def cost(self) -> float | None:
        return self.solution.cost if self.solution else None

    @property
    def feasible(self) -> bool:
        return bool(self.solution and self.solution.feasible)


@dataclass
class Comparison:
    """Several solvers on one instance and one budget."""

    instance: Instance
    budget: Budget
    rows: list[ComparisonRow]
    reference: float | None = None
    best_solver: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def refusal(self) -> CosolveError | None:
        """Why the request itself is at fault, when no row has a feasible solution and either
        one row proves that none exists or every row was refused; else None."""
        if self.best_solver is not None or not self.rows:
            return None
        proof = next((r for r in self.rows if r.proven_impossible), None)
        if proof is not None:
            return proof.refusal
        if all(r.refusal is not None for r in self.rows):
            return self.rows[0].refusal
        return None

    def refusal_message(self) -> str:
        """Every row's reason in one line, for the error that refuses the comparison."""
        proof = next((r for r in self.rows if r.proven_impossible), None)
        if proof is not None:
            return f"no solution exists ({proof.solver}): {proof.error}"
        reasons = [(r.error or "").rstrip(".") for r in self.rows]
        return "no solver could run on this request: " + "; ".join(
            reason if repr(r.solver) in reason else f"{r.solver}: {reason}"
            for r, reason in zip(self.rows, reasons, strict=True))


def compare(
    instance: Instance,
    solvers: str | Sequence[str],
    budget: Budget,
    reference: float | None = None,
    progress: ProgressCallback = no_progress,
) -> Comparison:
    """Run each solver in turn on the same instance and budget; gaps only count feasible rows.

    Solvers run one after another, not concurrently, so each gets the same machine.
    ``solvers`` is a list of names, or one name (taken as ``[name]``). A solver's error does
    not raise: it becomes its row's ``error`` (and ``refusal`` when the request is at fault:
    ``REFUSALS``, an unknown name included); ``Comparison.refusal`` says when every row was
    refused. A cancel ends the comparison after the row that saw it. An exception raised by
    ``progress`` (called on the caller's thread) ends that row as failed.
    """
    if isinstance(solvers, str):
        # one name is one solver: compare(inst, "ils", ...) must not run "i", "l" and "s"
        solvers = [solvers]
    rows: list[ComparisonRow] = []
    for name in solvers:
        started = time.perf_counter()
        series = CostSeries()

        def report(event: ProgressEvent, series: CostSeries = series) -> None:
            series(event)
            progress(event)

        try:
            rows.append(ComparisonRow(name, solve(instance, name, budget, report)))
        except CosolveError as exc:
            proven = isinstance(exc, NoSolutionError) and exc.proven
            refused = proven or isinstance(exc, REFUSALS)
            rows.append(ComparisonRow(name, None, error=str(exc), proven_impossible=proven,
                                      refusal=exc if refused else None))
        except Exception as exc:  # one solver's crash must not lose the other rows
            first_line = (str(exc).splitlines() or [""])[0]
            rows.append(ComparisonRow(name, None, error=f"failed unexpectedly: "
                                      f"{type(exc).__name__}: {first_line}"))
        rows[-1].elapsed = (rows[-1].solution.wall_time if rows[-1].solution is not None
                            else time.perf_counter() - started)
        if rows[-1].feasible:  # the checked cost closes the curve (an infeasible one is not
            # a best cost to plot)
            series.add(rows[-1].elapsed, rows[-1].cost)
        rows[-1].progress = series.points()
        if budget.cancelled():
            break
    feasible = [r for r in rows if r.feasible and r.cost is not None]
    best = min(feasible, key=lambda r: r.cost) if feasible else None  # type: ignore[arg-type,return-value]
    for r in rows:
        if r.feasible and r.cost is not None:
            r.gap_to_best = gap_percent(r.cost, best.cost if best else None)
            r.gap_to_reference = gap_percent(r.cost, reference)
    return Comparison(instance, budget, rows, reference, best.solver if best else None)
