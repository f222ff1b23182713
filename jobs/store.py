"""The job store: one SQLite file plus a folder per job for its input and its solution.

Why SQLite and files: the input a user submitted is written to disk (and fsynced) before the
API answers 202, so nothing accepted is lost; the job row records every state change, so a
server that dies and restarts finds the jobs it must run again. Workers on the same machine
write progress straight into the store; every worker write carries the job's ``attempt``
number, so a worker orphaned by a crash can never overwrite a newer attempt.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED = (
    "queued", "running", "succeeded", "failed", "cancelled"
)
ACTIVE_STATES = (QUEUED, RUNNING)
FINAL_STATES = (SUCCEEDED, FAILED, CANCELLED)

#: The longest stored file name, in UTF-8 bytes (the store writes ``input-<name>``, and file
#: systems take 255 bytes per name).
MAX_FILENAME_BYTES = 200
#: A name's extension (``.json``), with the one before it when the last is ``.gz``.
_SUFFIX = re.compile(r"(?:\.[A-Za-z0-9]{1,16})?\.gz$|\.[A-Za-z0-9]{1,16}$", re.IGNORECASE)


def safe_filename(name: str) -> str:
    """The file's base name with anything unusual replaced, keeping its extensions: the
    stored name must tell the worker the same format as the name the upload was parsed under,
    so a long name loses the end of its stem, never its extension (``.tsp.gz``), and leading
    dots (``....tsp``) go but the extension's own dot stays. A shortened stem ends in 8 hex
    digits of the whole name's hash, so two long names that share their first 200 bytes
    stay two names (a batch rejected the second as a duplicate)."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in base)
    match = _SUFFIX.search(cleaned)
    suffix = match.group(0) if match else ""
    stem = cleaned[: len(cleaned) - len(suffix)].lstrip(".") or "instance"
    room = MAX_FILENAME_BYTES - len(suffix.encode())
    if len(stem.encode()) > room:
        tag = "-" + hashlib.sha256(base.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        stem = stem.encode()[:room - len(tag)].decode("utf-8", "ignore") + tag
    return (stem or "instance") + suffix


_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    batch_id TEXT,
    state TEXT NOT NULL,
    problem TEXT NOT NULL,
    solver TEXT NOT NULL,
    time_limit REAL NOT NULL,
    seed INTEGER NOT NULL,
    filename TEXT NOT NULL,
    nodes INTEGER NOT NULL,
    created_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL,
    expires_at REAL,
    attempt INTEGER NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    elapsed REAL,
    iterations INTEGER,
    best_cost REAL,
    message TEXT,
    updated_at REAL NOT NULL,
    cost REAL,
    feasible INTEGER,
    partial INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    max_vehicles INTEGER,
    worker_pid INTEGER,
    max_solutions INTEGER,
    reference REAL,
    reference_file TEXT
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
CREATE INDEX IF NOT EXISTS jobs_batch ON jobs(batch_id);
CREATE INDEX IF NOT EXISTS jobs_created ON jobs(created_at);
CREATE TABLE IF NOT EXISTS batches (
    id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    solver TEXT NOT NULL,
    time_limit REAL NOT NULL,
    size INTEGER NOT NULL,
    rejected TEXT NOT NULL DEFAULT '[]',
    max_vehicles INTEGER,
    max_solutions INTEGER
);
"""

#: Columns added after a table's first release: (table, name, type), for older stores.
_ADDED_COLUMNS = (("jobs", "max_vehicles", "INTEGER"), ("batches", "max_vehicles", "INTEGER"),
                  ("jobs", "worker_pid", "INTEGER"), ("jobs", "max_solutions", "INTEGER"),
                  ("batches", "max_solutions", "INTEGER"), ("jobs", "reference", "REAL"),
                  ("jobs", "reference_file", "TEXT"), ("jobs", "owner", "TEXT"),
                  ("batches", "owner", "TEXT"))


@dataclass
class JobRecord:
    """One row of the store, as the API and the executors see it."""

    id: str
    batch_id: str | None
    state: str
    problem: str
    solver: str
    time_limit: float
    seed: int
    filename: str
    nodes: int
    created_at: float
    started_at: float | None
    finished_at: float | None
    expires_at: float | None
    attempt: int
    cancel_requested: bool
    elapsed: float | None
    iterations: int | None
    best_cost: float | None
    message: str | None
    updated_at: float
    cost: float | None
    feasible: bool | None
    partial: bool
    error: str | None
    #: The fleet cap the job solves with (a CVRP's max_vehicles), None without one.
    max_vehicles: int | None = None
    #: The local worker process solving it (set when it starts running), None otherwise.
    worker_pid: int | None = None
    #: The budget in solutions the job solves with (polynet's max_solutions), None without.
    max_solutions: int | None = None
    #: The cost of a known solution uploaded beside the file (a batch's NAME.sol or
    #: NAME.opt.tour), checked and recomputed at submission; None without one.
    reference: float | None = None
    #: The name that known solution was uploaded as.
    reference_file: str | None = None
    #: Who submitted it: a hash of the API key (of the client's address without keys), never
    #: the key; None for jobs stored before owners were kept.
    owner: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES

    @property
    def has_solution(self) -> bool:
        return self.cost is not None


def _record(row: sqlite3.Row) -> JobRecord:
    d = dict(row)
    d["cancel_requested"] = bool(d["cancel_requested"])
    d["partial"] = bool(d["partial"])
    d["feasible"] = None if d["feasible"] is None else bool(d["feasible"])
    return JobRecord(**d)


LOCK_FILE = "server.lock"


class DataDirError(Exception):
    """The data directory cannot serve: not a folder, not writable, a damaged database, or
    held by another server."""


def lock_data_dir(root: Path) -> int:
    """An exclusive lock on ``root`` for this server's lifetime (the open descriptor; close it
    to release). A second server on the same folder re-queued the first one's running jobs and
    solved them twice, so it is refused with the holder's pid. The lock dies with
    the process, so a killed server leaves nothing stale behind."""
    import fcntl

    fd = os.open(root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise DataDirError(f"{root} is in use by another cosolve server (pid {holder}); give "
                           "each server its own COSOLVE_DATA_DIR") from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


def check_data_dir(root: Path) -> None:
    """Everything about the data directory a server needs, checked before it starts (one
    line instead of a traceback after the warm-up): a folder that can be made and written,
    a jobs database that opens, and no other server holding it."""
    if root.exists() and not root.is_dir():
        raise DataDirError(f"{root} is a file; give a folder")
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / f".write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise DataDirError(f"cannot write in {root}: {exc.strerror or exc}") from None
    db = root / "jobs.sqlite3"
    if db.exists():
        try:
            with sqlite3.connect(db) as conn:
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as exc:
            raise DataDirError(f"{db} cannot be opened ({exc}); move it away to start with "
                               "an empty job store") from None
    os.close(lock_data_dir(root))


class StorageError(Exception):
    """A submission the data directory could not take (a full disk): nothing was kept."""


class StoredSolutionError(Exception):
    """A finished job's solution file is there but unreadable (damaged on disk)."""


