"""Request and response bodies of the job and batch endpoints."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from app.schemas import examples
from app.schemas.routing import (
    MAX_SEED,
    MAX_SOLUTIONS,
    MAX_SOLUTIONS_DOC,
    ROUTING_SEED,
    CVRPInstanceIn,
    CVRPTWInstanceIn,
    Number,
    SolutionBody,
    TSPInstanceIn,
    UploadFleet,
    _Strict,
)

JobState = Literal["queued", "running", "succeeded", "failed", "cancelled"]


def iso_utc(seconds: float) -> str:
    """Unix seconds as ISO 8601 in UTC (``2026-12-07T05:00:45.123456+00:00``), which
    ``datetime.fromisoformat`` and every JSON client read; the numbers stay beside them."""
    return datetime.fromtimestamp(seconds, UTC).isoformat()


def _iso_or_none(seconds: float | None) -> str | None:
    return None if seconds is None else iso_utc(seconds)


class JobOptions(_Strict):
    """Solver and budget of a job; the same fields arrive as form fields with an upload."""

    solver: str = Field(default="ortools", min_length=1, max_length=100,
                        description='A solver name from GET /v1/solvers, or "auto" (picked '
                        "by problem and size; the solution's `auto` says which and why).")
    time_limit: Number | None = Field(
        default=None, gt=0, allow_inf_nan=False,
        description="Seconds the solver may run (server default when omitted; capped by the "
        "server's max_job_time_limit).",
    )
    seed: int = Field(default=0, ge=0, le=MAX_SEED, description=ROUTING_SEED)
    max_solutions: int | None = Field(
        default=None, ge=1, le=MAX_SOLUTIONS, description=MAX_SOLUTIONS_DOC)


class BatchOptions(JobOptions, UploadFleet):
    """The form fields of a batch: every file gets the same budget (time limit and
    max_solutions) and fleet cap (a TSP file with a cap is listed as rejected); `solver` is one
    name or "auto" for every file, or one per problem kind: "tsp=ils,cvrp=pyvrp,cvrptw=auto"
    (a file of a kind it leaves out is rejected)."""


class TSPJobRequest(JobOptions):
    model_config = ConfigDict(json_schema_extra=examples.TSP_JOB)
    problem: Literal["tsp"]
    instance: TSPInstanceIn


class CVRPJobRequest(JobOptions):
    model_config = ConfigDict(json_schema_extra=examples.CVRP_JOB)
    problem: Literal["cvrp"]
    instance: CVRPInstanceIn


class CVRPTWJobRequest(JobOptions):
    model_config = ConfigDict(json_schema_extra=examples.CVRPTW_JOB)
    problem: Literal["cvrptw"]
    instance: CVRPTWInstanceIn


class JobUpload(JobOptions, UploadFleet):
    """multipart/form-data: the instance file (its type says the problem) plus options. With
    ``max_vehicles`` the job keeps the capped instance as JSON, named after the file
    (X-n101-k25.vrp.json)."""

    file: bytes = Field(
        description="A .tsp, .vrp, .vrptw or .json instance file, optionally .gz."
    )
    problem: Literal["tsp", "cvrp", "cvrptw"] | None = Field(
        default=None, description="Optional: checked against the file when given."
    )
    reference_file: bytes | None = Field(
        default=None,
        description="Optional: a known solution of the instance (CVRPLIB's NAME.sol, TSPLIB's "
        "NAME.opt.tour, LKH-3's tour of a CVRP or CVRPTW, optionally .gz), checked by the "
        "independent checker and costed in the instance's convention: the job's status gives "
        "the gap to it. One that is not a feasible solution is a 422 naming reference_file.",
    )


class JobLinks(BaseModel):
    self: str
    events: str
    solution: str
    progress: str


class JobSeries(BaseModel):
    """A job's best cost over time (``GET /v1/jobs/{id}/progress``)."""

    id: str
    state: JobState
    solver: str
    final: bool = Field(description="The job has finished: the series is complete.")
    cost: float | None = Field(description="The checked cost of the final solution, if any.")
    points: list[tuple[float, float]] = Field(
        description="[[elapsed s, best cost], ...]: every improvement (at most 1,000 points, "
        "thinned evenly past that), the best never increasing; the last point repeats the "
        "best at the end of the run.")


class JobProgress(BaseModel):
    elapsed: float | None = Field(description="Seconds the solver has run.")
    iterations: int | None
    best_cost: float | None = Field(description="Best cost found so far.")
    message: str | None


class JobSolution(SolutionBody):
    """A job's solution as JSON (``GET /v1/jobs/{id}/solution``): a solve's answer, checked
    and costed the same way, plus ``partial`` and, for CVRP and CVRPTW, the ``depot``."""

    tour: list[int] | None = Field(default=None, description="TSP: the tour (routes[0]).")
    depot: int | None = Field(default=None,
                              description="CVRP and CVRPTW: the depot's 0-based index.")
    partial: bool = Field(description="The best solution found before a cancel.")


class JobIncumbent(JobSolution):
    """A running job's best plan so far (``GET /v1/jobs/{id}/incumbent``): what its solver
    last published, rebuilt on the job's instance, its cost recomputed and checked as every
    answer; always ``partial``."""

    id: str
    state: JobState
    solver_cost: float | None = Field(
        description="The cost the solver reported for this plan (``cost`` is recomputed).")


