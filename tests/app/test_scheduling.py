"""The scheduling endpoints over a real uvicorn server: simulate (JSON, generator, uploads),
problem details that name the field, and an online session round trip."""

from __future__ import annotations

import copy
import gzip
import itertools
import json
import time
from typing import Any

import httpx
import pytest

from solvers.scheduling.registry import estimated_seconds
from solvers.scheduling.workflow import generate_workflow
from tests.app.helpers import assert_problem
from tests.solvers.scheduling.conftest import CLASSIC, DIAMOND, WORKFLOWS

SIMULATE = "/v1/scheduling/simulate"
SESSIONS = "/v1/scheduling/sessions"


def _diamond() -> dict[str, Any]:
    return copy.deepcopy(DIAMOND)


def test_simulate_inline_diamond_by_hand(api: httpx.Client) -> None:
    body = {"workflows": [_diamond()], "pool": "1x2", "workflows_count": 1,
            "policies": ["heft", "eft", "round_robin"], "gantt": True}
    r = api.post(SIMULATE, json=body)
    assert r.status_code == 200, r.text
    out = r.json()
    assert (out["pool"], out["vms"], out["vcpus"]) == ("1x2", 2, [8.0, 8.0])
    rows = {row["policy"]: row for row in out["rows"]}
    assert rows["heft"]["mean_flowtime"] == rows["eft"]["mean_flowtime"] == 8.0
    assert rows["heft"]["utilization"] == pytest.approx(10 / 16)
    assert rows["heft"]["gantt_svg"].startswith("<svg") and rows["heft"]["gantt_svg"].count(
        "<rect") == 4
    # the title counts the workflows drawn (QA: "first 50 workflows" of a shorter stream)
    assert "heft: first 1 workflow," in rows["heft"]["gantt_svg"]
    assert out["workflows"][0]["tasks"] == 4 and out["best_policy"] in ("heft", "eft")


def test_simulate_generator_and_stale_baseline(api: httpx.Client) -> None:
    r = api.post(SIMULATE, json={"generator": {"tasks": 30, "seed": 1}, "pool": "5x5",
                                 "rates": [5.4, 9.0], "workflows_count": 200,
                                 "policies": ["heft", "eft_stale"], "seed": 3})
    assert r.status_code == 200, r.text
    out = r.json()
    rows = {row["policy"]: row for row in out["rows"]}
    assert [w["tasks"] for w in out["workflows"]] == [25, 30, 30, 29]
    assert rows["heft"]["mean_flowtime"] < rows["eft_stale"]["mean_flowtime"]
    assert rows["eft_stale"]["gap_to_best"] > 10 and out["best_policy"] == "heft"
    assert out["rates"] == [5.4, 9.0] and rows["heft"]["decisions"] > 5000
    # per-assignment latency, documented and now filled (before: always null over HTTP)
    for row in rows.values():
        assert 0 < row["latency_p50_ms"] <= row["latency_p95_ms"] < 50, row


def test_simulate_upload_dax_files(api: httpx.Client) -> None:
    files = [("file", (p.name, p.read_bytes())) for p in CLASSIC]
    r = api.post(SIMULATE, files=files, data={"policies": "heft,eft", "pool": "6x4",
                                              "rates": "5.4,9", "workflows_count": "100"})
    assert r.status_code == 200, r.text
    out = r.json()
    assert [w["name"] for w in out["workflows"]] == [
        "CyberShake_30", "Montage_25", "Inspiral_30", "Sipht_30"]
    assert all(row["mean_flowtime"] > 0 for row in out["rows"])


def test_cycle_and_missing_parent_are_422_naming_the_field(api: httpx.Client) -> None:
    wf = _diamond()
    wf["tasks"][0]["parents"] = ["d"]
    body = assert_problem(api.post(SIMULATE, json={"workflows": [_diamond(), wf]}), 422,
                          "workflows[1].tasks")
    assert ("cycle" in body["detail"] and "a -> b -> d -> a" in body["detail"]) or \
        "a -> c -> d -> a" in body["detail"]
    wf = _diamond()
    wf["tasks"][3]["parents"] = ["b", "ghost"]
    body = assert_problem(api.post(SIMULATE, json={"workflows": [wf]}), 422,
                          "workflows[0].tasks[3].parents")
    assert "ghost" in body["detail"]
    wf = _diamond()
    wf["tasks"][1]["runtime"] = -1
    assert_problem(api.post(SIMULATE, json={"workflows": [wf]}), 422,
                   "workflows[0].tasks[1].runtime")
    bad_dax = gzip.compress(b'<adag><job id="A" runtime="1"/><job id="B" runtime="1"/>'
                            b'<child ref="A"><parent ref="B"/></child>'
                            b'<child ref="B"><parent ref="A"/></child></adag>')
    body = assert_problem(api.post(SIMULATE, files=[("file", ("loop.xml.gz", bad_dax))]),
                          422, "file")
    assert "cycle" in body["detail"]


