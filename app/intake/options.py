"""The options every family's requests share: the time limit within the server's, and
solver names that exist and solve the problem (checked before any instance is read).
"""

from __future__ import annotations

from app.errors import (
    ApiError,
    invalid_request,
)
from app.settings import Settings
from solvers.catalog import all_specs, get_spec, specs_for
from solvers.errors import UnknownSolverError
from solvers.routing.auto import AUTO, ROUTING_PROBLEMS


def request_time_limit(requested: float | None, settings: Settings, runs: int = 1,
                       cli: str = "cosolve solve") -> float:
    """The per-solver time limit: the server default when omitted, and never more than the
    server lets one request run (``runs`` solvers run one after another)."""
    limit = settings.default_time_limit if requested is None else requested
    if limit * runs > settings.max_time_limit:
        if runs == 1:
            detail = (f"time_limit {limit:.15g} s is above this server's maximum of "
                      f"{settings.max_time_limit:g} s")
        else:
            detail = (f"{runs} solvers × {limit:.15g} s = {limit * runs:.15g} s is above the "
                      f"{settings.max_time_limit:g} s one request may run; lower time_limit")
        # a job only where the server lets jobs run longer than the request asked for, or
        # the advice would name a job "up to" less than the limit just refused
        jobs = ("submit a job (POST /v1/jobs, up to "
                f"{settings.max_job_time_limit:g} s) or "
                if runs == 1 and "flow" not in cli and settings.max_job_time_limit >= limit
                else "")
        raise invalid_request(detail + f"; for longer runs {jobs}use the CLI ({cli})",
                              field="time_limit")
    return limit


def check_solver_list(names: list[str], problem: str, settings: Settings) -> None:
    """A comparison's solvers: not too many, none twice, each one solving ``problem``."""
    if len(names) > settings.max_compare_solvers:
        raise invalid_request(f"{len(names)} solvers asked for; a comparison runs at most "
                              f"{settings.max_compare_solvers}", field="solvers")
    first_seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in first_seen:
            raise invalid_request(f"solver {name!r} is listed twice (solvers[{first_seen[name]}]"
                                  f" and solvers[{i}])", field=f"solvers[{i}]")
        first_seen[name] = i
        check_solver_name(name, problem, f"solvers[{i}]")


def check_solution_budget(solver: str, max_solutions: int | None) -> None:
    """A budget in solutions only for a solver that counts its solutions (after the name
    check, so the solver exists)."""
    if max_solutions is not None and solver == AUTO:
        raise invalid_request("solver 'auto' takes a time limit only (it may pick a solver "
                              "that counts no solutions); name the solver to give "
                              "max_solutions", field="max_solutions")
    if max_solutions is not None and not get_spec(solver).solution_budget:
        takes = [s.name for s in all_specs() if s.solution_budget]
        raise invalid_request(f"solver {solver!r} takes a time limit only; max_solutions is for "
                              f"{', '.join(takes)}", field="max_solutions")


def check_solver_name(name: str, problem: str, field: str) -> None:
    """Fail fast, before parsing the instance, on a solver that does not exist or does not
    solve this problem. Availability and size limits are left to the solve itself.
    ``auto`` is a name for every routing problem (``solvers.routing.auto``)."""
    if name == AUTO and problem in ROUTING_PROBLEMS:
        return
    try:
        spec = get_spec(name)
    except UnknownSolverError:
        # the names that solve this problem, not the whole registry (a TSP's 404 would list
        # the min-cost-flow solvers)
        known = ", ".join(s.name for s in specs_for(problem))
        raise ApiError(404, f"unknown solver {name!r}; the {problem} solvers: {known}. "
                       "GET /v1/solvers lists them.", kind="unknown-solver",
                       title="Unknown solver", field=field) from None
    if problem not in spec.problems:
        raise ApiError(422, f"solver {name!r} does not solve {problem}; it solves: "
                       f"{', '.join(spec.problems)}", kind="problem-mismatch",
                       title="Solver does not solve this problem", field=field)


