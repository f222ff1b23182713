"""Turn a simulate request (a JSON body with inline workflows or generator settings, or a
multipart upload of workflow files: Pegasus DAX or WfCommons JSON, optionally .gz) into a
checked task, cheapest checks first: options, policy names, pool, then the workflows, then
the expected work against the request's time.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from starlette.datastructures import UploadFile

from app.errors import ApiError, instance_problem, invalid_request
from app.intake.uploads import form_parts, validate_fields, validate_json
from app.schemas.scheduling import (
    MAX_TEMPLATES,
    GeneratorIn,
    SimulateOptions,
    SimulateRequest,
    WorkflowIn,
)
from app.settings import Settings
from jobs.simulation import Simulation
from solvers.errors import InstanceError, UnsupportedFormatError
from solvers.scheduling.registry import POLICIES, estimated_seconds, policy_names
from solvers.scheduling.simulator import Arrivals, VMPool, parse_pool
from solvers.scheduling.workflow import (
    Workflow,
    generate_set,
    parse_workflow_bytes,
    workflow_from_dict,
)

logger = logging.getLogger("cosolve.api")

WORKFLOW_BODY = ("a simulate object", "workflow files (.xml/.dax Pegasus DAX or .json "
                 "WfCommons, optionally .gz)")
#: Form fields a simulate upload may carry besides its files.
_MAX_FORM_FIELDS = 16
#: The most tasks all templates of one request may hold together.
MAX_TOTAL_TASKS = 20_000
#: Where a simulation too long for one request goes.
SIMULATE_JOBS_PATH = "/v1/scheduling/simulate/jobs"
#: Most task rows the schedules of one simulate answer list (all policies together).
MAX_SCHEDULE_ROWS = 200_000


@dataclass(frozen=True)
class SimTask:
    templates: list[Workflow]
    pool: VMPool
    arrivals: Arrivals
    policies: list[str]
    seed: int
    gantt: bool
    gantt_workflows: int
    time_limit: float
    schedule: bool = False
    generator: GeneratorIn | None = None  # what generated the templates, echoed in the answer

    def simulation(self) -> Simulation:
        return Simulation(self.templates, self.pool, self.arrivals, self.policies, self.seed,
                          self.gantt, self.gantt_workflows, self.schedule,
                          None if self.generator is None else self.generator.model_dump())


# -- reading the request -------------------------------------------------------------------------
def _check_policies(names: list[str], field_name: str = "policies") -> list[str]:
    first_seen: dict[str, int] = {}
    for i, raw in enumerate(names):
        name = raw.strip()
        if not name:
            continue
        if name in first_seen:
            # a comparison of solvers refuses a repeat too (one row would come back)
            raise invalid_request(f"policy {name!r} is listed twice ({field_name}"
                                  f"[{first_seen[name]}] and {field_name}[{i}])",
                                  f"{field_name}[{i}]")
        first_seen[name] = i
        if name not in POLICIES:
            raise ApiError(404, f"unknown policy {name!r}; known policies: "
                           f"{', '.join(policy_names())}", kind="unknown-solver",
                           title="Unknown policy", field=f"{field_name}[{i}]")
    if not first_seen:
        raise invalid_request("give at least one policy, e.g. heft,eft", field_name)
    return list(first_seen)


def _file_problem(exc: InstanceError, field_name: str, filename: str) -> ApiError:
    """A 422 for an uploaded workflow file; a file of a kind not read here is
    ``unsupported-format``, as the routing and flow uploads answer."""
    where = "" if exc.field == "file" else f"{exc.field}: "
    unsupported = isinstance(exc, UnsupportedFormatError)
    return ApiError(422, f"{field_name} ({filename}): {where}{exc.message}",
                    kind="unsupported-format" if unsupported else "invalid-instance",
                    title="Unsupported workflow format" if unsupported else "Invalid workflow",
                    field=field_name)


def _field_error(exc: InstanceError) -> ApiError:
    """A 422 for a request option (pool, rates) the domain refused, naming the field."""
    return ApiError(422, f"{exc.field}: {exc.message}", kind="invalid-request",
                    title="Invalid request", field=exc.field)


def _too_many_tasks(total: int, field_name: str) -> ApiError:
    return ApiError(413, f"the workflows hold {total} tasks together; a request may hold "
                    f"{MAX_TOTAL_TASKS}", kind="instance-too-large",
                    title="Workflows too large", field=field_name,
                    extra={"tasks": total, "limit": MAX_TOTAL_TASKS})


def read_pool(text: str, field_name: str = "pool") -> VMPool:
    try:
        return parse_pool(text, field_name)
    except InstanceError as exc:
        raise _field_error(exc) from None


def _inline(workflows: list[WorkflowIn]) -> list[Workflow]:
    total = sum(len(wf.tasks) for wf in workflows)
    if total > MAX_TOTAL_TASKS:  # checked before building anything
        raise _too_many_tasks(total, "workflows")
    out = []
    for i, wf in enumerate(workflows):
        try:
            out.append(workflow_from_dict(wf.model_dump(exclude_none=True),
                                          name=wf.name or f"workflow{i + 1}"))
        except InstanceError as exc:
            raise instance_problem(exc, f"workflows[{i}]") from None
    return out


def _check_work(templates: list[Workflow], options: SimulateOptions, settings: Settings,
                source: str, job: bool) -> float:
    """The simulation's time limit, once its expected work fits it: a request's
    (max_sync_simulation_s, pointing to the job endpoint above it) or a job's."""
    total = sum(w.n for w in templates)
    if total > MAX_TOTAL_TASKS:
        raise _too_many_tasks(total, source)
    decisions = options.workflows_count * total / len(templates)
    edges = sum(len(p) for w in templates for p in w.parents)
    seconds = estimated_seconds(options.policies, decisions, total / len(templates),
                                edges / len(templates))
    cap = (settings.max_job_time_limit if job
           else min(settings.max_sync_simulation_s, settings.max_time_limit))
    if seconds > cap:
        advice = ("a job may take {cap:g} s (COSOLVE_MAX_JOB_TIME_LIMIT). Use fewer workflows "
                  "or the CLI (cosolve schedule simulate)." if job else
                  "a request may take {cap:g} s. Submit it as a job (POST "
                  f"{SIMULATE_JOBS_PATH}: progress, cancel, the same answer) or use the CLI "
                  "(cosolve schedule simulate).")
        raise ApiError(413, f"simulating {options.workflows_count} workflows (about "
                       f"{decisions:,.0f} decisions) with these policies would take about "
                       f"{seconds:,.0f} s; " + advice.format(cap=cap),
                       kind="simulation-too-large", title="Simulation too large",
                       field="workflows_count",
                       extra={"estimated_seconds": round(seconds, 1), "limit": cap})
    return settings.max_job_time_limit if job else settings.max_time_limit


