"""Malformed workflow files and pools are InstanceErrors naming where (422s naming the field
over HTTP), never a TypeError, OverflowError, zlib.error or RecursionError (a 500)."""

from __future__ import annotations

import gzip
import json
from typing import Any

import httpx
import pytest

from app.errors import ApiError
from app.routers import scheduling
from app.settings import Settings
from solvers.errors import InstanceError
from solvers.scheduling.simulator import parse_pool
from solvers.scheduling.workflow import build_workflow, parse_workflow_bytes, workflow_from_dict
from tests.app.helpers import assert_problem

SIMULATE = "/v1/scheduling/simulate"
SESSIONS = "/v1/scheduling/sessions"
TWO = {"tasks": [{"id": "a", "runtime": 1}, {"id": "b", "runtime": 2, "parents": ["a"]}]}


def _v15(spec_tasks: Any, execution: Any) -> dict[str, Any]:
    return {"workflow": {"specification": {"tasks": spec_tasks}, "execution": execution}}


SPEC = [{"id": "a", "parents": []}, {"id": "b", "parents": ["a"]}]
#: (workflow JSON, the field the error must name)
MALFORMED: list[tuple[dict[str, Any], str]] = [
    ({"tasks": [{"id": "a", "runtime": 1}, {"id": "b", "runtime": 2, "parents": [["a"]]}]},
     "tasks[1].parents[0]"),
    ({"tasks": [{"id": "a", "runtime": 1}, {"id": "b", "runtime": 2, "parents": [{"a": 1}]}]},
     "tasks[1].parents[0]"),
    ({"tasks": [{"id": "a", "runtime": 10**400}]}, "tasks[0].runtime"),
    ({"tasks": [{"id": "a", "runtime": -(10**400)}]}, "tasks[0].runtime"),
    (_v15(SPEC, {"tasks": 5}), "workflow.execution.tasks"),
    (_v15(SPEC, "x"), "workflow.execution"),
    (_v15(SPEC, [1, 2]), "workflow.execution"),
    (_v15([5], {"tasks": []}), "workflow.specification.tasks[0]"),
    (_v15([{"id": ["a"]}], {"tasks": []}), "workflow.specification.tasks[0].id"),
    (_v15(SPEC, {"tasks": [{"id": ["a"], "runtimeInSeconds": 1}]}),
     "workflow.execution.tasks[0].id"),
    (_v15(SPEC, {"tasks": [7]}), "workflow.execution.tasks[0]"),
    (_v15(SPEC, {"tasks": [{"id": "a", "runtimeInSeconds": 1},
                           {"id": "b", "runtimeInSeconds": 10**400}]}),
     "workflow.execution.tasks[1].runtimeInSeconds"),
    (_v15(SPEC, {"tasks": [{"id": "b", "runtimeInSeconds": 2},
                           {"id": "a", "runtimeInSeconds": "1"}]}),
     "workflow.execution.tasks[1].runtimeInSeconds"),
    (_v15([{"id": "a", "parents": ["b"]}, {"id": "b", "parents": ["a"]}],
          {"tasks": [{"id": "a", "runtimeInSeconds": 1}, {"id": "b", "runtimeInSeconds": 1}]}),
     "workflow.specification.tasks"),
    ({"workflow": {"tasks": [{"name": "a", "runtime": 1, "parents": ["b"]},
                             {"name": "b", "runtime": 1, "parents": ["a"]}]}},
     "workflow.tasks"),
]


@pytest.mark.parametrize(("obj", "field"), MALFORMED)
def test_malformed_workflow_names_the_field(obj: dict[str, Any], field: str) -> None:
    with pytest.raises(InstanceError) as info:
        workflow_from_dict(obj)
    assert info.value.field == field
    assert len(info.value.message) < 300  # a 400-digit runtime is not echoed in full
    with pytest.raises(InstanceError) as info:
        parse_workflow_bytes(json.dumps(obj).encode(), "w.json")
    assert info.value.field == field


def test_large_but_finite_runtime_is_still_a_number() -> None:
    wf = build_workflow("w", ["a"], [10**5], [[]])
    assert wf.runtimes.tolist() == [1e5]


def test_v15_without_execution_reports_the_missing_runtime() -> None:
    for execution in (None, {}, {"tasks": None}):
        with pytest.raises(InstanceError) as info:
            workflow_from_dict(_v15(SPEC, execution))
        # the runtimes of 1.5 live in workflow.execution.tasks: that is the list to fix
        assert info.value.field == "workflow.execution.tasks"
        assert "'a'" in info.value.message and "specification.tasks[0]" in info.value.message


def test_corrupt_deflate_data_in_a_gzip_is_an_instance_error() -> None:
    good = gzip.compress(json.dumps(TWO).encode() * 20)
    corrupt = good[:10] + b"\xff" * 8 + good[18:]  # zlib.error: invalid block type
    with pytest.raises(InstanceError, match="gzip") as info:
        parse_workflow_bytes(corrupt, "w.json.gz")
    assert info.value.field == "file"


