"""Request and response bodies of the workflow-scheduling endpoints.

As for the other families, these models check JSON types and sizes only; every rule about a
workflow's values (unique ids, known parents, no cycle, runtimes ≥ 0) is checked once, by the
domain (``solvers.scheduling.workflow.build_workflow``), so the API and the CLI reject the same
workflows with the same words.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.schemas import examples
from app.schemas.routing import MAX_SEED, Number

# the models the HTTP session shares with the CLI, part of this resource's schemas too
from jobs.scheduling import MAX_EVENTS as MAX_EVENTS
from jobs.scheduling import MAX_TEMPLATE_TASKS, SessionEvents, WorkflowIn
from jobs.scheduling import TaskFinished as TaskFinished
from jobs.scheduling import TaskIn as TaskIn
from jobs.scheduling import WorkflowArrived as WorkflowArrived
from solvers.scheduling.registry import RECOMMENDED_POLICY

#: Caps that keep every request small and finite (413/422 above them).
MAX_TEMPLATES = 32
MAX_WORKFLOWS_COUNT = 20_000
MAX_POLICIES = 12
MAX_RATES = 10
DEFAULT_SIM_POLICIES = ["heft_slack", "heft", "eft", "peft", "est", "eft_stale"]


class _Strict(BaseModel):
    """Unknown fields are errors, so a typo ("workflow_count") is reported, not ignored."""

    model_config = ConfigDict(extra="forbid")


class GeneratorIn(_Strict):
    """Workflow templates drawn from the Montage, CyberShake, Inspiral and SIPHT shapes."""

    shapes: list[Literal["montage", "cybershake", "inspiral", "sipht"]] = Field(
        default_factory=lambda: ["montage", "cybershake", "inspiral", "sipht"], min_length=1,
        max_length=MAX_TEMPLATES)
    tasks: int = Field(default=30, ge=10, le=MAX_TEMPLATE_TASKS,
                       description="About this many tasks per workflow (30 gives the classic "
                       "25/30/30/29-task shapes).")
    seed: int = Field(default=0, ge=0, le=MAX_SEED, description="Seed of the runtime noise.")


class SimulateOptions(_Strict):
    """Everything but the workflows; multipart uploads send these as form fields."""

    pool: str = Field(default="6x4", max_length=5000,
                      description="TYPESxEACH over the vCPU types 8,16,32,48,64,96 (6x4 = 24 "
                      "VMs, 5x5 = 25 VMs), or explicit vCPUs '8,16,96'.")
    rates: list[Number] = Field(default_factory=lambda: [5.4], min_length=1,
                               max_length=MAX_RATES,
                               description="Poisson arrival rates in workflows per hour; "
                               "several split the stream into equal consecutive segments "
                               "(a rate change mid-stream), so at most one rate per workflow "
                               "(workflows_count).")
    workflows_count: int = Field(default=100, ge=1, le=MAX_WORKFLOWS_COUNT,
                                 description="Workflows in the stream.")
    policies: list[str] = Field(default_factory=lambda: list(DEFAULT_SIM_POLICIES),
                                min_length=1, max_length=MAX_POLICIES,
                                description="Policy names (GET /v1/scheduling/policies).")
    seed: int = Field(default=0, ge=0, le=MAX_SEED,
                      description="Seeds arrivals, workflow types and tie-breaking.")
    gantt: bool = Field(default=False, description="Add a Gantt chart (SVG) per policy.")
    gantt_workflows: int = Field(default=10, ge=1, le=50,
                                 description="Workflows the Gantt chart shows.")
    schedule: bool = Field(default=False, description="Add each policy's whole schedule: every "
                           "workflow's arrival and finish, every task's VM, ready, start and "
                           "finish time (to check it, replay it or recompute the flowtimes).")


class SimulateRequest(SimulateOptions):
    """Inline workflows, or generator settings; neither means the four classic shapes."""

    model_config = ConfigDict(json_schema_extra=examples.SIMULATE)
    workflows: list[WorkflowIn] | None = Field(default=None, min_length=1,
                                               max_length=MAX_TEMPLATES)
    generator: GeneratorIn | None = None


class SimulateUpload(_Strict):
    """multipart/form-data: one or more ``file`` parts (DAX .xml/.dax or WfCommons .json,
    optionally .gz) plus the options as form fields (rates and policies comma-separated)."""

    # the bounds SimulateOptions enforces on the form's values, documented here too
    file: list[bytes] = Field(min_length=1, max_length=MAX_TEMPLATES)
    pool: str = Field(default="6x4", max_length=5000)
    rates: str = Field(default="5.4", description="e.g. '5.4' or '5.4,9'.")
    workflows_count: int = Field(default=100, ge=1, le=MAX_WORKFLOWS_COUNT)
    policies: str = Field(default=",".join(DEFAULT_SIM_POLICIES))
    seed: int = Field(default=0, ge=0, le=MAX_SEED)
    gantt: bool = False
    gantt_workflows: int = Field(default=10, ge=1, le=50)
    schedule: bool = False


class WorkflowInfo(BaseModel):
    name: str
    tasks: int
    edges: int
    total_runtime: float = Field(description="Seconds of all tasks' runtimes as the workflow "
                                 "gives them (on a 16-vCPU VM; a VM of v vCPUs takes 16 / v "
                                 "times as long).")
    critical_path: float = Field(description="Seconds of the longest chain of runtimes, in the "
                                 "same units as total_runtime.")


class ScheduledWorkflow(BaseModel):
    workflow: int = Field(description="Arrival order in the stream, from 0.")
    template: str
    template_index: int = Field(description="Index into the response's workflows: two "
                                "uploaded files may share a name.")
    arrival: float = Field(description="Seconds from the stream's start.")
    finish: float
    flowtime: float = Field(description="finish − arrival, seconds.")


class ScheduledTask(BaseModel):
    workflow: int
    task: str = Field(description="The task's id in its workflow.")
    vm: int = Field(description="Index into the response's vcpus.")
    ready: float = Field(description="When its last parent finished (the decision's time).")
    start: float = Field(description="When it started: ready, or later when its VM's queue "
                         "was busy.")
    finish: float


class Schedule(BaseModel):
    """A policy's whole schedule, in decision order."""

    workflows: list[ScheduledWorkflow]
    tasks: list[ScheduledTask]


