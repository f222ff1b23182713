"""Request and response bodies of the min-cost-flow endpoints.

As for routing, the network models check only JSON types (so OpenAPI documents them); every
rule about values — known node ids, balanced supplies, non-negative capacities, no self-loops —
is checked once, by the domain (``solvers.flow.io.network_from_dict``), so the API and the CLI
reject the same networks with the same words.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.schemas import examples
from app.schemas.routing import MAX_SEED, Int64, Number

DEFAULT_FLOW_SOLVER = "ortools_mcf"
ALL_FLOW_SOLVERS = ["ortools_mcf", "networkx_simplex", "oft_sinkhorn"]
#: No flow solver draws random numbers: the field is there for symmetry with routing.
FLOW_SEED = ("Recorded in the answer only: no min-cost-flow solver draws random numbers, so "
             "the seed changes nothing.")


class _Strict(BaseModel):
    """Unknown fields are errors, so a typo ("tolerence") is reported, not silently ignored."""

    model_config = ConfigDict(extra="forbid")


# -- the network -------------------------------------------------------------------------------
class ArcIn(_Strict):
    """A directed arc between two node ids."""

    tail: Int64 = Field(description="Node id the flow leaves.")
    head: Int64 = Field(description="Node id the flow enters.")
    cost: Int64 = Field(description="Integer cost per unit of flow (may be negative).")
    capacity: Int64 | None = Field(
        default=None, description="Largest flow on the arc (≥ 0); leave it out for no limit.")
    lower: Int64 = Field(default=0, description="Smallest flow on the arc (≥ 0, ≤ capacity).")


class FlowNetworkIn(_Strict):
    """A min-cost-flow network: supplies sum to 0 (positive = supply, negative = demand)."""

    problem: Literal["mincostflow"] | None = Field(default=None,
                                                   description="Optional: the path says.")
    name: str | None = Field(default=None, max_length=256, description="A label for the result.")
    nodes: list[Int64] | Int64 = Field(
        description="Unique integer node ids, or a count N meaning ids 1..N.")
    supplies: list[Int64] = Field(description="One integer per node, in the order of nodes.")
    arcs: list[ArcIn]
    node_capacities: list[Int64 | None] | None = Field(
        default=None,
        description="Optional, one per node (null = none): the most flow that may pass "
        "through the node, its own supply or demand included.")


# -- solve -------------------------------------------------------------------------------------
class FlowOptionsIn(_Strict):
    """Which solver to run and its budget; the same fields arrive as form fields in uploads."""

    solver: str = Field(default=DEFAULT_FLOW_SOLVER, min_length=1, max_length=100,
                        description="ortools_mcf, networkx_simplex or oft_sinkhorn "
                        "(GET /v1/solvers?problem=mincostflow).")
    time_limit: Number | None = Field(
        default=None, gt=0, allow_inf_nan=False,
        description="Seconds the solver may run (server default when omitted). The exact "
        "solvers cannot be interrupted; oft_sinkhorn iterates for up to 80% of it.")
    seed: int = Field(default=0, ge=0, le=MAX_SEED, description=FLOW_SEED)
    tolerance: Number = Field(
        default=0.0, ge=0.0, lt=1.0, allow_inf_nan=False,
        description="Relative optimality gap the answer may keep, certified by a dual bound. "
        "0 (default) asks for a proven optimum; oft_sinkhorn then finishes to optimality.")


class FlowSolveRequest(FlowOptionsIn):
    model_config = ConfigDict(json_schema_extra=examples.FLOW_SOLVE)
    network: FlowNetworkIn


class FlowSolveUpload(FlowOptionsIn):
    """multipart/form-data alternative: the network as a file plus the same options."""

    file: bytes = Field(description="A DIMACS .min or a .json network, optionally .gz.")


class CertificateOut(BaseModel):
    """A dual lower bound on the optimal cost and the gap it certifies."""

    dual_bound: int
    gap: int = Field(description="cost − dual_bound; 0 proves the flow optimal.")
    relative_gap: float
    optimal: bool
    source: str = Field(description="Where the potentials came from.")


class InfeasibilityOut(BaseModel):
    """Why no feasible flow exists: a node set that must ship out more than can leave it."""

    nodes: list[int]
    net_supply: int
    capacity: int
    arcs: list[int] = Field(description="Indices of the arcs leaving the node set; their "
                            "capacities as sent, with the node capacities named, add up to "
                            "capacity.")
    node_capacities: list[int] = Field(description="Nodes whose capacity limits the set.")
    forced: int = Field(default=0, description="Units the lower bounds of the arcs entering "
                        "the set force into it, included in net_supply: the nodes' own "
                        "supplies sum to net_supply − forced.")
    lower_arcs: list[int] = Field(default_factory=list, description="Indices of the "
                                  "lower-bounded arcs entering the set.")
    inflow_nodes: list[int] = Field(default_factory=list, description=(
        "Nodes with a capacity whose inflow side only is in the set: their demand lies past "
        "their capacity, outside it, and is not in net_supply."))
    outflow_nodes: list[int] = Field(default_factory=list, description=(
        "Nodes with a capacity whose outflow side only is in the set: their supply lies "
        "before their capacity, outside it, and is not in net_supply."))
    message: str


class FlowSolveResponse(BaseModel):
    """A flow checked by an independent checker, its cost recomputed exactly."""

    network: str
    nodes: int
    arcs: int
    solver: str
    status: Literal["optimal", "feasible", "infeasible"] = Field(
        description="optimal (proven: a zero-gap certificate), feasible (a checked flow, its "
        "gap bounded by the certificate, or unproven when certificate is null: for "
        "ortools_mcf and networkx_simplex stats.status is then the solver's own word and "
        "stats.proof what stopped the proof — round_limit, time_limit, cancelled or refuted) "
        "or infeasible (no flow exists; see infeasibility).")
    feasible: bool
    cost: int | None
    flow: list[int] | None = Field(description="Flow per arc, in the order of the arcs.")
    violations: list[str] = Field(description="What the checker found wrong: always empty, "
                                  "since a flow that fails the independent check is withheld "
                                  "(a 422 on `solver`, or that row's error in a comparison).")
    wall_time: float = Field(description="Seconds the solver ran, its optimality proof or "
                             "certificate included; the independent check of the flow is not.")
    time_limit: float
    seed: int
    tolerance: float
    certificate: CertificateOut | None = Field(description=(
        "The dual bound behind the status; null for an infeasible network, or when the "
        "search for potentials was stopped (its round cap, the time limit or a cancel)."))
    infeasibility: InfeasibilityOut | None
    stats: dict[str, Any] = Field(description="Solver statistics.")


# -- compare -----------------------------------------------------------------------------------
class FlowCompareOptionsIn(_Strict):
    """Several solvers on the same network and budget, one after another."""

    solvers: list[str] = Field(default_factory=lambda: list(ALL_FLOW_SOLVERS), min_length=1,
                               description="Solver names, each at most once (default: all "
                               "three).")
    time_limit: Number | None = Field(
        default=None, gt=0, allow_inf_nan=False,
        description="Seconds per solver; all solvers together must fit the server's "
        "max_time_limit.")
    seed: int = Field(default=0, ge=0, le=MAX_SEED, description=FLOW_SEED)
    tolerance: Number = Field(default=0.0, ge=0.0, lt=1.0, allow_inf_nan=False)


class FlowCompareRequest(FlowCompareOptionsIn):
    model_config = ConfigDict(json_schema_extra=examples.FLOW_COMPARE)
    network: FlowNetworkIn


class FlowCompareUpload(FlowCompareOptionsIn):
    """multipart/form-data alternative: the network as a file, solvers comma-separated."""

    solvers: str = Field(  # type: ignore[assignment]
        default=",".join(ALL_FLOW_SOLVERS),
        description="Comma-separated solver names (or the field repeated).")
    file: bytes = Field(description="A DIMACS .min or a .json network, optionally .gz.")


class FlowCompareRow(BaseModel):
    solver: str
    status: str | None
    cost: int | None
    feasible: bool
    gap_to_best: int | None = Field(description="cost − the best feasible cost.")
    wall_time: float | None
    certificate: CertificateOut | None
    violations: list[str]
    error: str | None
    stats: dict[str, Any]


class FlowCompareResponse(BaseModel):
    network: str
    nodes: int
    arcs: int
    time_limit: float = Field(description="Seconds given to each solver.")
    seed: int
    tolerance: float
    best_solver: str | None
    best_cost: int | None
    agree: bool | None = Field(description=(
        "Whether the rows proven optimal share one cost that no checked feasible row beats; "
        "null when no row is proven optimal (a time-limited answer may cost more: that is "
        "its gap, not a disagreement)."))
    infeasibility: InfeasibilityOut | None
    rows: list[FlowCompareRow]
