"""Request and response bodies of the routing endpoints (TSP, CVRP and CVRPTW).

The instance models check only JSON types (so OpenAPI documents them); every rule about values
— finite coordinates, a square non-negative matrix, unique ids, demands within capacity — is
checked once, by the domain (``solvers.routing.io.instance_from_dict``), so the API and the CLI
reject the same instances with the same words.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from app.schemas import examples
from jobs.validation import DataNumber, reject_bool_number
from solvers.contract import MAX_SEED

Distance = Literal["exact", "EUC_2D", "CEIL_2D", "FLOOR_2D", "ATT", "EXPLICIT"]


def _reject_bool(value: Any) -> Any:
    # JSON true/false would otherwise pass as 1/0 and surface later as a confusing error.
    if isinstance(value, bool):
        raise PydanticCustomError("int_type", "Input should be an integer, not true or false")
    return value


def _reject_text_int(value: Any) -> Any:
    if type(value) is int:  # the common case first: called once per integer of the data
        return value
    if isinstance(value, str):
        raise PydanticCustomError("int_type", "Input should be an integer, not text")
    if isinstance(value, float) and value.is_integer():
        # a whole float (2.0, as numpy and many JSON writers print integers) is the integer,
        # as JSON Schema's "integer" and the file readers take it, so a body and the same
        # instance uploaded as a .json file agree
        return int(value)
    return _reject_bool(value)


def _finite_option(value: Any) -> Any:
    # pydantic checks a bound before allow_inf_nan, so NaN was refused as "should be greater
    # than 0"; an option's NaN or infinity (JSON's NaN, a form's "nan") is named as such
    number = value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value  # pydantic's own float parsing error
    if isinstance(number, float) and not math.isfinite(number):
        raise PydanticCustomError("finite_number", "Input should be a finite number")
    return reject_bool_number(value)


#: A JSON number (an integer or a float), never true or false, and finite; options only (a
#: multipart form sends its fields as text, so "0.5" is read as 0.5 there; JSON bodies are
#: validated strictly, ``app.intake.validate_json``, so a JSON "0.5" is refused).
Number = Annotated[float, BeforeValidator(_finite_option)]

#: An integer of an instance's or a network's data, never text, true or false, that fits
#: numpy's int64, so the domain's arrays cannot overflow.
#: (The bounds come before the validator, so pydantic-core checks them natively; after it,
#: they were two Python calls per integer: a million-arc network spent 7.5 s validating.)
Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1), BeforeValidator(_reject_text_int)]

#: Seeds are passed to solvers that take a 32-bit signed seed.
#: What a routing seed does, and what it does not promise (README, "Time limits").
ROUTING_SEED = ("Seeds the solver's random choices (echoed in the answer). A search that the "
                "time limit stops may still differ from run to run; nearest_neighbor, and "
                "polynet with max_solutions reached first, repeat exactly on one machine.")


#: The largest ``max_solutions`` a request may ask for, and what it does (solve, job, batch).
MAX_SOLUTIONS = 10_000_000
MAX_SOLUTIONS_DOC = ("A budget in solutions, for solvers that take one (polynet): stop after "
                     "decoding this many (greedy and sampled, no reconstruction phase; rounded "
                     "up to a whole pass over the symmetries decoded together, at most 7 "
                     "more), or at the time limit if that comes first.")


class _Strict(BaseModel):
    """Unknown fields are errors, so a typo ("time_limt") is reported, not silently ignored."""

    model_config = ConfigDict(extra="forbid")


# -- instances ---------------------------------------------------------------------------
class _RoutingInstanceIn(_Strict):
    name: str | None = Field(default=None, max_length=256, description="A label for the result.")
    coords: list[tuple[DataNumber, DataNumber]] | None = Field(
        default=None, description="[x, y] per node. Give coords, a distance_matrix, or both."
    )
    distance_matrix: list[list[DataNumber]] | None = Field(
        default=None,
        description="Square matrix of non-negative distances (may be asymmetric). When given, "
        "costs use it and coords only serve drawings.",
    )
    distance: Distance | None = Field(
        default=None,
        description="How coordinates become distances: exact (float Euclidean, the default), "
        "EUC_2D (rounded), CEIL_2D (rounded up), FLOOR_2D (rounded down, as LKH-3's Solomon "
        "files) or ATT, as in TSPLIB.",
    )
    ids: list[Int64] | None = Field(
        default=None,
        description="Your own unique integer id per node; responses then add route_ids.",
    )


class TSPInstanceIn(_RoutingInstanceIn):
    """A TSP in cosolve's JSON form (at least 3 nodes)."""

    problem: Literal["tsp"] | None = Field(default=None, description="Optional: the path says.")


