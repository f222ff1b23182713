"""What a job does wherever it runs (a local worker process, a Ray worker, the CLI batch):
read the stored input, solve with progress and cancellation, and produce an outcome.

The function here touches no HTTP and no executor: progress and the cancel flag go through a
``JobSink``, so each executor only supplies the sink that fits where the worker runs.
"""

from __future__ import annotations

import functools
import math
import os
import sqlite3
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Protocol

from jobs.room import NO_ROOM, disk_full, skip_when_full, until_stored
from jobs.simulation import SIMULATION_PROBLEM, read_simulation, simulation_document
from jobs.store import JobStore
from jobs.vrp import VRP_PROBLEM, execute_vrp
from solvers.catalog import warm_up
from solvers.contract import Budget, ProgressEvent
from solvers.errors import CosolveError, NoSolutionError
from solvers.progress import CostSeries
from solvers.routing.io.documents import solution_to_dict
from solvers.routing.io.formats import parse_instance_bytes
from solvers.routing.problem import CVRPInstance
from solvers.routing.solve import solve

#: How often a running job checks its cancel flag and may write progress, in seconds.
POLL_S = 0.25


class JobSink(Protocol):
    """Where a running job reports progress and learns that it was cancelled."""

    def progress(self, event: ProgressEvent) -> None: ...

    def cancelled(self) -> bool: ...


@dataclass
class JobSpec:
    """Everything a worker needs besides the input bytes."""

    id: str
    problem: str
    solver: str
    time_limit: float
    seed: int
    filename: str
    #: torch device of the torch solvers (the server's ``COSOLVE_DEVICE``, resolved)
    device: str = "cpu"
    #: the budget in solutions, for solvers that take one (polynet), None without one
    max_solutions: int | None = None


@dataclass
class JobOutcome:
    """How a job ended; ``solution`` is the JSON the API serves (None if there is none)."""

    state: str
    solution: dict[str, Any] | None = None
    cost: float | None = None
    feasible: bool | None = None
    partial: bool = False
    error: str | None = None
    message: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    #: the best cost over time, ``[[elapsed s, best], ...]`` (``CostSeries.to_json``)
    progress: list[list[float]] = field(default_factory=list)


#: How often a running job may rewrite its stored progress series, in seconds.
SERIES_S = 1.0
#: How often a running job may rewrite its stored incumbent plan, in seconds.
INCUMBENT_S = 1.0


class _Throttle:
    """Forward progress at most every POLL_S seconds (the last event is always kept), and
    record every improvement in the job's cost series; a sink that keeps series (the local
    store's) is handed it at most every SERIES_S seconds, so ``/progress`` shows a running
    job's curve so far."""

    def __init__(self, sink: JobSink) -> None:
        self.sink = sink
        self.last = 0.0
        self.iterations = 0  # the most any event reported (the final count never drops)
        self.series = CostSeries()
        self.series_written = 0.0
        self.series_changed = False
        self.incumbent_written = -math.inf

    def __call__(self, event: ProgressEvent) -> None:
        self.iterations = max(self.iterations, event.iterations)
        self._incumbent(event)
        self.series_changed |= self.series.add(event.elapsed, event.best_cost)
        now = time.monotonic()
        if now - self.last >= POLL_S:
            self.last = now
            self.sink.progress(event)
        keep = getattr(self.sink, "series", None)
        if keep is not None and self.series_changed and now - self.series_written >= SERIES_S:
            self.series_written, self.series_changed = now, False
            keep(self.series.to_json())

    def _incumbent(self, event: ProgressEvent) -> None:
        """Hand the solver's published plan to a sink that keeps it (the local store's), at
        most every INCUMBENT_S seconds: a file write on the solver's thread, never a row."""
        keep = getattr(self.sink, "incumbent", None)
        if (keep is None or event.routes is None or event.best_cost is None
                or not math.isfinite(event.best_cost)):
            return
        now = time.monotonic()
        if now - self.incumbent_written >= INCUMBENT_S:
            self.incumbent_written = now
            keep({"solver": event.solver, "cost": float(event.best_cost),
                  "elapsed": float(event.elapsed), "routes": event.routes})