class PolicyRow(BaseModel):
    """One policy's result on the stream; ``error`` says why there is none."""

    policy: str
    kind: str | None
    mean_flowtime: float | None = Field(description="Seconds; the objective.")
    median_flowtime: float | None
    p95_flowtime: float | None
    makespan: float | None = Field(description="Seconds from the first arrival to the last "
                                   "finish.")
    utilization: float | None = Field(description="Busy fraction of all VMs over the makespan.")
    decisions: int | None
    wall_time: float | None
    latency_p50_ms: float | None = Field(
        default=None, description="Median time the policy took per assignment, milliseconds.")
    latency_p95_ms: float | None = Field(
        default=None, description="95th percentile of the time per assignment, milliseconds.")
    gap_to_best: float | None = Field(default=None, description="Percent above the best row.")
    error: str | None = None
    gantt_svg: str | None = None
    schedule: Schedule | None = Field(default=None, description="With schedule=true.")
    checked: bool | None = Field(
        default=None, description="True: the schedule was verified by the independent checker "
        "(every task once, after its workflow's arrival and its parents' finish, runtime × 16 "
        "/ vCPUs long, one at a time in FIFO order per VM) and the flowtimes, makespan and "
        "utilization recomputed from it. False: it failed; the row has no numbers, `error` "
        "says so and `violations` lists what was found. Null: the policy did not run.")
    violations: list[str] | None = Field(
        default=None, description="With checked=false: what the checker found wrong.")


class SimulateWarning(BaseModel):
    """Something about the run the numbers alone do not say (an overloaded pool)."""

    code: Literal["pool-overloaded", "flowtimes-growing"] = Field(
        description="pool-overloaded: a policy kept the VMs busier than 0.9 of the makespan. "
        "flowtimes-growing: the last third of the stream took over twice as long, relative to "
        "each workflow's critical path, as the first third (the queue never drains).")
    policies: list[str] = Field(description="The policies whose runs show it.")
    detail: str


class SimulateResponse(BaseModel):
    pool: str
    vms: int
    vcpus: list[float]
    rates: list[float]
    workflows_count: int
    seed: int
    generator: GeneratorIn | None = Field(
        default=None, description="The generator settings that made the workflows (the defaults "
        "when neither workflows nor generator was given; its seed sets their runtimes), so the "
        "answer names every seed it depends on; null for given workflows.")
    workflows: list[WorkflowInfo]
    best_policy: str | None
    rows: list[PolicyRow]
    warnings: list[SimulateWarning] = Field(
        default_factory=list, description="Load warnings, computed from the results: empty "
        "when the pool keeps up with the stream.")


class PolicyInfo(BaseModel):
    name: str
    kind: str
    description: str
    available: bool
    unavailable_reason: str | None


# -- sessions -----------------------------------------------------------------------------------
class SessionCreate(_Strict):
    model_config = ConfigDict(json_schema_extra=examples.SESSION)
    pool: str = Field(default="6x4", max_length=5000)
    policy: str = Field(default=RECOMMENDED_POLICY, max_length=100,
                        description="The rule deciding the assignments; the default is the "
                        "best correctly timed rule at every load measured.")
    seed: int = Field(default=0, ge=0, le=MAX_SEED)


class EventsRequest(SessionEvents):
    model_config = ConfigDict(json_schema_extra=examples.EVENTS)


class AssignmentOut(BaseModel):
    workflow: str
    task: str
    vm: int
    vcpus: float
    expected_start: float
    expected_finish: float


class EventsResponse(BaseModel):
    now: float
    workflow_ids: list[str] = Field(description="Ids of the workflows that arrived.")
    assignments: list[AssignmentOut] = Field(description="Carry these out, in order.")
    checked: int = Field(default=0, description="How many of these assignments the session's "
                         "independent ledger verified (all of them: VM in the pool, task ready "
                         "by the reported finishes, never assigned before, runtime × 16 / "
                         "vCPUs long); one that fails is a 500 check-failed instead.")


class SessionVM(BaseModel):
    vm: int
    vcpus: float
    free_at: float
    queue: list[str]


class SessionWorkflow(BaseModel):
    id: str
    name: str
    arrival: float
    tasks: int
    finished_tasks: int
    flowtime: float | None


class SessionState(BaseModel):
    id: str
    pool: str
    policy: str
    seed: int = Field(description="The session's seed (ties, the random policy).")
    now: float
    events: int
    decisions: int
    mean_flowtime: float | None = Field(description="Seconds, over every finished workflow.")
    finished_workflows: int = Field(description="Workflows finished so far, listed or not.")
    unfinished_tasks: int = Field(description="Tasks of the unfinished workflows not reported "
                                  "finished yet (at most 100,000).")
    vms: list[SessionVM]
    workflows: list[SessionWorkflow] = Field(
        description="In arrival order: every unfinished workflow and the latest 100 finished "
        "ones (an older finished one counts only in finished_workflows and mean_flowtime).")
