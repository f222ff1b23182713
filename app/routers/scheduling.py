"""Workflow-scheduling endpoints: simulate policies on a stream, and live online sessions.

``POST /scheduling/simulate`` takes EITHER a JSON body (inline workflows or generator
settings) or a multipart upload (one or more ``file`` parts: Pegasus DAX or WfCommons JSON,
optionally .gz, plus form fields), checks cheapest first (options, policy names, pool, then the
workflows, then the expected work against the request's time), and simulates every policy on
the same seeded stream in a worker thread that a client disconnect cancels.

Sessions keep a cluster in memory: report workflow arrivals and task finishes, get back the
assignments to carry out. They are per server process, capped in number and dropped after an
hour without events.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from app.concurrency import run_solving, run_while_connected
from app.errors import (
    LOCATION_HEADER,
    RETRY_AFTER_HEADER,
    ApiError,
    check_failed,
    instance_problem,
    problem_responses,
    with_headers,
)
from app.intake.scheduling import (
    MAX_TOTAL_TASKS,
    SIMULATE_JOBS_PATH,
    WORKFLOW_BODY,
    SimTask,
    read_files,
    read_pool,
    task_from_json,
    task_from_upload,
)
from app.intake.uploads import (
    BodyFormat,
    body_format,
    require_format,
    validate_json,
)
from app.quotas import check_sessions
from app.routers.jobs import ServiceDep, job_status, submit_problem
from app.schemas.jobs import JobStatus
from app.schemas.scheduling import (
    AssignmentOut,
    EventsRequest,
    EventsResponse,
    PolicyInfo,
    SessionCreate,
    SessionState,
    SimulateRequest,
    SimulateResponse,
    SimulateUpload,
    WorkflowArrived,
)
from app.security import Principal, PrincipalDep
from app.settings import Settings, get_settings
from jobs.simulation import SIMULATION_PROBLEM, simulation_document
from solvers.errors import (
    CheckFailedError,
    InstanceError,
    SolverUnavailableError,
    UnknownSolverError,
)
from solvers.scheduling.registry import (
    POLICIES,
    estimated_seconds,
    get_policy,
    policy_names,
)
from solvers.scheduling.session import MAX_LIVE_TASKS, Arrived, EventError, Finished, Session
from solvers.scheduling.workflow import (
    Workflow,
    arrival_workflow,
)

router = APIRouter(prefix="/scheduling", tags=["scheduling"])
logger = logging.getLogger("cosolve.api")
SettingsDep = Annotated[Settings, Depends(get_settings)]

MAX_SESSIONS = 256
SESSION_IDLE_S = 3600.0


# -- simulate -------------------------------------------------------------------------------------
def _simulate(task: SimTask, cancel: threading.Event) -> SimulateResponse:
    deadline = time.perf_counter() + task.time_limit
    try:
        doc = simulation_document(task.simulation(), deadline=deadline, cancel=cancel.is_set)
    except TimeoutError:
        raise ApiError(413, f"the simulation did not finish within {task.time_limit:g} s; use "
                       f"fewer workflows, a job (POST {SIMULATE_JOBS_PATH}) or the CLI "
                       "(cosolve schedule simulate)",
                       kind="simulation-too-large", title="Simulation too large",
                       field="workflows_count") from None
    return SimulateResponse.model_validate(doc)


def _body(json_model: type[BaseModel], upload_model: type[BaseModel] | None = None
          ) -> dict[str, Any]:
    def ref(model: type[BaseModel]) -> dict[str, str]:
        return {"$ref": f"#/components/schemas/{model.__name__}"}

    content = {"application/json": {"schema": ref(json_model)}}
    if upload_model is not None:
        content["multipart/form-data"] = {"schema": ref(upload_model)}
    return {"requestBody": {"required": True, "content": content}}


#: Request-body models the operations reference by hand; ``app.main`` adds them to OpenAPI.
OPENAPI_BODY_MODELS: tuple[type[BaseModel], ...] = (
    SimulateRequest, SimulateUpload, SessionCreate, EventsRequest)


@router.get("/policies", name="list_policies", response_model=list[PolicyInfo],
            summary="The scheduling policies and whether they can run here")
async def list_policies() -> list[PolicyInfo]:
    return [PolicyInfo(name=s.name, kind=s.kind, description=s.description,
                       available=s.available, unavailable_reason=s.unavailable_reason())
            for s in POLICIES.values()]


@router.post(
    "/simulate", name="simulate", response_model=SimulateResponse,
    summary="Simulate scheduling policies on a stream of workflows",
    description=(
        "Workflows arrive by a Poisson process (rates in workflows per hour; several rates "
        "change it mid-stream) onto a VM pool (6x4, 5x5, …); every policy schedules the same "
        "seeded stream. Returns per policy the mean flowtime (the objective), makespan and "
        "utilization, and a Gantt chart (SVG) on request. JSON (SimulateRequest: inline "
        "workflows or generator settings) or multipart (`file` parts: Pegasus DAX or "
        "WfCommons JSON, optionally .gz, plus form fields)."),
    responses=problem_responses(404, 413, 415, 422, 503),
    openapi_extra=_body(SimulateRequest, SimulateUpload),
)
async def simulate_policies(request: Request, settings: SettingsDep) -> SimulateResponse:
    if body_format(request, WORKFLOW_BODY) is BodyFormat.JSON:
        raw = await request.body()
        task = await run_in_threadpool(task_from_json, raw, settings)
    else:
        files, fields = await read_files(request)
        task = await run_in_threadpool(task_from_upload, files, fields, settings)
    return await run_while_connected(request, lambda cancel: _simulate(task, cancel))


@router.post(
    "/simulate/jobs", name="simulate_job", response_model=JobStatus, status_code=202,
    summary="Simulate as a job: progress, cancel, the same answer",
    description=(
        "Takes what `POST /v1/scheduling/simulate` takes and answers 202 at once with the "
        "job's status and URLs (`/v1/jobs/{id}`). The job's progress counts the workflows "
        "simulated (`iterations`, all policies together; `message` says `done/total`), "
        "`/events` streams it, `DELETE /v1/jobs/{id}` cancels, and `/solution` serves the "
        "document `simulate` answers. Its expected work may reach COSOLVE_MAX_JOB_TIME_LIMIT "
        "instead of a request's COSOLVE_MAX_SYNC_SIMULATION_S."),
    responses=with_headers(with_headers(problem_responses(404, 413, 415, 422, 429, 503, 507),
                                        429, RETRY_AFTER_HEADER),
                           202, LOCATION_HEADER, "Accepted: the job's status"),
    openapi_extra=_body(SimulateRequest, SimulateUpload),
)
async def simulate_job(request: Request, response: Response, settings: SettingsDep,
                       service: ServiceDep) -> JobStatus:
    if body_format(request, WORKFLOW_BODY) is BodyFormat.JSON:
        raw = await request.body()
        task = await run_in_threadpool(task_from_json, raw, settings, True)
    else:
        files, fields = await read_files(request)
        task = await run_in_threadpool(task_from_upload, files, fields, settings, True)
    sim = task.simulation()
    job = await submit_problem(service, problem=SIMULATION_PROBLEM,
                               solver=",".join(sim.policies), time_limit=task.time_limit,
                               seed=sim.seed, filename="simulation.json", data=sim.to_json(),
                               nodes=sim.arrivals.count)
    response.headers["Location"] = f"/v1/jobs/{job.id}"
    return job_status(job)


# -- sessions ---------------------------------------------------------------------------------
#: Longest a session's events request may take by the policies' cost model: the caller
#: waits on it live (three 2,000-task workflows under goodrl took 60 s).
SESSION_REQUEST_SECONDS = 30.0


@dataclass(eq=False)
class _Live:
    session: Session
    pool: str
    policy: str
    lock: threading.Lock = field(default_factory=threading.Lock)
    touched: float = field(default_factory=time.monotonic)
    ended: bool = False  # set under ``lock`` by DELETE (or by expiry)
    #: The principal that opened it (``app.security``); another key's requests see a 404.
    owner: str | None = None


_sessions: dict[str, _Live] = {}
_sessions_lock = threading.Lock()


def _expire(now: float) -> None:
    """Drop the sessions idle longer than SESSION_IDLE_S (the caller holds _sessions_lock)."""
    for sid in [s for s, v in _sessions.items() if now - v.touched > SESSION_IDLE_S]:
        _sessions.pop(sid).ended = True


def _unknown_session(session_id: str) -> ApiError:
    return ApiError(404, f"no scheduling session {session_id!r} (it ended, expired after "
                    f"{SESSION_IDLE_S / 60:g} idle minutes, or the server restarted)",
                    kind="unknown-session", title="Unknown session", field="session_id")


def _get(session_id: str, principal: Principal | None = None) -> _Live:
    """The live session; any request on it (GET too) counts as activity. Idle ones expire
    on every access, not only when a session is created, so an expired session stops
    answering and polling keeps a quiet one alive."""
    now = time.monotonic()
    with _sessions_lock:
        _expire(now)
        live = _sessions.get(session_id)
        if live is not None and principal is not None and not principal.owns(live.owner):
            live = None
        if live is not None:
            live.touched = now
    if live is None:
        raise _unknown_session(session_id)
    return live


def _json_body(request: Request) -> None:
    require_format(request, BodyFormat.JSON, "application/json")


def _state(session_id: str, live: _Live) -> SessionState:
    snap = live.session.snapshot()
    return SessionState(id=session_id, pool=live.pool, **snap)


@router.post("/sessions", name="create_session", response_model=SessionState, status_code=201,
             summary="Start an online scheduling session",
             responses=with_headers(with_headers(problem_responses(404, 413, 415, 422, 429, 503),
                                                 429, RETRY_AFTER_HEADER), 201,
                                    LOCATION_HEADER, "Created: the new session's state"),
             openapi_extra=_body(SessionCreate))
async def create_session(request: Request, response: Response, principal: PrincipalDep,
                         settings: SettingsDep) -> SessionState:
    _json_body(request)
    body = validate_json(SessionCreate, await request.body())
    pool = read_pool(body.pool)
    try:
        policy = await run_in_threadpool(get_policy, body.policy)
    except UnknownSolverError:
        # the registry's message says "solver"; here it is a scheduling policy
        raise ApiError(404, f"unknown policy {body.policy!r}; known policies: "
                       f"{', '.join(policy_names())}", kind="unknown-solver",
                       title="Unknown policy", field="policy") from None
    except SolverUnavailableError as exc:
        raise ApiError(503, f"{exc}; choose another policy (GET /v1/scheduling/policies)",
                       kind="solver-unavailable", title="Policy unavailable",
                       field="policy") from None
    now = time.monotonic()
    with _sessions_lock:
        _expire(now)
        # a client's own cap first (its 429 names the client's setting), then the server's
        check_sessions(settings, principal, [now - v.touched for v in _sessions.values()
                                             if v.owner == principal.owner], SESSION_IDLE_S)
        if len(_sessions) >= MAX_SESSIONS:
            # the idlest session expires first: the wait until then
            idlest = min(v.touched for v in _sessions.values())
            wait = max(1, math.ceil(SESSION_IDLE_S - (now - idlest)))
            raise ApiError(429, f"{MAX_SESSIONS} sessions are open; DELETE finished ones (the "
                           f"idlest expires in {wait} s)", kind="too-many-sessions",
                           title="Too many sessions", headers={"Retry-After": str(wait)})
        sid = uuid.uuid4().hex
        live = _Live(Session(pool, policy, body.seed), pool.label, body.policy,
                     owner=principal.owner)
        _sessions[sid] = live
    response.headers["Location"] = f"{request.url.path}/{sid}"
    return _state(sid, live)


def _arrival_workflow(ev: WorkflowArrived, where: str) -> Workflow:
    try:
        return arrival_workflow(**ev.arrival_sources())
    except InstanceError as exc:
        raise instance_problem(exc, where) from None


def _apply(session_id: str, live: _Live, body: EventsRequest) -> EventsResponse:
    # Documents and generated shapes are read first (milliseconds; a document's size is only
    # known once read): the request is sized on the workflows themselves (a guess of four
    # parents a task refused one 2,000-task sipht arrival with advice to split it).
    # A bad one is reported in its turn below, after the events before it are applied.
    built: dict[int, Workflow] = {}
    for i, ev in enumerate(body.events):
        if isinstance(ev, WorkflowArrived) and ev.workflow is None:
            with contextlib.suppress(ApiError):
                built[i] = _arrival_workflow(ev, f"events[{i}]")
    size_of = {i: (len(ev.workflow.tasks), sum(len(t.parents or []) for t in ev.workflow.tasks))
               if ev.workflow is not None
               else ((len(built[i].ids), sum(len(p) for p in built[i].parents))
                     if i in built else (ev.tasks if ev.document is None else 0, 4 * ev.tasks))
               for i, ev in enumerate(body.events) if isinstance(ev, WorkflowArrived)}
    sizes = list(size_of.values())
    total = sum(n for n, _ in sizes)
    if total > MAX_TOTAL_TASKS:
        raise ApiError(413, f"the arriving workflows hold {total} tasks together; one request "
                       f"may bring {MAX_TOTAL_TASKS}: send the events in several requests",
                       kind="instance-too-large", title="Too many tasks", field="events",
                       extra={"tasks": total, "limit": MAX_TOTAL_TASKS})
    seconds = sum(estimated_seconds([live.policy], n, n, e) for n, e in sizes)
    if seconds > SESSION_REQUEST_SECONDS:
        # a live session answers while its caller waits, holding the session's lock
        raise _too_much_work(f"deciding the arriving workflows' {total} tasks with "
                             f"{live.policy}", seconds, "arrivals")
    events = [Arrived(ev.time, built[i] if i in built
                      else functools.partial(_arrival_workflow, ev, f"events[{i}]"),
                      ev.workflow_id)
              if isinstance(ev, WorkflowArrived) else Finished(ev.time, ev.workflow_id, ev.task_id)
              for i, ev in enumerate(body.events)]
    with live.lock:
        if live.ended:  # a DELETE came first while this request waited for the lock
            raise _unknown_session(session_id)
        live.touched = time.monotonic()
        _check_live_tasks(live, body, size_of)
        _check_released_work(live, body, seconds)
        before = live.session.ledger.checked
        try:
            ids, out = live.session.apply(events)
        except EventError as failed:
            if isinstance(failed.cause, CheckFailedError):
                # the session's state can no longer be trusted: it ends here
                live.ended = True
                with _sessions_lock:
                    if _sessions.get(session_id) is live:
                        del _sessions[session_id]
            raise _event_problem(failed) from None
        now = live.session.state.now
        checked = live.session.ledger.checked - before
    return EventsResponse(now=now, workflow_ids=ids,
                          assignments=[AssignmentOut(**a.to_dict()) for a in out],
                          checked=checked)


def _event_problem(failed: EventError) -> Exception:
    """The refused event's problem, carrying what the events before it answered."""
    applied = {"applied": failed.index, "workflow_ids": failed.workflow_ids,
               "assignments": [a.to_dict() for a in failed.assignments]}
    exc, where = failed.cause, f"events[{failed.index}]"
    if isinstance(exc, CheckFailedError):
        logger.error("a session's answer failed its independent check: %s", exc)
        return check_failed(f"{exc} ({failed.index} events of this request were applied "
                            "before it; their checked assignments are in 'assignments'); the "
                            "session was ended", exc.violations, applied)
    if isinstance(exc, ApiError):
        exc.extra.update(applied)
        return exc
    if isinstance(exc, InstanceError):
        return ApiError(422, f"{where}.{exc.field}: {exc.message} ({failed.index} earlier "
                        "events of this request were applied; their assignments are in "
                        "'assignments')", kind="invalid-event", title="Invalid event",
                        field=f"{where}.{exc.field}", extra=applied)
    return exc


