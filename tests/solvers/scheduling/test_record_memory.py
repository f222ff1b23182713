"""A Gantt chart alone keeps only the workflows it draws: every policy's whole record stayed in
memory until the last policy had run (before: gantt=true on 20,000 workflows × 10
policies held 1 GB more than the same request without it)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from app.routers import scheduling
from jobs import simulation
from solvers.scheduling import registry
from solvers.scheduling.registry import PolicyRun, run_policies
from solvers.scheduling.render import gantt_svg
from solvers.scheduling.simulator import Arrivals, parse_pool
from solvers.scheduling.workflow import Workflow


def test_run_policies_keeps_only_the_first_workflows(classic: list[Workflow]) -> None:
    pool, arrivals = parse_pool("3x4"), Arrivals(40)
    whole = run_policies(classic, pool, arrivals, ["heft", "eft"], 1, record=True, check=True)
    kept = run_policies(classic, pool, arrivals, ["heft", "eft"], 1, record=True, check=True,
                        keep_workflows=3)
    for full, trimmed in zip(whole, kept, strict=True):
        assert full.result is not None and trimmed.result is not None
        assert trimmed.check is not None and trimmed.check.ok  # checked on the whole record
        assert {row[0] for row in trimmed.result.workflows or []} == {0, 1, 2}
        assert {row[0] for row in trimmed.result.schedule or []} == {0, 1, 2}
        assert len(trimmed.result.schedule or []) < len(full.result.schedule or []) / 5
        # the chart is the same drawing, and so are the numbers
        assert (gantt_svg(trimmed.result, pool, classic, 3)
                == gantt_svg(full.result, pool, classic, 3))
        assert trimmed.result.summary() | {"wall_time": 0} == full.result.summary() | {
            "wall_time": 0}


@pytest.mark.parametrize(("schedule", "kept"), [(False, 2), (True, None)])
def test_simulate_keeps_what_the_answer_shows(classic: list[Workflow],
                                              monkeypatch: pytest.MonkeyPatch,
                                              schedule: bool, kept: int | None) -> None:
    """gantt=true alone keeps its gantt_workflows; schedule=true keeps the whole record."""
    seen: list[PolicyRun] = []
    asked: dict[str, Any] = {}

    def spy(*args: Any, **kwargs: Any) -> list[PolicyRun]:
        asked.update(kwargs)
        seen.extend(registry.run_policies(*args, **kwargs))
        return seen

    monkeypatch.setattr(simulation, "run_policies", spy)  # the document's one code path
    task = scheduling.SimTask(classic, parse_pool("2x4"), Arrivals(20), ["heft"], 0,
                              gantt=True, gantt_workflows=2, time_limit=60.0,
                              schedule=schedule)
    out = scheduling._simulate(task, threading.Event())
    assert asked["keep_workflows"] == kept
    result = seen[0].result
    assert result is not None and result.workflows is not None
    assert len(result.workflows) == (2 if kept else 20)
    assert out.rows[0].gantt_svg is not None and "first 2 workflows" in out.rows[0].gantt_svg
