"""Jobs and batches: solves that outlive a request.

``POST /v1/jobs`` persists the input and answers 202 at once; the job runs in a worker
(process pool or Ray). Clients poll ``GET /v1/jobs/{id}``, follow ``/events`` (server-sent
events), fetch ``/solution`` and ``DELETE`` to cancel (the best solution so far is kept).
``POST /v1/batches`` does the same for many files at once, or one .zip/.tar of them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import logging
import lzma
import stat
import tarfile
import zipfile
import zlib
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal
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
from app.intake import (
    BodyFormat,
    JobInput,
    Upload,
    body_format,
    check_batch_options,
    form_parts,
    job_from_json,
    job_from_upload,
    read_upload,
    require_format,
    safe_filename,
    single_values,
    validate_fields,
)
from app.schemas.jobs import (
    BatchFileResult,
    BatchOptions,
    BatchStatus,
    BatchSummary,
    CVRPJobRequest,
    CVRPTWJobRequest,
    JobLinks,
    JobList,
    JobProgress,
    JobSolution,
    JobStatus,
    JobUpload,
    TSPJobRequest,
)
from app.settings import Settings, get_settings
from jobs.service import JobService, QueueFullError
from jobs.store import FINAL_STATES, JobRecord, StorageError, StoredSolutionError
from solvers.errors import CosolveError, InstanceError
from solvers.routing.io.formats import parse_instance_bytes
from solvers.routing.io.references import reference_cost_bytes, reference_file_names, reference_stem
from solvers.routing.io.solutions import sol_text_for, tour_text_for
from solvers.routing.solve import gap_percent

router = APIRouter(tags=["jobs"])
logger = logging.getLogger("cosolve.api")
SettingsDep = Annotated[Settings, Depends(get_settings)]

#: How often the event stream looks for new progress, and sends a keep-alive comment.
EVENT_POLL_S = 0.5
KEEPALIVE_S = 15.0
_ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz")
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
        links=JobLinks(self=base, events=f"{base}/events", solution=f"{base}/solution"),
    )


def _get_job(service: JobService, job_id: str) -> JobRecord:
    job = service.store.get(job_id)
    if job is None:
        raise ApiError(404, f"no job {job_id!r} (it may have expired)", kind="unknown-job",
                       title="Unknown job", field="job_id")
    return job


def _queue_full(exc: QueueFullError) -> ApiError:
    return ApiError(
        429, f"{exc.active} jobs would be queued or running; this server accepts at most "
        f"{exc.limit} (COSOLVE_MAX_ACTIVE_JOBS). Retry when some have finished.",
        kind="too-many-jobs", title="Too many jobs", headers={"Retry-After": "30"},
        extra={"active": exc.active, "limit": exc.limit})


# -- submit ------------------------------------------------------------------------------
_JOB_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": {"oneOf": [
                {"$ref": "#/components/schemas/TSPJobRequest"},
                {"$ref": "#/components/schemas/CVRPJobRequest"},
                {"$ref": "#/components/schemas/CVRPTWJobRequest"}]}},
            "multipart/form-data": {"schema": {"$ref": "#/components/schemas/JobUpload"}},
        },
    }
}


@router.post("/jobs", status_code=202, response_model=JobStatus, openapi_extra=_JOB_BODY,
             responses=with_headers(with_headers(
                 problem_responses(404, 413, 415, 422, 429, 503, 507), 429, RETRY_AFTER_HEADER),
                 202, LOCATION_HEADER, "Accepted: the job's status"))
async def submit_job(request: Request, settings: SettingsDep, service: ServiceDep,
                     response: Response) -> JobStatus:
    """Accept a job: the input is stored before this answers 202 with the job's URLs."""
    if body_format(request) is BodyFormat.JSON:
        raw = await request.body()
        job_input: JobInput = await run_in_threadpool(job_from_json, raw, settings)
    else:
        upload = await read_upload(request, extra_files=("reference_file",))
        job_input = await run_in_threadpool(job_from_upload, upload, settings)
    try:
        job = await run_in_threadpool(lambda: service.submit(**vars(job_input)))
    except QueueFullError as exc:
        raise _queue_full(exc) from None
    except StorageError as exc:
        raise _storage_full(exc) from None
    response.headers["Location"] = f"/v1/jobs/{job.id}"
    return job_status(job)


