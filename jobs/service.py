"""The job service: accepts jobs (within limits), hands them to the executor, re-queues
what a previous server left unfinished, cancels, and expires old results."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jobs.executors import Executor, make_executor
from jobs.lifecycle import JobMonitor
from jobs.settings import Settings
from jobs.store import JobRecord, JobStore, StorageError, lock_data_dir
from solvers.device import torch_device_name

logger = logging.getLogger("cosolve.jobs")


@dataclass
class QueueFullError(Exception):
    """Too many jobs are waiting or running."""

    active: int
    limit: int
    #: True when the limit is one client's (COSOLVE_MAX_CLIENT_JOBS), not the server's.
    per_client: bool = False


@dataclass(frozen=True)
class JobInput:
    """A checked job submission: what the store persists and the executor runs."""

    problem: str
    solver: str
    time_limit: float
    seed: int
    filename: str
    data: bytes
    nodes: int
    #: The instance's fleet cap, echoed in the job's status.
    max_vehicles: int | None = None
    #: The budget in solutions (polynet), echoed in the job's status.
    max_solutions: int | None = None
    #: The checked cost of a known solution uploaded with the file (a batch's NAME.sol or
    #: NAME.opt.tour), and the name it came as: a batch reports the gap to it.
    reference: float | None = None
    reference_file: str | None = None


class JobService:
    """Owns the store and the executor for the lifetime of the server."""

    def __init__(self, settings: Settings, store: JobStore | None = None,
                 executor: Executor | None = None) -> None:
        self.settings = settings
        self.store = store or JobStore(settings.data_dir)
        self.executor = executor or make_executor(
            settings.executor, self.store, workers=settings.max_concurrent_jobs,
            ttl_s=settings.result_ttl_s, ray_address=settings.ray_address,
            device=torch_device_name(settings.device),
        )
        self._stop = threading.Event()
        self._purger: threading.Thread | None = None
        self._submit_lock = threading.Lock()
        self._lock: int | None = None  # the data directory's lock while started
        #: Called with each job's final record when it ends (the server's metrics).
        self.on_job_end: Callable[[JobRecord], None] | None = None
        self.monitor = JobMonitor(self.store, settings.job_log_interval_s,
                                  on_end=lambda job: self.on_job_end and self.on_job_end(job))

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> list[JobRecord]:
        """Take the data directory (``DataDirError`` when another server holds it), re-queue
        interrupted jobs, start the expiry loop; returns the re-queued jobs."""
        self._lock = lock_data_dir(self.store.root)
        requeued = self.store.requeue_interrupted(ttl_s=self.settings.result_ttl_s)
        for job in requeued:
            logger.info("re-queueing job %s (attempt %d)", job.id, job.attempt)
            self.executor.submit(job)
        self._purger = threading.Thread(target=self._purge_loop, daemon=True,
                                        name="jobs-expiry")
        self._purger.start()
        self.monitor.start()
        return requeued

    def stop(self) -> None:
        self._stop.set()
        self.monitor.stop()
        self.executor.shutdown()
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def _purge_loop(self) -> None:
        while not self._stop.wait(self.settings.purge_interval_s):
            try:
                removed = self.store.purge_expired()
                if removed:
                    logger.info("expired %d finished jobs", removed)
            except Exception:
                logger.exception("expiring jobs failed")

    # -- jobs ------------------------------------------------------------------------------
    def submit(self, *, problem: str, solver: str, time_limit: float, seed: int,
               filename: str, data: bytes, nodes: int,
               batch_id: str | None = None, max_vehicles: int | None = None,
               max_solutions: int | None = None, reference: float | None = None,
               reference_file: str | None = None, owner: str | None = None) -> JobRecord:
        """Persist and enqueue one job, unless the queue (or ``owner``'s share of it,
        COSOLVE_MAX_CLIENT_JOBS) is full."""
        with self._submit_lock:
            active = self.store.count_active()
            if active >= self.settings.max_active_jobs:
                raise QueueFullError(active + 1, self.settings.max_active_jobs)
            self._check_owner(owner, 1)
            job = self.store.create(problem=problem, solver=solver, time_limit=time_limit,
                                    seed=seed, filename=filename, data=data, nodes=nodes,
                                    batch_id=batch_id, max_vehicles=max_vehicles,
                                    max_solutions=max_solutions, reference=reference,
                                    reference_file=reference_file, owner=owner)
        _log_submitted(job)
        self.monitor.watch(job)
        self.executor.submit(job)
        return job

    def submit_batch(self, jobs: list[dict[str, Any]], solver: str, time_limit: float,
                     rejected: list[dict[str, str]], max_vehicles: int | None = None,
                     max_solutions: int | None = None, owner: str | None = None) -> str:
        """Persist a batch and all its jobs, or nothing when they do not all fit the queue:
        the check and the creation hold the submit lock together, so single jobs arriving at
        the same moment cannot fill the queue halfway through (that left a batch whose id
        the client never got, with some of its jobs running). Returns the batch id."""
        with self._submit_lock:
            active = self.store.count_active()
            if active + len(jobs) > self.settings.max_active_jobs:
                raise QueueFullError(active + len(jobs), self.settings.max_active_jobs)
            self._check_owner(owner, len(jobs))
            batch_id = self.store.create_batch(solver, time_limit, len(jobs), rejected,
                                               max_vehicles, max_solutions, owner)
            try:
                created = [self.store.create(**job, batch_id=batch_id, owner=owner)
                           for job in jobs]
            except StorageError:
                self.store.discard_batch(batch_id)  # all or nothing, as the 507 says
                raise
        logger.info("batch %s submitted: %d jobs, %s", batch_id, len(created), solver,
                    extra={"batch_id": batch_id, "event": "batch-submitted"})
        for job in created:
            _log_submitted(job)
            self.monitor.watch(job)
            self.executor.submit(job)
        return batch_id

    def _check_owner(self, owner: str | None, adding: int) -> None:
        """One client's jobs queued or running stay within COSOLVE_MAX_CLIENT_JOBS (the
        caller holds the submit lock)."""
        if owner is None:
            return
        mine = self.store.count_active(owner)
        if mine + adding > self.settings.max_client_jobs:
            raise QueueFullError(mine + adding, self.settings.max_client_jobs, per_client=True)

    def cancel(self, job_id: str) -> JobRecord | None:
        return self.store.request_cancel(job_id, ttl_s=self.settings.result_ttl_s)


def _log_submitted(job: JobRecord) -> None:
    logger.info("job %s submitted: %s on %s (%d nodes), time limit %g s%s", job.id, job.solver,
                job.problem, job.nodes, job.time_limit,
                f", batch {job.batch_id}" if job.batch_id else "",
                extra={"job_id": job.id, "event": "job-submitted", "solver": job.solver})
