"""jobs.store: each job and batch records its owner (a hash of an API key), an older store
gains the column, and listings, counts and solver seconds can be read per owner."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from jobs.store import _SCHEMA, JobStore

#: The jobs table as stores were written before owners were kept (the columns of 2026-12).
OLD_JOBS = _SCHEMA.split("CREATE INDEX")[0]


def _job(store: JobStore, owner: str | None, **extra: object) -> str:
    return store.create(problem="tsp", solver="ortools", time_limit=1.0, seed=0,
                        filename="a.json", data=b"{}", nodes=3, owner=owner, **extra).id


def test_an_old_store_gains_the_owner_column_and_keeps_its_jobs(tmp_path: Path) -> None:
    assert "owner" not in OLD_JOBS
    with sqlite3.connect(tmp_path / "jobs.sqlite3") as conn:
        conn.executescript(OLD_JOBS)
        conn.execute("INSERT INTO jobs (id, state, problem, solver, time_limit, seed, filename, "
                     "nodes, created_at, updated_at) VALUES ('old', 'queued', 'tsp', 'ortools', "
                     "1, 0, 'a.json', 3, 1, 1)")
    store = JobStore(tmp_path)
    old = store.get("old")
    assert old is not None and old.owner is None and old.state == "queued"
    columns = {row[1] for row in store._connection().execute("PRAGMA table_info(jobs)")}
    assert "owner" in columns
    new = _job(store, "key:abc")
    assert store.get(new).owner == "key:abc"  # type: ignore[union-attr]
    JobStore(tmp_path)  # opening it again changes nothing


def test_listing_and_counting_by_owner(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    mine = {_job(store, "key:a") for _ in range(3)}
    theirs = _job(store, "key:b")
    _job(store, None)
    jobs, total = store.list(owner="key:a")
    assert {j.id for j in jobs} == mine and total == 3
    assert store.list()[1] == 5  # no owner given: every job, as without keys
    assert store.count_active("key:a") == 3 and store.count_active("key:b") == 1
    assert store.count_active() == 5
    store.request_cancel(theirs)
    assert store.count_active("key:b") == 0


def test_a_batch_records_its_owner(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    batch_id = store.create_batch("ortools", 1.0, 1, [], owner="key:a")
    _job(store, "key:a", batch_id=batch_id)
    assert store.batch(batch_id)["owner"] == "key:a"  # type: ignore[index]
    assert store.batch(store.create_batch("ortools", 1.0, 0, []))["owner"] is None  # type: ignore[index]


def test_solver_seconds_of_the_last_hour(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    ran, running, old, other = (_job(store, o) for o in ("key:a", "key:a", "key:a", "key:b"))
    for job_id in (ran, running, old, other):
        assert store.mark_running(job_id, 0)
    for job_id, seconds in ((ran, 5.0), (running, 2.5), (old, 7.0), (other, 9.0)):
        store.report_progress(job_id, 0, seconds, 1, None, "")
    store.finish(ran, 0, state="succeeded", cost=1.0)
    store.finish(old, 0, state="succeeded", cost=1.0)
    with store._conn() as conn:  # finished two hours ago
        conn.execute("UPDATE jobs SET finished_at=? WHERE id=?", (time.time() - 7200, old))
    got = sorted(store.solver_seconds("key:a", time.time() - 3600), key=lambda r: r[1])
    assert [s for _, s in got] == [2.5, 5.0]
    assert got[0][0] is None and got[1][0] is not None  # the running one has no end yet