def _task(options: SimulateOptions, templates: list[Workflow], settings: Settings,
          source: str, generator: GeneratorIn | None = None, job: bool = False) -> SimTask:
    limit = _check_work(templates, options, settings, source, job)
    try:
        arrivals = Arrivals(options.workflows_count, tuple(options.rates))
    except InstanceError as exc:  # a request field, not part of the workflows
        raise _field_error(exc) from None
    if options.schedule:
        rows = options.workflows_count * sum(w.n for w in templates) / len(templates)
        if rows * len(options.policies) > MAX_SCHEDULE_ROWS:
            raise ApiError(413, f"the schedules would list about {rows:,.0f} tasks for each of "
                           f"{len(options.policies)} policies; an answer lists at most "
                           f"{MAX_SCHEDULE_ROWS:,} (fewer workflows or policies, or the CLI's "
                           "cosolve schedule simulate --schedule FOLDER)",
                           kind="simulation-too-large", title="Schedule too large",
                           field="schedule")
    return SimTask(templates, read_pool(options.pool), arrivals, options.policies, options.seed,
                   options.gantt, options.gantt_workflows, limit, options.schedule, generator)


def task_from_json(raw: bytes, settings: Settings, job: bool = False) -> SimTask:
    request = validate_json(SimulateRequest, raw)
    request.policies = _check_policies(request.policies)
    read_pool(request.pool)
    if request.workflows is not None and request.generator is not None:
        raise invalid_request("give workflows or generator, not both", "generator")
    if request.workflows is not None:
        return _task(request, _inline(request.workflows), settings, "workflows", job=job)
    # no generator is the default one (the classic set), echoed as such
    gen = request.generator or GeneratorIn()
    try:
        templates = generate_set(gen.shapes, gen.tasks, gen.seed)
    except InstanceError as exc:
        raise instance_problem(exc, "generator") from None
    return _task(request, templates, settings, "generator", gen, job)


