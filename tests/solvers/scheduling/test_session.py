"""Online sessions in process: a replay of simulate's stream, and the memory a long session
keeps (before: finished workflows were kept forever and a session could hold 2M tasks)."""

from __future__ import annotations

from typing import Any

import pytest

from app.errors import ApiError
from app.routers import scheduling
from app.schemas.scheduling import EventsRequest
from solvers.errors import InstanceError
from solvers.scheduling import session as session_module
from solvers.scheduling.heuristics import HEURISTICS
from solvers.scheduling.session import Arrived, EventError, Finished, Session
from solvers.scheduling.simulator import Arrivals, parse_pool, simulate
from solvers.scheduling.workflow import Workflow, workflow_from_dict

ONE = workflow_from_dict({"tasks": [{"id": "a", "runtime": 1}]})


@pytest.mark.parametrize("name", sorted(HEURISTICS))
def test_a_replay_of_simulate_assigns_the_same_and_keeps_only_a_summary(
        name: str, classic: list[Workflow], monkeypatch: pytest.MonkeyPatch) -> None:
    """Simulate's stream, reported as events with simulate's finish times, gets simulate's
    assignments exactly; at the end no workflow's detail is held, only the latest listed."""
    monkeypatch.setattr(session_module, "MAX_FINISHED_LISTED", 10)
    pool = parse_pool("6x4")
    res = simulate(classic, pool, Arrivals(40, (30.0, 200.0)), HEURISTICS[name](), seed=3,
                   record=True)
    assert res.schedule is not None and res.workflows is not None
    kind = {uid: k for uid, k, _, _ in res.workflows}
    order: list[tuple[tuple[float, int], Arrived | Finished]] = [
        ((arrival, uid), Arrived(arrival, classic[k], f"w{uid}"))
        for uid, k, arrival, _ in res.workflows]
    for d, (uid, task, _, _, _, finish) in enumerate(res.schedule):
        order.append(((finish, len(res.workflows) + d),
                      Finished(finish, f"w{uid}", classic[kind[uid]].ids[task])))
    order.sort(key=lambda item: item[0])
    session = Session(pool, HEURISTICS[name](), seed=3)
    _, out = session.apply([ev for _, ev in order])
    assert [(a.workflow, a.task, a.vm, a.expected_start, a.expected_finish) for a in out] == [
        (f"w{uid}", classic[kind[uid]].ids[t], vm, start, finish)
        for uid, t, vm, _, start, finish in res.schedule]
    snap = session.snapshot()
    assert snap["mean_flowtime"] == pytest.approx(res.mean_flowtime, rel=1e-12)
    assert snap["finished_workflows"] == 40 and snap["unfinished_tasks"] == 0
    assert session.runs == {} and session.state.completed == []
    finish_order = sorted(res.workflows, key=lambda w: (w[3], w[0]))
    latest = {f"w{uid}" for uid, _, _, _ in finish_order[-10:]}
    assert {w["id"] for w in snap["workflows"]} == latest


def _pair(session: Session, t: float, wid: str | None = None) -> str:
    got, _ = session.apply([Arrived(t, ONE, wid)])
    session.apply([Finished(t + 0.5, got[0], "a")])
    return got[0]


def test_finished_workflows_leave_memory_and_the_state_lists_the_latest() -> None:
    """Regression: 5,000 finished one-task workflows made a 452 KB state and +15 MB RSS."""
    listed = session_module.MAX_FINISHED_LISTED
    session = Session(parse_pool("1x1"), HEURISTICS["heft"]())
    ids = [_pair(session, float(t)) for t in range(listed + 50)]
    assert ids[:3] == ["wf1", "wf2", "wf3"] and len(set(ids)) == len(ids)
    snap = session.snapshot()
    assert [w["id"] for w in snap["workflows"]] == ids[-listed:]
    assert snap["finished_workflows"] == listed + 50 and snap["mean_flowtime"] == 0.5
    assert session.runs == {} and session.state.completed == []
    # a listed one still answers as finished; its id stays taken while it is listed
    with pytest.raises(InstanceError, match="has finished") as info:
        session.task_finished(ids[-1], "a", 1e6)
    assert info.value.field == "task_id"
    with pytest.raises(InstanceError, match="already in use"):
        session.workflow_arrived(ONE, 1e6, ids[-1])
    # an older one's id is free again; automatic ids are never given twice
    assert _pair(session, 1e6, ids[0]) == ids[0]
    assert _pair(session, 2e6) == f"wf{listed + 51}"
    with pytest.raises(InstanceError, match="no unfinished workflow"):
        session.task_finished("never", "a", 3e6)