def test_bad_options(api: httpx.Client) -> None:
    assert_problem(api.post(SIMULATE, json={"pool": "9x9"}), 422, "pool")
    assert_problem(api.post(SIMULATE, json={"policies": ["heft", "magic"]}), 404,
                   "policies[1]")
    # a repeated policy is refused as a repeated solver is (before: one row came back)
    body = assert_problem(api.post(SIMULATE, json={"policies": ["heft", "eft", "heft"]}), 422,
                          "policies[2]")
    assert "policies[0] and policies[2]" in body["detail"]
    assert_problem(api.post(SIMULATE, json={"workflows_count": 10**6}), 422, "workflows_count")
    assert_problem(api.post(SIMULATE, json={"rates": [0]}), 422, "rates[0]")
    # bounds that keep the simulator's times finite (these overflowed to null flowtimes)
    assert_problem(api.post(SIMULATE, json={"rates": [5.4, 1e-320]}), 422, "rates[1]")
    assert_problem(api.post(SIMULATE, json={"pool": "8,1e308"}), 422, "pool")
    huge = _diamond()
    huge["tasks"][2]["runtime"] = 1e308
    assert_problem(api.post(SIMULATE, json={"workflows": [huge]}), 422,
                   "workflows[0].tasks[2].runtime")
    assert_problem(api.post(SIMULATE, json={"workflow_count": 3}), 422, "workflow_count")
    big = {"workflows_count": 20000, "policies": ["goodrl", "heft"]}
    body = assert_problem(api.post(SIMULATE, json=big), 413, "workflows_count")
    assert body["estimated_seconds"] > body["limit"]
    # large workflows make each GOODRL decision slower (it reads the task's whole workflow):
    # 40 of 2,000 tasks was estimated at 120 s, accepted, and ran into the 300 s deadline
    started = time.perf_counter()
    wide = {"generator": {"tasks": 2000}, "workflows_count": 40, "policies": ["goodrl"]}
    body = assert_problem(api.post(SIMULATE, json=wide), 413, "workflows_count")
    assert body["estimated_seconds"] > body["limit"] and time.perf_counter() - started < 30
    assert_problem(api.post(SIMULATE, content=b"x", headers={"content-type": "text/plain"}),
                   415)


def test_a_file_of_another_kind_is_an_unsupported_format(api: httpx.Client) -> None:
    """Regression: a .min or .tsp file uploaded to simulate was ``invalid-instance`` ("file
    (a.min): file: unknown workflow extension"), where routing and flow uploads answer a file
    they do not read with ``unsupported-format``; a malformed workflow stays invalid."""
    for name in ("net.min", "eil51.tsp"):
        body = assert_problem(api.post(SIMULATE, files={"file": (name, b"p min 2 1\n")},
                                       data={"policies": "heft", "workflows_count": "1"}),
                              422, "file")
        assert body["type"].endswith(":unsupported-format"), body
        assert "file: file" not in body["detail"] and name in body["detail"], body
    body = assert_problem(api.post(SIMULATE, files={"file": ("w.xml", b"<adag")},
                                   data={"policies": "heft", "workflows_count": "1"}), 422, "file")
    assert body["type"].endswith(":invalid-instance"), body


def test_policies_listed(api: httpx.Client) -> None:
    rows = {p["name"]: p for p in api.get("/v1/scheduling/policies").json()}
    assert {"heft", "eft", "peft", "est", "eft_stale", "goodrl"} <= set(rows)
    assert rows["eft_stale"]["kind"] == "heuristic-stale" and rows["heft"]["available"]


