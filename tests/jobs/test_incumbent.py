"""A running job's incumbent: the worker keeps the solver's published plan in the job's
folder, at most once a second, atomically, and never in a row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jobs.store import JobStore, StoredSolutionError
from jobs.worker import INCUMBENT_S, _Throttle
from solvers.contract import ProgressEvent


class _KeepingSink:
    """A sink that keeps what the worker hands it (the store's sink writes files instead)."""

    def __init__(self) -> None:
        self.plans: list[dict[str, Any]] = []

    def progress(self, event: ProgressEvent) -> None:
        pass

    def cancelled(self) -> bool:
        return False

    def incumbent(self, plan: dict[str, Any]) -> None:
        self.plans.append(plan)


def test_the_worker_hands_over_at_most_one_plan_a_second() -> None:
    sink = _KeepingSink()
    throttle = _Throttle(sink)
    throttle(ProgressEvent("ortools", 0.1, 1, 10.0))  # no routes: nothing to keep
    throttle(ProgressEvent("ortools", 0.2, 2, 9.0, routes=[[1, 2], [3]]))
    throttle(ProgressEvent("ortools", 0.3, 3, 8.0, routes=[[2, 1], [3]]))  # within 1 s
    assert sink.plans == [{"solver": "ortools", "cost": 9.0, "elapsed": 0.2,
                           "routes": [[1, 2], [3]]}]
    throttle.incumbent_written -= INCUMBENT_S  # a second later
    throttle(ProgressEvent("ortools", 1.3, 4, 7.0, routes=[[3, 2, 1]]))
    assert [p["cost"] for p in sink.plans] == [9.0, 7.0]


def test_the_store_keeps_one_plan_per_attempt_in_the_job_folder(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    store.job_dir("j1").mkdir(parents=True)
    assert store.read_incumbent("j1", 1) is None
    plan = {"solver": "pyvrp", "cost": 5.0, "elapsed": 1.0, "routes": [[1], [2]]}
    store.write_incumbent("j1", 1, plan)
    assert store.read_incumbent("j1", 1) == plan
    assert store.read_incumbent("j1", 2) is None  # another attempt's is never served
    assert json.loads(store.incumbent_path("j1", 1).read_text()) == plan
    assert [p.name for p in store.job_dir("j1").iterdir()] == ["incumbent-1.json"]
    store.write_incumbent("gone", 1, plan)  # a purged job's folder: left alone
    store.incumbent_path("j1", 1).write_text("{\"routes\": ")
    with pytest.raises(StoredSolutionError):
        store.read_incumbent("j1", 1)
