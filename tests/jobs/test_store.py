"""The job store: persistence, the attempt guard against orphaned workers, expiry."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from jobs.store import CANCELLED, QUEUED, SUCCEEDED, JobStore
from jobs.worker import JobSpec, execute, run_stored_job
from solvers.contract import ProgressEvent
from tests.conftest import DATA


def _job(store: JobStore, solver: str = "nearest_neighbor", time_limit: float = 1.0):
    data = (DATA / "eil51.tsp").read_bytes()
    return store.create(problem="tsp", solver=solver, time_limit=time_limit, seed=0,
                        filename="eil51.tsp", data=data, nodes=51)


def test_input_is_on_disk_before_the_job_exists(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    job = _job(store)
    assert job.state == QUEUED
    assert store.input_path(job).read_bytes() == (DATA / "eil51.tsp").read_bytes()
    # A second store on the same folder (a restarted server) sees the same job.
    again = JobStore(tmp_path).get(job.id)
    assert again is not None and again.filename == "eil51.tsp"


def _schema_without(*columns: str) -> str:
    """The store's schema as an older version wrote it: without ``columns`` (added since)."""
    import re

    from jobs.store import _SCHEMA

    kept = [line for line in _SCHEMA.splitlines()
            if line.strip().split(" ")[0] not in columns]
    return re.sub(r",\n\)", "\n)", "\n".join(kept))


def test_a_store_from_before_the_fleet_column_gains_it(tmp_path: Path) -> None:
    """A jobs.sqlite3 written before jobs had max_vehicles: opening it adds the column, its
    old jobs read None there, new ones keep theirs; a second opening changes nothing."""
    import sqlite3

    tmp_path.mkdir(exist_ok=True)
    old = sqlite3.connect(tmp_path / "jobs.sqlite3")
    old.executescript(_schema_without("max_vehicles", "worker_pid", "max_solutions"))
    old.execute("INSERT INTO jobs (id, state, problem, solver, time_limit, seed, filename, "
                "nodes, created_at, updated_at) VALUES ('old', 'succeeded', 'tsp', "
                "'ortools', 1.0, 0, 'eil51.tsp', 51, 0, 0)")
    old.commit()
    columns = {row[1] for row in old.execute("PRAGMA table_info(jobs)")}
    batch_columns = {row[1] for row in old.execute("PRAGMA table_info(batches)")}
    old.close()
    assert not {"max_vehicles", "worker_pid", "max_solutions"} & (columns | batch_columns)
    store = JobStore(tmp_path)
    stored = store.get("old")
    assert stored is not None and stored.max_vehicles is None and stored.worker_pid is None
    capped = store.create(problem="cvrp", solver="ils", time_limit=1.0, seed=0,
                          filename="X-n101-k25.vrp", data=(DATA / "X-n101-k25.vrp").read_bytes(),
                          nodes=101, max_vehicles=26)
    assert JobStore(tmp_path).get(capped.id).max_vehicles == 26  # type: ignore[union-attr]
    # the batches table gained its column too
    batch_id = store.create_batch("ils", 1.0, 1, [], max_vehicles=26)
    assert store.batch(batch_id)["max_vehicles"] == 26  # type: ignore[index]