class CVRPInstanceIn(_RoutingInstanceIn):
    """A CVRP in cosolve's JSON form: node ``depot`` is the depot (demand 0)."""

    problem: Literal["cvrp"] | None = Field(default=None, description="Optional: the path says.")
    demands: list[Int64] = Field(description="Integer demand per node, 0 at the depot.")
    capacity: Int64 = Field(description="Vehicle capacity (a positive integer).")
    depot: Int64 = Field(default=0, description="Index of the depot node.")
    max_vehicles: Int64 | None = Field(
        default=None,
        description="Fleet size cap (optional; at most one vehicle per customer). Leave it out "
        "for an unlimited fleet.",
    )


class CVRPTWInstanceIn(CVRPInstanceIn):
    """A CVRP with time windows (Solomon's VRPTW) in cosolve's JSON form. Travel time equals
    distance under ``distance``; a vehicle arriving early waits; the depot's window is the
    horizon (leave at or after its earliest, return by its latest)."""

    problem: Literal["cvrptw"] | None = Field(  # type: ignore[assignment]
        default=None, description="Optional: the path says."
    )
    time_windows: list[tuple[DataNumber, DataNumber]] = Field(
        description="[earliest, latest] start of service per node; the depot's is the horizon."
    )
    service_times: list[DataNumber] | DataNumber | None = Field(
        default=None,
        description="Service time per node (0 at the depot), or one number for every "
        "customer. Default: 0.",
    )


# -- solve -------------------------------------------------------------------------------
class SolveOptions(_Strict):
    """Which solver to run and its budget; the same fields arrive as form fields in uploads."""

    solver: str = Field(default="ortools", min_length=1, max_length=100,
                        description='A solver name from GET /v1/solvers, or "auto" (picked '
                        "by problem and size from the measured table; the answer's `auto` "
                        "says which and why).")
    time_limit: Number | None = Field(
        default=None, gt=0, allow_inf_nan=False,
        description="Seconds the solver may run (server default when omitted; capped by the "
        "server's max_time_limit).",
    )
    seed: int = Field(default=0, ge=0, le=MAX_SEED, description=ROUTING_SEED)
    max_solutions: int | None = Field(
        default=None, ge=1, le=MAX_SOLUTIONS, description=MAX_SOLUTIONS_DOC)


class TSPSolveRequest(SolveOptions):
    model_config = ConfigDict(json_schema_extra=examples.TSP_SOLVE)
    instance: TSPInstanceIn


class CVRPSolveRequest(SolveOptions):
    model_config = ConfigDict(json_schema_extra=examples.CVRP_SOLVE)
    instance: CVRPInstanceIn


class CVRPTWSolveRequest(SolveOptions):
    model_config = ConfigDict(json_schema_extra=examples.CVRPTW_SOLVE)
    instance: CVRPTWInstanceIn


class UploadFleet(_Strict):
    """A fleet cap for an uploaded CVRP or CVRPTW file (a JSON instance carries its own)."""

    max_vehicles: int | None = Field(
        default=None, ge=1, le=10_000_000,
        description="CVRP and CVRPTW: at most this many vehicles, in place of the file's "
        "VEHICLES if it has one (CVRPLIB's X files have none). Refused for a TSP.",
    )


class SolveUploadOptions(SolveOptions, UploadFleet):
    """The form fields of a solve upload."""


class SolveUpload(SolveUploadOptions):
    """multipart/form-data alternative: the instance as a file plus the same options."""

    file: bytes = Field(
        description="A .tsp (TSPLIB), .vrp (CVRPLIB/VRPLIB), .vrptw (LKH-3 CVRPTW) or .json "
        "instance file, optionally .gz."
    )


class StopTimes(BaseModel):
    """When a CVRPTW vehicle reaches a stop and leaves it, as the checker simulates it."""

    node: int = Field(description="The stop's 0-based node index.")
    id: int | None = Field(default=None, description="The stop in your ids, when the "
                           "instance had ids.")
    arrival: float
    waiting: float = Field(description="Wait for the window to open: start − arrival.")
    start: float = Field(description="Start of service (within the stop's window when "
                         "feasible).")
    departure: float = Field(description="start + the stop's service time.")