# -- read ----------------------------------------------------------------------------------
@router.get("/jobs", response_model=JobList, responses=problem_responses(422))
def list_jobs(service: ServiceDep,
              offset: Annotated[int, Query(ge=0, le=MAX_LIST_OFFSET)] = 0,
              limit: Annotated[int, Query(ge=1, le=500)] = 50,
              state: Literal["queued", "running", "succeeded", "failed", "cancelled"]
              | None = None,
              batch_id: Annotated[str | None, Query(
                  max_length=64, description="Only the jobs of this batch.")] = None
              ) -> JobList:
    """Jobs, newest first, a page at a time; ``state`` and ``batch_id`` filter them."""
    jobs, total = service.store.list(offset=offset, limit=limit, state=state,
                                     batch_id=batch_id)
    return JobList(jobs=[job_status(j) for j in jobs], total=total, offset=offset, limit=limit)


@router.get("/jobs/{job_id}", response_model=JobStatus, responses=problem_responses(404))
def get_job(job_id: str, service: ServiceDep) -> JobStatus:
    """State and progress (elapsed, iterations, best cost so far)."""
    return job_status(_get_job(service, job_id))


@router.get("/jobs/{job_id}/events", response_class=StreamingResponse, responses={
    200: {"content": {"text/event-stream": {"schema": {"type": "string"}}},
          "description": "Server-sent events. `progress` and `end` carry the job's status as "
                         "JSON (a JobStatus); `end` comes when the job is final, with "
                         "`{\"state\": \"expired\"}` when the job has expired meanwhile; "
                         "`shutdown` (`{\"message\": ...}`) when the server stops first; "
                         "comment lines keep the connection alive."},
    **problem_responses(404)})
async def job_events(job_id: str, request: Request, service: ServiceDep) -> StreamingResponse:
    """Server-sent events: one ``progress`` event per change, then ``end``."""
    _get_job(service, job_id)

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
          "description": "The solution as JSON, a TSPLIB .tour or a CVRPLIB .sol."},
    **problem_responses(404, 409, 422, 500)})
def job_solution(job_id: str, service: ServiceDep,
                 format: Literal["json", "tour", "sol"] = "json") -> Response:
    """The solution of a finished job (for a cancelled one, the best found before the cancel,
    with ``partial: true``)."""
    job = _get_job(service, job_id)
    if not job.final:
        raise ApiError(409, f"job {job_id} is {job.state}; follow /v1/jobs/{job_id}/events "
                       "or poll the job until it is final", kind="job-not-finished",
                       title="Not finished", field="job_id", extra={"state": job.state})
    try:
        payload = service.store.read_solution(job_id, job.attempt)
    except StoredSolutionError as exc:  # (QA sweep: a truncated file was a bare 500)
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
    if payload.get("feasible") is False:
        # a .tour or .sol has no word for "infeasible": it would read as a solution (QA
        # sweep: OR-Tools' plan with dropped customers came back as a plain .sol and cost)
        violations = "; ".join(str(v) for v in payload.get("violations") or []) or "no reason"
        raise invalid_request(f"job {job_id}'s plan is infeasible ({violations}); a .{format} "
                              "file would read as a solution, so it is served as JSON only "
                              "(format=json, with feasible: false and the violations)",
                              field="format")
    if format == "tour":
        if job.problem != "tsp":
            raise invalid_request(".tour files hold TSP tours; use format=sol or json",
                                  field="format")
        labels = (payload.get("route_ids") or [[v + 1 for v in payload["routes"][0]]])[0]
        text = tour_text_for(payload["instance"], labels, payload["cost"],
                             payload["distance"], payload["solver"],
                             indices=payload["routes"][0])
    else:
        if job.problem == "tsp":
            # CVRPLIB's format: 0 would read as the depot, and a tour has none
            raise invalid_request(".sol files hold CVRP routes (0 is the depot); use "
                                  "format=tour or json for a TSP", field="format")
        text = sol_text_for(payload["routes"], payload["cost"], payload.get("depot", 0))
    stem = result_stem(job.filename) or "solution"
    return PlainTextResponse(text, headers={
        "Content-Disposition": content_disposition(f"{stem}.{format}")})


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
def cancel_job(job_id: str, service: ServiceDep) -> JobStatus:
    """Cancel: a queued job stops at once; a running one stops at its solver's next check
    and keeps the best solution found so far. Cancelling a finished job changes nothing."""
    _get_job(service, job_id)
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
                # the form fields as BatchOptions reads them, bounds included (QA sweep: a
                # hand-written copy lacked them)
                **BatchOptions.model_json_schema()["properties"],
            }}}},
    }
}


