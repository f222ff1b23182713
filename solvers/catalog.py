"""The solver catalog: lookup, checks and warm-up over every registry.

It sits above the solver modules (it imports the registries), so nothing below it imports
it back; the contract it hands out lives in ``solvers.contract``."""

from __future__ import annotations

import threading

from solvers.contract import MIN_ROUTING_TIME_LIMIT, Solver, SolverSpec
from solvers.errors import (
    BudgetTooSmallError,
    CosolveError,
    InstanceError,
    InstanceTooLargeError,
    ProblemMismatchError,
    SolverUnavailableError,
    UnknownSolverError,
)
from solvers.flow import registry as _flow_registry
from solvers.routing import registry as _routing_registry

_REGISTRY: dict[str, SolverSpec] = {}
_INSTANCES: dict[str, Solver] = {}
_LOCK = threading.Lock()


def register(spec: SolverSpec) -> SolverSpec:
    """Add a solver to the registry (once per name)."""
    if spec.name in _REGISTRY:
        raise ValueError(f"solver {spec.name!r} registered twice")
    _REGISTRY[spec.name] = spec
    return spec


# Routing first: listings keep the routing solvers before the flow ones.
for _spec in (*_routing_registry.SPECS, *_flow_registry.SPECS):
    register(_spec)


def all_specs() -> list[SolverSpec]:
    """Every registered solver, in registration order."""
    return list(_REGISTRY.values())


def get_spec(name: str) -> SolverSpec:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownSolverError(name, sorted(_REGISTRY)) from None


def specs_for(problem: str) -> list[SolverSpec]:
    """Solvers that declare ``problem``."""
    return [s for s in all_specs() if problem in s.problems]


def unregister(name: str) -> None:
    """Remove a solver (for tests that register a temporary one)."""
    _REGISTRY.pop(name, None)
    _INSTANCES.pop(name, None)


def get_solver(
    name: str,
    problem: str | None = None,
    nodes: int | None = None,
    time_limit: float | None = None,
    has_coordinates: bool | None = None,
) -> Solver:
    """Look a solver up, check it can run this problem at this size within this time limit
    (and, when ``has_coordinates`` is given, on an instance with or without coordinates), and
    build it once. Every check is made here so that a job or a batch file the solver cannot
    take is refused when it is submitted, not when it runs."""
    check_solver(name, problem, nodes, time_limit, has_coordinates)
    with _LOCK:
        if name not in _INSTANCES:
            _INSTANCES[name] = get_spec(name).factory()
        return _INSTANCES[name]


def check_solver(
    name: str,
    problem: str | None = None,
    nodes: int | None = None,
    time_limit: float | None = None,
    has_coordinates: bool | None = None,
) -> SolverSpec:
    """``get_solver``'s checks without building the solver (no torch, no weights loaded):
    its spec, or the CosolveError that says why it cannot take this request."""
    spec = get_spec(name)
    if problem is not None and problem not in spec.problems:
        raise ProblemMismatchError(name, problem, list(spec.problems))
    reason = spec.unavailable_reason(problem)
    if reason is not None:
        raise SolverUnavailableError(name, reason)
    if has_coordinates is False and spec.needs_coordinates:
        others = [s.name for s in all_specs() if not s.needs_coordinates
                  and (problem is None or problem in s.problems) and s.available]
        raise InstanceError("coords", f"the {name} solver needs node coordinates; this "
                            "instance has only a distance matrix"
                            + (f" (these solvers take one: {', '.join(others)})" if others else ""))
    if problem is not None and nodes is not None:
        limit = spec.max_nodes.get(problem)
        if limit is not None and nodes > limit:
            raise InstanceTooLargeError(
                f"solver {name!r} handles {problem} up to {limit} nodes; this instance has "
                f"{nodes}. Choose a solver with a higher limit (listed by GET /v1/solvers and "
                "`cosolve solvers`).",
                nodes=nodes,
                limit=limit,
                field="solver",
            )
        if time_limit is not None:
            needed = spec.min_time_limit(problem, nodes)
            if spec.family == "routing" and needed < MIN_ROUTING_TIME_LIMIT:
                needed = MIN_ROUTING_TIME_LIMIT
            if time_limit < needed:
                raise BudgetTooSmallError(
                    f"solver {name!r} needs a time limit of at least {needed:g} s for a "
                    f"{nodes}-node {problem.upper()} (its start-up or first pass cannot be "
                    f"interrupted); got {time_limit:g} s. Raise the time limit or choose "
                    "another solver.",
                    needed=needed,
                )
    return spec


def warm_up(name: str) -> None:
    """Import a solver and load what it needs (weights, compiled kernels) before its clock
    starts: in a fresh process the first neural solve at 1 s took 2.6-3.7 s (torch's import
    and the checkpoint inside the call), and its search had less of its budget. Unknown or
    unavailable solvers are left to ``solve`` to report."""
    try:
        solver = get_solver(name)
    except CosolveError:
        return
    warm = getattr(solver, "warm_up", None)
    if warm is not None:
        warm()
