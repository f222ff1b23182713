"""Jobs and batches: solves that outlive a request.

``POST /v1/jobs`` persists the input and answers 202 at once; the job runs in a worker
(process pool or Ray). Clients poll ``GET /v1/jobs/{id}``, follow ``/events`` (server-sent
events), fetch ``/solution`` and ``DELETE`` to cancel (the best solution so far is kept).
``POST /v1/batches`` does the same for many files at once, or one .zip/.tar of them.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any, BinaryIO, Literal
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import PlainTextResponse, Response, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from app.errors import (
    LOCATION_HEADER,
    RETRY_AFTER_HEADER,
    ApiError,
    invalid_request,
    problem_responses,
    with_headers,
)
from app.intake.routing import check_batch_options, job_from_json, job_from_upload
from app.intake.uploads import (
    BodyFormat,
    Upload,
    body_format,
    form_parts,
    read_upload,
    require_format,
    single_values,
    validate_fields,
)
from app.intake.vrp import (
    json_problem,
    vrp_batch_job,
    vrp_batch_solvers,
    vrp_job_from_json,
    vrp_job_from_upload,
)
from app.quotas import job_owner
from app.schemas.jobs import (
    BatchFileResult,
    BatchOptions,
    BatchStatus,
    BatchSummary,
    CVRPJobRequest,
    CVRPTWJobRequest,
    JobIncumbent,
    JobLinks,
    JobList,
    JobProgress,
    JobSeries,
    JobSolution,
    JobStatus,
    JobUpload,
    TSPJobRequest,
)
from app.security import Principal, PrincipalDep, current_principal
from app.settings import Settings, get_settings
from jobs import room
from jobs.batches import (
    ReadBudget,
    attach_references,
    expand_upload,
    gap_text,
    kind_totals,
    kind_totals_text,
    markdown_table,
    overall_cost,
    result_stem,
    sol_text,
    summary_columns,
    tour_text,
    upload_path,
)
from jobs.downloads import (
    ZipSummary,
    job_drawing,
    job_progress_svg,
    job_series,
    spooled_batch_zip,
)
from jobs.downloads import job_incumbent as load_incumbent
from jobs.service import JobInput, JobService, QueueFullError
from jobs.simulation import SIMULATION_PROBLEM
from jobs.store import FINAL_STATES, JobRecord, StorageError, StoredSolutionError, safe_filename
from jobs.vrp import VRP_PROBLEM, vroom_file
from solvers.errors import CosolveError
from solvers.routing.io.references import reference_stem
from solvers.routing.solve import gap_percent

router = APIRouter(tags=["jobs"])
logger = logging.getLogger("cosolve.api")
SettingsDep = Annotated[Settings, Depends(get_settings)]

#: What an SVG drawing or plot is served as.
SVG_MEDIA_TYPE = "image/svg+xml"
#: How often the event stream looks for new progress, and sends a keep-alive comment.
EVENT_POLL_S = 0.5
KEEPALIVE_S = 15.0
#: The largest ``offset`` of a job listing (SQLite's OFFSET is a 64-bit integer; a store never
#: holds this many jobs).
MAX_LIST_OFFSET = 1_000_000_000


def _service(request: Request) -> JobService:
    return request.app.state.jobs


ServiceDep = Annotated[JobService, Depends(_service)]


# -- rendering ---------------------------------------------------------------------------
def job_status(job: JobRecord) -> JobStatus:
    base = f"/v1/jobs/{job.id}"
    return JobStatus(
        id=job.id, batch_id=job.batch_id, state=job.state,  # type: ignore[arg-type]
        problem=job.problem, solver=job.solver, time_limit=job.time_limit, seed=job.seed,
        filename=job.filename, nodes=job.nodes, created_at=job.created_at,
        started_at=job.started_at, finished_at=job.finished_at, expires_at=job.expires_at,
        attempt=job.attempt, cancel_requested=job.cancel_requested,
        progress=JobProgress(elapsed=job.elapsed, iterations=job.iterations,
                             best_cost=job.best_cost, message=job.message),
        cost=job.cost, feasible=job.feasible, partial=job.partial, error=job.error,
        max_vehicles=job.max_vehicles, max_solutions=job.max_solutions,
        reference=job.reference, reference_file=job.reference_file, gap_percent=_gap(job),
        links=JobLinks(self=base, events=f"{base}/events", solution=f"{base}/solution",
                       progress=f"{base}/progress"),
    )


def _get_job(service: JobService, job_id: str, principal: Principal | None = None
             ) -> JobRecord:
    job = service.store.get(job_id)
    if job is not None and principal is not None and not principal.owns(job.owner):
        job = None  # another key's job answers as one that does not exist (no 403 to probe)
    if job is None:
        raise ApiError(404, f"no job {job_id!r} (it may have expired)", kind="unknown-job",
                       title="Unknown job", field="job_id")
    return job


def _queue_full(exc: QueueFullError) -> ApiError:
    if exc.per_client:
        return ApiError(
            429, f"this client would have {exc.active} jobs queued or running; each client "
            f"may have {exc.limit} (COSOLVE_MAX_CLIENT_JOBS). Retry when some have finished.",
            kind="too-many-jobs", title="Too many jobs", headers={"Retry-After": "30"},
            extra={"active": exc.active, "limit": exc.limit})
    return ApiError(
        429, f"{exc.active} jobs would be queued or running; this server accepts at most "
        f"{exc.limit} (COSOLVE_MAX_ACTIVE_JOBS). Retry when some have finished.",
        kind="too-many-jobs", title="Too many jobs", headers={"Retry-After": "30"},
        extra={"active": exc.active, "limit": exc.limit})


# -- submit ------------------------------------------------------------------------------
async def submit_problem(service: JobService, **job_input: Any) -> JobRecord:
    """Persist and enqueue a checked job (a solve, or a scheduling simulation), its queue
    and storage failures as problems; the requesting client's quotas are checked and its
    key recorded as the job's owner."""
    job_input.setdefault("owner", job_owner())
    try:
        return await run_in_threadpool(lambda: service.submit(**job_input))
    except QueueFullError as exc:
        raise _queue_full(exc) from None
    except StorageError as exc:
        raise _storage_full(exc) from None