def result_stem(filename: str) -> str:
    """The name a file's results go by: ``kroA100.tsp.gz`` -> ``kroA100``, and a capped
    copy's ``tiny8.vrp.json`` -> ``tiny8`` (as the CLI's batch names its outputs), so two
    files whose results would share a name are told apart at submission, and a download is
    named after its file (``a.b.tsp`` gave ``a.tour``)."""
    name = filename[:-3] if filename.lower().endswith(".gz") else filename
    stem, dot, suffix = name.rpartition(".")
    if not dot:
        return name
    if suffix.lower() == "json" and stem.lower().endswith((".tsp", ".vrp", ".vrptw")):
        stem = stem.rpartition(".")[0]  # the capped copy of an uploaded file
    return stem


_PAST_BUDGET = ("not read: the batch's files expand past {} bytes in all "
                "(COSOLVE_MAX_DECOMPRESSED_BYTES); send it in another batch")


class _ReadBudget:
    """What one batch request may read in all: its files' text (archive members and .gz
    files at what they expand to) and its file count. One budget for the whole request (QA
    sweep: the 512 MiB limit was per archive and .gz members counted compressed, so two
    archives read 600 MiB into memory before a 422)."""

    def __init__(self, max_bytes: int, max_files: int) -> None:
        self.bytes_left = max_bytes
        self.max_bytes = max_bytes
        self.max_files = max_files
        self.files = 0

    def count_files(self, more: int, filename: str) -> None:
        """413 before anything is read when the files would exceed the batch's count."""
        self.files += more
        if self.files > self.max_files:
            raise ApiError(413, f"{filename}: the batch would hold {self.files} files or more; "
                           f"a batch holds at most {self.max_files} (COSOLVE_MAX_BATCH_FILES): "
                           "split it", kind="batch-too-large", title="Too many files",
                           field="files", extra={"files": self.files, "limit": self.max_files})

    def take(self, size: int) -> bool:
        """Reserve ``size`` bytes of text; False (nothing reserved) when they do not fit."""
        if size > self.bytes_left:
            return False
        self.bytes_left -= size
        return True


def _expanded_size(name: str, blob: bytes, limit: int) -> int | None:
    """The bytes a .gz file expands to, counted in chunks without keeping them (None above
    ``limit`` or when the data are not gzip); other files: their own size."""
    if not name.lower().endswith(".gz"):
        return len(blob)
    inflater = zlib.decompressobj(wbits=47)  # gzip or zlib header
    total = 0
    data = blob
    try:
        while data:
            chunk = inflater.decompress(data, 1 << 20)
            total += len(chunk)
            if total > limit:
                return None
            data = inflater.unconsumed_tail
            if inflater.eof:
                break
    except zlib.error:
        return len(blob)  # not gzip data: its reader says so, as a rejection of that file
    return total


def _not_an_instance(name: str) -> str | None:
    """Why an archive member is not read as an instance (None: it is read)."""
    base = name.rstrip("/").rsplit("/", 1)[-1]
    if name.startswith("__MACOSX/") or base.startswith("._"):
        return "a macOS resource fork (__MACOSX/, ._name), not an instance; not read"
    if base.startswith("."):
        return "a hidden file (its name starts with '.'); not read"
    return None


