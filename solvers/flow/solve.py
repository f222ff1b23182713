"""Solving and comparing min-cost flows through the registry: the one code path the API, the
CLI and the benchmarks share, so a number shown anywhere was produced the same way."""

from __future__ import annotations

from dataclasses import dataclass, field

from solvers.catalog import get_solver
from solvers.contract import Budget, ProgressCallback, no_progress
from solvers.errors import (
    BudgetTooSmallError,
    CosolveError,
    InstanceError,
    InstanceTooLargeError,
    ProblemMismatchError,
    SolverUnavailableError,
    UnknownSolverError,
)
from solvers.flow.options import FlowOptions
from solvers.flow.problem import FlowNetwork, UnboundedCostError
from solvers.flow.solution import FlowSolution

PROBLEM = "mincostflow"
#: The solvers a comparison runs when none are named.
DEFAULT_COMPARE = ("ortools_mcf", "networkx_simplex", "oft_sinkhorn")
#: Errors that keep a solver from running this request (a time limit below what the solver
#: needs at this size, a network above its limit, a solver that cannot run here), as
#: routing's ``REFUSALS``.
REFUSALS = (BudgetTooSmallError, InstanceTooLargeError, ProblemMismatchError, InstanceError,
            UnknownSolverError, SolverUnavailableError)


def solve(net: FlowNetwork, solver: str, budget: Budget,
          progress: ProgressCallback = no_progress,
          options: FlowOptions | None = None) -> FlowSolution:
    """Solve with a registered flow solver after checking it solves min-cost flow at this size.
    The solver checks, on its own clock, that the network's cost is bounded
    (``UnboundedCostError``, an ``InstanceError`` naming ``arcs``, if not)."""
    impl = get_solver(solver, problem=PROBLEM, nodes=net.n, time_limit=budget.time_limit)
    if solver not in _WARMED:  # before the clock: imports and the first bounded child
        warm = getattr(impl, "warm_up", None)
        if warm is not None:
            warm()
        _WARMED.add(solver)
    return impl.solve(net, budget, progress, options=options)  # type: ignore[call-arg]


#: Solvers warmed up in this process (their first solve would otherwise pay for importing
#: OR-Tools or networkx and starting the first bounded child inside its time limit: the
#: CLI's first ortools_mcf row read 0.2 s against 0.012 s).
_WARMED: set[str] = set()


@dataclass
class FlowComparisonRow:
    solver: str
    solution: FlowSolution | None
    error: str | None = None
    #: cost − best cost among the rows with a feasible flow (0 for the best).
    gap_to_best: int | None = None
    #: the error behind ``error`` when it is the request's fault (``REFUSALS``); when every
    #: row has one, the comparison as a whole is refused as bad input, as routing's is
    refusal: CosolveError | None = None


@dataclass
class FlowComparison:
    """Several solvers on one network and one budget, one after another."""

    network: FlowNetwork
    rows: list[FlowComparisonRow]
    best_cost: int | None = None
    best_solver: str | None = None
    #: Whether the proven-optimal rows share one cost that no feasible row beats; ``None``
    #: when no row is proven optimal (a time-limited answer is not a claim to disagree with).
    agree: bool | None = None
    infeasible: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def refusal(self) -> CosolveError | None:
        """Why the request itself is at fault when every row was refused (a time limit too
        short for every solver is the request's error, not a solver failure); else None."""
        if self.best_solver is not None or not self.rows:
            return None
        if all(r.refusal is not None for r in self.rows):
            return self.rows[0].refusal
        return None

    def refusal_message(self) -> str:
        """Every row's reason in one line, for the error that refuses the comparison."""
        reasons = [(r.error or "").rstrip(".") for r in self.rows]
        return "no solver could run on this request: " + "; ".join(
            reason if reason.startswith((r.solver, f"solver {r.solver!r}"))
            else f"{r.solver}: {reason}"
            for r, reason in zip(self.rows, reasons, strict=True))


def compare(net: FlowNetwork, solvers: list[str], budget: Budget,
            progress: ProgressCallback = no_progress,
            options: FlowOptions | None = None) -> FlowComparison:
    """Run each solver in turn on the same network and budget. An unbounded network is the
    input's fault, not each solver's: the first solver's ``UnboundedCostError`` is raised."""
    rows: list[FlowComparisonRow] = []
    for name in solvers:
        try:
            rows.append(FlowComparisonRow(name, solve(net, name, budget, progress, options)))
        except UnboundedCostError:
            raise
        except CosolveError as exc:
            rows.append(FlowComparisonRow(name, None, error=str(exc),
                                          refusal=exc if isinstance(exc, REFUSALS) else None))
        if budget.cancelled():
            break
    feasible = [r for r in rows if r.solution and r.solution.feasible and
                r.solution.cost is not None]
    out = FlowComparison(network=net, rows=rows)
    if feasible:
        best = min(feasible, key=lambda r: r.solution.cost)  # type: ignore[union-attr,return-value,arg-type]
        out.best_cost = best.solution.cost  # type: ignore[union-attr]
        out.best_solver = best.solver
        for r in feasible:
            r.gap_to_best = r.solution.cost - out.best_cost  # type: ignore[union-attr,operator]
        out.agree = _agree(feasible)
    out.infeasible = any(r.solution and r.solution.status == "infeasible" for r in rows)
    return out


def _agree(feasible: list[FlowComparisonRow]) -> bool | None:
    """Only proven optima can disagree: they must share one cost, and a checked feasible flow
    below it would refute it. Unproven rows may cost more; that is their gap, not a clash."""
    costs = [(r.solution.status, r.solution.cost) for r in feasible
             if r.solution and r.solution.cost is not None]
    optimal = {cost for status, cost in costs if status == "optimal"}
    if not optimal:
        return None
    return len(optimal) == 1 and all(cost >= min(optimal) for _, cost in costs)