def test_session_round_trip(api: httpx.Client) -> None:
    r = api.post(SESSIONS, json={"pool": "1x2", "policy": "heft"})
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    assert r.headers["location"].endswith(sid)
    url = f"{SESSIONS}/{sid}"

    def events(*evs: dict[str, Any]) -> dict[str, Any]:
        resp = api.post(f"{url}/events", json={"events": list(evs)})
        assert resp.status_code == 200, resp.text
        return resp.json()

    out = events({"type": "workflow_arrived", "time": 0, "workflow_id": "w",
                  "workflow": _diamond()})
    assert out["workflow_ids"] == ["w"]
    assert [(a["task"], a["expected_start"], a["expected_finish"]) for a in
            out["assignments"]] == [("a", 0, 2)]
    # a ran a little long: finished at 3, so b and c are projected from 3
    out = events({"type": "task_finished", "time": 3, "workflow_id": "w", "task_id": "a"})
    got = {a["task"]: (a["expected_start"], a["expected_finish"]) for a in out["assignments"]}
    assert got == {"b": (3, 7), "c": (3, 5)}
    vms = {a["task"]: a["vm"] for a in out["assignments"]}
    assert vms["b"] != vms["c"]
    out = events({"type": "task_finished", "time": 5, "workflow_id": "w", "task_id": "c"},
                 {"type": "task_finished", "time": 7, "workflow_id": "w", "task_id": "b"})
    assert [(a["task"], a["expected_start"]) for a in out["assignments"]] == [("d", 7)]
    state = api.get(url).json()
    assert state["now"] == 7 and state["decisions"] == 4 and state["mean_flowtime"] is None
    # going back in time, unknown task, finishing twice: 422 naming the event's field
    body = assert_problem(api.post(f"{url}/events", json={"events": [
        {"type": "task_finished", "time": 1, "workflow_id": "w", "task_id": "d"}]}), 422,
        "events[0].time")
    assert body["applied"] == 0
    assert_problem(api.post(f"{url}/events", json={"events": [
        {"type": "task_finished", "time": 8, "workflow_id": "w", "task_id": "zz"}]}), 422,
        "events[0].task_id")
    # schema errors name the event's own field, not both kinds of event
    body = assert_problem(api.post(f"{url}/events", json={"events": [
        {"type": "task_finished", "time": -5, "workflow_id": "w", "task_id": "d"}]}), 422,
        "events[0].time")
    assert len(body["errors"]) == 1
    assert_problem(api.post(f"{url}/events", json={"events": [{"type": "lunch", "time": 8}]}),
                   422, "events[0].type")
    events({"type": "task_finished", "time": 9, "workflow_id": "w", "task_id": "d"})
    state = api.get(url).json()
    assert state["mean_flowtime"] == 9 and state["workflows"][0]["flowtime"] == 9
    assert all(vm["queue"] == [] for vm in state["vms"])
    body = assert_problem(api.post(f"{url}/events", json={"events": [
        {"type": "workflow_arrived", "time": 10, "shape": "montage", "tasks": 25},
        {"type": "workflow_arrived", "time": 10, "workflow_id": "x",
         "workflow": {"tasks": [{"id": "p", "runtime": 1, "parents": ["p"]}]}}]}), 422,
        "events[1].workflow.tasks[0].parents")
    assert body["applied"] == 1
    assert api.delete(url).status_code == 204
    assert_problem(api.get(url), 404, "session_id")
    gone = assert_problem(api.post(SESSIONS, json={"policy": "nope"}), 404, "policy")
    assert "unknown policy 'nope'" in gone["detail"] and "heft" in gone["detail"]
    assert_problem(api.post(SESSIONS, json={"pool": "0x1"}), 422, "pool")


def test_a_finish_reported_out_of_fifo_order_leaves_the_running_task_alone(
        api: httpx.Client) -> None:
    """On one VM, w1/a runs and w2/a waits behind it. A finish of w2/a reported first is taken
    as reported, and w1/a keeps its start and projected finish (it was re-projected from the
    report's time, as if it had only just started)."""
    sid = api.post(SESSIONS, json={"pool": "1x1", "policy": "heft"}).json()["id"]
    url = f"{SESSIONS}/{sid}"
    one = {"tasks": [{"id": "a", "runtime": 10}]}
    out = api.post(f"{url}/events", json={"events": [
        {"type": "workflow_arrived", "time": 0, "workflow_id": "w1", "workflow": one},
        {"type": "workflow_arrived", "time": 0, "workflow_id": "w2", "workflow": one}]}).json()
    (s1, f1), (s2, _) = [(a["expected_start"], a["expected_finish"])
                         for a in out["assignments"]]
    assert s1 == 0 and s2 == f1 > 1
    r = api.post(f"{url}/events", json={"events": [
        {"type": "task_finished", "time": 1, "workflow_id": "w2", "task_id": "a"}]})
    assert r.status_code == 200, r.text
    vm = api.get(url).json()["vms"][0]
    assert vm["queue"] == ["w1/a"] and vm["free_at"] == f1
    assert api.delete(url).status_code == 204


def test_an_overdue_vm_keeps_the_tasks_queued_behind_its_running_one(
        api: httpx.Client) -> None:
    """Regression: three tasks queued on one VM, none reported finished when a new
    workflow arrives after all three were projected to end. The session used to move the
    VM's free time to now and forget the two waiting tasks, so the new task was projected to
    start before them (and the policy saw a busy VM as free)."""
    sid = api.post(SESSIONS, json={"pool": "1x1", "policy": "heft"}).json()["id"]
    url = f"{SESSIONS}/{sid}"
    three = {"tasks": [{"id": x, "runtime": 1} for x in "abc"]}
    out = api.post(f"{url}/events", json={"events": [
        {"type": "workflow_arrived", "time": 0, "workflow_id": "w1", "workflow": three}]})
    dur = out.json()["assignments"][0]["expected_finish"]  # one task's runtime on the VM
    late = 10 * dur
    out = api.post(f"{url}/events", json={"events": [
        {"type": "workflow_arrived", "time": late, "workflow_id": "w2",
         "workflow": {"tasks": [{"id": "d", "runtime": 1}]}}]}).json()
    (d,) = out["assignments"]
    # a runs on until at least now; b and c wait behind it; d waits behind them
    assert d["expected_start"] == pytest.approx(late + 2 * dur)
    vm = api.get(url).json()["vms"][0]
    assert vm["queue"] == ["w1/a", "w1/b", "w1/c", "w2/d"]
    assert vm["free_at"] == pytest.approx(late + 3 * dur)
    assert api.delete(url).status_code == 204


