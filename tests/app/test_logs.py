"""Structured logs: a request id in every line a request causes and in X-Request-ID, JSON
lines, and each job's lifecycle (submitted, started, progress, ended) logged by the server."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from app.logs import JsonFormatter, WithRequestId, accept_or_make_id, apply_format, request_id
from app.main import create_app
from app.settings import Settings
from jobs.lifecycle import JobMonitor
from jobs.store import JobStore
from tests.app.conftest import REPO, _free_port, _python


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    """The ``cosolve`` logger's lines, as JSON, for the test's duration."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    ours = logging.getLogger("cosolve")
    level = ours.level
    ours.addHandler(handler)
    ours.setLevel(logging.INFO)
    try:
        yield out
    finally:
        ours.removeHandler(handler)
        ours.setLevel(level)


def _records(out: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_request_ids_are_kept_when_sane_and_made_otherwise() -> None:
    assert accept_or_make_id("trace-42.a_b:c") == "trace-42.a_b:c"
    for bad in (None, "", "two words", "x" * 129, "new\nline", "é"):
        made = accept_or_make_id(bad)
        assert made != bad and len(made) == 32 and made.isalnum()


def test_every_line_of_a_request_carries_its_id(tmp_path: Path, json_lines: io.StringIO) -> None:
    app = create_app(Settings(data_dir=tmp_path))

    @app.get("/log-twice")
    def log_twice() -> dict[str, str]:  # a sync route: runs in a worker thread
        logging.getLogger("cosolve.api").info("first")
        logging.getLogger("cosolve.jobs").info("second", extra={"job_id": "j1"})
        return {"ok": "yes"}

    with TestClient(app) as client:
        given = client.get("/log-twice", headers={"X-Request-ID": "client-id-7"})
        made = client.get("/log-twice", headers={"X-Request-ID": "not sane!"})
        missing = client.get("/v1/jobs/nope")
    assert given.headers["x-request-id"] == "client-id-7"
    assert made.headers["x-request-id"] != "not sane!" and len(made.headers["x-request-id"]) == 32
    assert len(missing.headers["x-request-id"]) == 32  # errors carry one too
    lines = [r for r in _records(json_lines) if r["message"] in ("first", "second")]
    assert [r["request_id"] for r in lines] == ["client-id-7"] * 2 + \
        [made.headers["x-request-id"]] * 2
    assert lines[1]["job_id"] == "j1" and lines[1]["logger"] == "cosolve.jobs"
    assert lines[0]["level"] == "INFO" and lines[0]["time"].endswith("Z")
    # lines outside requests have none
    assert all("request_id" not in r for r in _records(json_lines)
               if r["message"].startswith("cosolve ready"))


def test_text_lines_get_the_request_id_appended() -> None:
    record = logging.LogRecord("cosolve.api", logging.INFO, __file__, 1, "hello %s", ("x",),
                               None)
    formatter = WithRequestId(logging.Formatter("%(levelname)s %(message)s"))
    assert formatter.format(record) == "INFO hello x"
    token = request_id.set("r1")
    try:
        assert formatter.format(record) == "INFO hello x [request_id=r1]"
    finally:
        request_id.reset(token)


def test_apply_format_swaps_the_formatters_of_our_and_uvicorns_handlers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    handler = logging.StreamHandler(io.StringIO())
    handler.setFormatter(logging.Formatter("%(message)s"))
    monkeypatch.setattr(logging.getLogger("uvicorn.access"), "handlers", [handler])
    monkeypatch.setattr(logging, "captureWarnings", lambda capture: None)  # pytest's own
    apply_format("text")
    assert isinstance(handler.formatter, WithRequestId)
    apply_format("text")  # idempotent: not wrapped twice
    assert not isinstance(handler.formatter.inner, WithRequestId)
    apply_format("json")
    assert isinstance(handler.formatter, JsonFormatter)


def test_a_jobs_lifecycle_is_logged(tmp_path: Path, json_lines: io.StringIO) -> None:
    store = JobStore(tmp_path)
    ended: list[str] = []
    monitor = JobMonitor(store, interval_s=5.0, on_end=lambda job: ended.append(job.state))
    job = store.create(problem="tsp", solver="ortools", time_limit=30, seed=0,
                       filename="a.json", data=b"{}", nodes=4)
    monitor.watch(job)
    monitor.look(now=100.0)  # queued: nothing to say yet
    assert store.mark_running(job.id, job.attempt)
    monitor.look(now=101.0)  # started
    store.report_progress(job.id, job.attempt, 3.0, 10, 12.5, "improving")
    monitor.look(now=103.0)  # within the interval: quiet
    monitor.look(now=106.5)  # progress
    store.finish(job.id, job.attempt, state="succeeded", cost=12.0, feasible=True,
                 message="solved", ttl_s=60)
    monitor.look(now=107.0)  # ended
    records = [r for r in _records(json_lines) if r.get("job_id") == job.id]
    assert [r["event"] for r in records] == ["job-started", "job-progress", "job-ended"]
    assert "best cost 12.5" in records[1]["message"]
    assert records[2]["state"] == "succeeded" and records[2]["cost"] == 12.0
    assert "ended succeeded" in records[2]["message"] and "cost 12" in records[2]["message"]
    assert ended == ["succeeded"]


def test_a_job_that_ends_between_two_looks_is_still_logged(tmp_path: Path,
                                                           json_lines: io.StringIO) -> None:
    store = JobStore(tmp_path)
    monitor = JobMonitor(store, interval_s=5.0)
    job = store.create(problem="tsp", solver="nearest_neighbor", time_limit=1, seed=0,
                       filename="a.json", data=b"{}", nodes=4)
    monitor.watch(job)
    store.mark_running(job.id, job.attempt)
    store.finish(job.id, job.attempt, state="failed", error="boom", ttl_s=60)
    monitor.look()
    [record] = [r for r in _records(json_lines) if r.get("job_id") == job.id]
    assert record["event"] == "job-ended" and record["level"] == "WARNING"
    assert "(boom)" in record["message"]


@pytest.mark.heavy
def test_cosolve_serve_log_format_json_writes_one_object_per_line(tmp_path: Path) -> None:
    """`cosolve serve --log-format json`: uvicorn's lines and ours are JSON, the access line
    of a request carries its X-Request-ID, and a job's submission is logged with it."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("COSOLVE_")}
    env["COSOLVE_DATA_DIR"] = str(tmp_path)
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile(mode="w+") as log:
        proc = subprocess.Popen([_python(), "-m", "cli.main", "serve", "--port", str(port),
                                 "--log-format", "json"], cwd=REPO, env=env, stdout=log,
                                stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline:
                assert proc.poll() is None, "the server exited"
                try:
                    if httpx.get(f"{url}/readyz", timeout=5).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.2)
            job = httpx.post(f"{url}/v1/jobs", headers={"X-Request-ID": "trace-9"}, json={
                "problem": "tsp", "solver": "nearest_neighbor", "time_limit": 1,
                "instance": {"coords": [[0, 0], [0, 1], [1, 1], [1, 0]]}}, timeout=30)
            assert job.status_code == 202 and job.headers["x-request-id"] == "trace-9"
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                log.seek(0)
                if '"job-ended"' in log.read():
                    break
                time.sleep(0.5)
        finally:
            proc.terminate()
            proc.wait(timeout=20)
        log.seek(0)
        lines = [line for line in log.read().splitlines() if line.strip()]
    # every line is one JSON object, but for what the multiprocessing resource tracker (a
    # process of its own, writing to the same stderr) says as the worker pool stops
    others = [line for line in lines if not line.startswith("{")]
    assert all("resource_tracker" in line for line in others), others
    records = [json.loads(line) for line in lines if line.startswith("{")]
    traced = [r for r in records if r.get("request_id") == "trace-9"]
    assert any(r["logger"] == "uvicorn.access" for r in traced), traced
    assert any(r.get("event") == "job-submitted" for r in traced), traced
    assert any(r.get("event") == "job-ended" and r["state"] == "succeeded" for r in records)