_JOB_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": {"oneOf": [
                {"$ref": "#/components/schemas/TSPJobRequest"},
                {"$ref": "#/components/schemas/CVRPJobRequest"},
                {"$ref": "#/components/schemas/CVRPTWJobRequest"},
                {"$ref": "#/components/schemas/VrpJobRequest"}]}},
            "multipart/form-data": {"schema": {"$ref": "#/components/schemas/JobUpload"}},
        },
    }
}


@router.post("/jobs", status_code=202, response_model=JobStatus, openapi_extra=_JOB_BODY,
             responses=with_headers(with_headers(
                 with_headers(problem_responses(404, 413, 415, 422, 429, 503, 507), 507,
                              RETRY_AFTER_HEADER), 429, RETRY_AFTER_HEADER),
                 202, LOCATION_HEADER, "Accepted: the job's status"))
async def submit_job(request: Request, settings: SettingsDep, service: ServiceDep,
                     response: Response) -> JobStatus:
    """Accept a job: the input is stored before this answers 202 with the job's URLs."""
    if body_format(request) is BodyFormat.JSON:
        raw = await request.body()
        job_input: JobInput = await run_in_threadpool(
            vrp_job_from_json if json_problem(raw) else job_from_json, raw, settings)
    else:
        upload = await read_upload(request, extra_files=("reference_file",))
        job_input = await run_in_threadpool(_upload_job, upload, settings)
    job = await submit_problem(service, **vars(job_input))
    response.headers["Location"] = f"/v1/jobs/{job.id}"
    return job_status(job)


def _upload_job(upload: Upload, settings: Settings) -> JobInput:
    """An uploaded file's job: a .json holding a VROOM document is a ``vrp`` job."""
    doc = vroom_file(upload.filename, upload.data, settings.max_decompressed_bytes)
    if doc is not None:
        return vrp_job_from_upload(upload, doc, settings)
    return job_from_upload(upload, settings)


# -- read ----------------------------------------------------------------------------------
@router.get("/jobs", response_model=JobList, responses=problem_responses(422))
def list_jobs(service: ServiceDep, principal: PrincipalDep,
              offset: Annotated[int, Query(ge=0, le=MAX_LIST_OFFSET)] = 0,
              limit: Annotated[int, Query(ge=1, le=500)] = 50,
              state: Literal["queued", "running", "succeeded", "failed", "cancelled"]
              | None = None,
              batch_id: Annotated[str | None, Query(
                  max_length=64, description="Only the jobs of this batch.")] = None
              ) -> JobList:
    """Jobs, newest first, a page at a time; ``state`` and ``batch_id`` filter them."""
    jobs, total = service.store.list(offset=offset, limit=limit, state=state,
                                     batch_id=batch_id, owner=principal.only)
    return JobList(jobs=[job_status(j) for j in jobs], total=total, offset=offset, limit=limit)