def test_a_refused_event_changes_nothing_and_a_partial_request_says_what_it_applied(
        api: httpx.Client) -> None:
    """A refused arrival (its id already in use) moved the session's clock, so the next
    correct finish was refused as being in the past; a request refused part-way dropped the
    assignments its applied events had made; a generated id could clash with a chosen one."""
    sid = api.post(SESSIONS, json={"pool": "2x2", "policy": "heft"}).json()["id"]
    url = f"{SESSIONS}/{sid}"
    one = {"tasks": [{"id": "a", "runtime": 2}]}
    two = {"tasks": [{"id": "a", "runtime": 2}, {"id": "b", "runtime": 3, "parents": ["a"]}]}
    ok = api.post(f"{url}/events", json={"events": [
        {"type": "workflow_arrived", "time": 0, "workflow_id": "w1", "workflow": one}]})
    assert ok.status_code == 200, ok.text
    assert_problem(api.post(f"{url}/events", json={"events": [
        {"type": "workflow_arrived", "time": 100, "workflow_id": "w1", "workflow": one}]}),
        422, "events[0].workflow_id")
    assert api.get(url).json()["now"] == 0
    finished = api.post(f"{url}/events", json={"events": [
        {"type": "task_finished", "time": 2, "workflow_id": "w1", "task_id": "a"}]})
    assert finished.status_code == 200, finished.text
    body = assert_problem(api.post(f"{url}/events", json={"events": [
        {"type": "workflow_arrived", "time": 3, "workflow": two},
        {"type": "task_finished", "time": 4, "workflow_id": "w1", "task_id": "nope"}]}),
        422, "events[1].task_id")
    assert body["applied"] == 1 and len(body["workflow_ids"]) == 1
    assert [(a["workflow"], a["task"]) for a in body["assignments"]] == [
        (body["workflow_ids"][0], "a")]
    # the client chose "wf3" itself; the next generated id skips it
    named = api.post(f"{url}/events", json={"events": [
        {"type": "workflow_arrived", "time": 5, "workflow_id": "wf4", "workflow": one},
        {"type": "workflow_arrived", "time": 5, "workflow": one}]})
    assert named.status_code == 200, named.text
    ids = named.json()["workflow_ids"]
    assert ids[0] == "wf4" and ids[1] not in ("wf4", "w1", body["workflow_ids"][0])
    assert api.delete(url).status_code == 204


def test_heft_paper_upload(api: httpx.Client) -> None:
    path = WORKFLOWS / "HEFT_paper.xml"
    r = api.post(SIMULATE, files=[("file", (path.name, path.read_bytes()))],
                 data={"pool": "6x10", "workflows_count": "1", "policies": "eft,heft"})
    assert r.status_code == 200, r.text
    assert [row["mean_flowtime"] for row in r.json()["rows"]] == [11.0, 11.0]


def test_size_caps_are_413_before_any_work(api: httpx.Client) -> None:
    tasks = [{"id": f"t{i}", "runtime": 1} for i in range(2000)]
    many = {"workflows": [{"tasks": tasks}] * 11, "workflows_count": 1}
    body = assert_problem(api.post(SIMULATE, json=many), 413, "workflows")
    assert body["tasks"] == 22000 and body["limit"] == 20000
    sid = api.post(SESSIONS, json={"pool": "2x2"}).json()["id"]
    events = [{"type": "workflow_arrived", "time": 0, "shape": "montage", "tasks": 2000}] * 11
    assert_problem(api.post(f"{SESSIONS}/{sid}/events", json={"events": events}), 413,
                   "events")
    assert api.delete(f"{SESSIONS}/{sid}").status_code == 204


