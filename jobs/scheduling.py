"""The scheduling inputs that the HTTP API and ``cosolve schedule session`` validate alike:
a workflow's tasks, and a session's events.

They sit below app/ so the CLI reads an input line with the same models as the HTTP session
reads a body, and refuses a bad one naming the same field in the same words. As for the other
families, these models check JSON types and sizes only; every rule about a workflow's values
(unique ids, known parents, no cycle, runtimes >= 0) is checked once, by the domain
(``solvers.scheduling.workflow.build_workflow``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from jobs.validation import UNION_TAGS, DataNumber
from solvers.contract import MAX_SEED
from solvers.scheduling.session import MAX_EVENT_TIME

#: Most tasks of one workflow, and most events of one request.
MAX_TEMPLATE_TASKS = 2_000
MAX_EVENTS = 1_000


class _Strict(BaseModel):
    """Unknown fields are errors, so a typo ("workflow_count") is reported, not ignored."""

    model_config = ConfigDict(extra="forbid")


class TaskIn(_Strict):
    """One task: an id, its reference runtime in seconds, and the ids of its parents."""

    id: str = Field(min_length=1, max_length=200)
    runtime: DataNumber = Field(description="Seconds on the reference machine (≥ 0); the work is "
                           "runtime × 16 vCPU-seconds, as in GOODRL.")
    parents: list[str] = Field(default_factory=list, max_length=MAX_TEMPLATE_TASKS)


class WorkflowIn(_Strict):
    """A workflow DAG (the compact form of WfCommons JSON)."""

    name: str | None = Field(default=None, max_length=200)
    tasks: list[TaskIn] = Field(min_length=1, max_length=MAX_TEMPLATE_TASKS)


class WorkflowArrived(_Strict):
    """A workflow arrived at ``time`` (seconds on the caller's clock, never decreasing)."""

    type: Literal["workflow_arrived"]
    time: DataNumber = Field(ge=0, le=MAX_EVENT_TIME, allow_inf_nan=False)
    workflow_id: str | None = Field(default=None, min_length=1, max_length=200,
                                    description="Your id for it; default wf1, wf2, …")
    workflow: WorkflowIn | None = None
    document: str | None = Field(
        default=None, min_length=1,
        description="Instead of workflow: a workflow file's whole text, a Pegasus DAX (XML) "
        "or a WfCommons JSON document, as `simulate` takes them as files.")
    format: Literal["dax", "wfcommons"] | None = Field(
        default=None, description="The document's format; by default told from its first "
        "character (`<` is DAX).")
    shape: Literal["montage", "cybershake", "inspiral", "sipht"] | None = Field(
        default=None, description="Instead of workflow: a generated workflow of this shape.")
    tasks: int = Field(default=30, ge=10, le=MAX_TEMPLATE_TASKS,
                       description="With shape: the generated workflow's size.")
    seed: int = Field(default=0, ge=0, le=MAX_SEED,
                      description="With shape: the seed of the generated workflow.")

    def arrival_sources(self) -> dict[str, Any]:
        """``arrival_workflow``'s arguments; tasks and seed only where the event gave them
        (beside a workflow or a document they are refused, not ignored)."""
        given = self.model_fields_set
        return {"workflow": None if self.workflow is None
                else self.workflow.model_dump(exclude_none=True),
                "document": self.document, "fmt": self.format, "shape": self.shape,
                "tasks": self.tasks if "tasks" in given else None,
                "seed": self.seed if "seed" in given else None,
                "name": self.workflow_id or "workflow"}


class TaskFinished(_Strict):
    """A task finished at ``time``."""

    type: Literal["task_finished"]
    time: DataNumber = Field(ge=0, le=MAX_EVENT_TIME, allow_inf_nan=False)
    workflow_id: str = Field(min_length=1, max_length=200)
    task_id: str = Field(min_length=1, max_length=200)


UNION_TAGS.update(("workflow_arrived", "task_finished"))


class SessionEvents(_Strict):
    # tagged by `type`, so a bad event's error names its own field (`events[0].time`), not
    # both union branches
    events: list[Annotated[WorkflowArrived | TaskFinished, Field(discriminator="type")]] = Field(
        min_length=1, max_length=MAX_EVENTS)