def _expand(filename: str, data: bytes, budget: _ReadBudget,
            skipped: list[dict[str, Any]]) -> list[tuple[str, bytes]]:
    """Instance files of one upload: itself, or the members of a .zip/.tar archive. What is
    not read is listed in ``skipped`` with the reason, one entry per file (links, special
    files, hidden files, members past the request's budget, an unreadable archive), so
    nothing of the upload goes unaccounted (QA sweep: hidden members vanished, and one
    corrupt archive sank the whole request)."""
    lower = filename.lower()
    if not lower.endswith(_ARCHIVE_SUFFIXES):
        budget.count_files(1, filename)
        return _within_budget([(filename, data)], budget, skipped)
    try:
        if lower.endswith(".zip"):
            return _zip_members(filename, data, budget, skipped)
        return _tar_members(filename, data, budget, skipped)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, zlib.error,
            lzma.LZMAError, NotImplementedError, RuntimeError) as exc:
        # corrupt compressed data (zlib, lzma), an unsupported zip method, an encrypted member
        skipped.append({"filename": filename, "error": (
            f"not a readable archive ({exc}); none of its files were read")})
        return []


def _within_budget(files: list[tuple[str, bytes]], budget: _ReadBudget,
                   skipped: list[dict[str, Any]]) -> list[tuple[str, bytes]]:
    """The files whose text fits what is left of the request's budget (.gz counted as
    expanded); each one past it is listed with the reason."""
    kept = []
    for name, blob in files:
        size = _expanded_size(name, blob, budget.bytes_left)
        if size is None or not budget.take(size):
            skipped.append({"filename": name, "error": _PAST_BUDGET.format(budget.max_bytes)})
            continue
        kept.append((name, blob))
    return kept


def _zip_members(filename: str, data: bytes, budget: _ReadBudget,
                 skipped: list[dict[str, Any]]) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        infos = []
        for info in zf.infolist():
            if info.is_dir():
                continue
            mode = info.external_attr >> 16  # Unix mode bits, 0 when not recorded
            reason = _not_an_instance(info.filename)
            if stat.S_IFMT(mode) and not stat.S_ISREG(mode):
                # a zip's symlink holds its target path as text (QA sweep: parsed as an
                # instance); left out like a tar's links
                kind = "a link" if stat.S_ISLNK(mode) else "not a regular file"
                reason = f"{kind} in the archive; only regular files are read"
            if reason is not None:
                skipped.append({"filename": info.filename, "error": reason})
                continue
            infos.append(info)
        budget.count_files(len(infos), filename)  # before any member is read
        members = []
        for info in infos:
            if info.file_size > budget.bytes_left:  # its declared size, before reading it
                skipped.append({"filename": info.filename, "error": _PAST_BUDGET.format(
                    budget.max_bytes)})
                continue
            members += _within_budget([(info.filename, zf.read(info))], budget, skipped)
        return members


def _tar_members(filename: str, data: bytes, budget: _ReadBudget,
                 skipped: list[dict[str, Any]]) -> list[tuple[str, bytes]]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tf:
        regular = []
        for member in tf.getmembers():
            if member.isdir():
                continue
            reason = _not_an_instance(member.name)
            if not member.isfile():
                # silently dropped before (QA sweep): say what was left out, and why
                kind = "a link" if member.issym() or member.islnk() else "not a regular file"
                reason = f"{kind} in the archive; only regular files are read"
            if reason is not None:
                skipped.append({"filename": member.name, "error": reason})
                continue
            regular.append(member)
        budget.count_files(len(regular), filename)
        members = []
        for member in regular:
            if member.size > budget.bytes_left:
                skipped.append({"filename": member.name, "error": _PAST_BUDGET.format(
                    budget.max_bytes)})
                continue
            fh = tf.extractfile(member)
            if fh is not None:
                members += _within_budget([(member.name, fh.read())], budget, skipped)
        return members