class JobStore:
    """Thread-safe access to the SQLite file; each thread/process opens its own connection."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "jobs").mkdir(exist_ok=True)
        self.db_path = self.root / "jobs.sqlite3"
        self._local = threading.local()
        self._connection().executescript(_SCHEMA)  # executescript manages its own transaction
        self._add_missing_columns()

    def _add_missing_columns(self) -> None:
        """A store written by an older version gains the columns added since (its jobs read
        as None there); two processes opening it at once may both try, which is harmless."""
        conn = self._connection()
        for table, column, kind in _ADDED_COLUMNS:
            have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
            if column not in have:
                try:
                    conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
                    conn.commit()
                except sqlite3.OperationalError as exc:
                    if "duplicate column" not in str(exc):
                        raise
        # after the column exists, in an old store too: a key's listing and quotas read by it
        conn.execute("CREATE INDEX IF NOT EXISTS jobs_owner ON jobs(owner, state)")

    # -- connections -----------------------------------------------------------------
    def _connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.db_path, timeout=30.0, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=30000")
            self._local.conn = conn
        return conn

    @contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    # -- files -----------------------------------------------------------------------
    def job_dir(self, job_id: str) -> Path:
        return self.root / "jobs" / job_id

    def input_path(self, job: JobRecord) -> Path:
        return self.job_dir(job.id) / f"input-{job.filename}"

    def solution_path(self, job_id: str, attempt: int) -> Path:
        """One file per attempt: a superseded attempt that still finishes (a worker left
        running by a server that was killed) writes its own file, which is never served (a
        cancelled job would serve a stale attempt's solution)."""
        return self.job_dir(job_id) / f"solution-{attempt}.json"

    def write_solution(self, job_id: str, attempt: int, payload: dict[str, Any]) -> None:
        """Write atomically (temp file + rename), so a reader never sees half a solution."""
        path = self.solution_path(job_id, attempt)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(payload))
        os.replace(tmp, path)

    def progress_path(self, job_id: str, attempt: int) -> Path:
        """The attempt's cost series (``[[elapsed s, best], ...]``), one file per attempt as
        the solution."""
        return self.job_dir(job_id) / f"progress-{attempt}.json"

    def write_progress(self, job_id: str, attempt: int, points: list[list[float]]) -> None:
        """Write the series atomically; a job whose folder is gone (purged) is left alone."""
        _replace_json(self.progress_path(job_id, attempt), points)

    def incumbent_path(self, job_id: str, attempt: int) -> Path:
        """The attempt's latest published plan while it runs (``{solver, cost, elapsed,
        routes}``), one file per attempt as the solution; never a row: it is rewritten
        every second and may hold 20K nodes."""
        return self.job_dir(job_id) / f"incumbent-{attempt}.json"

    def write_incumbent(self, job_id: str, attempt: int, plan: dict[str, Any]) -> None:
        """Write the plan atomically; a job whose folder is gone (purged) is left alone."""
        _replace_json(self.incumbent_path(job_id, attempt), plan)

    def read_incumbent(self, job_id: str, attempt: int) -> dict[str, Any] | None:
        """The attempt's latest published plan; None when its solver published none yet.
        A damaged file is a ``StoredSolutionError``."""
        path = self.incumbent_path(job_id, attempt)
        try:
            plan = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise StoredSolutionError(f"the stored incumbent of job {job_id} cannot be read "
                                      f"({exc.__class__.__name__}: {exc})") from None
        if not isinstance(plan, dict) or not isinstance(plan.get("routes"), list):
            raise StoredSolutionError(f"the stored incumbent of job {job_id} is not a plan")
        return plan

    def read_progress(self, job_id: str, attempt: int) -> list[list[float]]:
        """The attempt's stored series; empty when none was written (a job that never
        reported a cost, or one stored before series were kept). A damaged file is a
        ``StoredSolutionError``."""
        path = self.progress_path(job_id, attempt)
        try:
            points = json.loads(path.read_text())
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise StoredSolutionError(f"the stored progress of job {job_id} cannot be read "
                                      f"({exc.__class__.__name__}: {exc})") from None
        if not isinstance(points, list) or not all(
                isinstance(p, list) and len(p) == 2 for p in points):
            raise StoredSolutionError(f"the stored progress of job {job_id} is not a series")
        return points

    def read_solution(self, job_id: str, attempt: int | None = None) -> dict[str, Any] | None:
        """The solution of the job's current attempt (or of ``attempt``); None when there is
        none. A file that cannot be read is a ``StoredSolutionError``."""
        if attempt is None:
            job = self.get(job_id)
            if job is None:
                return None
            attempt = job.attempt
        path = self.solution_path(job_id, attempt)
        if not path.exists():
            legacy = self.job_dir(job_id) / "solution.json"  # stores written before 2026-12-04
            if not legacy.exists():
                return None
            path = legacy
        try:
            payload = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise StoredSolutionError(f"the stored solution of job {job_id} cannot be read "
                                      f"({exc.__class__.__name__}: {exc})") from None
        if not isinstance(payload, dict):
            raise StoredSolutionError(f"the stored solution of job {job_id} is not a solution")
        return payload

    # -- creating --------------------------------------------------------------------
    def create(
        self,
        *,
        problem: str,
        solver: str,
        time_limit: float,
        seed: int,
        filename: str,
        data: bytes,
        nodes: int,
        batch_id: str | None = None,
        max_vehicles: int | None = None,
        max_solutions: int | None = None,
        reference: float | None = None,
        reference_file: str | None = None,
        owner: str | None = None,
    ) -> JobRecord:
        """Persist the input (fsynced) and a queued row; only then is the job accepted. The
        name is made safe to store (``safe_filename``) whoever calls: the CLI's batch passed
        a 250-character file name straight through and the write failed. ``reference``: the
        checked cost of a known solution of the file, ``reference_file`` its name."""
        filename = safe_filename(filename)
        job_id = uuid.uuid4().hex
        folder = self.job_dir(job_id)
        try:
            folder.mkdir(parents=True)
            path = folder / f"input-{filename}"
            with open(path, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            now = time.time()
            with self._conn() as c:
                c.execute(
                    "INSERT INTO jobs (id, batch_id, state, problem, solver, time_limit, seed, "
                    "filename, nodes, created_at, updated_at, max_vehicles, max_solutions, "
                    "reference, reference_file, owner) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (job_id, batch_id, QUEUED, problem, solver, time_limit, seed, filename,
                     nodes, now, now, max_vehicles, max_solutions, reference, reference_file,
                     owner),
                )
        except (OSError, sqlite3.OperationalError) as exc:
            # nothing half-made stays behind: the expiry loop works from rows, so a folder
            # without one would never be removed (a full disk left them, and a bare 500)
            shutil.rmtree(folder, ignore_errors=True)
            raise StorageError(f"the job could not be stored ({type(exc).__name__}: {exc}); "
                               "the server's data directory may be full") from None
        job = self.get(job_id)
        assert job is not None
        return job

    def create_batch(self, solver: str, time_limit: float, size: int,
                     rejected: list[dict[str, Any]], max_vehicles: int | None = None,
                     max_solutions: int | None = None, owner: str | None = None) -> str:
        """A batch row; ``rejected`` lists the files refused at submission, with reasons;
        ``max_vehicles`` and ``max_solutions``: the fleet cap and the budget in solutions
        every file was given, if any."""
        batch_id = uuid.uuid4().hex
        try:
            with self._conn() as c:
                c.execute("INSERT INTO batches (id, created_at, solver, time_limit, size, "
                          "rejected, max_vehicles, max_solutions, owner) "
                          "VALUES (?,?,?,?,?,?,?,?,?)",
                          (batch_id, time.time(), solver, time_limit, size,
                           json.dumps(rejected), max_vehicles, max_solutions, owner))
        except sqlite3.OperationalError as exc:
            raise StorageError(f"the batch could not be stored ({exc}); the server's data "
                               "directory may be full") from None
        return batch_id

    def discard_batch(self, batch_id: str) -> None:
        """Remove a batch whose submission failed part way, with the jobs stored for it so
        far, so that "nothing was kept" is true (they would stay queued, counted against the
        queue, and run after a restart under a batch id nobody received)."""
        with self._conn() as c:
            ids = [row[0] for row in c.execute("SELECT id FROM jobs WHERE batch_id=?",
                                               (batch_id,)).fetchall()]
            c.execute("DELETE FROM jobs WHERE batch_id=?", (batch_id,))
            c.execute("DELETE FROM batches WHERE id=?", (batch_id,))
        for job_id in ids:
            shutil.rmtree(self.job_dir(job_id), ignore_errors=True)

    # -- reading ---------------------------------------------------------------------
    def get(self, job_id: str) -> JobRecord | None:
        row = self._connection().execute("SELECT * FROM jobs WHERE id=?", (job_id,)).fetchone()
        return _record(row) if row else None

    def list(self, *, offset: int = 0, limit: int = 50, state: str | None = None,
             batch_id: str | None = None, owner: str | None = None
             ) -> tuple[list[JobRecord], int]:
        """A page of jobs, newest first; ``owner`` keeps one API key's jobs only."""
        where, args = [], []
        if owner is not None:
            where.append("owner=?")
            args.append(owner)
        if state:
            where.append("state=?")
            args.append(state)
        if batch_id:
            where.append("batch_id=?")
            args.append(batch_id)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        conn = self._connection()
        total = conn.execute(f"SELECT COUNT(*) FROM jobs {clause}", args).fetchone()[0]
        rows = conn.execute(
            f"SELECT * FROM jobs {clause} ORDER BY created_at DESC, id LIMIT ? OFFSET ?",
            [*args, limit, offset],
        ).fetchall()
        return [_record(r) for r in rows], int(total)

    def batch(self, batch_id: str) -> dict[str, Any] | None:
        row = self._connection().execute(
            "SELECT * FROM batches WHERE id=?", (batch_id,)).fetchone()
        if not row:
            return None
        out = dict(row)
        out["rejected"] = json.loads(out["rejected"])
        return out

    def count_active(self, owner: str | None = None) -> int:
        """Jobs queued or running: all of them, or ``owner``'s."""
        if owner is not None:
            return int(self._connection().execute(
                "SELECT COUNT(*) FROM jobs WHERE owner=? AND state IN (?, ?)",
                (owner, *ACTIVE_STATES)).fetchone()[0])
        return int(self._connection().execute(
            "SELECT COUNT(*) FROM jobs WHERE state IN (?, ?)", ACTIVE_STATES).fetchone()[0])

    def solver_seconds(self, owner: str, since: float) -> list[tuple[float | None, float]]:
        """``owner``'s jobs' solver seconds for a client's hourly quota: (finished_at,
        elapsed) of each job that finished after ``since`` or is running (finished_at None;
        its seconds so far)."""
        rows = self._connection().execute(
            "SELECT CASE WHEN state=? THEN NULL ELSE finished_at END, elapsed FROM jobs "
            "WHERE owner=? AND elapsed > 0 AND (state=? OR finished_at >= ?)",
            (RUNNING, owner, RUNNING, since)).fetchall()
        return [(row[0] if row[0] is None else float(row[0]), float(row[1])) for row in rows]

    def active_jobs(self) -> list[JobRecord]:
        rows = self._connection().execute(
            "SELECT * FROM jobs WHERE state IN (?, ?) ORDER BY created_at", ACTIVE_STATES
        ).fetchall()
        return [_record(r) for r in rows]

    # -- state changes (server side) -----------------------------------------------------
    def requeue_interrupted(self, ttl_s: float | None = None) -> list[JobRecord]:
        """On start-up: every job left queued or running goes back to the queue under a new
        attempt number (so the orphaned worker of the old attempt can no longer write)."""
        now = time.time()
        with self._conn() as c:
            # A cancel asked for before the stop is honoured, not run again (a new attempt
            # ended 'cancelled' with a solver error and no solution). The old attempt's best
            # solution died with its worker: say so.
            c.execute(
                "UPDATE jobs SET state=?, attempt=attempt+1, finished_at=?, updated_at=?, "
                "message=?, best_cost=NULL, "
                "expires_at=CASE WHEN ? IS NULL THEN NULL ELSE ? + ? END "
                "WHERE state IN (?, ?) AND cancel_requested=1",
                (CANCELLED, now, now, "cancelled; the server stopped before the running "
                 "solve could hand over its best solution, so none was kept", ttl_s, now, ttl_s,
                 *ACTIVE_STATES),
            )
            c.execute(
                "UPDATE jobs SET state=?, attempt=attempt+1, updated_at=?, best_cost=NULL, "
                "elapsed=0, iterations=0, started_at=NULL, worker_pid=NULL, "
                "message=CASE WHEN state=? THEN 're-queued after a server restart' "
                "ELSE message END WHERE state IN (?, ?)",
                (QUEUED, now, RUNNING, *ACTIVE_STATES),
            )
        return self.active_jobs()

    def request_cancel(self, job_id: str, ttl_s: float | None = None) -> JobRecord | None:
        """Flag a job for cancellation; a queued job is cancelled at once, and expires
        ``ttl_s`` later like any finished job (without it, such jobs were never purged)."""
        now = time.time()
        with self._conn() as c:
            c.execute("UPDATE jobs SET cancel_requested=1, updated_at=? WHERE id=? AND "
                      "state IN (?, ?)", (now, job_id, *ACTIVE_STATES))
            c.execute("UPDATE jobs SET state=?, finished_at=?, message=?, updated_at=?, "
                      "expires_at=CASE WHEN ? IS NULL THEN NULL ELSE ? + ? END "
                      "WHERE id=? AND state=?",
                      (CANCELLED, now, "cancelled before it started", now, ttl_s, now, ttl_s,
                       job_id, QUEUED))
        return self.get(job_id)

    def set_expiry(self, job_id: str, ttl_s: float) -> None:
        with self._conn() as c:
            c.execute("UPDATE jobs SET expires_at=finished_at+? WHERE id=? AND expires_at IS NULL "
                      "AND finished_at IS NOT NULL", (ttl_s, job_id))

    def purge_expired(self, now: float | None = None) -> int:
        """Delete finished jobs past their expiry, with their files. A batch's jobs go
        together, once every one of them has expired, that is, the TTL after the batch's last
        job finished, so a long batch keeps its early results while it still runs."""
        now = now or time.time()
        rows = self._connection().execute(
            "SELECT id FROM jobs AS j WHERE expires_at IS NOT NULL AND expires_at < ? AND "
            "(batch_id IS NULL OR NOT EXISTS (SELECT 1 FROM jobs AS k WHERE "
            "k.batch_id = j.batch_id AND (k.expires_at IS NULL OR k.expires_at >= ?)))",
            (now, now)).fetchall()
        for (job_id,) in rows:
            folder = self.job_dir(job_id)
            if folder.exists():
                for p in folder.iterdir():
                    p.unlink(missing_ok=True)
                folder.rmdir()
            with self._conn() as c:
                c.execute("DELETE FROM jobs WHERE id=?", (job_id,))
        # a batch goes with its last job (it answered 200 as an empty finished batch); one
        # created in the last minute may still be getting its jobs
        with self._conn() as c:
            c.execute("DELETE FROM batches WHERE created_at < ? AND NOT EXISTS "
                      "(SELECT 1 FROM jobs WHERE jobs.batch_id = batches.id)", (now - 60,))
        return len(rows)

    # -- state changes (worker side, guarded by the attempt) -----------------------------
    def mark_running(self, job_id: str, attempt: int, worker_pid: int | None = None) -> bool:
        now = time.time()
        with self._conn() as c:
            cur = c.execute(
                "UPDATE jobs SET state=?, started_at=?, updated_at=?, message=?, worker_pid=? "
                "WHERE id=? AND attempt=? AND state=?",
                (RUNNING, now, now, "running", worker_pid, job_id, attempt, QUEUED),
            )
            return cur.rowcount == 1

    def requeue_running(self, job_id: str, attempt: int, message: str,
                        ttl_s: float | None = None) -> JobRecord | None:
        """A running job whose worker was stopped through no fault of its own (another
        worker's death broke the pool) goes back to the queue under a new attempt; one whose
        cancel was asked for ends cancelled instead. Returns the job as it is now; None when
        the attempt is no longer the job's running one (nothing changed)."""
        now = time.time()
        with self._conn() as c:
            cur = c.execute(
                "UPDATE jobs SET state=?, attempt=attempt+1, finished_at=?, updated_at=?, "
                "message=?, best_cost=NULL, worker_pid=NULL, "
                "expires_at=CASE WHEN ? IS NULL THEN NULL ELSE ? + ? END "
                "WHERE id=? AND attempt=? AND state=? AND cancel_requested=1",
                (CANCELLED, now, now, "cancelled; its worker was stopped before it could hand "
                 "over its best solution, so none was kept", ttl_s, now, ttl_s, job_id, attempt,
                 RUNNING))
            if cur.rowcount == 0:
                cur = c.execute(
                    "UPDATE jobs SET state=?, attempt=attempt+1, updated_at=?, best_cost=NULL, "
                    "elapsed=0, iterations=0, message=?, worker_pid=NULL, started_at=NULL "
                    "WHERE id=? AND attempt=? AND state=?",
                    (QUEUED, now, message, job_id, attempt, RUNNING))
                if cur.rowcount == 0:
                    return None
        return self.get(job_id)

    def report_progress(self, job_id: str, attempt: int, elapsed: float, iterations: int,
                        best_cost: float | None, message: str) -> None:
        with self._conn() as c:
            c.execute(
                "UPDATE jobs SET elapsed=?, iterations=?, best_cost=COALESCE(?, best_cost), "
                "message=?, updated_at=? WHERE id=? AND attempt=? AND state=?",
                (elapsed, iterations, best_cost, message, time.time(), job_id, attempt, RUNNING),
            )

    def cancel_requested(self, job_id: str) -> bool:
        row = self._connection().execute(
            "SELECT cancel_requested FROM jobs WHERE id=?", (job_id,)).fetchone()
        return bool(row and row[0])

    def finish(self, job_id: str, attempt: int, *, state: str, cost: float | None = None,
               feasible: bool | None = None, partial: bool = False, error: str | None = None,
               message: str = "", ttl_s: float | None = None) -> bool:
        now = time.time()
        with self._conn() as c:
            cur = c.execute(
                "UPDATE jobs SET state=?, finished_at=?, updated_at=?, cost=?, feasible=?, "
                "partial=?, error=?, message=?, best_cost=COALESCE(?, best_cost), "
                "expires_at=CASE WHEN ? IS NULL THEN NULL ELSE ? + ? END, "
                # a failure's progress says how long it ran, not 0.0
                "elapsed=CASE WHEN ?=? AND started_at IS NOT NULL "
                "THEN MAX(COALESCE(elapsed, 0), ? - started_at) ELSE elapsed END "
                "WHERE id=? AND attempt=? AND state IN (?, ?)",
                (state, now, now, cost, None if feasible is None else int(feasible),
                 int(partial), error, message, cost, ttl_s, now, ttl_s, state, FAILED, now,
                 job_id, attempt, *ACTIVE_STATES),
            )
            return cur.rowcount == 1


def _replace_json(path: Path, doc: Any) -> None:
    """``doc`` as ``path``'s JSON, written beside it and renamed over it, so a reader never
    sees half a file; a job folder purged meanwhile (FileNotFoundError) is left alone."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, path)
    except FileNotFoundError:
        return