@router.get("/jobs/{job_id}", response_model=JobStatus, responses=problem_responses(404))
def get_job(job_id: str, service: ServiceDep, principal: PrincipalDep) -> JobStatus:
    """State and progress (elapsed, iterations, best cost so far)."""
    return job_status(_get_job(service, job_id, principal))


@router.get("/jobs/{job_id}/events", response_class=StreamingResponse, responses={
    200: {"content": {"text/event-stream": {"schema": {"type": "string"}}},
          "description": "Server-sent events. `progress` and `end` carry the job's status as "
                         "JSON (a JobStatus); `end` comes when the job is final, with "
                         "`{\"state\": \"expired\"}` when the job has expired meanwhile; "
                         "`shutdown` (`{\"message\": ...}`) when the server stops first; "
                         "comment lines keep the connection alive."},
    **problem_responses(404)})
async def job_events(job_id: str, request: Request, service: ServiceDep,
                     principal: PrincipalDep) -> StreamingResponse:
    """Server-sent events: one ``progress`` event per change, then ``end``."""
    _get_job(service, job_id, principal)

    async def stream() -> AsyncIterator[str]:
        last_seen: float | None = None
        quiet = 0.0
        while True:
            job = service.store.get(job_id)
            if job is None:
                yield "event: end\ndata: {\"state\": \"expired\"}\n\n"
                return
            if job.updated_at != last_seen:
                last_seen = job.updated_at
                quiet = 0.0
                body = job_status(job).model_dump_json()
                kind = "end" if job.state in FINAL_STATES else "progress"
                yield f"event: {kind}\nid: {job.updated_at}\ndata: {body}\n\n"
                if kind == "end":
                    return
            elif quiet >= KEEPALIVE_S:
                quiet = 0.0
                yield ": keep-alive\n\n"
            if await request.is_disconnected():
                return
            stopping = getattr(request.app.state, "stopping", None)
            if stopping is not None and stopping.is_set():
                # the server is stopping: the job is re-queued and resumes on the next start,
                # so the stream ends now rather than holding the shutdown until the job ends
                yield ("event: shutdown\ndata: {\"message\": \"the server is stopping; the "
                       "job resumes when it restarts: follow it again then\"}\n\n")
                return
            await asyncio.sleep(EVENT_POLL_S)
            quiet += EVENT_POLL_S

    return StreamingResponse(stream(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


@router.get("/jobs/{job_id}/solution", responses={
    200: {"content": {"application/json": {"schema": {
              "$ref": "#/components/schemas/JobSolution"}},
              "text/plain": {"schema": {"type": "string"}}},
          "description": "The solution as JSON, a TSPLIB .tour, a CVRPLIB .sol or an SVG "
                         "drawing (image/svg+xml)."},
    **problem_responses(404, 409, 422, 500)})
def job_solution(job_id: str, service: ServiceDep,
                 format: Literal["json", "tour", "sol", "svg"] = "json",
                 principal: Annotated[Principal | None, Depends(current_principal)] = None
                 ) -> Response:
    """The solution of a finished job (for a cancelled one, the best found before the cancel,
    with ``partial: true``); ``format=svg`` draws it, its cost recomputed from the stored
    instance."""
    job = _get_job(service, job_id, principal)
    if not job.final:
        raise ApiError(409, f"job {job_id} is {job.state}; follow /v1/jobs/{job_id}/events "
                       "or poll the job until it is final", kind="job-not-finished",
                       title="Not finished", field="job_id", extra={"state": job.state})
    try:
        payload = service.store.read_solution(job_id, job.attempt)
    except StoredSolutionError as exc:  # a truncated file: said, not a bare 500
        raise _storage_problem(f"{exc}; the data directory was damaged") from None
    if payload is None and job.has_solution:
        raise _storage_problem(f"job {job_id} ended {job.state} with a solution (cost "
                               f"{job.cost:g}) but its "
                               "stored solution is missing from the data directory")
    if payload is None:
        raise ApiError(404, f"job {job_id} ended {job.state} without a solution"
                       + (f": {job.error}" if job.error else ""), kind="no-solution",
                       title="No solution", field="job_id")
    if format == "json":
        return Response(json.dumps(payload), media_type="application/json")
    if job.problem == SIMULATION_PROBLEM:  # a simulation's answer is a document, no plan
        raise invalid_request(f"job {job_id} is a scheduling simulation: its result is served "
                              "as JSON only (format=json)", field="format")
    if job.problem == VRP_PROBLEM:  # VROOM's output document is the answer
        raise invalid_request(f"job {job_id} solved a VROOM document: its answer is VROOM's "
                              "output document, served as JSON only (format=json)",
                              field="format")
    if format == "svg":  # an infeasible plan is drawn too: its title says INFEASIBLE
        try:
            drawing = job_drawing(service.store, job, payload)
        except StoredSolutionError as exc:
            raise _storage_problem(str(exc)) from None
        return Response(drawing, media_type=SVG_MEDIA_TYPE)
    if payload.get("feasible") is False:
        # a .tour or .sol has no word for "infeasible": it would read as a solution (e.g.
        # OR-Tools' plan with dropped customers as a plain .sol and cost)
        violations = "; ".join(str(v) for v in payload.get("violations") or []) or "no reason"
        raise invalid_request(f"job {job_id}'s plan is infeasible ({violations}); a .{format} "
                              "file would read as a solution, so it is served as JSON only "
                              "(format=json, with feasible: false and the violations)",
                              field="format")
    if format == "tour":
        if job.problem != "tsp":
            raise invalid_request(".tour files hold TSP tours; use format=sol or json",
                                  field="format")
        text = tour_text(payload, payload["cost"])
    else:
        if job.problem == "tsp":
            # CVRPLIB's format: 0 would read as the depot, and a tour has none
            raise invalid_request(".sol files hold CVRP routes (0 is the depot); use "
                                  "format=tour or json for a TSP", field="format")
        text = sol_text(payload, payload["cost"])
    stem = result_stem(job.filename) or "solution"
    return PlainTextResponse(text, headers={
        "Content-Disposition": content_disposition(f"{stem}.{format}")})


@router.get("/jobs/{job_id}/incumbent", response_model=JobIncumbent,
            responses=problem_responses(404, 409, 500))
def job_incumbent(job_id: str, service: ServiceDep, principal: PrincipalDep) -> Any:
    """A running job's best plan so far, to draw it while the search goes on: the plan its
    solver last published (``ortools`` and ``pyvrp``, at most once a second, up to 20,000
    nodes), its cost recomputed and checked, ``partial: true``. 404 before the first one
    (and for solvers that publish none); 409 once the job is final: its ``/solution`` is
    the answer then."""
    job = _get_job(service, job_id, principal)
    if job.final:
        raise ApiError(409, f"job {job_id} is {job.state}; its answer is "
                       f"/v1/jobs/{job_id}/solution", kind="job-finished", title="Finished",
                       field="job_id", extra={"state": job.state})
    try:
        payload = load_incumbent(service.store, job)
    except StoredSolutionError as exc:
        raise _storage_problem(str(exc)) from None
    if payload is None:
        raise ApiError(404, f"job {job_id} ({job.state}, solver {job.solver}) has published "
                       "no plan yet; only ortools and pyvrp publish theirs while they run",
                       kind="no-incumbent", title="No plan yet", field="job_id",
                       extra={"state": job.state})
    return payload


@router.get("/jobs/{job_id}/progress", response_model=JobSeries, responses={
    200: {"content": {"application/json": {}, SVG_MEDIA_TYPE: {"schema": {"type": "string"}}},
          "description": "The best cost over time as JSON, or (format=svg) as a step plot."},
    **problem_responses(404, 500)})
def job_progress(job_id: str, service: ServiceDep, principal: PrincipalDep,
                 format: Literal["json", "svg"] = "json") -> Any:
    """The job's best cost over time, never increasing: every improvement its solver
    reported (thinned to at most 1,000 points), ending at the checked final cost. A running
    job's series so far; a queued one's is empty."""
    job = _get_job(service, job_id, principal)
    try:
        points = job_series(service.store, job)
    except StoredSolutionError as exc:
        raise _storage_problem(f"{exc}; the data directory was damaged") from None
    if format == "svg":
        return Response(job_progress_svg(job, points), media_type=SVG_MEDIA_TYPE)
    return JobSeries(id=job.id, state=job.state,  # type: ignore[arg-type]
                     solver=job.solver, final=job.final, cost=job.cost, points=points)


def content_disposition(filename: str) -> str:
    """An attachment header for any file name: HTTP headers are Latin-1, so a name such as
    ``日本.tour`` goes in RFC 5987's ``filename*`` with an ASCII fallback beside it (it was a
    500 before)."""
    fallback = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "._-") else "_"
                       for ch in filename)
    if fallback == filename:
        return f'attachment; filename="{filename}"'
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe='')}"