def test_json_too_deep_or_with_a_too_long_integer_is_an_instance_error() -> None:
    with pytest.raises(InstanceError, match="too deeply") as info:
        parse_workflow_bytes(b"[" * 100_000 + b"]" * 100_000, "deep.json")
    assert info.value.field == "file"
    raw = b'{"tasks": [{"id": "a", "runtime": ' + b"9" * 5000 + b"}]}"
    with pytest.raises(InstanceError, match="5000 digits") as info:
        parse_workflow_bytes(raw, "long.json")
    assert info.value.field == "tasks[0].runtime"


@pytest.mark.parametrize("pool", ["1x" + "9" * 4400, "9" * 4400 + "x1", "1x1" + "0" * 5000])
def test_pool_with_a_huge_count_is_refused(pool: str) -> None:
    with pytest.raises(InstanceError) as info:
        parse_pool(pool)
    assert info.value.field == "pool" and len(info.value.message) < 200


def test_pool_with_leading_zeros_still_reads() -> None:
    assert parse_pool("006x004").label == "6x4"
    assert parse_pool("6x" + "0" * 5000 + "4").label == "6x4"


# -- over HTTP -------------------------------------------------------------------------------
@pytest.mark.parametrize(("obj", "field"), MALFORMED)
def test_malformed_workflow_upload_is_a_422_on_file(api: httpx.Client, obj: dict[str, Any],
                                                    field: str) -> None:
    response = api.post(SIMULATE, files=[("file", ("w.json", json.dumps(obj).encode()))])
    body = assert_problem(response, 422, "file")
    assert field in body["detail"]


def test_corrupt_or_deep_workflow_uploads_are_422(api: httpx.Client) -> None:
    good = gzip.compress(json.dumps(TWO).encode() * 20)
    corrupt = good[:10] + b"\xff" * 8 + good[18:]
    assert_problem(api.post(SIMULATE, files=[("file", ("w.json.gz", corrupt))]), 422, "file")
    deep = b"[" * 100_000 + b"]" * 100_000
    body = assert_problem(api.post(SIMULATE, files=[("file", ("deep.json", deep))]), 422,
                          "file")
    assert "too deeply" in body["detail"]


def test_pool_with_a_huge_count_is_a_422(api: httpx.Client) -> None:
    pool = "1x" + "9" * 4400
    assert_problem(api.post(SIMULATE, json={"pool": pool}), 422, "pool")
    assert_problem(api.post(SESSIONS, json={"pool": pool}), 422, "pool")
    assert_problem(api.post(SIMULATE, files=[("file", ("w.json", json.dumps(TWO).encode()))],
                            data={"pool": pool}), 422, "pool")


def test_an_unexpected_parser_error_is_still_a_422_on_file(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The last resort behind the parser: an error it does not name is bad input, not a 500."""
    def broken(data: bytes, filename: str, max_bytes: int = 0) -> Any:
        raise TypeError("unhashable type: 'list'")

    from app.intake import scheduling as intake

    monkeypatch.setattr(intake, "parse_workflow_bytes", broken)
    files = [("w.json", json.dumps(TWO).encode())]
    with pytest.raises(ApiError) as info:
        intake.task_from_upload(files, {}, Settings())
    assert (info.value.status, info.value.field) == (422, "file")
    with pytest.raises(ApiError) as info:
        intake.task_from_upload(files * 2, {}, Settings())
    assert (info.value.status, info.value.field) == (422, "file[0]")


def test_idle_sessions_expire_on_any_access_and_any_request_keeps_one_alive() -> None:
    """Regression: expiry ran only when a session was created, and GET did not count as
    activity, so an expired session kept answering and polling could not keep one alive."""
    import time

    from solvers.scheduling.heuristics import HEURISTICS
    from solvers.scheduling.session import Session
    from solvers.scheduling.simulator import parse_pool

    def live(idle: float) -> scheduling._Live:
        entry = scheduling._Live(Session(parse_pool("1x2"), HEURISTICS["heft"]()), "1x2",
                                 "heft")
        entry.touched = time.monotonic() - idle
        return entry

    old, fresh = live(scheduling.SESSION_IDLE_S + 5), live(scheduling.SESSION_IDLE_S - 5)
    with scheduling._sessions_lock:
        scheduling._sessions.update({"old-session": old, "fresh-session": fresh})
    try:
        with pytest.raises(ApiError) as info:
            scheduling._get("old-session")
        assert info.value.status == 404
        assert scheduling._get("fresh-session") is fresh  # a GET is activity
        assert time.monotonic() - fresh.touched < 1
    finally:
        with scheduling._sessions_lock:
            scheduling._sessions.pop("old-session", None)
            scheduling._sessions.pop("fresh-session", None)