def _split(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def task_from_upload(files: list[tuple[str, bytes]], fields: dict[str, list[str]],
                     settings: Settings, job: bool = False) -> SimTask:
    plain: dict[str, Any] = {}
    for name, values in fields.items():
        if len(values) > 1 and name not in ("policies", "rates"):
            raise invalid_request(f"form field {name!r} was sent {len(values)} times; send it "
                                  "once", field=name)
        plain[name] = ",".join(values) if name in ("policies", "rates") else values[0]
    if "policies" in plain:
        plain["policies"] = _split(plain["policies"])
    if "rates" in plain:
        plain["rates"] = _split(plain["rates"])
    options = validate_fields(SimulateOptions, plain)
    options.policies = _check_policies(options.policies)
    read_pool(options.pool)
    templates: list[Workflow] = []
    for i, (filename, data) in enumerate(files):
        if sum(w.n for w in templates) > MAX_TOTAL_TASKS:
            break  # _check_work answers 413 below; do not parse the rest
        try:
            templates.append(parse_workflow_bytes(data, filename,
                                                  max_bytes=settings.max_decompressed_bytes))
        except InstanceError as exc:
            field_name = "file" if len(files) == 1 else f"file[{i}]"
            raise _file_problem(exc, field_name, filename) from None
        except (ValueError, TypeError, OverflowError, IndexError, KeyError, AttributeError,
                RecursionError) as exc:
            # The parser names the field for every error it expects; anything else is still
            # bad input (never a 500), but worth a log line so the parser can learn to name it.
            logger.warning("unclassified workflow error in %r: %r", filename, exc)
            field_name = "file" if len(files) == 1 else f"file[{i}]"
            raise ApiError(422, f"{field_name} ({filename}): cannot read the workflow: {exc}",
                           kind="invalid-instance", title="Invalid workflow",
                           field=field_name) from None
    return _task(options, templates, settings, "file", job=job)


async def read_files(request: Request) -> tuple[list[tuple[str, bytes]], dict[str, list[str]]]:
    files: list[tuple[str, bytes]] = []
    fields: dict[str, list[str]] = {}
    async with form_parts(request, max_files=MAX_TEMPLATES, max_fields=_MAX_FORM_FIELDS) as form:
        for name, value in form.multi_items():
            if isinstance(value, UploadFile):
                if name != "file":
                    raise invalid_request(f"unexpected file part {name!r}; send each workflow "
                                          "as a part named 'file'", field=name)
                if not value.filename:
                    raise invalid_request("each 'file' part needs a filename; its extension "
                                          "says the format", field="file")
                files.append((value.filename, await value.read()))
            else:
                fields.setdefault(name, []).append(value)
    if not files:
        raise invalid_request(f"a multipart request needs 'file' parts holding "
                              f"{WORKFLOW_BODY[1]}", field="file")
    return files, fields
