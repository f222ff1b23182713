"""The independent schedule checker (solvers/scheduling/check.py): real schedules pass, each
kind of corruption is caught, a policy's VM index is range-checked, and the simulate and
session answers (HTTP and CLI) say that they were checked or withhold what failed."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable
from typing import Any

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from app.errors import ApiError
from app.routers import scheduling
from app.schemas.scheduling import EventsRequest
from cli.main import app
from solvers.errors import CheckFailedError
from solvers.scheduling import registry
from solvers.scheduling.check import (
    AssignmentLedger,
    check_result,
    check_schedule,
    expected_stream,
)
from solvers.scheduling.heuristics import EFT, HEURISTICS
from solvers.scheduling.session import Arrived, EventError, Finished, Session
from solvers.scheduling.simulator import (
    Arrivals,
    ClusterState,
    Run,
    SimResult,
    make_stream,
    parse_pool,
    simulate,
)
from solvers.scheduling.workflow import Workflow, workflow_from_dict
from tests.solvers.scheduling.conftest import DIAMOND

ARRIVALS = Arrivals(30, (60.0, 400.0))  # busy enough that VMs queue
SEED = 4


@pytest.mark.parametrize("name", sorted(HEURISTICS))
def test_every_heuristics_real_schedule_passes(name: str, classic: list[Workflow]) -> None:
    pool = parse_pool("6x2")
    res = simulate(classic, pool, ARRIVALS, HEURISTICS[name](), SEED, record=True)
    verdict = check_result(classic, pool.speeds, res,
                           expected_stream(len(classic), ARRIVALS.count, ARRIVALS.rates, SEED))
    assert verdict.ok, verdict.violations
    assert verdict.workflows == ARRIVALS.count and verdict.tasks == res.decisions
    assert verdict.mean_flowtime == pytest.approx(res.mean_flowtime, rel=1e-12)
    assert verdict.utilization == pytest.approx(res.utilization, rel=1e-12)


def test_the_stream_is_recomputed_as_the_simulator_makes_it(classic: list[Workflow]) -> None:
    times, kinds = make_stream(classic, ARRIVALS, SEED)
    mine_times, mine_kinds = expected_stream(len(classic), ARRIVALS.count, ARRIVALS.rates, SEED)
    assert np.array_equal(times, mine_times) and np.array_equal(kinds, mine_kinds)


# -- corrupted schedules ------------------------------------------------------------------------
Record = tuple[list[list[Any]], list[list[Any]], dict[str, Any]]


@pytest.fixture(scope="module")
def recorded() -> tuple[list[Workflow], tuple[float, ...], SimResult]:
    """Diamonds and chains on three equal VMs, queueing: every corruption has a place."""
    templates = [workflow_from_dict(DIAMOND), workflow_from_dict(
        {"name": "chain", "tasks": [{"id": "x", "runtime": 3},
                                    {"id": "y", "runtime": 1, "parents": ["x"]}]})]
    pool = parse_pool("8,8,8")
    res = simulate(templates, pool, Arrivals(12, (3000.0,)), HEURISTICS["heft"](), 1,
                   record=True)
    return templates, pool.speeds, res


def _check(recorded: tuple[list[Workflow], tuple[float, ...], SimResult],
           corrupt: Callable[[list[list[Any]], list[list[Any]], dict[str, Any]], None]
           ) -> list[str]:
    templates, speeds, res = recorded
    assert res.workflows is not None and res.schedule is not None
    workflows = [list(w) for w in res.workflows]
    tasks = [list(t) for t in res.schedule]
    reported = {k: res.summary()[k] for k in ("mean_flowtime", "makespan", "utilization",
                                               "workflows")}
    assert check_schedule(templates, speeds, workflows, tasks, reported=reported,
                          stream=expected_stream(2, 12, (3000.0,), 1)).ok
    corrupt(workflows, tasks, reported)
    return check_schedule(templates, speeds, workflows, tasks, reported=reported,
                          stream=expected_stream(2, 12, (3000.0,), 1)).violations


def _row(tasks: list[list[Any]], test: Callable[[list[Any]], bool]) -> list[Any]:
    return next(t for t in tasks if test(t))


def test_a_task_moved_before_its_parent_is_caught(recorded: Any) -> None:
    def corrupt(workflows: list[list[Any]], tasks: list[list[Any]], _: Any) -> None:
        kind = {w[0]: w[1] for w in workflows}
        a = _row(tasks, lambda t: kind[t[0]] == 0 and t[1] == 0)  # diamond's root a
        b = _row(tasks, lambda t: t[0] == a[0] and t[1] == 1)  # its child b
        b[3:] = [a[4], a[4], a[4] + (b[5] - b[4])]  # b at a's start, same duration
    assert any("started before a parent finished" in v for v in _check(recorded, corrupt))


def test_two_tasks_at_once_on_a_vm_are_caught(recorded: Any) -> None:
    def corrupt(_: Any, tasks: list[list[Any]], __: Any) -> None:
        for i, t in enumerate(tasks):  # a task running while one on another VM runs
            other = next((u for u in tasks[i + 1:] if u[2] != t[2] and u[4] < t[5]), None)
            if other is not None:
                other[2] = t[2]  # equal speeds: only the VM changes
                return
        raise AssertionError("no overlapping pair")
    assert any("before the task queued ahead of it finished" in v
               for v in _check(recorded, corrupt))


def test_a_wrong_duration_is_caught(recorded: Any) -> None:
    def corrupt(_: Any, tasks: list[list[Any]], __: Any) -> None:
        tasks[-1][5] -= 0.25  # the last decision: nothing depends on its finish but its own
    violations = _check(recorded, corrupt)
    assert any("is not runtime × 16 / vCPUs" in v for v in violations), violations


def test_a_missing_task_is_caught(recorded: Any) -> None:
    def corrupt(_: Any, tasks: list[list[Any]], __: Any) -> None:
        del tasks[len(tasks) // 2]
    violations = _check(recorded, corrupt)
    assert any(v.startswith("1 task never scheduled") for v in violations), violations


def test_a_task_scheduled_twice_or_a_missing_workflow_is_caught(recorded: Any) -> None:
    def twice(_: Any, tasks: list[list[Any]], __: Any) -> None:
        tasks.append(list(tasks[0]))
    assert any("scheduled more than once" in v for v in _check(recorded, twice))

    def dropped(workflows: list[list[Any]], tasks: list[list[Any]], __: Any) -> None:
        gone = workflows.pop(3)[0]
        tasks[:] = [t for t in tasks if t[0] != gone]
    assert any("arrived but not in the schedule" in v for v in _check(recorded, dropped))


@pytest.mark.parametrize("vm", [-1, 3, 1.5])
def test_a_vm_index_out_of_range_is_caught(recorded: Any, vm: float) -> None:
    def corrupt(_: Any, tasks: list[list[Any]], __: Any) -> None:
        tasks[2][2] = vm
    violations = _check(recorded, corrupt)
    assert any("on a VM index out of range [0, 2]" in v for v in violations), violations


def test_a_wrong_reported_flowtime_is_caught(recorded: Any) -> None:
    def corrupt(_: Any, __: Any, reported: dict[str, Any]) -> None:
        reported["mean_flowtime"] += 0.5
    violations = _check(recorded, corrupt)
    assert len(violations) == 1 and violations[0].startswith("reported mean flowtime")

    def late(workflows: list[list[Any]], _: Any, __: Any) -> None:
        workflows[0][3] += 1.0  # the workflow's finish, not its last task's
    assert any("recorded finish is not its last task's" in v for v in _check(recorded, late))


# -- a policy's VM index -------------------------------------------------------------------------
class _Minus1(EFT):
    name = "minus_one"

    def choose(self, state: ClusterState, run: Run, task: int) -> int:
        return -1  # would silently mean the last VM


def test_a_policys_vm_index_out_of_range_is_refused(diamond: Workflow) -> None:
    with pytest.raises(CheckFailedError, match="minus_one") as info:
        simulate([diamond], parse_pool("1x2"), Arrivals(1), _Minus1())
    assert info.value.violations == ["VM index -1 out of range [0, 1]"]
    session = Session(parse_pool("1x2"), _Minus1())
    with pytest.raises(EventError) as err:
        session.apply([Arrived(0.0, diamond, "d")])
    assert isinstance(err.value.cause, CheckFailedError) and err.value.assignments == []


# -- sessions ------------------------------------------------------------------------------------
def test_the_ledger_refuses_a_task_that_is_not_ready(diamond: Workflow) -> None:
    ledger = AssignmentLedger([8.0, 8.0])
    ledger.arrived("d", diamond, 0.0)
    assert ledger.check("d", 0, "a", 0, 8.0, 0.0, 2.0, 0.0) == []
    assert any("not ready" in v for v in ledger.check("d", 1, "b", 1, 8.0, 0.0, 4.0, 0.0))
    assert any("assigned before" in v for v in ledger.check("d", 0, "a", 1, 8.0, 0.0, 2.0, 0.0))
    assert ledger.finished("d", 0, 2.0) == []
    assert ledger.check("d", 1, "b", 1, 8.0, 2.0, 6.0, 2.0) == []
    assert any("out of range" in v for v in ledger.check("d", 2, "c", 2, 8.0, 2.0, 4.0, 2.0))


def test_a_session_answer_the_ledger_refuses_is_not_returned(diamond: Workflow) -> None:
    session = Session(parse_pool("1x2"), HEURISTICS["heft"]())
    _, out = session.apply([Arrived(0.0, diamond, "d")])
    assert len(out) == 1 and session.ledger.checked == 1
    session.state.vm_speed[:] = 16.0  # the session's own bookkeeping goes wrong
    with pytest.raises(EventError) as err:
        session.apply([Finished(2.0, "d", "a")])
    cause = err.value.cause
    assert isinstance(cause, CheckFailedError)
    assert any("projected to take 2 s on VM 1, not runtime × 16 / vCPUs = 4 s" in v
               for v in cause.violations), cause.violations
    assert err.value.index == 1 and err.value.assignments == []


def _events(*evs: dict[str, Any]) -> EventsRequest:
    return EventsRequest.model_validate({"events": list(evs)})


def test_a_failed_session_check_is_a_500_and_ends_the_session() -> None:
    live = scheduling._Live(Session(parse_pool("1x2"), _Minus1()), "1x2", "minus_one")
    scheduling._sessions["broken"] = live
    try:
        with pytest.raises(ApiError) as info:
            scheduling._apply("broken", live, _events(
                {"type": "workflow_arrived", "time": 0, "workflow_id": "d",
                 "workflow": copy.deepcopy(DIAMOND)}))
    finally:
        scheduling._sessions.pop("broken", None)
    err = info.value
    assert (err.status, err.kind) == (500, "check-failed")
    assert err.extra["violations"] == ["VM index -1 out of range [0, 1]"]
    assert err.extra["applied"] == 1 and err.extra["assignments"] == []
    assert live.ended


# -- simulate: HTTP and CLI ----------------------------------------------------------------------
@pytest.fixture
def broken_policy(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(registry.POLICIES, "minus_one", registry.PolicySpec(
        "minus_one", "heuristic", "answers VM -1", _Minus1))
    return "minus_one"


def test_simulate_rows_say_they_were_checked_or_withhold_a_failed_one(
        broken_policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    task = scheduling.SimTask([workflow_from_dict(DIAMOND)], parse_pool("1x2"), Arrivals(3),
                              ["heft", broken_policy], 0, False, 10, 30.0)
    out = scheduling._simulate(task, threading.Event())
    rows = {r.policy: r for r in out.rows}
    assert rows["heft"].checked is True and rows["heft"].violations is None
    assert rows[broken_policy].checked is False and rows[broken_policy].mean_flowtime is None
    assert rows[broken_policy].violations == ["VM index -1 out of range [0, 1]"]
    assert out.best_policy == "heft"

    # a schedule the checker refuses (its finish moved) keeps no numbers either
    real = registry.check_result

    def moved(templates: Any, vcpus: Any, result: SimResult, stream: Any = None) -> Any:
        assert result.schedule is not None
        uid, t, vm, ready, start, finish = result.schedule[0]
        result.schedule[0] = (uid, t, vm, ready, start, finish + 1.0)
        return real(templates, vcpus, result, stream)

    monkeypatch.setattr(registry, "check_result", moved)
    out = scheduling._simulate(task, threading.Event())
    row = out.rows[0]
    assert row.checked is False and row.mean_flowtime is None and row.gap_to_best is None
    assert "failed its independent check" in (row.error or "") and row.violations


def test_cli_simulate_reports_the_check_and_exits_1_when_one_fails(broken_policy: str) -> None:
    runner = CliRunner()
    args = ["schedule", "simulate", "--pool", "2x2", "--workflows-count", "20", "--json"]
    ok = runner.invoke(app, [*args, "--policies", "heft,eft"])
    assert ok.exit_code == 0, ok.stderr
    assert [r["checked"] for r in json.loads(ok.stdout)["rows"]] == [True, True]
    bad = runner.invoke(app, [*args, "--policies", f"heft,{broken_policy}"])
    assert bad.exit_code == 1
    doc = json.loads(bad.stdout)
    assert [r["checked"] for r in doc["rows"]] == [True, False]
    assert doc["rows"][1]["violations"] == ["VM index -1 out of range [0, 3]"]
    assert "minus_one failed its independent check" in doc["error"]
    unchecked = runner.invoke(app, [*args, "--policies", "heft", "--no-check"])
    assert json.loads(unchecked.stdout)["rows"][0]["checked"] is None


def test_http_round_trip_says_the_answers_were_checked(api: httpx.Client) -> None:
    r = api.post("/v1/scheduling/simulate", json={
        "workflows": [copy.deepcopy(DIAMOND)], "pool": "1x2", "workflows_count": 5,
        "policies": ["heft", "round_robin"]})
    assert r.status_code == 200, r.text
    assert [row["checked"] for row in r.json()["rows"]] == [True, True]
    r = api.post("/v1/scheduling/sessions", json={"pool": "1x2", "policy": "heft"})
    assert r.status_code == 201, r.text
    events = f"/v1/scheduling/sessions/{r.json()['id']}/events"
    r = api.post(events, json={"events": [{"type": "workflow_arrived", "time": 0,
                                           "workflow_id": "d", "workflow": DIAMOND}]})
    assert r.status_code == 200, r.text
    assert r.json()["checked"] == 1
    r = api.post(events, json={"events": [{"type": "task_finished", "time": 2,
                                           "workflow_id": "d", "task_id": "a"}]})
    assert r.status_code == 200 and r.json()["checked"] == 2 == len(r.json()["assignments"])
