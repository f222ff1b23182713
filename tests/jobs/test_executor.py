"""The local executor: a stop mid-job leaves the job to the next server, while a worker that
dies on its own fails its job."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from app.jobs.service import JobService
from app.jobs.store import FAILED, QUEUED, RUNNING, JobRecord, JobStore
from app.settings import Settings
from tests.conftest import DATA


def _running_job(service: JobService) -> JobRecord:
    job = service.submit(problem="tsp", solver="ortools", time_limit=20, seed=0,
                         filename="eil51.tsp", data=(DATA / "eil51.tsp").read_bytes(), nodes=51)
    deadline = time.monotonic() + 60
    while service.store.get(job.id).state != RUNNING:
        assert time.monotonic() < deadline, service.store.get(job.id)
        time.sleep(0.1)
    return job


def _wait_state(store: JobStore, job_id: str, state: str, timeout: float = 15) -> JobRecord:
    deadline = time.monotonic() + timeout
    while (job := store.get(job_id)).state != state:
        assert time.monotonic() < deadline, job
        time.sleep(0.1)
    return job


def test_a_stop_mid_job_leaves_it_to_the_next_server(tmp_path: Path) -> None:
    service = JobService(Settings(data_dir=tmp_path, max_concurrent_jobs=1))
    service.start()
    job = _running_job(service)
    service.stop()  # what SIGTERM / Ctrl-C on the server does
    time.sleep(1.0)  # the terminated worker's future has failed by now
    assert JobStore(tmp_path).get(job.id).state == RUNNING  # not "failed": nothing is lost
    again = JobService(Settings(data_dir=tmp_path, max_concurrent_jobs=1))
    try:
        requeued = again.start()
        assert [(j.id, j.attempt) for j in requeued] == [(job.id, 1)]
        assert requeued[0].state == QUEUED
    finally:
        again.stop()


def test_a_worker_that_dies_fails_its_job(tmp_path: Path) -> None:
    service = JobService(Settings(data_dir=tmp_path, max_concurrent_jobs=1))
    service.start()
    try:
        job = _running_job(service)
        # only this service's pool workers (a session may hold other child processes)
        workers = list(service.executor._pool._processes.values())  # type: ignore[attr-defined]
        assert workers
        for worker in workers:
            os.kill(worker.pid, signal.SIGKILL)  # as the out-of-memory killer would
        failed = _wait_state(service.store, job.id, FAILED)
        assert "worker process died" in (failed.error or "")
    finally:
        service.stop()