def _check_live_tasks(live: _Live, body: EventsRequest,
                      size_of: dict[int, tuple[int, int]]) -> None:
    """413 before anything is applied when the session would hold more than MAX_LIVE_TASKS
    unfinished tasks at any point of the request (1,000 workflows of 2,000 tasks held about
    1 GB in one session)."""
    changes: list[int | tuple[str, str]] = [
        size_of[i][0] if isinstance(ev, WorkflowArrived) else (ev.workflow_id, ev.task_id)
        for i, ev in enumerate(body.events)]
    session = live.session
    peak = session.live_peak(changes)
    if peak > MAX_LIVE_TASKS:
        raise ApiError(413, f"the session holds {session.live_tasks:,} unfinished tasks and "
                       f"this request would take it to {peak:,}; a session may hold "
                       f"{MAX_LIVE_TASKS:,}: report finished tasks first",
                       kind="session-too-large", title="Too many unfinished tasks",
                       field="events", extra={"tasks": peak, "unfinished": session.live_tasks,
                                              "limit": MAX_LIVE_TASKS})


def _check_released_work(live: _Live, body: EventsRequest, arrivals_seconds: float) -> None:
    """413 before anything is applied when the tasks the request's finishes release would
    take the policy longer than a session request may (two finishes releasing 2,000 tasks
    each kept goodrl deciding for 36 s), as arrivals are sized."""
    finishes = [(ev.workflow_id, ev.task_id) for ev in body.events
                if not isinstance(ev, WorkflowArrived)]
    if not finishes:
        return
    runs = live.session.runs
    released = live.session.released_by(finishes)
    seconds = arrivals_seconds + sum(
        estimated_seconds([live.policy], k, runs[wid].wf.n, runs[wid].wf.edges)
        for wid, k in released.items())
    if seconds > SESSION_REQUEST_SECONDS:
        raise _too_much_work(f"the finishes release {sum(released.values())} tasks, and "
                             f"deciding them (with the arrivals) with {live.policy}", seconds,
                             "finishes")