def test_a_store_from_before_the_solution_budget_column_gains_it(tmp_path: Path) -> None:
    """A jobs.sqlite3 written before jobs and batches had max_solutions (with max_vehicles):
    opening it adds the column to both tables, its old jobs and batches read None there, new
    ones keep theirs, and the worker solves a stored job with its budget."""
    import sqlite3

    old = sqlite3.connect(tmp_path / "jobs.sqlite3")
    old.executescript(_schema_without("max_solutions"))
    old.execute("INSERT INTO jobs (id, state, problem, solver, time_limit, seed, filename, "
                "nodes, created_at, updated_at) VALUES ('old', 'succeeded', 'tsp', "
                "'ortools', 1.0, 0, 'eil51.tsp', 51, 0, 0)")
    old.execute("INSERT INTO batches (id, created_at, solver, time_limit, size) "
                "VALUES ('old', 0, 'ortools', 1.0, 1)")
    old.commit()
    for table in ("jobs", "batches"):
        assert "max_solutions" not in {row[1] for row in old.execute(
            f"PRAGMA table_info({table})")}
    old.close()
    store = JobStore(tmp_path)
    stored = store.get("old")
    assert stored is not None and stored.max_solutions is None
    assert store.batch("old")["max_solutions"] is None  # type: ignore[index]
    job = store.create(problem="tsp", solver="polynet", time_limit=30.0, seed=0,
                       filename="eil51.tsp", data=(DATA / "eil51.tsp").read_bytes(), nodes=51,
                       max_solutions=16)
    assert JobStore(tmp_path).get(job.id).max_solutions == 16  # type: ignore[union-attr]
    batch_id = store.create_batch("polynet", 30.0, 1, [], max_solutions=16)
    assert JobStore(tmp_path).batch(batch_id)["max_solutions"] == 16  # type: ignore[index]
    assert run_stored_job(str(tmp_path), job.id, job.attempt, ttl_s=60) == SUCCEEDED
    stats = store.read_solution(job.id)["stats"]  # type: ignore[index]
    assert stats["solutions"] == 16 and stats["max_solutions"] == 16


def test_a_store_from_before_the_reference_columns_gains_them(tmp_path: Path) -> None:
    """A jobs.sqlite3 written before jobs had a known solution's cost (a batch's NAME.sol):
    opening it adds reference and reference_file, its old jobs read None there, and new ones
    keep theirs through a reopening."""
    import sqlite3

    old = sqlite3.connect(tmp_path / "jobs.sqlite3")
    old.executescript(_schema_without("reference", "reference_file"))
    old.execute("INSERT INTO jobs (id, state, problem, solver, time_limit, seed, filename, "
                "nodes, created_at, updated_at) VALUES ('old', 'succeeded', 'tsp', "
                "'ortools', 1.0, 0, 'eil51.tsp', 51, 0, 0)")
    old.commit()
    assert not {"reference", "reference_file"} & {row[1] for row in old.execute(
        "PRAGMA table_info(jobs)")}
    old.close()
    store = JobStore(tmp_path)
    stored = store.get("old")
    assert stored is not None and stored.reference is None and stored.reference_file is None
    job = store.create(problem="tsp", solver="nearest_neighbor", time_limit=1.0, seed=0,
                       filename="eil51.tsp", data=(DATA / "eil51.tsp").read_bytes(), nodes=51,
                       reference=426.0, reference_file="set/eil51.opt.tour")
    again = JobStore(tmp_path).get(job.id)
    assert again is not None and again.reference == 426.0
    assert again.reference_file == "set/eil51.opt.tour"