# -- cancel --------------------------------------------------------------------------------
@router.delete("/jobs/{job_id}", response_model=JobStatus, status_code=202,
               responses=problem_responses(404))
def cancel_job(job_id: str, service: ServiceDep, principal: PrincipalDep) -> JobStatus:
    """Cancel: a queued job stops at once; a running one stops at its solver's next check
    and keeps the best solution found so far. Cancelling a finished job changes nothing."""
    _get_job(service, job_id, principal)
    job = service.cancel(job_id)
    assert job is not None
    return job_status(job)


# -- batches -------------------------------------------------------------------------------
_BATCH_BODY = {
    "requestBody": {
        "required": True,
        "content": {"multipart/form-data": {"schema": {
            "type": "object",
            "required": ["files"],
            "properties": {
                "files": {"type": "array", "items": {"type": "string", "format": "binary"},
                          "description": "Instance files (.tsp, .vrp, .vrptw, .json, optionally "
                          ".gz), "
                          "or one .zip / .tar / .tar.gz holding them; their known solutions "
                          "(NAME.sol, NAME.opt.tour, NAME.tour) give each file a checked gap."},
                # the form fields as BatchOptions reads them, bounds included
                **BatchOptions.model_json_schema()["properties"],
            }}}},
    }
}


@router.post("/batches", status_code=202, response_model=BatchStatus, openapi_extra=_BATCH_BODY,
             responses=with_headers(with_headers(
                 with_headers(problem_responses(404, 413, 415, 422, 429, 503, 507), 507,
                              RETRY_AFTER_HEADER), 429, RETRY_AFTER_HEADER),
                 202, LOCATION_HEADER, "Accepted: the batch's status"))