def test_session_with_the_slack_rule(api: httpx.Client) -> None:
    # the fork of tests/solvers/scheduling/test_heuristics.py: B has 70 s of slack behind A, so the
    # slack rule queues it on the 32-vCPU VM (index 3) and keeps the second 96 free
    r = api.post(SESSIONS, json={"pool": "96,96,48,32", "policy": "heft_slack"})
    assert r.status_code == 201, r.text
    url = f"{SESSIONS}/{r.json()['id']}"
    fork = {"tasks": [{"id": "r", "runtime": 0.6, "parents": []},
                      {"id": "A", "runtime": 600, "parents": ["r"]},
                      {"id": "B", "runtime": 180, "parents": ["r"]},
                      {"id": "s", "runtime": 0.6, "parents": ["A", "B"]}]}
    out = api.post(f"{url}/events", json={"events": [
        {"type": "workflow_arrived", "time": 0, "workflow_id": "f", "workflow": fork}]}).json()
    assert [a["task"] for a in out["assignments"]] == ["r"]
    out = api.post(f"{url}/events", json={"events": [
        {"type": "task_finished", "time": 0.1, "workflow_id": "f", "task_id": "r"}]}).json()
    vms = {a["task"]: a["vm"] for a in out["assignments"]}
    assert vms["A"] in (0, 1) and vms["B"] == 3
    assert api.delete(url).status_code == 204
    rows = {p["name"]: p for p in api.get("/v1/scheduling/policies").json()}
    assert rows["heft_slack"]["kind"] == "heuristic" and rows["heft_slack"]["available"]


def test_work_a_request_cannot_finish_is_refused_up_front(api: httpx.Client) -> None:
    """Regression: three 2,000-task arrivals under goodrl held a session for 60 s, and a
    630-task DAG with 198,000 edges passed simulate's estimate (which counted no edges) and
    ran for minutes. Both are now 413s naming the field, before any work."""
    sid = api.post(SESSIONS, json={"policy": "goodrl"}).json()["id"]
    try:
        arrivals = [{"type": "workflow_arrived", "time": 1, "shape": "sipht", "tasks": 2000}
                    for _ in range(3)]
        body = assert_problem(api.post(f"{SESSIONS}/{sid}/events", json={"events": arrivals}),
                              413, field="events")
        assert body["estimated_seconds"] > body["limit"]
        assert api.get(f"{SESSIONS}/{sid}").json()["workflows"] == []  # nothing applied
        # the estimate counts the generated workflows' own tasks and dependencies (a guess of
        # four parents a task refused a single 2,000-task arrival, which fits the 30 s)
        wf = generate_workflow("sipht", 2000, 0)
        one = estimated_seconds(["goodrl"], len(wf.ids), len(wf.ids),
                                sum(len(p) for p in wf.parents))
        assert one < body["limit"]
        assert body["estimated_seconds"] == pytest.approx(3 * one, abs=0.11)
    finally:
        api.delete(f"{SESSIONS}/{sid}")
    dense = [{"id": f"t{i}", "runtime": 1, "parents": [f"t{k}" for k in range(i)]}
             for i in range(630)]
    response = api.post(SIMULATE, json={"workflows": [{"tasks": dense}], "workflows_count": 3,
                                        "policies": ["goodrl"]})
    assert_problem(response, 413, field="workflows_count")


def test_simulate_returns_a_schedule_that_checks_out(api: httpx.Client) -> None:
    """schedule=true lists every workflow and task: here checked independently (parents
    first, one task at a time per VM, durations, flowtimes and their mean), as the QA audit
    could only bound the flowtime from the Gantt's rounded titles."""
    chain = {"name": "chain", "tasks": [{"id": "x", "runtime": 3, "parents": []},
                                        {"id": "y", "runtime": 1, "parents": ["x"]}]}
    templates = {"diamond": _diamond(), "chain": chain}
    body = {"workflows": list(templates.values()), "pool": "8,16", "workflows_count": 40,
            "rates": [1800.0], "policies": ["heft", "round_robin"], "schedule": True, "seed": 2}
    r = api.post(SIMULATE, json=body)
    assert r.status_code == 200, r.text
    out = r.json()
    for row in out["rows"]:
        schedule = row["schedule"]
        arrival = {w["workflow"]: w for w in schedule["workflows"]}
        assert sorted(arrival) == list(range(40))
        done: dict[tuple[int, str], dict[str, Any]] = {}
        for t in schedule["tasks"]:
            assert (t["workflow"], t["task"]) not in done
            done[(t["workflow"], t["task"])] = t
        by_vm: dict[int, list[tuple[float, float]]] = {}
        for (uid, task_id), t in done.items():
            spec = templates[arrival[uid]["template"]]
            task = next(x for x in spec["tasks"] if x["id"] == task_id)
            parents_done = max((done[(uid, p)]["finish"] for p in task["parents"]),
                               default=arrival[uid]["arrival"])
            assert t["ready"] == pytest.approx(parents_done)
            assert t["start"] >= t["ready"] - 1e-9
            speed = out["vcpus"][t["vm"]]
            assert t["finish"] - t["start"] == pytest.approx(task["runtime"] * 16 / speed)
            by_vm.setdefault(t["vm"], []).append((t["start"], t["finish"]))
        for spans in by_vm.values():
            spans.sort()
            assert all(a[1] <= b[0] + 1e-9 for a, b in itertools.pairwise(spans))
        flow = []
        for uid, w in arrival.items():
            spec = templates[w["template"]]
            finish = max(done[(uid, x["id"])]["finish"] for x in spec["tasks"])
            assert w["finish"] == pytest.approx(finish)
            flow.append(finish - w["arrival"])
        assert row["mean_flowtime"] == pytest.approx(sum(flow) / len(flow))
    # 20,000 workflows of 3 tasks on average, 4 policies: 240,000 rows, above the 200,000
    heavy = dict(body, workflows_count=20_000, policies=["heft", "eft", "est", "round_robin"])
    assert_problem(api.post(SIMULATE, json=heavy), 413, field="schedule")