@router.post("/batches", status_code=202, response_model=BatchStatus, openapi_extra=_BATCH_BODY,
             responses=with_headers(with_headers(
                 problem_responses(404, 413, 415, 422, 429, 503, 507), 429, RETRY_AFTER_HEADER),
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
    check_batch_options(options.solver, options.time_limit, settings, options.max_solutions)
    files: list[tuple[str, bytes]] = []
    skipped: list[dict[str, Any]] = []
    budget = _ReadBudget(settings.max_decompressed_bytes, settings.max_batch_files)
    for filename, data in uploads:
        files += _expand(filename, data, budget, skipped)
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
             if reference_stem(_upload_path(filename)) is not None]
    # a result is named by the file's base name; only a file that reads claims its name (as
    # the CLI's batch does), so an unreadable old/s.tsp does not block a good new/s.tsp
    first_of: dict[str, str] = {}
    for filename, data in files:
        if reference_stem(_upload_path(filename)) is not None:
            continue
        base = result_stem(safe_filename(filename))
        if base in first_of:
            # e.g. eil51.tsp and sub/eil51.tsp of one zip, or tiny8.vrp and tiny8.vrp.gz
            # (QA sweep: both accepted, both downloads named tiny8.sol): as the CLI's batch
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
            accepted.append(job_from_upload(
                Upload(filename, data, {k: [v] for k, v in fields.items()}), settings))
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
                  if reference_stem(_upload_path(f)) is None and f not in accepted_names]
        accepted = _attach_references(accepted, accepted_names, known, unread, rejected,
                                      settings)
    if not accepted:
        raise invalid_request(f"no file of the batch could be read ({len(rejected)} "
                              "rejected): " + "; ".join(
            f"{r['filename']}: {r['error']}" for r in rejected[:5])
            + (f" (and {len(rejected) - 5} more)" if len(rejected) > 5 else ""),
            field="files")
    if len(accepted) > settings.max_active_jobs:
        # however long the client waits, the queue never holds this many: not a 429 to retry
        # (QA sweep: a 201-file batch on an idle server got 429 and Retry-After forever)
        raise ApiError(413, f"the batch has {len(accepted)} files to solve; this server queues "
                       f"at most {settings.max_active_jobs} jobs at once "
                       "(COSOLVE_MAX_ACTIVE_JOBS): split it into batches of at most "
                       f"{settings.max_active_jobs} files", kind="batch-too-large",
                       title="Batch larger than the job queue", field="files",
                       extra={"files": len(accepted), "limit": settings.max_active_jobs})
    try:
        batch_id = service.submit_batch([vars(job_input) for job_input in accepted],
                                        options.solver, accepted[0].time_limit, rejected,
                                        options.max_vehicles, options.max_solutions)
    except QueueFullError as exc:
        raise _queue_full(exc) from None
    except StorageError as exc:
        raise _storage_full(exc) from None
    return batch_status(service, batch_id)


def _upload_path(filename: str) -> str:
    """An upload's name as a path with '/' between folders (a Windows zip writes '\\')."""
    return filename.replace("\\", "/")


def _folder_and_name(filename: str) -> tuple[str, str]:
    folder, _, name = _upload_path(filename).rpartition("/")
    return folder, name


def _reference_place(filename: str) -> tuple[str, str]:
    """A known solution's folder and name with its extensions in lower case (``X.SOL`` is
    ``X.sol``), as ``reference_file_names`` writes the names an instance's may have."""
    folder, name = _folder_and_name(filename)
    stem = reference_stem(name) or name
    return folder, stem + name[len(stem):].lower()


