"""Log lines for each job's life, from the server: started, progress now and then, ended.

The store is where every executor (local worker processes, Ray tasks) records what its jobs
do, and a worker process's own log goes nowhere an operator looks; so a thread of the server
reads the store's active jobs once a second and logs what changed: a job seen running for
the first time, its progress every ``COSOLVE_JOB_LOG_INTERVAL_S``, and its end with state,
cost and times (``on_end`` is then called with the final record: the server's metrics observe
the solver's time there). The submission itself is logged by ``JobService.submit``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from jobs.store import RUNNING, JobRecord, JobStore

logger = logging.getLogger("cosolve.jobs")

#: How often the store is read, in seconds.
POLL_S = 1.0


def _cost(value: float | None) -> str:
    return "none" if value is None else f"{value:.6g}"


class JobMonitor:
    """Follows the store's active jobs and logs their lifecycle."""

    def __init__(self, store: JobStore, interval_s: float,
                 on_end: Callable[[JobRecord], None] | None = None) -> None:
        self.store = store
        self.interval_s = interval_s
        self.on_end = on_end
        self._seen: dict[str, JobRecord] = {}  # active jobs at the last look
        self._started: set[tuple[str, int]] = set()  # (id, attempt) logged as started
        self._logged_at: dict[str, float] = {}  # last progress line per job
        self._new: dict[str, JobRecord] = {}  # submitted since the last look
        self._new_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, job: JobRecord) -> None:
        """A job just submitted: its end is logged even if it ends before the next look."""
        with self._new_lock:
            self._new[job.id] = job

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="jobs-monitor", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                self.look()
            except Exception:  # a store that cannot be read now (a full disk): next time
                logger.debug("job monitor: the store could not be read", exc_info=True)

    def look(self, now: float | None = None) -> None:
        """One pass: log the starts, the progress due and the ends since the last pass."""
        now = time.monotonic() if now is None else now
        with self._new_lock:
            new, self._new = self._new, {}
        self._seen.update(new)
        active = {job.id: job for job in self.store.active_jobs()}
        for job in active.values():
            if job.state == RUNNING:
                self._running(job, now)
        for job_id in [j for j in self._seen if j not in active]:
            self._ended(job_id)
        self._seen = active

    def _running(self, job: JobRecord, now: float) -> None:
        key = (job.id, job.attempt)
        if key not in self._started:
            self._started.add(key)
            self._logged_at[job.id] = now
            waited = (job.started_at - job.created_at) if job.started_at else 0.0
            logger.info("job %s started: %s on %s (%d nodes), attempt %d, %.1f s after its "
                        "submission", job.id, job.solver, job.problem, job.nodes, job.attempt,
                        waited, extra={"job_id": job.id, "event": "job-started",
                                       "solver": job.solver, "attempt": job.attempt})
            return
        if now - self._logged_at.get(job.id, now) >= self.interval_s:
            self._logged_at[job.id] = now
            logger.info("job %s running: %.1f s of %g s, best cost %s, %s", job.id,
                        job.elapsed or 0.0, job.time_limit, _cost(job.best_cost),
                        job.message or "", extra={
                            "job_id": job.id, "event": "job-progress",
                            "elapsed": job.elapsed, "best_cost": job.best_cost,
                            "iterations": job.iterations})

    def _ended(self, job_id: str) -> None:
        self._logged_at.pop(job_id, None)
        job = self.store.get(job_id)
        if job is None:  # deleted (expired) in between: nothing to say
            return
        self._started = {k for k in self._started if k[0] != job_id}
        if not job.final:
            return
        ran = (job.finished_at - job.started_at) if job.started_at and job.finished_at else None
        total = (job.finished_at - job.created_at) if job.finished_at else None
        level = logging.WARNING if job.state == "failed" else logging.INFO
        logger.log(level, "job %s ended %s: %s, cost %s, solved in %s, %s since its "
                   "submission%s", job.id, job.state, job.solver, _cost(job.cost),
                   "-" if ran is None else f"{ran:.1f} s",
                   "-" if total is None else f"{total:.1f} s",
                   f" ({job.error})" if job.error else "",
                   extra={"job_id": job.id, "event": "job-ended", "state": job.state,
                          "solver": job.solver, "cost": job.cost, "seconds": ran})
        if self.on_end is not None:
            try:
                self.on_end(job)
            except Exception:
                logger.exception("job monitor: on_end failed for %s", job_id)
