"""A job's cost series: recorded by the worker, stored per attempt, read back never
increasing (jobs/worker.py, jobs/store.py, jobs/downloads.py)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from jobs.downloads import job_series
from jobs.store import JobStore, StoredSolutionError
from jobs.worker import JobSpec, execute, record_outcome
from solvers.contract import ProgressEvent
from tests.conftest import DATA


class _Sink:
    """Keeps what a worker reports, as the local store's sink would write it."""

    def __init__(self) -> None:
        self.events: list[ProgressEvent] = []
        self.written: list[list[list[float]]] = []

    def progress(self, event: ProgressEvent) -> None:
        self.events.append(event)

    def cancelled(self) -> bool:
        return False

    def series(self, points: list[list[float]]) -> None:
        self.written.append(points)


def test_a_job_records_its_improvements_and_ends_at_its_checked_cost(tmp_path: Path) -> None:
    data = (DATA / "X-n101-k25.vrp").read_bytes()
    sink = _Sink()
    outcome = execute(JobSpec("j", "cvrp", "ortools", 1.0, 0, "X-n101-k25.vrp"), data, sink)
    assert outcome.state == "succeeded" and outcome.cost is not None
    points = outcome.progress
    assert len(points) >= 2  # ortools reports its first plan and its improvements
    assert all(b[1] <= a[1] and b[0] >= a[0] for a, b in itertools.pairwise(points))
    assert points[-1][1] == pytest.approx(outcome.cost)
    assert sink.written  # a running job's curve reached the sink on the way

    store = JobStore(tmp_path)
    job = store.create(problem="cvrp", solver="ortools", time_limit=1.0, seed=0,
                       filename="X-n101-k25.vrp", data=data, nodes=101)
    assert store.mark_running(job.id, job.attempt)
    record_outcome(store, job.id, job.attempt, outcome, ttl_s=60)
    stored = store.get(job.id)
    assert stored is not None and job_series(store, stored) == points


def test_a_damaged_series_file_is_said_as_such(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    job = store.create(problem="tsp", solver="ils", time_limit=1.0, seed=0, filename="e.tsp",
                       data=(DATA / "eil51.tsp").read_bytes(), nodes=51)
    assert store.read_progress(job.id, job.attempt) == []  # none written yet
    store.progress_path(job.id, job.attempt).write_text("[[0, 1], [2")
    with pytest.raises(StoredSolutionError, match="progress"):
        store.read_progress(job.id, job.attempt)
