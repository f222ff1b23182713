"""VROOM's documents as the OpenAPI document shows them: the input a VROOM client posts
unchanged, and the output it reads back, plus cosolve's check and the comparison's rows.

The input models document the format for clients and generated code; the body itself is read
by the domain parser (``solvers.routing.vrp.parse``), the one place that says what is
supported, so a field the models list but the parser refuses is a 422 naming it, never a
field silently dropped by validation here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from solvers.contract import MAX_SEED

Amounts = list[int]
Window = tuple[int, int]
Coordinates = tuple[float, float]


class _Open(BaseModel):
    """VROOM keys are documented; the parser says which are refused."""

    model_config = ConfigDict(extra="allow")


class VrpJob(_Open):
    id: int = Field(description="The job's id, unique among jobs.")
    description: str | None = None
    location: Coordinates | None = Field(default=None, description="[lon, lat] (or [x, y] "
                                         "with planar coordinates).")
    location_index: int | None = Field(default=None, description="Row of the matrices.")
    setup: int | None = Field(default=None, description="Setup time, seconds.")
    service: int | None = Field(default=None, description="Service time, seconds.")
    delivery: Amounts | None = Field(default=None, description="Amount delivered, one per "
                                     "capacity dimension.")
    pickup: Amounts | None = Field(default=None, description="Amount picked up.")
    skills: list[int] | None = None
    priority: int | None = Field(default=None, description="0 to 100.")
    time_windows: list[Window] | None = None


class VrpShipmentStep(_Open):
    id: int = Field(description="Unique among the shipments' pickups (or deliveries).")
    description: str | None = None
    location: Coordinates | None = None
    location_index: int | None = None
    setup: int | None = None
    service: int | None = None
    time_windows: list[Window] | None = None


class VrpShipment(_Open):
    pickup: VrpShipmentStep
    delivery: VrpShipmentStep
    amount: Amounts | None = Field(default=None, description="Carried from the pickup to the "
                                   "delivery, on one vehicle.")
    skills: list[int] | None = None
    priority: int | None = None


class VrpBreak(_Open):
    id: int
    time_windows: list[Window] | None = None
    service: int | None = None
    description: str | None = None
    max_load: Amounts | None = None


class VrpCosts(_Open):
    fixed: int | None = Field(default=None, description="Paid once if the vehicle is used.")
    per_hour: int | None = Field(default=None, description="Per hour of travel (default "
                                 "3600: the cost is the duration in seconds).")
    per_km: int | None = Field(default=None, description="Per kilometre travelled.")


class VrpStep(_Open):
    type: str = Field(description="start, job, pickup, delivery, break or end.")
    id: int | None = None
    service_at: int | None = None
    service_after: int | None = None
    service_before: int | None = None


class VrpVehicle(_Open):
    id: int
    profile: str | None = Field(default=None, description="Routing profile, the key of "
                                "`matrices` (default car).")
    description: str | None = None
    start: Coordinates | None = None
    start_index: int | None = None
    end: Coordinates | None = None
    end_index: int | None = None
    capacity: Amounts | None = None
    costs: VrpCosts | None = None
    skills: list[int] | None = None
    time_window: Window | None = None
    breaks: list[VrpBreak] | None = None
    speed_factor: float | None = None
    max_tasks: int | None = None
    max_travel_time: int | None = None
    max_distance: int | None = None
    steps: list[VrpStep] | None = Field(default=None, description="The starting plan (warm "
                                        "start): kept where it stays feasible, the answer's "
                                        "`cosolve.moved` lists what moved.")


class VrpMatrices(_Open):
    durations: list[list[int]] | None = Field(default=None, description="Seconds, square.")
    distances: list[list[int]] | None = Field(default=None, description="Metres, square.")
    costs: list[list[int]] | None = None


class VrpDocument(_Open):
    """VROOM's input document (VROOM's docs/API.md), posted as it is."""

    jobs: list[VrpJob] | None = None
    shipments: list[VrpShipment] | None = None
    vehicles: list[VrpVehicle]
    matrices: dict[str, VrpMatrices] | None = Field(
        default=None, description="Per profile; without them, travel times come from the "
        "coordinates (haversine for lon/lat at the server's speed, Euclidean for planar).")


# -- output ---------------------------------------------------------------------------------
class VrpCheck(BaseModel):
    feasible: bool
    violations: list[str]
    cost: float | None = None


class VrpCosolve(_Open):
    """What cosolve adds to VROOM's output: who solved it and the independent check."""

    solver: str
    check: VrpCheck
    moved: list[Any] | None = Field(default=None, description="Warm start: the tasks that "
                                    "left their place in the starting plan.")
    distance_model: str | None = Field(default=None, description="matrix, haversine or "
                                       "euclidean.")


class VrpSolution(_Open):
    """VROOM's output document: code, summary, unassigned (each with its `reason` code),
    routes with their steps (arrival, duration, waiting_time, load), plus `cosolve`, and
    `geojson` when asked for (geometry=geojson)."""

    code: int
    summary: dict[str, Any]
    unassigned: list[dict[str, Any]]
    routes: list[dict[str, Any]]
    cosolve: VrpCosolve
    geojson: dict[str, Any] | None = Field(default=None, description="A FeatureCollection: "
                                           "a LineString per route, a Point per task.")


class VrpCompareRow(BaseModel):
    solver: str
    cost: float | None = Field(description="VROOM's summary cost of the answer.")
    unassigned: int | None = Field(description="Tasks left unassigned.")
    feasible: bool
    violations: list[str]
    wall_time: float = Field(description="Seconds the row took.")
    error: str | None = None
    gap_to_best: float | None = Field(
        default=None, description="Percent above the best row's cost, for rows that assign "
        "as many tasks as the best.")
    progress: list[tuple[float, float]] = Field(
        default_factory=list, description="[[elapsed s, best cost], ...].")
    solution: VrpSolution | None = None


class VrpCompareResponse(BaseModel):
    time_limit: float
    seed: int
    tasks: int
    vehicles: int
    best_solver: str | None = Field(description="The feasible row with the fewest unassigned "
                                    "tasks, then the lowest cost.")
    rows: list[VrpCompareRow]


# -- jobs ------------------------------------------------------------------------------------
class VrpJobRequest(BaseModel):
    """A VROOM document as a job (``POST /v1/jobs``): its solution is VROOM's output
    document (``GET /v1/jobs/{id}/solution``)."""

    model_config = ConfigDict(extra="forbid")

    problem: Literal["vrp"]
    instance: dict[str, Any] = Field(description="The VROOM document (VrpDocument).")
    solver: str = Field(default="vroom", min_length=1, max_length=100,
                        description="A solver of VROOM documents (GET /v1/solvers: those "
                        "with `vrp_features`).")
    time_limit: float | None = Field(default=None, gt=0, allow_inf_nan=False,
                                     description="Seconds (server default when omitted).")
    seed: int = Field(default=0, ge=0, le=MAX_SEED)
