"""What a finished job or batch gives besides its JSON: the route drawing, the cost-over-time
series and its plot, and a batch's results as one zip.

Every figure here is recomputed from the stored input: a drawing rebuilds the solution from
the stored routes with the problem's own cost and the independent checker, so it never shows
a number the solver merely claimed. The HTTP routes (``app.routers.jobs``) call these; they
touch no HTTP themselves.
"""

from __future__ import annotations

import io
import json
import math
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, BinaryIO

from jobs.batches import result_stem, sol_text, tour_text
from jobs.store import JobRecord, JobStore, StoredSolutionError
from jobs.vrp import VRP_PROBLEM
from solvers.plot import cost_plot_svg, readable_number
from solvers.progress import CostSeries
from solvers.routing.io.documents import solution_to_dict
from solvers.routing.io.formats import parse_instance_bytes
from solvers.routing.problem import CVRPInstance, Instance
from solvers.routing.render import solution_svg
from solvers.routing.solution import Solution, build_solution


class StoredInputError(StoredSolutionError):
    """The job's stored input is missing or no longer reads (a damaged data directory)."""


def stored_instance(store: JobStore, job: JobRecord) -> Instance:
    """The instance the job solved, parsed again from its stored input file."""
    path = store.input_path(job)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StoredInputError(f"the input of job {job.id} is missing from the data directory "
                               f"({exc.strerror or exc})") from None
    try:
        return parse_instance_bytes(data, job.filename)
    except Exception as exc:  # it parsed at submission: the file changed on disk since
        raise StoredInputError(f"the stored input of job {job.id} no longer reads "
                               f"({type(exc).__name__}: {exc})") from None


def checked_solution(instance: Instance, payload: dict[str, Any]) -> Solution:
    """The stored answer rebuilt on ``instance``: cost and feasibility recomputed."""
    return build_solution(instance, payload.get("routes") or [],
                          solver=str(payload.get("solver", "?")),
                          wall_time=float(payload.get("wall_time") or 0.0))


def job_drawing(store: JobStore, job: JobRecord, payload: dict[str, Any]) -> str:
    """The SVG drawing of a job's stored solution ``payload``, with the gap to the job's known
    solution in the title when it has one."""
    instance = stored_instance(store, job)
    return solution_svg(instance, checked_solution(instance, payload), reference=job.reference)


def job_incumbent(store: JobStore, job: JobRecord) -> dict[str, Any] | None:
    """The running job's latest published plan as a solution document, rebuilt on the stored
    instance (cost recomputed, the independent checker run) and marked ``partial``, with the
    cost its solver claimed beside it; None when its solver published none yet."""
    plan = store.read_incumbent(job.id, job.attempt)
    if plan is None:
        return None
    instance = stored_instance(store, job)
    try:
        solution = build_solution(instance, plan["routes"], solver=job.solver,
                                  wall_time=float(plan.get("elapsed") or 0.0))
        payload = solution_to_dict(solution, instance)
    except Exception as exc:  # a plan naming nodes the instance lacks: a damaged file
        raise StoredSolutionError(f"the stored incumbent of job {job.id} does not fit its "
                                  f"instance ({type(exc).__name__}: {exc})") from None
    payload.update(id=job.id, state=job.state, nodes=instance.n, partial=True,
                   solver_cost=plan.get("cost"))
    if isinstance(instance, CVRPInstance):  # as the final solution's document
        payload["depot"] = instance.depot
    if not math.isfinite(payload["cost"]):  # an unusable plan: no number (JSON has no NaN)
        payload["cost"] = None
    return payload


def job_series(store: JobStore, job: JobRecord) -> list[list[float]]:
    """The job's best cost over time, ``[[elapsed s, best], ...]``, never increasing: the
    stored series of its current attempt, brought up to date with the row's latest best (a
    running job rewrites its file at most once a second)."""
    series = CostSeries.from_points(store.read_progress(job.id, job.attempt))
    if job.elapsed is not None:
        series.add(job.elapsed, job.best_cost)
    return series.to_json()


def job_series_title(job: JobRecord, points: list[list[float]]) -> str:
    best = readable_number(points[-1][1]) if points else "none yet"
    return (f"{job.solver} on {job.filename} ({job.nodes:,} nodes) · best {best}"
            + ("" if job.final else f" · {job.state}"))


def job_progress_svg(job: JobRecord, points: list[list[float]]) -> str:
    """The job's series as a step plot."""
    return cost_plot_svg({job.solver: points}, job_series_title(job, points))


@dataclass
class ZipSummary:
    """A batch's summary as the zip holds it: the markdown table and the JSON status."""

    markdown: str
    status_json: str


#: A batch's zip is built in memory up to this size, then in a temporary file: the drawings
#: of a batch of 100,000-node instances are megabytes each, and a download must not hold a
#: whole batch's results in the server's memory.
ZIP_SPOOL_BYTES = 16 * 1024 * 1024


def batch_zip(store: JobStore, jobs: Iterable[JobRecord], summary: ZipSummary,
              out: BinaryIO | None = None) -> bytes | None:
    """A batch's results as one zip: ``summary.md`` and ``summary.json``, then per file with
    a solution ``solutions/NAME.json`` (and ``NAME.tour`` or ``NAME.sol`` for a feasible
    plan), ``drawings/NAME.svg`` and ``progress/NAME.json`` + ``.svg``; ``errors.txt`` lists
    the files whose solution or drawing could not be read back, rather than failing the
    whole download. Written into ``out`` when given (None returned), else returned."""
    buffer = io.BytesIO() if out is None else out
    errors: list[str] = []
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("summary.md", summary.markdown)
        archive.writestr("summary.json", summary.status_json)
        for job in jobs:
            try:
                _add_job(archive, store, job)
            except StoredSolutionError as exc:
                errors.append(f"{job.filename}: {exc}")
        if errors:
            archive.writestr("errors.txt", "\n".join(errors) + "\n")
    return buffer.getvalue() if out is None else None


def spooled_batch_zip(store: JobStore, jobs: Iterable[JobRecord], summary: ZipSummary
                      ) -> BinaryIO:
    """The batch's zip in a spooled temporary file, rewound: memory up to ZIP_SPOOL_BYTES,
    the rest on disk; the caller streams it and closes it (which deletes it)."""
    spool = tempfile.SpooledTemporaryFile(max_size=ZIP_SPOOL_BYTES)  # noqa: SIM115 (streamed)
    try:
        batch_zip(store, jobs, summary, out=spool)  # type: ignore[arg-type]
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return spool  # type: ignore[return-value]


def _add_job(archive: zipfile.ZipFile, store: JobStore, job: JobRecord) -> None:
    stem = result_stem(job.filename)
    points = job_series(store, job)
    if points:
        archive.writestr(f"progress/{stem}.json", json.dumps(points))
        archive.writestr(f"progress/{stem}.svg", job_progress_svg(job, points))
    payload = store.read_solution(job.id, job.attempt) if job.final else None
    if payload is None:
        return
    archive.writestr(f"solutions/{stem}.json", json.dumps(payload))
    if job.problem == VRP_PROBLEM:  # VROOM's output document is the whole answer
        return
    if payload.get("feasible") is not False and payload.get("cost") is not None:
        if job.problem == "tsp":
            archive.writestr(f"solutions/{stem}.tour", tour_text(payload, payload["cost"]))
        else:
            archive.writestr(f"solutions/{stem}.sol", sol_text(payload, payload["cost"]))
    archive.writestr(f"drawings/{stem}.svg", job_drawing(store, job, payload))