def execute(spec: JobSpec, data: bytes, sink: JobSink) -> JobOutcome:
    """Solve one job. Never raises: every failure becomes a ``failed`` outcome with a reason."""
    cancel = threading.Event()
    done = threading.Event()

    def watch_cancel() -> None:
        while not done.wait(POLL_S):
            if sink.cancelled():
                cancel.set()
                return

    watcher = threading.Thread(target=watch_cancel, name=f"cancel-{spec.id}", daemon=True)
    watcher.start()
    if spec.problem == SIMULATION_PROBLEM:
        try:
            return _simulate(spec, data, sink, cancel)
        finally:
            done.set()
    if spec.problem == VRP_PROBLEM:  # a VROOM document: VROOM's output document
        try:
            return JobOutcome(**execute_vrp(spec.solver, spec.time_limit, spec.seed, data,
                                            spec.filename, _Throttle(sink), cancel))
        finally:
            done.set()
    try:
        instance = parse_instance_bytes(data, spec.filename)
        sink.progress(ProgressEvent(spec.solver, 0.0, 0, None, "loading the solver"))
        warm_up(spec.solver)  # a fresh worker: imports and weights outside the time limit
        sink.progress(ProgressEvent(spec.solver, 0.0, 0, None,
                                    f"solving {instance.n} nodes"))
        budget = Budget(time_limit=spec.time_limit, seed=spec.seed,
                        max_solutions=spec.max_solutions, cancel=cancel, device=spec.device)
        throttle = _Throttle(sink)
        solution = solve(instance, spec.solver, budget, throttle)
    except NoSolutionError as exc:
        state = "cancelled" if cancel.is_set() else "failed"
        return JobOutcome(state, error=str(exc), message="no solution")
    except CosolveError as exc:
        return JobOutcome("failed", error=str(exc), message="failed")
    except Exception as exc:
        return JobOutcome("failed", error=f"{type(exc).__name__}: {exc}",
                          message="internal error", extra={"traceback": traceback.format_exc()})
    finally:
        done.set()
    payload = solution_to_dict(solution, instance)
    payload["nodes"] = instance.n
    if isinstance(instance, CVRPInstance):  # .sol numbers the customers around it
        payload["depot"] = instance.depot
    cost = solution.cost if math.isfinite(solution.cost) else None
    partial = cancel.is_set()
    payload["partial"] = partial
    # the solvers name their count differently (neural ones: passes); never below what
    # progress already showed
    stats = solution.stats
    counted = stats.get("iterations", stats.get("solutions_seen", stats.get("passes", 0)))
    iterations = max(int(counted or 0), throttle.iterations)
    sink.progress(ProgressEvent(spec.solver, solution.wall_time, iterations, cost,
                                "cancelled: best so far kept" if partial else "done"))
    series = throttle.series
    # the checked cost closes the curve; an infeasible plan's is no best, only the end time
    series.add(solution.wall_time, cost if solution.feasible else None)
    return JobOutcome(
        "cancelled" if partial else "succeeded",
        solution=payload,
        cost=cost,
        feasible=solution.feasible,
        partial=partial,
        message="cancelled; the best solution found so far is kept" if partial else "solved",
        progress=series.to_json(),
    )


def _simulate(spec: JobSpec, data: bytes, sink: JobSink, cancel: threading.Event
              ) -> JobOutcome:
    """A scheduling simulation job: progress counts the workflows simulated (all policies
    together); the result is the document ``POST /v1/scheduling/simulate`` answers. A
    cancelled simulation keeps no result: a policy stopped halfway has no mean flowtime."""
    started = time.monotonic()
    throttle = _Throttle(sink)

    def progress(done: int, total: int, policy: str) -> None:
        throttle(ProgressEvent(spec.solver, time.monotonic() - started, done, None,
                               f"simulated {done:,}/{total:,} workflows ({policy})"))

    try:
        sim = read_simulation(data)
        sink.progress(ProgressEvent(spec.solver, 0.0, 0, None,
                                    f"simulating {len(sim.policies) * sim.arrivals.count:,} "
                                    "workflows"))
        doc = simulation_document(sim, deadline=time.perf_counter() + spec.time_limit,
                                  cancel=cancel.is_set, progress=progress)
    except TimeoutError:
        if cancel.is_set():
            return JobOutcome("cancelled", error="cancelled before the simulation finished",
                              message="cancelled; a simulation stopped halfway has no result")
        return JobOutcome("failed", error=f"the simulation did not finish within "
                          f"{spec.time_limit:g} s", message="out of time")
    except CosolveError as exc:
        return JobOutcome("failed", error=str(exc), message="failed")
    except Exception as exc:
        return JobOutcome("failed", error=f"{type(exc).__name__}: {exc}",
                          message="internal error", extra={"traceback": traceback.format_exc()})
    best = [r["mean_flowtime"] for r in doc["rows"] if r["policy"] == doc["best_policy"]]
    checked = [r["checked"] for r in doc["rows"] if r["checked"] is not None]
    total = len(sim.policies) * sim.arrivals.count
    sink.progress(ProgressEvent(spec.solver, time.monotonic() - started, total,
                                best[0] if best else None,
                                f"simulated {total:,}/{total:,} workflows"))
    return JobOutcome("succeeded" if best else "failed", solution=doc,
                      cost=best[0] if best else None,
                      feasible=all(checked) if checked else None,
                      error=None if best else "no policy could run",
                      message=f"simulated {total:,}/{total:,} workflows; best policy "
                      f"{doc['best_policy']}" if best
                      else "no policy could run")