def test_a_session_defaults_to_the_recommended_rule(api: httpx.Client) -> None:
    """heft_slack is the best correctly timed rule at every measured load (scheduling_load)."""
    r = api.post(SESSIONS, json={"pool": "6x4"})
    assert r.status_code == 201, r.text
    assert r.json()["policy"] == "heft_slack"


def _session(api: httpx.Client, pool: str, policy: str) -> str:
    r = api.post(SESSIONS, json={"pool": pool, "policy": policy})
    assert r.status_code == 201, r.text
    return f"{SESSIONS}/{r.json()['id']}"


def test_a_sessions_same_instant_finishes_are_decided_together(api: httpx.Client) -> None:
    """Regression: finishing t0 and t1 at the same time in one request gave HEFT another plan
    depending on their order (4.5 s of flowtime one way, 4.0 the other and in simulate)."""
    workflow = {"tasks": [{"id": "t0", "runtime": 4}, {"id": "t1", "runtime": 2},
                          {"id": "t2", "runtime": 1, "parents": ["t1"]},
                          {"id": "t3", "runtime": 4, "parents": ["t0", "t1"]}]}
    plans = []
    for order in (["t0", "t1"], ["t1", "t0"]):
        url = _session(api, "16,32", "heft")
        first = api.post(f"{url}/events", json={"events": [
            {"type": "workflow_arrived", "time": 0, "workflow_id": "w", "workflow": workflow}]})
        assert first.status_code == 200, first.text
        both = api.post(f"{url}/events", json={"events": [
            {"type": "task_finished", "time": 2, "workflow_id": "w", "task_id": t}
            for t in order]})
        assert both.status_code == 200, both.text
        plans.append({a["task"]: (a["vm"], a["expected_finish"])
                      for a in both.json()["assignments"]})
    assert plans[0] == plans[1]
    assert plans[0]["t3"][1] == 4.0  # the long task first, on the fast VM, as simulate does
    # a zero-length task released and reported finished at the same instant still works
    url = _session(api, "16", "heft")
    chain = {"tasks": [{"id": "a", "runtime": 1}, {"id": "z", "runtime": 0, "parents": ["a"]},
                       {"id": "b", "runtime": 1, "parents": ["z"]}]}
    r = api.post(f"{url}/events", json={"events": [
        {"type": "workflow_arrived", "time": 0, "workflow_id": "c", "workflow": chain},
        {"type": "task_finished", "time": 1, "workflow_id": "c", "task_id": "a"},
        {"type": "task_finished", "time": 1, "workflow_id": "c", "task_id": "z"}]})
    assert r.status_code == 200, r.text
    assert [a["task"] for a in r.json()["assignments"]] == ["a", "z", "b"]


def test_finishes_that_release_too_much_work_are_refused_before_anything_runs(
        api: httpx.Client) -> None:
    """Arrivals were sized against the 30 s a session request may take, finishes not: two
    roots releasing 2,000 tasks each kept goodrl busy for 36 s."""
    fan = {"tasks": [{"id": "r", "runtime": 1}] + [
        {"id": f"c{i}", "runtime": 1, "parents": ["r"]} for i in range(1999)]}
    url = _session(api, "6x4", "goodrl")
    for name in ("f1", "f2"):
        r = api.post(f"{url}/events", json={"events": [
            {"type": "workflow_arrived", "time": 0, "workflow_id": name, "workflow": fan}]})
        assert r.status_code == 200, r.text
    finishes = [{"type": "task_finished", "time": 1, "workflow_id": name, "task_id": "r"}
                for name in ("f1", "f2")]
    estimate = 2 * estimated_seconds(["goodrl"], 1999, 2000, 1999)
    assert estimate > 30  # the premise: this much work is over the limit
    body = assert_problem(api.post(f"{url}/events", json={"events": finishes}), 413,
                          field="events")
    assert "release 3998 tasks" in body["detail"]
    assert api.get(url).json()["now"] == 0  # nothing was applied