def _attach_references(accepted: list[JobInput], names: list[str],
                       known: list[tuple[str, bytes]], unread: list[str],
                       rejected: list[dict[str, Any]], settings: Settings) -> list[JobInput]:
    """The accepted jobs, each with the cost of its known solution uploaded beside it (the
    CLI's rule: ``X-n101-k25.vrp`` <- ``X-n101-k25.sol``, ``kroA100.tsp.gz`` <-
    ``kroA100.opt.tour``, in the same folder of an archive) once checked as a feasible solution
    of what the job solves, so a batch reports gaps to checked numbers only. A known solution
    that serves no instance (none of its name, its instance among the ``unread`` files
    rejected, or not a feasible solution of it) is listed in ``rejected`` with the reason;
    nothing uploaded goes unaccounted."""
    by_place: dict[tuple[str, str], int] = {}
    used: set[int] = set()
    for i, (filename, _) in enumerate(known):
        place = _reference_place(filename)
        if place in by_place:  # two parts named X.sol, or X.sol beside and inside a zip
            used.add(i)
            rejected.append({"filename": filename, "error": (
                f"another known solution of the batch has the same name "
                f"({known[by_place[place]][0]}); not read")})
            continue
        by_place[place] = i
    out = []
    for job_input, name in zip(accepted, names, strict=True):
        folder, base = _folder_and_name(name)
        candidates = [by_place[(folder, c)] for c in reference_file_names(base)
                      if (folder, c) in by_place]
        instance = None
        for i in candidates:
            ref_name, ref_data = known[i]
            used.add(i)
            if job_input.reference is not None:
                rejected.append({"filename": ref_name, "error": (
                    f"another known solution of {name} ({job_input.reference_file}) is its "
                    "reference; not read")})
                continue
            try:
                if instance is None:  # what the job solves: its fleet cap applied
                    instance = parse_instance_bytes(job_input.data, job_input.filename,
                                                    max_bytes=settings.max_decompressed_bytes)
                cost = reference_cost_bytes(ref_data, _folder_and_name(ref_name)[1], instance,
                                            max_bytes=settings.max_decompressed_bytes)
            except CosolveError as exc:
                reason = exc.message if isinstance(exc, InstanceError) else str(exc)
                rejected.append({"filename": ref_name,
                                 "error": f"not used as the reference of {name}: {reason}"})
                continue
            except Exception:  # one unreadable solution must not sink the batch
                logger.exception("unexpected error checking known solution %r", ref_name)
                rejected.append({"filename": ref_name, "error": (
                    f"not used as the reference of {name}: the server could not check it "
                    "(the error was logged)")})
                continue
            job_input = dataclasses.replace(job_input, reference=cost, reference_file=ref_name)
        out.append(job_input)
    for i, (ref_name, _) in enumerate(known):
        if i in used:
            continue
        folder, base = _reference_place(ref_name)
        owner = next((f for f in unread if _folder_and_name(f)[0] == folder
                      and base in reference_file_names(_folder_and_name(f)[1])), None)
        stem = f"{folder}/{reference_stem(base)}" if folder else reference_stem(base)
        rejected.append({"filename": ref_name, "error": (
            f"the known solution of {owner}, which is rejected; not read" if owner else
            f"a known solution with no instance named {stem}.* in the batch; not read")})
    return out


def _storage_full(exc: StorageError) -> ApiError:
    """507 Insufficient Storage: the submission was not kept; the same request can be sent
    again once the server has room."""
    return ApiError(507, f"{exc}; nothing was kept, send it again later", kind="storage-full",
                    title="No room to store the job")


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
        # its jobs expired together; the row itself goes at the next purge (QA sweep: it
        # answered 200 with the rejected files only for up to a minute)
        raise _unknown_batch(batch_id)
    jobs.sort(key=lambda j: j.filename)
    counts = {s: sum(1 for j in jobs if j.state == s)
              for s in ("queued", "running", "succeeded", "failed", "cancelled")}
    # a plan that breaks the rules (OR-Tools' dropped customers under a fleet cap) is not
    # summed with full plans, and its row says why, as `cosolve batch` does (QA sweep: it
    # read as a plain success)
    # solved files only: a cancelled job's partial plan is not an answer (QA sweep: it was
    # summed, while `cosolve batch` sums solved rows only)
    costs = [j.cost for j in jobs if _solved(j)]
    gaps = {j.id: _gap(j) for j in jobs}
    known_gaps = [g for g in gaps.values() if g is not None]
    return BatchStatus(
        id=batch_id, solver=batch["solver"], time_limit=batch["time_limit"],
        # every job of a batch has the batch's seed (QA sweep: the answer did not say it)
        seed=jobs[0].seed if jobs else None, max_vehicles=batch["max_vehicles"],
        max_solutions=batch["max_solutions"],
        created_at=batch["created_at"], done=all(j.final for j in jobs),
        summary=BatchSummary(files=len(jobs) + len(batch["rejected"]),
                             rejected=len(batch["rejected"]), solved=len(costs),
                             total_cost=sum(costs) if costs else None,
                             with_reference=len(known_gaps),
                             mean_gap_percent=(sum(known_gaps) / len(known_gaps)
                                               if known_gaps else None), **counts),
        results=[BatchFileResult(
            filename=j.filename, job_id=j.id, state=j.state,  # type: ignore[arg-type]
            nodes=j.nodes, cost=j.cost, feasible=j.feasible, partial=j.partial,
            # the solver's own time (QA sweep: finish - start counted parsing and warm-up:
            # 1.89 s for a 0.5 s solve, where the CLI's batch showed 0.30 s)
            wall_time=j.elapsed, error=_row_error(service, j), reference=j.reference,
            reference_file=j.reference_file, gap_percent=gaps[j.id]) for j in jobs],
        rejected=batch["rejected"],
    )