def _events(*evs: dict[str, Any]) -> EventsRequest:
    return EventsRequest.model_validate({"events": list(evs)})


def _arrival(t: float, wid: str, tasks: int) -> dict[str, Any]:
    return {"type": "workflow_arrived", "time": t, "workflow_id": wid,
            "workflow": {"tasks": [{"id": f"t{i}", "runtime": 1} for i in range(tasks)]}}


def test_unfinished_tasks_are_capped_per_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: 1,000 unfinished workflows of 2,000 tasks (about 1 GB) fitted the caps. A
    request that would pass MAX_LIVE_TASKS at any point is a 413 naming `events` before any
    event is applied; finishes before an arrival in the same request make room."""
    monkeypatch.setattr(session_module, "MAX_LIVE_TASKS", 10)
    monkeypatch.setattr(scheduling, "MAX_LIVE_TASKS", 10)
    live = scheduling._Live(Session(parse_pool("1x2"), HEURISTICS["heft"]()), "1x2", "heft")
    first = scheduling._apply("s", live, _events(_arrival(0, "w1", 8)))
    assert len(first.assignments) == 8
    with pytest.raises(ApiError) as info:
        scheduling._apply("s", live, _events(_arrival(1, "w2", 1), _arrival(1, "w3", 2)))
    assert (info.value.status, info.value.field) == (413, "events")
    assert info.value.extra == {"tasks": 11, "unfinished": 8, "limit": 10}
    snap = live.session.snapshot()
    assert snap["events"] == 1 and snap["now"] == 0 and snap["unfinished_tasks"] == 8
    # two finishes first, then three tasks arrive: at most 9 at once
    done = [{"type": "task_finished", "time": 2, "workflow_id": "w1", "task_id": f"t{i}"}
            for i in range(2)]
    ok = scheduling._apply("s", live, _events(*done, _arrival(2, "w2", 3)))
    assert ok.workflow_ids == ["w2"] and live.session.live_tasks == 9
    # the same in the other order would pass the cap on the way: refused
    more = [{"type": "task_finished", "time": 3, "workflow_id": "w1", "task_id": f"t{i}"}
            for i in range(2, 4)]
    with pytest.raises(ApiError):
        scheduling._apply("s", live, _events(_arrival(3, "w3", 3), *more))
    # the session itself refuses the arrival that would pass it (the CLI's twin)
    with pytest.raises(InstanceError, match="unfinished tasks") as err:
        live.session.workflow_arrived(workflow_from_dict(_arrival(3, "x", 2)["workflow"]), 3)
    assert err.value.field == "workflow"


def test_every_projected_finish_stays_reportable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: a task projected to finish after 1e12 s (the latest time an event may
    report) was accepted, and its finish then always refused. Arrivals that could lead there
    are refused (field ``workflow``) whatever VM the policy picks; the accepted ones, their
    finishes reported as projected, never get a projection past the limit."""
    chain = workflow_from_dict({"tasks": [
        {"id": "a", "runtime": 1e8}, {"id": "b", "runtime": 1e8, "parents": ["a"]},
        {"id": "c", "runtime": 1e8, "parents": ["b"]}]})  # 1.6e11 s a task at 0.01 vCPU
    session = Session(parse_pool("0.01,96"), HEURISTICS["round_robin"]())
    pending: list[tuple[float, str, str]] = []
    accepted = 0
    for k in range(10):
        try:
            _, out = session.apply([Arrived(0.0, chain, f"c{k}")])
        except EventError as exc:
            assert isinstance(exc.cause, InstanceError)
            assert exc.cause.field == "workflow" and "1e+12" in exc.cause.message
            break
        accepted += 1
        pending += [(a.expected_finish, a.workflow, a.task) for a in out]
    assert 1 <= accepted < 10
    assert session.snapshot()["now"] == 0.0  # the refused arrival changed nothing
    latest = 0.0
    while pending:
        pending.sort()
        t, wid, tid = pending.pop(0)
        latest = max(latest, t)
        _, out = session.apply([Finished(t, wid, tid)])
        pending += [(a.expected_finish, a.workflow, a.task) for a in out]
    assert session.snapshot()["finished_workflows"] == accepted
    assert 4e11 < latest <= session_module.MAX_EVENT_TIME  # far out, never past the limit