def _too_much_work(work: str, seconds: float, events: str) -> ApiError:
    """The 413 of a session request whose decisions would outlast SESSION_REQUEST_SECONDS."""
    return ApiError(413, f"{work} would take about {seconds:,.0f} s; one request of a session "
                    f"may take {SESSION_REQUEST_SECONDS:g} s: send the {events} in several "
                    "requests, or use a faster policy", kind="session-work-too-large",
                    title="Too much work for one request", field="events",
                    extra={"estimated_seconds": round(seconds, 1),
                           "limit": SESSION_REQUEST_SECONDS})


@router.post("/sessions/{session_id}/events", name="session_events",
             response_model=EventsResponse,
             summary="Report events (workflow arrived, task finished); get assignments",
             description=(
                 "Events are applied in order; times never decrease. The answer lists the "
                 "task → VM assignments to carry out. If an event is invalid, the earlier "
                 "ones of the request stay applied and the problem says how many "
                 "(`applied`), with their `workflow_ids` and `assignments`."),
             responses=problem_responses(404, 413, 415, 422),
             openapi_extra=_body(EventsRequest))
async def session_events(session_id: str, request: Request,
                         principal: PrincipalDep) -> EventsResponse:
    live = _get(session_id, principal)
    _json_body(request)
    body = validate_json(EventsRequest, await request.body())
    return await run_solving(request, _apply, session_id, live, body)


@router.get("/sessions/{session_id}", name="session_state", response_model=SessionState,
            summary="A session's time, VM queues and workflows",
            responses=problem_responses(404))
async def session_state(session_id: str, principal: PrincipalDep) -> SessionState:
    live = _get(session_id, principal)

    def state() -> SessionState:
        with live.lock:  # an events request in flight answers first
            if live.ended:
                raise _unknown_session(session_id)
            return _state(session_id, live)

    return await run_in_threadpool(state)


@router.delete("/sessions/{session_id}", name="delete_session", status_code=204,
               summary="End a session", responses=problem_responses(404))
async def delete_session(session_id: str, principal: PrincipalDep) -> Response:
    live = _get(session_id, principal)

    def end() -> None:
        # An events request in flight finishes first and answers its assignments; requests
        # waiting behind it then find the session ended, not a 200 for a deleted session.
        with live.lock:
            if live.ended:
                raise _unknown_session(session_id)
            live.ended = True
        with _sessions_lock:
            if _sessions.get(session_id) is live:
                del _sessions[session_id]

    await run_in_threadpool(end)
    return Response(status_code=204)
