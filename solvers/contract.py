"""The one solver interface: Budget, progress reporting and the registry.

Every solver, neural or classical, is a ``Solver``: it takes a domain instance and a ``Budget``
and returns a domain ``Solution`` whose cost was recomputed by the problem's own code. The
registry is the single list that the API, the CLI, the compare endpoint and the benchmarks read,
so adding a solver means one module and one ``register`` call.
"""

from __future__ import annotations

import math
import numbers
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from solvers.errors import (
    BudgetError,
)

#: The largest seed a caller may give (the API's and the CLI's bound; some solvers take a C int).
MAX_SEED = 2**31 - 1
#: The longest time limit a solver is given: 30 days, the CLI's and the settings' bound. A
#: longer one, ``math.inf`` included ("run until cancelled"), is clamped to it: OR-Tools and
#: SIL convert the limit to an integer, and inf crashed them with OverflowError.
MAX_TIME_LIMIT = 30 * 24 * 3600.0


def _is_int(value: object) -> bool:
    """An integer (numpy's too), not a bool: True is 1 to Python but never a meant count."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


@dataclass(frozen=True)
class Budget:
    """What a solver may spend: a wall-clock limit, a seed, a device and a cancel flag; and,
    for solvers that take one (``SolverSpec.solution_budget``), a number of solutions to
    decode, whichever of it and the time limit is reached first.

    Bounds (each refusal is a ``solvers.errors.BudgetError``, an InstanceError and so a
    ValueError, naming the field): ``time_limit`` a real number > 0 (not NaN, not a bool);
    above ``MAX_TIME_LIMIT`` (30 days), ``math.inf`` included, it is clamped to 30 days, so
    ``Budget(time_limit=math.inf, cancel=event)`` runs until the event is set. ``seed`` an
    int in [0, ``MAX_SEED``]; ``max_solutions`` None or an int >= 1; ``cancel`` None or an
    object with ``is_set()`` (a ``threading.Event``); ``device`` a str."""

    time_limit: float = 10.0
    seed: int = 0
    device: str = "cpu"
    cancel: threading.Event | None = None
    max_solutions: int | None = None

    def __post_init__(self) -> None:
        # each field checked here with its name: a bare ValueError/TypeError would name none,
        # and bools and strings would pass as numbers
        limit = self.time_limit
        if not isinstance(limit, numbers.Real) or isinstance(limit, bool):
            raise BudgetError("time_limit", "must be a number of seconds, got "
                              f"{type(limit).__name__} {limit!r}")
        if math.isnan(limit) or not limit > 0:
            raise BudgetError("time_limit", f"must be positive, got {limit!r}")
        object.__setattr__(self, "time_limit", min(float(limit), MAX_TIME_LIMIT))
        if not _is_int(self.seed) or not 0 <= self.seed <= MAX_SEED:
            raise BudgetError("seed", f"must be an integer from 0 to {MAX_SEED}, got "
                              f"{type(self.seed).__name__} {self.seed!r}")
        object.__setattr__(self, "seed", int(self.seed))
        if self.max_solutions is not None:
            if not _is_int(self.max_solutions) or self.max_solutions < 1:
                raise BudgetError("max_solutions", "must be None or an integer of at least 1, "
                                  f"got {type(self.max_solutions).__name__} "
                                  f"{self.max_solutions!r}")
            object.__setattr__(self, "max_solutions", int(self.max_solutions))
        if self.cancel is not None and not callable(getattr(self.cancel, "is_set", None)):
            raise BudgetError("cancel", "must be None or a threading.Event (anything with "
                              f"is_set()), got {type(self.cancel).__name__} {self.cancel!r}")
        if not isinstance(self.device, str):
            raise BudgetError("device", "must be a device name such as 'cpu' or 'cuda', got "
                              f"{type(self.device).__name__} {self.device!r}")

    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()


class Clock:
    """Tracks the time spent against a budget, started when the solver starts."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.start = time.perf_counter()

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    @property
    def remaining(self) -> float:
        return max(0.0, self.budget.time_limit - self.elapsed)

    def expired(self) -> bool:
        return self.remaining <= 0.0 or self.budget.cancelled()


