"""The local executor: a stop mid-job leaves the job to the next server, while a worker that
dies on its own fails its job."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from jobs.service import JobService
from jobs.settings import Settings
from jobs.store import CANCELLED, FAILED, QUEUED, RUNNING, SUCCEEDED, JobRecord, JobStore
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


def test_jobs_queued_behind_a_dying_worker_still_run(tmp_path: Path) -> None:
    """A broken pool fails every future it holds: the job whose worker died fails, the ones
    that never started go to a new pool and finish (they were all marked failed)."""
    service = JobService(Settings(data_dir=tmp_path, max_concurrent_jobs=1))
    service.start()
    try:
        job = _running_job(service)
        waiting = [service.submit(problem="tsp", solver="nearest_neighbor", time_limit=1,
                                  seed=0, filename="eil51.tsp",
                                  data=(DATA / "eil51.tsp").read_bytes(), nodes=51)
                   for _ in range(2)]
        workers = list(service.executor._pool._processes.values())  # type: ignore[attr-defined]
        for worker in workers:
            os.kill(worker.pid, signal.SIGKILL)
        _wait_state(service.store, job.id, FAILED)
        for queued in waiting:
            done = _wait_state(service.store, queued.id, SUCCEEDED, timeout=60)
            assert done.error is None and done.cost is not None
    finally:
        service.stop()


def test_a_cancel_asked_before_a_stop_is_not_run_again(tmp_path: Path) -> None:
    """The job's cancel was requested, then the server died before the solve handed over:
    the next server marks it cancelled (no new attempt that ends with a solver error)."""
    service = JobService(Settings(data_dir=tmp_path, max_concurrent_jobs=1))
    service.start()
    job = _running_job(service)
    service.store.request_cancel(job.id)
    service.stop()
    again = JobService(Settings(data_dir=tmp_path, max_concurrent_jobs=1))
    try:
        assert again.start() == []
        stopped = again.store.get(job.id)
        assert stopped.state == CANCELLED and stopped.expires_at is not None
        assert "none was kept" in (stopped.message or "") and stopped.best_cost is None
    finally:
        again.stop()


def test_a_worker_death_does_not_fail_the_jobs_beside_it(tmp_path: Path) -> None:
    """A pool whose worker dies stops all its workers: the job of the dead worker fails, the
    one solving beside it goes back to the queue under a new attempt and finishes (before:
    it ended failed with 'the worker process died' as well)."""
    service = JobService(Settings(data_dir=tmp_path, max_concurrent_jobs=2))
    service.start()
    try:
        victim = _running_job(service)
        bystander = _running_job(service)
        victim_pid = service.store.get(victim.id).worker_pid
        assert victim_pid and victim_pid != service.store.get(bystander.id).worker_pid
        os.kill(victim_pid, signal.SIGKILL)  # as the out-of-memory killer would
        failed = _wait_state(service.store, victim.id, FAILED)
        assert "worker process died" in (failed.error or "")
        deadline = time.monotonic() + 30
        while (again := service.store.get(bystander.id)).attempt == 0:
            assert time.monotonic() < deadline, again
            time.sleep(0.1)
        assert again.state in (QUEUED, RUNNING) and "re-queued" in (again.message or "")
        assert again.error is None
        service.store.request_cancel(bystander.id)  # its best so far, not 20 s more
        done = _wait_state(service.store, bystander.id, CANCELLED, timeout=60)
        assert done.error is None
    finally:
        service.stop()


def test_a_failure_the_store_refuses_is_written_once_it_takes_it(tmp_path: Path,
                                                                  monkeypatch) -> None:
    """Regression: with the disk full, the worker could not record its outcome, nor the server
    the failure, and the job stayed running (uncancellable) until a restart. The failure is
    written again every few seconds until the store takes it, and says why."""
    import sqlite3
    from concurrent.futures import Future

    from jobs import executors

    monkeypatch.setattr(executors, "FAILURE_RECORD_RETRY_S", 0.05)
    store = JobStore(tmp_path)
    job = store.create(problem="tsp", solver="nearest_neighbor", time_limit=1.0, seed=0,
                       filename="eil51.tsp", data=(DATA / "eil51.tsp").read_bytes(), nodes=51)
    assert store.mark_running(job.id, job.attempt)
    real_finish = store.finish
    refusals = []

    def full_disk(*args, **kwargs):  # type: ignore[no-untyped-def]
        if len(refusals) < 3:
            refusals.append(1)
            raise sqlite3.OperationalError("database or disk is full")
        return real_finish(*args, **kwargs)

    monkeypatch.setattr(store, "finish", full_disk)
    executor = executors.LocalProcessExecutor(store, workers=1, ttl_s=60)
    try:
        future: Future[str] = Future()
        future.set_exception(sqlite3.OperationalError("database or disk is full"))
        executor._done(job, future)
        failed = _wait_state(store, job.id, FAILED, timeout=5)
        assert len(refusals) == 3
        assert "could not be stored" in (failed.error or "") and "disk full" in failed.error
    finally:
        executor.shutdown()


def test_a_worker_hands_back_the_memory_its_job_freed(tmp_path: Path, monkeypatch) -> None:
    """Workers live on between jobs, and glibc kept a job's freed heap: after one 100K-node
    OR-Tools job an idle worker held 3.8-4.7 GB. Each job ends with the trim, and
    the trim gives back freed pages (a fragmented 300 MB, in a fresh interpreter)."""
    import subprocess
    import sys

    from jobs import worker

    if worker._malloc_trim() is None:
        import pytest

        pytest.skip("no glibc malloc_trim here")
    probe = (
        "import gc, psutil\n"
        "from jobs.worker import return_freed_memory\n"
        "p = psutil.Process()\n"
        "blocks = [bytearray(10_000) for _ in range(30_000)]\n"
        "keep = blocks[::100]\n"  # one block in a hundred stays: the heap cannot shrink
        "del blocks; gc.collect()\n"
        "held = p.memory_info().rss\n"
        "return_freed_memory()\n"
        "print(held >> 20, p.memory_info().rss >> 20)\n"
    )
    held, after = map(int, subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True,
        cwd=Path(__file__).resolve().parents[2]).stdout.split())
    assert held - after > 200, (held, after)
    # and a stored job run by a worker ends with it
    calls: list[int] = []
    monkeypatch.setattr(worker, "return_freed_memory", lambda: calls.append(1))
    store = JobStore(tmp_path)
    job = store.create(problem="tsp", solver="nearest_neighbor", time_limit=1, seed=0,
                       filename="eil51.tsp", data=(DATA / "eil51.tsp").read_bytes(), nodes=51)
    assert worker.run_stored_job(str(tmp_path), job.id, job.attempt, 60.0) == SUCCEEDED
    assert calls == [1]


def test_a_cancelled_job_whose_worker_dies_ends_cancelled(tmp_path: Path) -> None:
    """A cancel asked for, then the worker killed (it did not stop in time, or the user
    killed it): the job ends cancelled, as asked, not failed; a solution the worker had
    already stored is kept."""
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    from jobs import executors

    store = JobStore(tmp_path)
    executor = executors.LocalProcessExecutor(store, workers=1, ttl_s=60)
    try:
        jobs = []
        for keep in (False, True):
            job = store.create(problem="tsp", solver="nearest_neighbor", time_limit=1.0,
                               seed=0, filename="eil51.tsp",
                               data=(DATA / "eil51.tsp").read_bytes(), nodes=51)
            assert store.mark_running(job.id, job.attempt, worker_pid=None)
            store.request_cancel(job.id)
            if keep:
                store.write_solution(job.id, job.attempt, {"cost": 500.0, "feasible": True})
            future: Future[str] = Future()
            future.set_exception(BrokenProcessPool("a worker was terminated abruptly"))
            executor._done(job, future)
            jobs.append(store.get(job.id))
        lost, kept = jobs
        assert lost.state == CANCELLED and lost.error is None
        assert lost.cost is None and "none was kept" in lost.message
        assert kept.state == CANCELLED and kept.cost == 500.0 and kept.partial
        assert store.read_solution(kept.id) == {"cost": 500.0, "feasible": True}
    finally:
        executor.shutdown()


def test_ray_channel_hands_over_the_plan_and_series_once_each(tmp_path: Path) -> None:
    """A Ray worker publishes its plan and cost series through the channel actor; the pump
    stores each new version once, as the local sink writes them (here without Ray: the actor
    and the pump's store step are plain Python)."""
    from jobs.executors import RayExecutor, _Channel

    store = JobStore(tmp_path)
    job = store.create(problem="tsp", solver="ortools", time_limit=5, seed=0,
                       filename="eil51.tsp", data=(DATA / "eil51.tsp").read_bytes(), nodes=51)
    channel = _Channel()
    pump = RayExecutor.__new__(RayExecutor)  # only its store is used by _keep_files
    pump.store = store
    seen: dict[str, int] = {}
    assert channel.poll(seen) == (None, {})
    plan = {"solver": "ortools", "cost": 500.0, "elapsed": 1.0, "routes": [list(range(51))]}
    channel.report(1.0, 3, 500.0, "")
    channel.publish("incumbent", plan)
    channel.publish("series", [[0.5, 510.0], [1.0, 500.0]])
    latest, fresh = channel.poll(seen)
    assert latest == (1.0, 3, 500.0, "") and set(fresh) == {"incumbent", "series"}
    pump._keep_files(job, fresh, seen)
    assert store.read_incumbent(job.id, job.attempt) == plan
    assert store.read_progress(job.id, job.attempt) == [[0.5, 510.0], [1.0, 500.0]]
    assert channel.poll(seen)[1] == {}  # nothing new: nothing sent again
    channel.publish("incumbent", {**plan, "cost": 480.0})
    assert set(channel.poll(seen)[1]) == {"incumbent"}