def test_a_session_takes_dax_and_wfcommons_documents(api: httpx.Client) -> None:
    """Sessions took only the compact JSON form; a user with a DAX or WfCommons file had to
    convert it. The document's workflow is the one `simulate` reads from the same file."""
    from solvers.scheduling.workflow import load_workflow

    dax = (WORKFLOWS / "Montage_25.xml").read_text()
    montage = load_workflow(WORKFLOWS / "Montage_25.xml")
    roots = {montage.ids[i] for i in range(montage.n) if not montage.parents[i]}
    wfcommons = {"name": "tiny", "schemaVersion": "1.5", "workflow": {
        "specification": {"tasks": [{"id": "a", "parents": []}, {"id": "b", "parents": ["a"]}]},
        "execution": {"tasks": [{"id": "a", "runtimeInSeconds": 2.0},
                                {"id": "b", "runtimeInSeconds": 1.0}]}}}
    url = _session(api, "6x4", "heft")
    r = api.post(f"{url}/events", json={"events": [
        {"type": "workflow_arrived", "time": 0, "workflow_id": "m", "document": dax},
        {"type": "workflow_arrived", "time": 0, "workflow_id": "w", "format": "wfcommons",
         "document": json.dumps(wfcommons)}]})
    assert r.status_code == 200, r.text
    decided = {(a["workflow"], a["task"]) for a in r.json()["assignments"]}
    assert decided == {("m", t) for t in roots} | {("w", "a")}
    state = {w["id"]: w for w in api.get(url).json()["workflows"]}
    assert state["m"]["tasks"] == 25 and state["w"]["tasks"] == 2
    # the text as sent: a byte-order mark is skipped, an encoding declaration does not
    # garble non-ASCII ids (before: a BOM read as JSON, and "é" came back as "Ã©")
    latin = ("\ufeff<?xml version='1.0' encoding='ISO-8859-1'?>"
             "<adag><job id='é' runtime='1'/></adag>")
    r = api.post(f"{url}/events", json={"events": [
        {"type": "workflow_arrived", "time": 1, "workflow_id": "e", "document": latin}]})
    assert r.status_code == 200, r.text
    assert [a["task"] for a in r.json()["assignments"]] == ["é"]
    # faults name the document: not XML, a DAX with a job without runtime, two sources
    bad = dax.replace('runtime="', 'rt="', 1)
    wfcommons_compact = {"tasks": [{"id": "a", "runtime": 1}]}
    for event, field in (
            ({"document": "<adag><job", "format": "dax"}, "events[0].document"),
            ({"document": bad}, "events[0].document.tasks[0].runtime"),
            ({"document": "{", "format": "wfcommons"}, "events[0].document"),
            ({"document": dax, "shape": "montage"}, "events[0].shape"),
            ({"document": "[1, 2]"}, "events[0].document"),
            ({"shape": "montage", "format": "dax"}, "events[0].format"),
            # tasks and seed size a generated workflow: beside a document or a workflow they
            # were silently ignored
            ({"document": dax, "tasks": 50}, "events[0].tasks"),
            ({"workflow": wfcommons_compact, "seed": 3}, "events[0].seed")):
        body = {"events": [{"type": "workflow_arrived", "time": 1, **event}]}
        assert_problem(api.post(f"{url}/events", json=body), 422, field=field)
    generated = {"type": "workflow_arrived", "time": 2, "shape": "sipht", "tasks": 40,
                 "seed": 5}
    r = api.post(f"{url}/events", json={"events": [generated]})
    assert r.status_code == 200, r.text


def test_a_delete_waits_for_the_events_request_in_flight(api: httpx.Client) -> None:
    """Regression: a DELETE during a long events request ended the session at once, and the
    request then answered 200 with assignments of a session that no longer existed. Now the
    request in flight answers first, the DELETE after it, and the session is gone."""
    import threading

    url = _session(api, "6x4", "goodrl")
    fan = {"tasks": [{"id": f"t{i}", "runtime": 1} for i in range(600)]}
    done: dict[str, float] = {}

    def arrive() -> None:
        r = api.post(f"{url}/events", json={"events": [
            {"type": "workflow_arrived", "time": 0, "workflow": fan}]}, timeout=60)
        done["events"] = time.perf_counter()
        done["status"] = r.status_code

    worker = threading.Thread(target=arrive)
    started = time.perf_counter()
    worker.start()
    time.sleep(0.3)  # the events request holds the session now
    assert api.delete(url, timeout=60).status_code == 204
    deleted = time.perf_counter()
    worker.join()
    assert done["status"] == 200
    assert done["events"] - started > 1.0  # the premise: a request long enough to overlap
    # the DELETE answered after the events request (give or take the client's threads)
    assert deleted > done["events"] - 0.2, (deleted - started, done["events"] - started)
    assert_problem(api.get(url), 404, "session_id")
    assert_problem(api.delete(url), 404, "session_id")


def test_too_many_sessions_says_when_one_frees(api: httpx.Client) -> None:
    """The 429 at the session cap said only "DELETE finished ones": it now carries a
    Retry-After, the seconds until the idlest session expires."""
    from app.routers.scheduling import MAX_SESSIONS, SESSION_IDLE_S

    made = []
    try:
        for _ in range(MAX_SESSIONS + 1):
            r = api.post(SESSIONS, json={"pool": "1x2"})
            if r.status_code != 201:
                break
            made.append(r.headers["location"])
        body = assert_problem(r, 429)
        wait = int(r.headers["retry-after"])
        assert 0 < wait <= SESSION_IDLE_S and f"expires in {wait} s" in body["detail"]
    finally:
        for location in made:
            api.delete(location)