def test_worker_runs_a_stored_job(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    job = _job(store)
    assert run_stored_job(str(tmp_path), job.id, job.attempt, ttl_s=60) == SUCCEEDED
    done = store.get(job.id)
    assert done.state == SUCCEEDED and done.feasible and done.cost >= 426
    assert done.expires_at is not None and done.expires_at > time.time()
    assert store.read_solution(job.id)["cost"] == done.cost
    # Running it again does nothing: it is no longer queued.
    assert run_stored_job(str(tmp_path), job.id, job.attempt, ttl_s=60) == "skipped"


def test_requeue_bumps_the_attempt_and_fences_off_the_old_worker(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    job = _job(store)
    assert store.mark_running(job.id, 0)
    store.report_progress(job.id, 0, 1.0, 5, 500.0, "old worker")
    # The server dies and restarts: the running job goes back to the queue as attempt 1.
    requeued = JobStore(tmp_path).requeue_interrupted()
    assert [j.id for j in requeued] == [job.id] and requeued[0].attempt == 1
    assert requeued[0].state == QUEUED
    # it waits again, so it has not started (before: the old attempt's started_at stayed)
    assert requeued[0].started_at is None and requeued[0].worker_pid is None
    # The orphaned attempt-0 worker can no longer write.
    store.report_progress(job.id, 0, 2.0, 9, 400.0, "stale")
    assert not store.finish(job.id, 0, state=SUCCEEDED, cost=1.0, feasible=True)
    # nor did its progress survive the requeue: the new attempt starts from nothing
    assert store.get(job.id).best_cost is None
    # nor is its solution file ever served (before: a cancelled job served a stale
    # attempt's solution, written before the row refused it)
    store.write_solution(job.id, 0, {"cost": 1.0, "stale": True})
    assert store.read_solution(job.id) is None
    assert run_stored_job(str(tmp_path), job.id, 1, ttl_s=60) == SUCCEEDED
    assert "stale" not in store.read_solution(job.id)


def test_a_damaged_solution_file_is_said_to_be_damaged(tmp_path: Path) -> None:
    """Regression: a truncated solution file was a bare 500."""
    from jobs.store import StoredSolutionError

    store = JobStore(tmp_path)
    job = _job(store)
    run_stored_job(str(tmp_path), job.id, job.attempt, ttl_s=60)
    path = store.solution_path(job.id, job.attempt)
    path.write_text(path.read_text()[:20])
    with pytest.raises(StoredSolutionError, match="cannot be read"):
        store.read_solution(job.id)


def test_one_server_per_data_directory(tmp_path: Path) -> None:
    """Regression: a second server on the same folder re-queued the first one's running job and
    solved it too. It is refused with the holder's pid; the folder is free again once the
    first stops. A file, an unwritable folder or a damaged database is refused up front."""
    import os

    from jobs.service import JobService
    from jobs.settings import Settings
    from jobs.store import DataDirError, check_data_dir

    first = JobService(Settings(data_dir=tmp_path, max_concurrent_jobs=1))
    first.start()
    try:
        with pytest.raises(DataDirError, match=f"in use by another cosolve server .pid "
                                               f"{os.getpid()}"):
            JobService(Settings(data_dir=tmp_path, max_concurrent_jobs=1)).start()
        with pytest.raises(DataDirError, match="in use"):
            check_data_dir(tmp_path)
    finally:
        first.stop()
    check_data_dir(tmp_path)  # free again
    a_file = tmp_path / "afile"
    a_file.write_text("")
    with pytest.raises(DataDirError, match="is a file"):
        check_data_dir(a_file)
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "jobs.sqlite3").write_bytes(os.urandom(4096))
    with pytest.raises(DataDirError, match="cannot be opened"):
        check_data_dir(damaged)


def test_a_batch_expires_with_its_last_job(tmp_path: Path) -> None:
    """It answered 200 as an empty finished batch once its jobs had expired."""
    store = JobStore(tmp_path)
    batch_id = store.create_batch("nearest_neighbor", 1.0, 1, [])
    job = store.create(problem="tsp", solver="nearest_neighbor", time_limit=1.0, seed=0,
                       filename="eil51.tsp", data=(DATA / "eil51.tsp").read_bytes(), nodes=51,
                       batch_id=batch_id)
    run_stored_job(str(tmp_path), job.id, job.attempt, ttl_s=0.0)
    empty = store.create_batch("nearest_neighbor", 1.0, 1, [])  # still getting its jobs
    assert store.purge_expired(now=time.time() + 1) == 1
    assert store.batch(batch_id) is not None  # created under a minute before "now"
    assert store.purge_expired(now=time.time() + 120) == 0
    assert store.batch(batch_id) is None and store.batch(empty) is None


def test_a_batch_keeps_its_results_until_its_last_job_expires(tmp_path: Path) -> None:
    """Its first job's own expiry passes while the second still runs: nothing goes until
    the TTL after the last one finished, then all of them (before: results vanished one by
    one from a running batch)."""
    store = JobStore(tmp_path)
    batch_id = store.create_batch("nearest_neighbor", 1.0, 2, [])
    first, second = (store.create(problem="tsp", solver="nearest_neighbor", time_limit=1.0,
                                  seed=0, filename=name, nodes=51, batch_id=batch_id,
                                  data=(DATA / "eil51.tsp").read_bytes())
                     for name in ("a.tsp", "b.tsp"))
    run_stored_job(str(tmp_path), first.id, first.attempt, ttl_s=0.0)
    assert store.purge_expired(now=time.time() + 120) == 0  # the second is still queued
    assert store.get(first.id) is not None and store.read_solution(first.id) is not None
    run_stored_job(str(tmp_path), second.id, second.attempt, ttl_s=3600.0)
    assert store.purge_expired(now=time.time() + 120) == 0  # the last one's TTL holds all
    assert store.purge_expired(now=time.time() + 3700) == 2
    assert store.get(first.id) is None and store.batch(batch_id) is None


def test_a_batch_whose_jobs_expired_is_a_404_at_once(tmp_path: Path) -> None:
    """The row goes a minute after creation at the earliest; until then it answered 200 with
    its rejected files only (with a TTL under a minute)."""
    from app.errors import ApiError
    from app.routers.jobs import batch_status
    from jobs.service import JobService
    from jobs.settings import Settings

    service = JobService(Settings(data_dir=tmp_path, max_concurrent_jobs=1))
    store = service.store
    batch_id = store.create_batch("nearest_neighbor", 1.0, 1,
                                  [{"filename": "bad.tsp", "error": "unreadable"}])
    job = store.create(problem="tsp", solver="nearest_neighbor", time_limit=1.0, seed=0,
                       filename="eil51.tsp", data=(DATA / "eil51.tsp").read_bytes(), nodes=51,
                       batch_id=batch_id)
    run_stored_job(str(tmp_path), job.id, job.attempt, ttl_s=0.0)
    assert batch_status(service, batch_id).summary.files == 2
    assert store.purge_expired(now=time.time() + 1) == 1
    assert store.batch(batch_id) is not None  # the row is still there
    with pytest.raises(ApiError) as info:
        batch_status(service, batch_id)
    assert info.value.status == 404


def test_cancel_before_start_and_expiry(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    job = _job(store)
    assert store.request_cancel(job.id).state == CANCELLED
    assert run_stored_job(str(tmp_path), job.id, job.attempt, ttl_s=60) == "skipped"
    other = _job(store)
    run_stored_job(str(tmp_path), other.id, other.attempt, ttl_s=0.0)
    assert store.purge_expired(now=time.time() + 1) == 1
    assert store.get(other.id) is None and not store.job_dir(other.id).exists()
    assert store.get(job.id) is not None  # cancelled before it ran, without a ttl: kept
    # with the server's ttl it expires like any finished job (it never did)
    queued = _job(store)
    assert store.request_cancel(queued.id, ttl_s=0.0).state == CANCELLED
    assert store.purge_expired(now=time.time() + 1) == 1
    assert store.get(queued.id) is None and not store.job_dir(queued.id).exists()


class _Sink:
    def __init__(self, cancel_after: float | None = None) -> None:
        self.events: list[ProgressEvent] = []
        self.cancel_after = cancel_after
        self.t0 = time.monotonic()

    def progress(self, event: ProgressEvent) -> None:
        self.events.append(event)

    def cancelled(self) -> bool:
        return self.cancel_after is not None and time.monotonic() - self.t0 > self.cancel_after


def test_execute_reports_progress_and_honours_cancel() -> None:
    data = (DATA / "X-n101-k25.vrp").read_bytes()
    spec = JobSpec("j", "cvrp", "ortools", 30.0, 0, "X-n101-k25.vrp")
    sink = _Sink(cancel_after=1.0)
    t0 = time.monotonic()
    outcome = execute(spec, data, sink)
    assert time.monotonic() - t0 < 5
    assert outcome.state == CANCELLED and outcome.partial and outcome.feasible
    assert outcome.solution["partial"] is True
    assert any(e.best_cost for e in sink.events)


def test_the_final_count_never_drops_below_the_progress_shown() -> None:
    """A neural solver counts passes, not iterations: a finished job once reported 0 after
    progress had shown 4."""
    spec = JobSpec("j", "cvrp", "reld", 1.0, 0, "X-n101-k25.vrp")
    sink = _Sink()
    outcome = execute(spec, (DATA / "X-n101-k25.vrp").read_bytes(), sink)
    assert outcome.state == "succeeded"
    final, before = sink.events[-1], sink.events[:-1]
    assert final.message == "done" and final.iterations > 0
    assert final.iterations >= max(e.iterations for e in before)


def test_execute_turns_failures_into_outcomes() -> None:
    spec = JobSpec("j", "tsp", "no-such-solver", 1.0, 0, "eil51.tsp")
    outcome = execute(spec, (DATA / "eil51.tsp").read_bytes(), _Sink())
    assert outcome.state == "failed" and "unknown solver" in outcome.error
    spec = JobSpec("j", "tsp", "nearest_neighbor", 1.0, 0, "broken.tsp")
    outcome = execute(spec, b"garbage", _Sink())
    assert outcome.state == "failed" and outcome.error


def test_a_batchs_status_names_its_seed(tmp_path: Path) -> None:
    """Regression: a batch's status gave its solver and time limit but not the seed its files
    were solved with, so its results could not be reproduced from the answer alone."""
    from app.routers.jobs import batch_status
    from jobs.service import JobService
    from jobs.settings import Settings

    service = JobService(Settings(data_dir=tmp_path, max_concurrent_jobs=1))
    batch_id = service.store.create_batch("nearest_neighbor", 1.0, 1, [])
    service.store.create(problem="tsp", solver="nearest_neighbor", time_limit=1.0, seed=7,
                         filename="eil51.tsp", data=(DATA / "eil51.tsp").read_bytes(),
                         nodes=51, batch_id=batch_id)
    assert batch_status(service, batch_id).seed == 7


def test_a_batch_is_accepted_whole_or_not_at_all(tmp_path: Path) -> None:
    """The queue check and the creation of a batch's jobs hold one lock: a batch that does
    not fit creates nothing (a race with single jobs once left a batch the client never got,
    with some of its jobs running)."""
    from jobs.service import JobService, QueueFullError
    from jobs.settings import Settings

    class Parked:  # keeps every job queued
        def submit(self, job: object) -> None: ...

        def shutdown(self) -> None: ...

    service = JobService(Settings(data_dir=tmp_path, max_active_jobs=3), executor=Parked())
    data = (DATA / "eil51.tsp").read_bytes()
    job = {"problem": "tsp", "solver": "nearest_neighbor", "time_limit": 1.0, "seed": 0,
           "filename": "eil51.tsp", "data": data, "nodes": 51}
    service.submit(**job)
    with pytest.raises(QueueFullError) as exc:
        service.submit_batch([job] * 3, "nearest_neighbor", 1.0, [])
    assert exc.value.active == 4
    assert service.store.count_active() == 1
    assert service.store._connection().execute("SELECT COUNT(*) FROM batches").fetchone()[0] == 0
    batch_id = service.submit_batch([job] * 2, "nearest_neighbor", 1.0, [])
    assert len(service.store.list(batch_id=batch_id)[0]) == 2
    with pytest.raises(QueueFullError) as exc:
        service.submit(**job)
    assert exc.value.active == 4  # the job it refused counts (it said 3 of at most 3)


def test_a_missing_input_file_is_said_to_be_missing(tmp_path: Path) -> None:
    """Regression: a deleted input read as "the worker process died (FileNotFoundError …)"."""
    from jobs.store import FAILED

    store = JobStore(tmp_path)
    job = _job(store)
    store.input_path(job).unlink()
    assert run_stored_job(str(tmp_path), job.id, job.attempt, ttl_s=60) == FAILED
    assert "input file is missing" in (store.get(job.id).error or "")


def test_a_submission_the_disk_refuses_leaves_nothing_behind(tmp_path: Path,
                                                             monkeypatch) -> None:
    """Regression: with the disk full a submission was a bare 500 and its folder stayed, with no
    row, so the expiry loop never removed it. It is a StorageError and nothing is left."""
    import errno
    import os

    from jobs.store import StorageError

    store = JobStore(tmp_path)

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(StorageError, match="may be full"):
        _job(store)
    assert list((tmp_path / "jobs").iterdir()) == [] and store.list()[0] == []


def test_a_failure_says_how_long_its_job_ran(tmp_path: Path) -> None:
    """Regression: a job that failed after 2 s showed progress.elapsed 0.0."""
    from jobs.store import FAILED

    store = JobStore(tmp_path)
    job = _job(store)
    assert store.mark_running(job.id, job.attempt)
    time.sleep(0.2)
    assert store.finish(job.id, job.attempt, state=FAILED, error="boom")
    assert store.get(job.id).elapsed >= 0.2


def test_a_batch_whose_storage_fails_part_way_keeps_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: the 507 said "nothing was kept" while the batch row and the jobs stored
    before the failure stayed queued (counted against the queue, run after a restart)."""
    from jobs.service import JobService
    from jobs.settings import Settings
    from jobs.store import StorageError

    class Parked:
        def submit(self, job: object) -> None: ...

        def shutdown(self) -> None: ...

    service = JobService(Settings(data_dir=tmp_path, max_active_jobs=10), executor=Parked())
    real, calls = service.store.create, []

    def second_fails(**job: object) -> object:
        calls.append(1)
        if len(calls) == 2:
            raise StorageError("disk full")
        return real(**job)  # type: ignore[arg-type]

    monkeypatch.setattr(service.store, "create", second_fails)
    job = {"problem": "tsp", "solver": "nearest_neighbor", "time_limit": 1.0, "seed": 0,
           "filename": "eil51.tsp", "data": (DATA / "eil51.tsp").read_bytes(), "nodes": 51}
    with pytest.raises(StorageError):
        service.submit_batch([job] * 3, "nearest_neighbor", 1.0, [])
    assert service.store.count_active() == 0
    assert service.store._connection().execute("SELECT COUNT(*) FROM batches").fetchone()[0] == 0
    assert not [p for p in (tmp_path / "jobs").glob("*") if p.is_dir()]


def test_an_infeasible_plan_is_not_served_as_a_tour_or_sol_file(tmp_path: Path) -> None:
    """A .sol has no word for "infeasible": OR-Tools' plan with dropped customers (a tight
    fleet) came back from /v1/jobs/{id}/solution?format=sol as a plain solution and cost."""
    from types import SimpleNamespace

    from app.errors import ApiError
    from app.routers.jobs import job_solution
    from jobs.worker import JobOutcome, record_outcome
    from solvers.routing.io.documents import solution_to_dict
    from solvers.routing.io.formats import load_instance
    from solvers.routing.solution import build_solution

    store = JobStore(tmp_path)
    instance = load_instance(DATA / "X-n101-k25.vrp")
    data = (DATA / "X-n101-k25.vrp").read_bytes()
    service = SimpleNamespace(store=store)
    for routes in ([[v] for v in range(1, 101)], [[v] for v in range(1, 100)]):
        solution = build_solution(instance, routes, solver="ortools", wall_time=0.1)
        job = store.create(problem="cvrp", solver="ortools", time_limit=1.0, seed=0,
                           filename="X-n101-k25.vrp", data=data, nodes=101)
        assert store.mark_running(job.id, job.attempt)
        record_outcome(store, job.id, job.attempt, JobOutcome(
            SUCCEEDED, solution=solution_to_dict(solution, instance), cost=solution.cost,
            feasible=solution.feasible), ttl_s=60)
        assert job_solution(job.id, service, format="json").status_code == 200
        if solution.feasible:
            assert job_solution(job.id, service, format="sol").status_code == 200
            continue
        with pytest.raises(ApiError) as refused:
            job_solution(job.id, service, format="sol")
        assert refused.value.status == 422 and "infeasible" in refused.value.detail
        assert "never visited: [100]" in refused.value.detail