@dataclass(frozen=True)
class ProgressEvent:
    """One progress report: how long, how many iterations, the best cost so far."""

    solver: str
    elapsed: float
    iterations: int
    best_cost: float | None
    message: str = ""
    #: the plan behind ``best_cost`` (the solution's ``routes``) when the solver publishes
    #: its incumbent, so a client can redraw it while the job runs; None in most events, as
    #: solvers send it at most every ``INCUMBENT_EVERY_S`` and only up to
    #: ``INCUMBENT_MAX_NODES`` nodes, to keep events small
    routes: list[list[int]] | None = None


#: How often a solver may attach its incumbent's routes to a progress event, in seconds.
INCUMBENT_EVERY_S = 1.0
#: Above this many nodes a solver never attaches routes (a plan of 100K nodes is about 1 MB
#: of JSON; rebuilding it every second would slow the search).
INCUMBENT_MAX_NODES = 20_000


#: Called by a solver on the thread that called ``solve``, between steps of its search; an
#: exception raised in it ends the solve and propagates to the caller (ortools included: it
#: keeps the exception through its C++ search and raises it after).
ProgressCallback = Callable[[ProgressEvent], None]


def no_progress(_: ProgressEvent) -> None:
    """The default progress callback: ignore reports."""


def beating(stop: Callable[[], bool] | None, beat: Callable[[], None],
            every: float) -> Callable[[], bool]:
    """``stop`` (None: never) as a check that also calls ``beat`` at most every ``every``
    seconds. Long phases with nothing to count (a first descent at 100K nodes, about 15 s; a
    model's greedy construction) already ask their stop check every millisecond or so, and
    so report progress through it."""
    next_beat = time.perf_counter() + every

    def check() -> bool:
        nonlocal next_beat
        now = time.perf_counter()
        if now >= next_beat:
            next_beat = now + every
            beat()
        return stop is not None and stop()

    return check


@runtime_checkable
class Solver(Protocol):
    """Solves instances of the problems it declares, within a Budget."""

    name: str

    def solve(self, instance: Any, budget: Budget, progress: ProgressCallback = no_progress) -> Any:
        """Return a Solution for ``instance`` within ``budget``; report through ``progress``."""
        ...


#: The shortest time limit a routing solver accepts. Below it the start-up alone overran the
#: limit by far more than the 10% every solver keeps to: X-n101-k25 asked for 0.02 s took
#: 0.05 s with ortools (its search floor), 0.11 s with reld, 0.03 s with pyvrp; asked for
#: 0.1 s, every solver ended within 0.11 s (ortools at 0.001 s ran 0.11 s).
MIN_ROUTING_TIME_LIMIT = 0.1


@dataclass
class SolverSpec:
    """Registry entry: what a solver solves, its size limits and whether it can run here."""

    name: str
    family: str
    problems: tuple[str, ...]
    description: str
    factory: Callable[[], Solver]
    max_nodes: dict[str, int] = field(default_factory=dict)
    needs_weights: bool = False
    kind: str = "classical"
    availability: Callable[[], str | None] = field(default=lambda: None)
    #: Why one problem cannot run here although the solver can (a neural solver's missing
    #: checkpoint for that problem), or None.
    problem_availability: Callable[[str], str | None] = field(default=lambda problem: None)
    #: Seconds the solver needs, for (problem, nodes), before it can honour a time limit.
    min_time_limit: Callable[[str, int], float] = field(default=lambda problem, nodes: 0.0)
    #: Whether it honours ``Budget.max_solutions`` (a budget in decoded solutions).
    solution_budget: bool = False
    #: Whether it reads node coordinates (neural encoders, neighbour lists), so that an
    #: instance given only as a distance matrix is refused before it is queued.
    needs_coordinates: bool = False

    def unavailable_reason(self, problem: str | None = None) -> str | None:
        """None when the solver can run here (on ``problem``, when given), else a sentence
        saying why not and what to do."""
        reason = self.availability()
        if reason is None and problem is not None and problem in self.problems:
            reason = self.problem_availability(problem)
        return reason

    @property
    def available(self) -> bool:
        return self.unavailable_reason() is None