class StoreSink:
    """Progress and cancellation through the local SQLite store (same machine)."""

    def __init__(self, store: Any, job_id: str, attempt: int) -> None:
        self.store = store
        self.job_id = job_id
        self.attempt = attempt

    def progress(self, event: ProgressEvent) -> None:
        best = event.best_cost if event.best_cost is not None and math.isfinite(
            event.best_cost) else None
        skip_when_full(lambda: self.store.report_progress(
            self.job_id, self.attempt, event.elapsed, event.iterations, best, event.message),
            f"job {self.job_id}: progress")

    def cancelled(self) -> bool:
        return bool(self.store.cancel_requested(self.job_id))

    def series(self, points: list[list[float]]) -> None:
        """The cost series so far, for ``/progress`` while the job runs."""
        skip_when_full(lambda: self.store.write_progress(self.job_id, self.attempt, points),
                       f"job {self.job_id}: cost series")

    def incumbent(self, plan: dict[str, Any]) -> None:
        """The solver's latest published plan, for ``/incumbent`` while the job runs."""
        skip_when_full(lambda: self.store.write_incumbent(self.job_id, self.attempt, plan),
                       f"job {self.job_id}: incumbent")


def record_outcome(store: Any, job_id: str, attempt: int, outcome: JobOutcome,
                   ttl_s: float) -> bool:
    """Write the solution file and the cost series, then the final row (guarded by the
    attempt)."""
    if outcome.solution is not None:
        store.write_solution(job_id, attempt, outcome.solution)
    if outcome.progress:
        store.write_progress(job_id, attempt, outcome.progress)
    return store.finish(job_id, attempt, state=outcome.state, cost=outcome.cost,
                        feasible=outcome.feasible, partial=outcome.partial, error=outcome.error,
                        message=outcome.message, ttl_s=ttl_s)


def run_stored_job(root: str, job_id: str, attempt: int, ttl_s: float,
                   device: str = "cpu") -> str:
    """Entry point of a local worker process: run one job of the store at ``root``."""
    store = JobStore(root)
    job = store.get(job_id)
    try:
        started = job is not None and job.attempt == attempt and store.mark_running(
            job_id, attempt, os.getpid())
    except (sqlite3.Error, OSError) as exc:
        if not disk_full(exc):
            raise
        return NO_ROOM  # still queued, its input intact: the executor tries it again later
    if job is None or not started:
        return "skipped"  # cancelled while queued, or superseded by a newer attempt
    spec = JobSpec(job.id, job.problem, job.solver, job.time_limit, job.seed, job.filename,
                   device, job.max_solutions)
    try:
        data = store.input_path(job).read_bytes()
    except FileNotFoundError:  # said as such, not as "the worker process died"
        outcome = JobOutcome("failed", error="the job's input file is missing from the data "
                             f"directory ({store.input_path(job)})", message="input missing")
        record_outcome(store, job_id, attempt, outcome, ttl_s)
        return outcome.state
    outcome = execute(spec, data, StoreSink(store, job_id, attempt))
    until_stored(functools.partial(record_outcome, store, job_id, attempt, outcome, ttl_s),
                 f"job {job_id}: its outcome")
    state = outcome.state
    del data, outcome  # the input and the solution, before the trim
    return_freed_memory()
    return state


def return_freed_memory() -> None:
    """Hand the memory a job freed back to the system: the worker lives on for later jobs,
    and glibc keeps freed heap pages otherwise (after one 100K-node OR-Tools job an
    idle worker held 3.8-4.7 GB for the rest of the server's life; measured here, a 50K-node
    OR-Tools solve left 1,317 MB held after ``gc.collect``, 152 MB after the trim)."""
    import gc

    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def _malloc_trim() -> Any:
    """glibc's ``malloc_trim``, or None where the C library has none (macOS, musl)."""
    import ctypes
    import ctypes.util

    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
