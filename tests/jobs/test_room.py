"""A full data disk is a wait: queued jobs stay queued and start once there is room, running
jobs keep solving and keep their outcome until it can be stored, and a refused submission
says when to come back. The disk is made full by making the store's writes fail as SQLite
and the file system do when it is (the heavy suite uses a real, tiny file system)."""

from __future__ import annotations

import errno
import sqlite3
import threading
import time
from concurrent.futures import Future
from pathlib import Path

import pytest

from jobs import room, worker
from jobs.executors import LocalProcessExecutor
from jobs.store import CANCELLED, QUEUED, SUCCEEDED, JobRecord, JobStore, StorageError
from jobs.worker import run_stored_job

TSP = b"NAME: t\nTYPE: TSP\nDIMENSION: 4\nEDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n" \
      b"1 0 0\n2 3 0\n3 3 4\n4 0 4\nEOF\n"


def _full(*_args: object, **_kwargs: object) -> None:
    raise sqlite3.OperationalError("database or disk is full")


def _enospc(*_args: object, **_kwargs: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def _job(store: JobStore) -> JobRecord:
    return store.create(problem="tsp", solver="nearest_neighbor", time_limit=1, seed=0,
                        filename="t.tsp", data=TSP, nodes=4)


def test_a_queued_job_stays_queued_while_the_disk_is_full(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = JobStore(tmp_path)
    job = _job(store)
    with monkeypatch.context() as patch:
        patch.setattr(JobStore, "mark_running", _full)
        assert run_stored_job(str(tmp_path), job.id, 0, 60.0) == room.NO_ROOM
    assert store.get(job.id).state == QUEUED  # not failed: its input is intact
    assert run_stored_job(str(tmp_path), job.id, 0, 60.0) == SUCCEEDED  # room again


def test_progress_writes_on_a_full_disk_do_not_fail_the_job(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = JobStore(tmp_path)
    job = _job(store)
    real_execute, real_write = worker.execute, JobStore.write_progress
    solving = []

    def execute(*args: object) -> object:
        solving.append(1)
        try:
            return real_execute(*args)  # type: ignore[arg-type]
        finally:
            solving.clear()  # room again once the solve is over

    def write_progress(self: JobStore, *args: object) -> None:
        if solving:
            _enospc()
        real_write(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(worker, "execute", execute)
    monkeypatch.setattr(JobStore, "report_progress", _full)
    monkeypatch.setattr(JobStore, "write_progress", write_progress)
    assert run_stored_job(str(tmp_path), job.id, 0, 60.0) == SUCCEEDED
    assert store.get(job.id).cost is not None


def test_an_outcome_waits_for_room_to_be_stored(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    store = JobStore(tmp_path)
    job = _job(store)
    real_finish = JobStore.finish
    refusals = []

    def finish_once_there_is_room(self: JobStore, *args: object, **kwargs: object) -> bool:
        if len(refusals) < 3:
            refusals.append(1)
            _full()
        return real_finish(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(room, "RECORD_PAUSE_S", 0.01)
    monkeypatch.setattr(JobStore, "finish", finish_once_there_is_room)
    assert run_stored_job(str(tmp_path), job.id, 0, 60.0) == SUCCEEDED
    assert len(refusals) == 3 and store.get(job.id).state == SUCCEEDED


def test_the_executor_submits_a_waiting_job_again(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    store = JobStore(tmp_path)
    waiting, cancelled = _job(store), _job(store)
    executor = LocalProcessExecutor(store, workers=1, ttl_s=60.0)
    monkeypatch.setattr(room, "RETRY_S", 0.05)
    submitted: list[str] = []
    again = threading.Event()

    def record(job: JobRecord) -> None:
        submitted.append(job.id)
        again.set()

    monkeypatch.setattr(executor, "submit", record)
    try:
        for job in (waiting, cancelled):
            future: Future[str] = Future()
            future.set_result(room.NO_ROOM)
            executor._done(job, future)
        store.request_cancel(cancelled.id)
        assert again.wait(5)
        time.sleep(0.3)  # the cancelled one's timer has fired by now
        assert submitted == [waiting.id]
        assert store.get(cancelled.id).state == CANCELLED
    finally:
        executor.shutdown()


def test_a_refused_submission_says_when_to_come_back() -> None:
    from app.routers.jobs import _storage_full

    problem = _storage_full(StorageError("the job could not be stored"))
    assert problem.status == 507
    assert problem.headers["Retry-After"] == str(room.RETRY_AFTER_S)


@pytest.mark.heavy
def test_a_real_full_disk_leaves_queued_jobs_queued_until_there_is_room(tmp_path: Path) -> None:
    """The same on a real, tiny file system (a tmpfs; root only): jobs queued while a filler
    takes every free byte stay queued, none fails, and all succeed once it is gone."""
    import contextlib
    import subprocess

    from jobs.service import JobService
    from jobs.settings import Settings

    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (not root)")
    service = JobService(Settings(data_dir=mount / "data", max_concurrent_jobs=1))
    try:
        service.start()
        jobs = [service.submit(problem="tsp", solver="ils", time_limit=1.0, seed=0,
                               filename="t.tsp", data=TSP, nodes=4) for _ in range(3)]
        with contextlib.suppress(OSError), open(mount / "filler", "wb") as fh:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        with pytest.raises(StorageError):
            service.submit(problem="tsp", solver="ils", time_limit=1.0, seed=0,
                           filename="t.tsp", data=TSP, nodes=4)
        time.sleep(8)
        states = [service.store.get(j.id).state for j in jobs]
        assert "failed" not in states and QUEUED in states, states
        (mount / "filler").unlink()
        deadline = time.monotonic() + 90
        while {service.store.get(j.id).state for j in jobs} != {SUCCEEDED}:
            assert time.monotonic() < deadline, [service.store.get(j.id) for j in jobs]
            time.sleep(0.5)
    finally:
        service.stop()
        # the store's last handles may close a moment after stop(): detach it then, so that
        # no mount outlives the test (pytest's clean-up of old folders would trip on it)
        if subprocess.run(["umount", str(mount)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "--lazy", str(mount)], check=False)