async def submit_batch(request: Request, response: Response, settings: SettingsDep,
                       service: ServiceDep) -> BatchStatus:
    """Many instance files as one batch of jobs; files that cannot be read are listed as
    rejected with the reason, the others run."""
    require_format(request, BodyFormat.MULTIPART, "multipart/form-data: one or more 'files' "
                   "parts (instance files or .zip/.tar archives of them) and form fields for "
                   "the options")
    uploads: list[tuple[str, bytes]] = []
    fields: dict[str, list[str]] = {}
    async with form_parts(request, max_files=settings.max_batch_files, max_fields=16,
                          file_field="files") as form:
        for name, value in form.multi_items():
            if isinstance(value, UploadFile):
                if name != "files":  # as solve and jobs refuse a misnamed part
                    raise invalid_request(f"unexpected file part {name!r}; send the instances "
                                          "as parts named 'files'", field=name)
                uploads.append((value.filename or "unnamed", await value.read()))
            else:
                fields.setdefault(name, []).append(value)
    if not uploads:
        raise invalid_request("send the instances as one or more 'files' parts", field="files")
    options = validate_fields(BatchOptions, single_values(fields))
    status = await run_in_threadpool(_create_batch, uploads, options, settings, service)
    response.headers["Location"] = f"/v1/batches/{status.id}"
    return status