class RouteDetail(BaseModel):
    """One route's figures, recomputed from the instance under its distance convention."""

    route: int = Field(description="The route's index in `routes`.")
    stops: int = Field(description="Customers visited (TSP: nodes of the tour).")
    load: int | None = Field(description="Sum of the route's demands (null for a TSP).")
    capacity: int | None = Field(description="The vehicle capacity (null for a TSP).")
    distance: float = Field(description="Length of the route, depot to depot.")
    duration: float = Field(description="Travel time (equal to distance), plus service and "
                            "waiting for a CVRPTW: end − start.")
    service: float | None = Field(default=None, description="CVRPTW: service time on "
                                  "the route.")
    waiting: float | None = Field(default=None, description="CVRPTW: time spent waiting "
                                  "for windows to open.")
    start: float | None = Field(default=None, description="CVRPTW: leaving the depot (when "
                                "it opens).")
    end: float | None = Field(default=None, description="CVRPTW: back at the depot.")
    schedule: list[StopTimes] | None = Field(default=None, description="CVRPTW: the times at "
                                             "each stop, in visiting order.")


class RoutingSummary(BaseModel):
    """Totals over `route_details`."""

    routes: int = Field(description="Routes listed (empty ones included).")
    vehicles_used: int = Field(description="Routes that visit a customer.")
    total_load: int | None = Field(description="Sum of the loads (null for a TSP).")
    total_distance: float = Field(description="Sum of the route distances: the cost.")
    total_duration: float
    total_service: float | None = Field(default=None, description="CVRPTW only.")
    total_waiting: float | None = Field(default=None, description="CVRPTW only.")
    latest_return: float | None = Field(default=None, description="CVRPTW: the last vehicle "
                                        "back at the depot.")


class RoutingUnits(BaseModel):
    """What the cost, distances and times are measured in."""

    distance: str = Field(description="The unit of costs and distances, in words.")
    time: str = Field(description="The unit of times and durations, in words.")
    scale: int = Field(description="The file's SCALE (1 if none): every distance and time is "
                       "this many times the unscaled figure (LKH-3's Solomon files: 10).")


#: Per-route figures, a summary and units; null when the plan cannot be read against the
#: instance (its violations say why).
ROUTE_DETAILS_DOC = ("One entry per route of `routes`, in order, recomputed from the instance; "
                     "null when the plan cannot be read against it.")


class SkippedSolver(BaseModel):
    solver: str
    reason: str = Field(description="Why it could not take this request.")


class AutoChoice(BaseModel):
    """What `solver: "auto"` picked, from the measured table (docs: Which solver)."""

    picked: str = Field(description="The solver that ran (also `solver`).")
    reason: str = Field(description="The table's row and the benchmark figure behind it.")
    band: str = Field(description="The row: problem, size band, fleet cap, time limit.")
    order: list[str] = Field(description="The row's solvers, best first.")
    skipped: list[SkippedSolver] = Field(description="Solvers before `picked` that could not "
                                         "take the request here, and why.")


class SolutionBody(BaseModel):
    """A solution, its cost recomputed by the instance and checked by an independent checker
    (a solve's answer and a job's solution share these fields)."""

    problem: str
    instance: str = Field(description="The instance's name.")
    nodes: int
    solver: str
    cost: float | None = Field(description="Total length; null if the answer is unusable.")
    distance: str = Field(description="The distance convention of the cost.")
    feasible: bool
    violations: list[str] = Field(description="What the checker found wrong (empty if none).")
    wall_time: float = Field(description="Seconds the solver ran.")
    routes: list[list[int]] = Field(
        description="0-based node indices. TSP: one closed tour. CVRP and CVRPTW: customers per "
        "route, the depot at both ends left implicit."
    )
    route_ids: list[list[int]] | None = Field(
        default=None, description="The routes in your ids, when the instance had ids."
    )
    stats: dict[str, Any] = Field(description="Solver statistics.")
    auto: AutoChoice | None = Field(default=None, description='Present when `solver` was '
                                    '"auto": which solver it picked and why.')
    route_details: list[RouteDetail] | None = Field(default=None, description=ROUTE_DETAILS_DOC)
    summary: RoutingSummary | None = None
    units: RoutingUnits | None = None


class SolveResponse(SolutionBody):
    """A solve's answer: the solution and the budget it was given."""

    time_limit: float
    seed: int


class TSPSolveResponse(SolveResponse):
    tour: list[int] = Field(description="The tour (same as routes[0]).")


class CVRPSolveResponse(SolveResponse):
    pass


class CVRPTWSolveResponse(SolveResponse):
    pass


