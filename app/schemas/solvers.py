"""The solver catalogue as the API shows it."""

from __future__ import annotations

from pydantic import BaseModel, Field


class SolverInfo(BaseModel):
    """One registered solver: what it solves, how large, and whether it can run here."""

    name: str
    family: str = Field(description="Problem family, e.g. routing.")
    problems: list[str] = Field(description="Problems it solves, e.g. tsp, cvrp.")
    kind: str = Field(description="classical or neural.")
    description: str
    max_nodes: dict[str, int] = Field(description="Largest instance per problem, in nodes.")
    needs_weights: bool = Field(description="Whether it needs a trained checkpoint.")
    solution_budget: bool = Field(
        default=False, description="Whether it takes max_solutions (a budget in solutions).")
    needs_coordinates: bool = Field(
        default=False, description="Whether it needs node coordinates (an instance given only "
        "as a distance matrix is refused with a 422 on coords).")
    vrp_features: list[str] | None = Field(
        default=None, description="VROOM documents (problem vrp, POST /v1/routing/vrp/solve): "
        "the parts of the model it takes (time_windows, shipments, skills, breaks, ...); null "
        "when it takes none (the neural solvers keep to TSP, CVRP and CVRPTW).")
    available: bool
    unavailable_reason: str | None = Field(
        default=None, description="Why it cannot run here and what to do, when unavailable."
    )


class SolverList(BaseModel):
    solvers: list[SolverInfo]