@router.get("/batches/{batch_id}", response_model=BatchStatus, responses={
    200: {"content": {"application/json": {}, "text/markdown": {}},
          "description": "Per-file results and a summary, as JSON or a markdown table."},
    **problem_responses(404)})
def get_batch(batch_id: str, service: ServiceDep,
              format: Literal["json", "md"] = "json") -> Any:
    """Per-file results and a summary (``format=md``: the same as a markdown table)."""
    status = batch_status(service, batch_id)
    if format == "json":
        return status
    return PlainTextResponse(batch_markdown(status), media_type="text/markdown")


@router.delete("/batches/{batch_id}", response_model=BatchStatus, status_code=202,
               responses=problem_responses(404))
def cancel_batch(batch_id: str, service: ServiceDep) -> BatchStatus:
    """Cancel every job of the batch still queued or running, as ``DELETE /v1/jobs/{id}``
    does one: queued ones stop at once, running ones keep their best solution so far;
    finished ones are left as they are. The answer is the batch's status."""
    if service.store.batch(batch_id) is None:
        raise _unknown_batch(batch_id)
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
        """A table cell: a '|' or a line break in a name or an error would split the row
        (QA sweep), as in `cosolve batch`'s summary."""
        return " ".join(str(text).replace("|", "\\|").split())

    def gap(v: float | None) -> str:
        return "–" if v is None else f"{v:+.3f} %"  # as `cosolve batch` writes a gap

    gaps = any(r.reference is not None for r in status.results)
    lines = [f"# Batch {status.id}", "",
             f"solver {status.solver}, time limit {status.time_limit:g} s, "
             + (f"at most {status.max_vehicles} vehicles, " if status.max_vehicles else "")
             + (f"at most {status.max_solutions} solutions, " if status.max_solutions else "")
             + ("done" if status.done else "in progress"), "",
             "| file | nodes | state | cost | " + ("gap to ref. | " if gaps else "")
             + "feasible | wall (s) | error |",
             "|---|---:|---|---:|" + ("---:|" if gaps else "") + "---|---:|---|"]
    for r in status.results:
        feasible = "–" if r.feasible is None else ("yes" if r.feasible else "no")
        state = r.state + (" (partial)" if r.partial else "")
        lines.append(f"| {cell(r.filename)} | {r.nodes} | {state} | {num(r.cost)} | "
                     + (f"{gap(r.gap_percent)} | " if gaps else "")
                     + f"{feasible} | {num(r.wall_time)} | {cell(r.error or '')} |")
    for r in status.rejected:
        lines.append(f"| {cell(r['filename'])} | – | rejected | – | "
                     + ("– | " if gaps else "") + f"– | – | {cell(r['error'])} |")
    s = status.summary
    lines += ["", f"{s.files} files: {s.solved} solved (feasible), {s.succeeded} succeeded, "
              f"{s.failed} failed, "
              f"{s.cancelled} cancelled, {s.running} running, {s.queued} queued, "
              f"{s.rejected} rejected; total cost {num(s.total_cost)}"]
    if s.with_reference:
        lines.append("")
        lines.append(f"mean gap {gap(s.mean_gap_percent)} to the known solutions of "
                     f"{s.with_reference} file{'' if s.with_reference == 1 else 's'}")
    return "\n".join(lines) + "\n"


OPENAPI_BODY_MODELS = (TSPJobRequest, CVRPJobRequest, CVRPTWJobRequest, JobUpload, JobSolution)