# -- compare -----------------------------------------------------------------------------
class CompareOptions(_Strict):
    """Several solvers on the same instance and budget, one after another."""

    solvers: list[str] = Field(min_length=1, description="Solver names, each at most once.")
    time_limit: Number | None = Field(
        default=None, gt=0, allow_inf_nan=False,
        description="Seconds per solver; all solvers together must fit the server's "
        "max_time_limit.",
    )
    seed: int = Field(default=0, ge=0, le=MAX_SEED, description=ROUTING_SEED)
    reference: Number | None = Field(
        default=None, gt=0, allow_inf_nan=False,
        description="A known cost (e.g. the optimum) to report gaps against.",
    )
    svg: bool = Field(default=False, description="Add an SVG drawing of each solution and "
                      "one cost-over-time plot of every solver (`plot`).")


class TSPCompareRequest(CompareOptions):
    model_config = ConfigDict(json_schema_extra=examples.TSP_COMPARE)
    instance: TSPInstanceIn


class CVRPCompareRequest(CompareOptions):
    model_config = ConfigDict(json_schema_extra=examples.CVRP_COMPARE)
    instance: CVRPInstanceIn


class CVRPTWCompareRequest(CompareOptions):
    model_config = ConfigDict(json_schema_extra=examples.CVRPTW_COMPARE)
    instance: CVRPTWInstanceIn


class CompareUploadOptions(CompareOptions, UploadFleet):
    """The form fields of a compare upload."""


class CompareUpload(CompareUploadOptions):
    """multipart/form-data alternative: the instance as a file, solvers comma-separated."""

    solvers: str = Field(  # type: ignore[assignment]
        description="Comma-separated solver names, e.g. ortools,pyvrp (or the field repeated)."
    )
    file: bytes = Field(
        description="A .tsp, .vrp, .vrptw or .json instance file, optionally .gz."
    )
    reference_file: bytes | None = Field(
        default=None,
        description="A known solution of the instance, in place of `reference`: CVRPLIB's "
        "NAME.sol, TSPLIB's NAME.opt.tour, or LKH-3's tour of a CVRP or CVRPTW (optionally "
        ".gz). It is checked by the independent checker and its cost recomputed in the "
        "instance's convention; one that is not a feasible solution of the instance is a 422 "
        "naming reference_file.",
    )


class CompareRow(BaseModel):
    """One solver's result; ``error`` says why there is no solution."""

    solver: str
    cost: float | None
    gap_to_best: float | None = Field(description="Percent above the best feasible row.")
    gap_to_reference: float | None = Field(description="Percent above the reference cost.")
    wall_time: float | None = Field(
        description="Seconds the solver took, also when it failed (null only when it was "
        "refused before it ran)."
    )
    feasible: bool
    violations: list[str]
    error: str | None
    distance: str = Field(description="The distance convention of the cost.")
    routes: list[list[int]] | None = Field(
        default=None, description="The plan, as a solve returns it (0-based node indices; "
        "CVRP and CVRPTW: customers per route); null when the row has no solution."
    )
    route_ids: list[list[int]] | None = Field(
        default=None, description="The routes in your ids, when the instance had ids."
    )
    stats: dict[str, Any] = Field(
        default_factory=dict, description="Solver statistics, as a solve returns them.")
    auto: AutoChoice | None = Field(default=None, description='The "auto" row: which solver '
                                    "it ran and why.")
    route_details: list[RouteDetail] | None = Field(default=None, description=ROUTE_DETAILS_DOC)
    summary: RoutingSummary | None = None
    units: RoutingUnits | None = None
    svg: str | None = Field(default=None, description="SVG drawing, when svg was requested.")
    progress: list[tuple[float, float]] = Field(
        default_factory=list, description="The best cost over time, [[elapsed s, best], ...], "
        "never increasing; it ends at the row's checked cost (empty without a feasible one).")


class CompareResponse(BaseModel):
    problem: str
    instance: str
    nodes: int
    distance: str
    time_limit: float = Field(description="Seconds given to each solver.")
    seed: int
    reference: float | None
    reference_file: str | None = Field(
        default=None, description="The uploaded known solution the reference was checked and "
        "costed from (null for a reference given as a number, or none).")
    best_solver: str | None = Field(description="The cheapest feasible row, if any.")
    rows: list[CompareRow]
    plot: str | None = Field(
        default=None, description="With svg=true: one SVG chart of every row's best cost "
        "over time (a step line per solver, from `progress`).")
