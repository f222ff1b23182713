"""The solver catalogue: every registered solver and whether it can run here."""

from fastapi import APIRouter

from app.errors import invalid_request, problem_responses
from app.intake.vrp import vrp_only_solvers, vrp_support
from app.schemas.solvers import SolverInfo, SolverList
from jobs.vrp import VRP_PROBLEM
from solvers.catalog import all_specs

router = APIRouter(prefix="/solvers", tags=["solvers"])


@router.get("", response_model=SolverList, responses=problem_responses(422))
def list_solvers(problem: str | None = None) -> SolverList:
    """All registered solvers, or those that solve ``problem`` (e.g. ``?problem=tsp``;
    ``vrp``: those that take VROOM documents, with the parts of the model each takes)."""
    specs = all_specs()
    if problem is not None:
        known = sorted({p for s in specs for p in s.problems} | {VRP_PROBLEM})
        if problem not in known:
            raise invalid_request(
                f"unknown problem {problem!r}; solvers here solve: {', '.join(known)}",
                field="problem",
            )
        specs = [s for s in specs if problem in s.problems
                 or (problem == VRP_PROBLEM and vrp_support(s.name) is not None)]
    return SolverList(
        solvers=[
            SolverInfo(
                name=s.name,
                family=s.family,
                problems=list(s.problems) + ([VRP_PROBLEM] if vrp_support(s.name) is not None
                                             else []),
                kind=s.kind,
                description=s.description,
                max_nodes=dict(s.max_nodes),
                needs_weights=s.needs_weights,
                solution_budget=s.solution_budget,
                needs_coordinates=s.needs_coordinates,
                available=(reason := s.unavailable_reason(problem)) is None,
                unavailable_reason=reason,
                vrp_features=vrp_support(s.name),
            )
            for s in specs
        ] + ([SolverInfo(name=name, family="routing", problems=[VRP_PROBLEM],
                         kind="classical", description=description, max_nodes={},
                         needs_weights=False, vrp_features=features, available=True)
              for name, description, features in vrp_only_solvers()]
             if problem in (None, VRP_PROBLEM) else [])
    )