def test_more_rates_than_workflows_is_a_422_naming_rates(api: httpx.Client) -> None:
    """Regression: five rates over two workflows answered 200, echoing all five rates while
    the stream's segments used rates 1 and 3 only."""
    body = {"rates": [1, 2, 3, 4, 5], "workflows_count": 2, "policies": ["heft"]}
    problem = assert_problem(api.post(SIMULATE, json=body), 422, "rates")
    assert "5 rates for 2 workflows" in problem["detail"]
    form = {"rates": "1,2,3", "workflows_count": "1", "policies": "heft"}
    path = WORKFLOWS / "HEFT_paper.xml"
    assert_problem(api.post(SIMULATE, files=[("file", (path.name, path.read_bytes()))],
                            data=form), 422, "rates")
    body["workflows_count"] = 5  # one workflow per rate: every segment holds one
    r = api.post(SIMULATE, json=body)
    assert r.status_code == 200, r.text
    assert r.json()["rates"] == [1, 2, 3, 4, 5]


def test_the_gantt_chart_names_tasks_by_their_ids(api: httpx.Client) -> None:
    """Regression: the chart's tooltips said "workflow 0 task 0" (the internal index) while the
    schedule table, sessions and the CLI name tasks by id; ids are XML-escaped."""
    odd = {"tasks": [{"id": "stage<1>&\"x\"", "runtime": 1},
                     {"id": "last", "runtime": 1, "parents": ["stage<1>&\"x\""]}]}
    r = api.post(SIMULATE, json={"workflows": [odd], "pool": "1x1", "workflows_count": 1,
                                 "policies": ["heft"], "gantt": True})
    assert r.status_code == 200, r.text
    svg = r.json()["rows"][0]["gantt_svg"]
    assert "<title>workflow 0 task stage&lt;1&gt;&amp;&quot;x&quot;: " in svg
    assert "<title>workflow 0 task last: " in svg
    assert "task 0:" not in svg and "task 1:" not in svg


def test_an_arrival_whose_finish_could_never_be_reported_is_refused(
        api: httpx.Client) -> None:
    """Regression: on a 0.01-vCPU pool a task of 1e9 s was assigned to finish at 1.6e12 s, but
    a finish can be reported up to 1e12 s only, so it was always refused. Such an arrival is
    a 422 naming it, and nothing changes; one that fits can be finished at its projection."""
    url = _session(api, "0.01", "heft")

    def arrive(wid: str, runtime: float) -> httpx.Response:
        return api.post(f"{url}/events", json={"events": [
            {"type": "workflow_arrived", "time": 0, "workflow_id": wid,
             "workflow": {"tasks": [{"id": "t", "runtime": runtime}]}}]})

    body = assert_problem(arrive("huge", 1e9), 422, "events[0].workflow")
    assert "1.6e+12" in body["detail"] and body["applied"] == 0
    state = api.get(url).json()
    assert state["workflows"] == [] and state["unfinished_tasks"] == 0
    fits = arrive("fits", 6e8)
    assert fits.status_code == 200, fits.text
    finish = fits.json()["assignments"][0]["expected_finish"]
    assert finish == pytest.approx(9.6e11)
    assert_problem(arrive("behind", 6e8), 422, "events[0].workflow")  # would end at 1.92e12
    done = api.post(f"{url}/events", json={"events": [
        {"type": "task_finished", "time": finish, "workflow_id": "fits", "task_id": "t"}]})
    assert done.status_code == 200, done.text
    assert api.delete(url).status_code == 204


def test_a_schedule_names_each_workflows_template_by_index(api: httpx.Client) -> None:
    """Two uploaded workflows may share a name; the schedule named templates only by name, so
    which one a workflow was could not be told. ``template_index`` points into ``workflows``."""
    one = {"name": "same", "tasks": [{"id": "a", "runtime": 2, "parents": []}]}
    two = {"name": "same", "tasks": [{"id": "a", "runtime": 7, "parents": []}]}
    body = {"workflows": [one, two], "pool": "16", "workflows_count": 12, "rates": [1800.0],
            "policies": ["heft"], "schedule": True, "seed": 3}
    r = api.post(SIMULATE, json=body)
    assert r.status_code == 200, r.text
    out = r.json()
    schedule = out["rows"][0]["schedule"]
    index = {w["workflow"]: w["template_index"] for w in schedule["workflows"]}
    assert set(index.values()) == {0, 1}
    for t in schedule["tasks"]:
        runtime = (one, two)[index[t["workflow"]]]["tasks"][0]["runtime"]
        assert t["finish"] - t["start"] == pytest.approx(runtime * 16 / out["vcpus"][t["vm"]])