def _create_batch(uploads: list[tuple[str, bytes]], options: BatchOptions, settings: Settings,
                  service: JobService) -> BatchStatus:
    solvers = vrp_batch_solvers(options.solver, options.time_limit, settings) or \
        check_batch_options(options.solver, options.time_limit, settings, options.max_solutions)
    files: list[tuple[str, bytes]] = []
    skipped: list[dict[str, Any]] = []
    budget = ReadBudget(settings.max_decompressed_bytes, settings.max_batch_files)
    for filename, data in uploads:
        files += expand_upload(filename, data, budget, skipped)
    if not files:
        raise invalid_request(
            "the upload holds no files to solve: "
            + ("; ".join(f"{r['filename']}: {r['error']}" for r in skipped[:5])
               + (f" (and {len(skipped) - 5} more)" if len(skipped) > 5 else "")
               if skipped else "its archives are empty")
            + "; send .tsp, .vrp, .vrptw or .json files, optionally gzipped, or a .zip/.tar "
            "of them", field="files")
    accepted: list[JobInput] = []
    accepted_names: list[str] = []  # the name each accepted file came as
    rejected: list[dict[str, Any]] = list(skipped)
    # CVRPLIB's NAME.sol, TSPLIB's NAME.opt.tour: the references of the instances beside them
    known = [(filename, data) for filename, data in files
             if reference_stem(upload_path(filename)) is not None]
    # a result is named by the file's base name; only a file that reads claims its name (as
    # the CLI's batch does), so an unreadable old/s.tsp does not block a good new/s.tsp
    first_of: dict[str, str] = {}
    for filename, data in files:
        if reference_stem(upload_path(filename)) is not None:
            continue
        base = result_stem(safe_filename(filename))
        if base in first_of:
            # e.g. eil51.tsp and sub/eil51.tsp of one zip, or tiny8.vrp and tiny8.vrp.gz
            # (both downloads would be named tiny8.sol): as the CLI's batch
            rejected.append({"filename": filename, "error": (
                f"another file of the batch ({first_of[base]}) gives its results the same "
                f"name, {base}.*; results are named by the file's name, so rename one")})
            continue
        fields = {"solver": options.solver, "seed": str(options.seed)}
        if options.time_limit is not None:
            fields["time_limit"] = str(options.time_limit)
        if options.max_vehicles is not None:
            fields["max_vehicles"] = str(options.max_vehicles)
        if options.max_solutions is not None:
            fields["max_solutions"] = str(options.max_solutions)
        try:
            upload = Upload(filename, data, {k: [v] for k, v in fields.items()})
            accepted.append(vrp_batch_job(upload, settings, solvers)  # a VROOM document
                            or job_from_upload(upload, settings, solvers))
            accepted_names.append(filename)
            first_of[base] = filename
        except (ApiError, CosolveError) as exc:
            detail = exc.detail if isinstance(exc, ApiError) else str(exc)
            rejected.append({"filename": filename, "error": detail})
        except Exception:  # one unreadable file must not sink the others
            logger.exception("unexpected error reading batch file %r", filename)
            rejected.append({"filename": filename, "error": (
                "the server could not read this file (the error was logged); check that it "
                "is a valid instance")})
    if known:
        unread = [f for f, _ in files
                  if reference_stem(upload_path(f)) is None and f not in accepted_names]
        accepted = attach_references(accepted, accepted_names, known, unread, rejected,
                                     settings.max_decompressed_bytes)
    if not accepted:
        raise invalid_request(f"no file of the batch could be read ({len(rejected)} "
                              "rejected): " + "; ".join(
            f"{r['filename']}: {r['error']}" for r in rejected[:5])
            + (f" (and {len(rejected) - 5} more)" if len(rejected) > 5 else ""),
            field="files")
    if len(accepted) > settings.max_active_jobs:
        # however long the client waits, the queue never holds this many: not a 429 to retry
        # (a 429 would send Retry-After forever, even on an idle server)
        raise ApiError(413, f"the batch has {len(accepted)} files to solve; this server queues "
                       f"at most {settings.max_active_jobs} jobs at once "
                       "(COSOLVE_MAX_ACTIVE_JOBS): split it into batches of at most "
                       f"{settings.max_active_jobs} files", kind="batch-too-large",
                       title="Batch larger than the job queue", field="files",
                       extra={"files": len(accepted), "limit": settings.max_active_jobs})
    try:
        batch_id = service.submit_batch([vars(job_input) for job_input in accepted],
                                        solvers.text, accepted[0].time_limit, rejected,
                                        options.max_vehicles, options.max_solutions,
                                        owner=job_owner())
    except QueueFullError as exc:
        raise _queue_full(exc) from None
    except StorageError as exc:
        raise _storage_full(exc) from None
    return batch_status(service, batch_id)


def _storage_full(exc: StorageError) -> ApiError:
    """507 Insufficient Storage: the submission was not kept; the same request can be sent
    again once the server has room."""
    return ApiError(507, f"{exc}; nothing was kept, send it again later", kind="storage-full",
                    title="No room to store the job",
                    headers={"Retry-After": str(room.RETRY_AFTER_S)})


def _storage_problem(detail: str) -> ApiError:
    """The server's own files are damaged: a 500 that says so, not the generic one."""
    return ApiError(500, detail, kind="storage-error", title="Stored data unreadable")


def _row_error(service: JobService, job: JobRecord) -> str | None:
    """A batch row's error: the job's own, or for an infeasible solution its violations."""
    if job.error or job.feasible is not False:
        return job.error
    try:
        payload = service.store.read_solution(job.id, job.attempt)
    except StoredSolutionError as exc:
        return str(exc)
    violations = (payload or {}).get("violations") or ["(no reason recorded)"]
    return "infeasible: " + "; ".join(str(v) for v in violations)


def _unknown_batch(batch_id: str) -> ApiError:
    return ApiError(404, f"no batch {batch_id!r} (batches expire with their jobs, "
                    "COSOLVE_RESULT_TTL_S after they finish)", kind="unknown-batch",
                    title="Unknown batch", field="batch_id")