class JobStatus(BaseModel):
    """A job's state and progress; ``partial`` marks a best-so-far kept after a cancel."""

    id: str
    batch_id: str | None
    state: JobState
    problem: str
    solver: str
    time_limit: float
    seed: int
    filename: str
    nodes: int
    created_at: float
    started_at: float | None
    finished_at: float | None
    expires_at: float | None
    attempt: int
    cancel_requested: bool
    progress: JobProgress
    cost: float | None
    feasible: bool | None
    partial: bool
    error: str | None
    max_vehicles: int | None = Field(
        default=None, description="The fleet cap the job solves with (CVRP, CVRPTW): the "
        "instance's max_vehicles, a file's VEHICLES, or the max_vehicles form field.")
    max_solutions: int | None = Field(
        default=None, description="The budget in solutions the job solves with (polynet), "
        "null without one.")
    reference: float | None = Field(
        default=None, description="The cost of the known solution uploaded with the file "
        "(its reference_file part, or a batch's NAME.sol / NAME.opt.tour), checked and costed "
        "in the instance's convention; null without one.")
    reference_file: str | None = Field(
        default=None, description="The name the known solution came as.")
    gap_percent: float | None = Field(
        default=None, description="Percent above the reference, once the job has succeeded "
        "with a feasible plan.")
    links: JobLinks

    @computed_field(description="created_at in ISO 8601, UTC.")  # type: ignore[prop-decorator]
    @property
    def created(self) -> str:
        return iso_utc(self.created_at)

    @computed_field(description="started_at in ISO 8601, UTC.")  # type: ignore[prop-decorator]
    @property
    def started(self) -> str | None:
        return _iso_or_none(self.started_at)

    @computed_field(description="finished_at in ISO 8601, UTC.")  # type: ignore[prop-decorator]
    @property
    def finished(self) -> str | None:
        return _iso_or_none(self.finished_at)

    @computed_field(description="expires_at in ISO 8601, UTC.")  # type: ignore[prop-decorator]
    @property
    def expires(self) -> str | None:
        return _iso_or_none(self.expires_at)


class JobList(BaseModel):
    jobs: list[JobStatus]
    total: int
    offset: int
    limit: int


class BatchFileResult(BaseModel):
    filename: str
    job_id: str
    state: JobState
    nodes: int
    cost: float | None
    feasible: bool | None
    partial: bool
    wall_time: float | None = Field(description="Seconds the solver ran (so far, while it "
                                    "runs); parsing and warm-up not counted.")
    error: str | None
    reference: float | None = Field(
        default=None, description="The cost of the file's known solution uploaded in the same "
        "batch (NAME.sol, NAME.opt.tour or NAME.tour, optionally .gz, in the same folder of an "
        "archive), checked as a feasible solution of the instance (fleet cap included) and "
        "recomputed in its convention; null without one.")
    reference_file: str | None = Field(
        default=None, description="The name of the known solution `reference` comes from.")
    gap_percent: float | None = Field(
        default=None, description="Percent above `reference`: 100 * (cost / reference - 1), "
        "for a job that succeeded with a feasible solution; null otherwise.")


class ProblemTotals(BaseModel):
    """One problem kind's files in a batch: a TSP's lengths and a CVRP's costs are summed
    apart, never together."""

    files: int = Field(description="Jobs of this kind (rejected files have no kind).")
    solved: int = Field(description="Succeeded with a feasible solution.")
    total_cost: float | None = Field(description="Sum over this kind's solved files.")
    with_reference: int = Field(description="Solved files with a known solution.")
    mean_gap_percent: float | None = Field(description="Their mean gap to it.")


class BatchSummary(BaseModel):
    files: int = Field(description="Every file of the upload (archive members counted one by "
                       "one): the jobs by state below plus the rejected ones (a known solution "
                       "used as a file's reference is not counted: its result names it).")
    queued: int
    running: int
    succeeded: int
    failed: int
    cancelled: int
    rejected: int = Field(description="Files refused at submission (listed in `rejected` with "
                          "the reason); they have no job.")
    solved: int = Field(default=0, description="Succeeded with a feasible solution: the files "
                        "`total_cost` sums (a succeeded job's plan can be infeasible, e.g. "
                        "OR-Tools dropping customers under a fleet cap; its row says why).")
    total_cost: float | None = Field(description="Sum over files solved with a feasible "
                                     "solution (an infeasible one's row says why in its error; "
                                     "a cancelled one's partial plan is not counted); null "
                                     "when they are of more than one problem kind: "
                                     "`by_problem` has each kind's.")
    by_problem: dict[str, ProblemTotals] = Field(
        default_factory=dict, description="Totals per problem kind (tsp, cvrp, cvrptw), for "
        "the kinds the batch's jobs hold.")
    with_reference: int = Field(default=0, description="Files solved (feasible) that have a "
                                "known solution in the batch: those `mean_gap_percent` "
                                "averages.")
    mean_gap_percent: float | None = Field(
        default=None, description="The mean of the results' `gap_percent`; null when no "
        "solved file has a reference.")


class BatchStatus(BaseModel):
    id: str
    solver: str
    time_limit: float
    seed: int | None = Field(default=None, description="The seed every file of the batch was "
                             "solved with (the seed form field).")
    max_vehicles: int | None = Field(
        default=None, description="The fleet cap every file of the batch was given (the "
        "max_vehicles form field), null without one.")
    max_solutions: int | None = Field(
        default=None, description="The budget in solutions every file of the batch was given "
        "(the max_solutions form field), null without one.")
    created_at: float = Field(description="Unix seconds; `created` gives it in ISO 8601.")
    done: bool
    summary: BatchSummary
    results: list[BatchFileResult]
    rejected: list[dict[str, Any]] = Field(
        default_factory=list, description="Files refused at submission, with the reason."
    )

    @computed_field(description="created_at in ISO 8601, UTC.")  # type: ignore[prop-decorator]
    @property
    def created(self) -> str:
        return iso_utc(self.created_at)