def _own_batch(service: JobService, batch_id: str, principal: Principal) -> None:
    """404 for a batch that is not there, or is another key's (as for jobs)."""
    batch = service.store.batch(batch_id)
    if batch is None or not principal.owns(batch.get("owner")):
        raise _unknown_batch(batch_id)


def _solved(job: JobRecord) -> bool:
    """Succeeded with a plan that keeps the rules: what a batch sums and compares."""
    return job.state == "succeeded" and job.cost is not None and job.feasible is not False


def _gap(job: JobRecord) -> float | None:
    """Percent above the job's known solution, for a solved job (as `cosolve batch`)."""
    if not _solved(job) or job.reference is None or job.cost is None:
        return None
    return gap_percent(job.cost, job.reference)


def batch_status(service: JobService, batch_id: str) -> BatchStatus:
    batch = service.store.batch(batch_id)
    if batch is None:
        raise _unknown_batch(batch_id)
    jobs, _ = service.store.list(batch_id=batch_id, limit=100_000)
    if not jobs and batch["size"] > 0:
        # its jobs expired together; the row itself goes at the next purge (until then it
        # would answer 200 with the rejected files only)
        raise _unknown_batch(batch_id)
    jobs.sort(key=lambda j: j.filename)
    counts = {s: sum(1 for j in jobs if j.state == s)
              for s in ("queued", "running", "succeeded", "failed", "cancelled")}
    # a plan that breaks the rules (OR-Tools' dropped customers under a fleet cap) is not
    # summed with full plans, and its row says why, as `cosolve batch` does; and solved
    # files only: a cancelled job's partial plan is not an answer
    costs = [j.cost for j in jobs if _solved(j)]
    gaps = {j.id: _gap(j) for j in jobs}
    known_gaps = [g for g in gaps.values() if g is not None]
    # a TSP's length and a CVRP's cost are never summed: totals per problem kind, and the
    # overall total only when the solved files are all of one kind
    by_problem = kind_totals((j.problem, j.cost if _solved(j) else None, gaps[j.id])
                             for j in jobs)
    return BatchStatus(
        id=batch_id, solver=batch["solver"], time_limit=batch["time_limit"],
        # every job of a batch has the batch's seed: said, so the results can be reproduced
        seed=jobs[0].seed if jobs else None, max_vehicles=batch["max_vehicles"],
        max_solutions=batch["max_solutions"],
        created_at=batch["created_at"], done=all(j.final for j in jobs),
        summary=BatchSummary(files=len(jobs) + len(batch["rejected"]),
                             rejected=len(batch["rejected"]), solved=len(costs),
                             total_cost=overall_cost(by_problem),
                             by_problem=by_problem,
                             with_reference=len(known_gaps),
                             mean_gap_percent=(sum(known_gaps) / len(known_gaps)
                                               if known_gaps else None), **counts),
        results=[BatchFileResult(
            filename=j.filename, job_id=j.id, state=j.state,  # type: ignore[arg-type]
            nodes=j.nodes, cost=j.cost, feasible=j.feasible, partial=j.partial,
            # the solver's own time, as the CLI's batch shows it (finish - start counts
            # parsing and warm-up: 1.89 s for a 0.5 s solve)
            wall_time=j.elapsed, error=_row_error(service, j), reference=j.reference,
            reference_file=j.reference_file, gap_percent=gaps[j.id]) for j in jobs],
        rejected=batch["rejected"],
    )


@router.get("/batches/{batch_id}", response_model=BatchStatus, responses={
    200: {"content": {"application/json": {}, "text/markdown": {}},
          "description": "Per-file results and a summary, as JSON or a markdown table."},
    **problem_responses(404)})
def get_batch(batch_id: str, service: ServiceDep, principal: PrincipalDep,
              format: Literal["json", "md"] = "json") -> Any:
    """Per-file results and a summary (``format=md``: the same as a markdown table)."""
    _own_batch(service, batch_id, principal)
    status = batch_status(service, batch_id)
    if format == "json":
        return status
    return PlainTextResponse(batch_markdown(status), media_type="text/markdown")


@router.get("/batches/{batch_id}/results.zip", response_class=Response, responses={
    200: {"content": {"application/zip": {"schema": {"type": "string", "format": "binary"}}},
          "description": "summary.md and summary.json, and per file solutions/NAME.json (with "
                         "NAME.tour or NAME.sol), drawings/NAME.svg and progress/NAME.json and "
                         ".svg; errors.txt names files whose results could not be read."},
    **problem_responses(404, 507)})
def batch_results_zip(batch_id: str, service: ServiceDep, principal: PrincipalDep
                      ) -> Response:
    """The batch's results as one zip, as far as they are done (the summary says which files
    are still running)."""
    _own_batch(service, batch_id, principal)
    status = batch_status(service, batch_id)
    jobs, _ = service.store.list(batch_id=batch_id, limit=100_000)
    summary = ZipSummary(batch_markdown(status), status.model_dump_json(indent=2))
    try:
        spool = spooled_batch_zip(service.store, sorted(jobs, key=lambda j: j.filename),
                                  summary)
    except OSError as exc:  # the temporary file's disk is full: nothing is lost, ask later
        raise ApiError(507, f"no room to build the zip ({exc.strerror or exc}); the results "
                       "are kept, try again later", kind="storage-full",
                       title="No room to build the download",
                       headers={"Retry-After": str(room.RETRY_AFTER_S)}) from None
    return StreamingResponse(_chunks_of(spool), media_type="application/zip", headers={
        "Content-Disposition": content_disposition(f"batch-{batch_id}.zip")})


def _chunks_of(spool: BinaryIO, size: int = 1 << 20) -> Iterator[bytes]:
    """The file's bytes a chunk at a time, closing (and so deleting) it at the end or when
    the client goes away."""
    try:
        while chunk := spool.read(size):
            yield chunk
    finally:
        spool.close()


@router.delete("/batches/{batch_id}", response_model=BatchStatus, status_code=202,
               responses=problem_responses(404))
def cancel_batch(batch_id: str, service: ServiceDep, principal: PrincipalDep) -> BatchStatus:
    """Cancel every job of the batch still queued or running, as ``DELETE /v1/jobs/{id}``
    does one: queued ones stop at once, running ones keep their best solution so far;
    finished ones are left as they are. The answer is the batch's status."""
    _own_batch(service, batch_id, principal)
    jobs, _ = service.store.list(batch_id=batch_id, limit=100_000)
    for job in jobs:
        if not job.final:
            service.cancel(job.id)
    return batch_status(service, batch_id)


def batch_markdown(status: BatchStatus) -> str:
    """The batch as a markdown table plus a totals line, and the mean gap to the known
    solutions uploaded with the files when some have one (the table gains their gaps)."""
    def num(v: float | None) -> str:
        return "–" if v is None else f"{v:.6g}"

    def cell(text: str) -> str:
        """A table cell: a '|' or a line break in a name or an error would split the row."""
        return " ".join(str(text).replace("|", "\\|").split())

    gaps = any(r.reference is not None for r in status.results)
    rows = []
    for r in status.results:
        feasible = "–" if r.feasible is None else ("yes" if r.feasible else "no")
        state = r.state + (" (partial)" if r.partial else "")
        rows.append([cell(r.filename), str(r.nodes), state, num(r.cost),
                     *([gap_text(r.gap_percent)] if gaps else []), feasible, num(r.wall_time),
                     cell(r.error or "")])
    rows += [[cell(r["filename"]), "–", "rejected", "–", *(["–"] if gaps else []), "–", "–",
              cell(r["error"])] for r in status.rejected]
    lines = [f"# Batch {status.id}", "",
             f"solver {status.solver}, time limit {status.time_limit:g} s, "
             + (f"at most {status.max_vehicles} vehicles, " if status.max_vehicles else "")
             + (f"at most {status.max_solutions} solutions, " if status.max_solutions else "")
             + ("done" if status.done else "in progress"), "",
             *markdown_table(summary_columns(gaps, "wall (s)"), rows)]
    s = status.summary
    lines += ["", f"{s.files} files: {s.solved} solved (feasible), {s.succeeded} succeeded, "
              f"{s.failed} failed, "
              f"{s.cancelled} cancelled, {s.running} running, {s.queued} queued, "
              f"{s.rejected} rejected; " + (
                  f"total cost {num(s.total_cost)}" if sum(
                      1 for k in s.by_problem.values() if k.solved) <= 1 else
                  "total cost per problem: " + kind_totals_text(
                      {p: k.model_dump() for p, k in s.by_problem.items()}, num))]
    if s.with_reference:
        lines.append("")
        lines.append(f"mean gap {gap_text(s.mean_gap_percent)} to the known solutions of "
                     f"{s.with_reference} file{'' if s.with_reference == 1 else 's'}")
    return "\n".join(lines) + "\n"


OPENAPI_BODY_MODELS = (TSPJobRequest, CVRPJobRequest, CVRPTWJobRequest, JobUpload, JobSolution)
