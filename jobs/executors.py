"""Executors run jobs away from the event loop: a local process pool (the default) or Ray.

One interface, ``Executor.submit(job)``: the job is already in the store, and the executor
makes sure its outcome ends up there. The local pool's workers write to the store directly
(same machine). Ray workers may run on other machines, so each Ray job gets a small actor
through which the worker reports progress and learns of a cancel, and a pump thread on the
server copies between that actor and the store.
"""

from __future__ import annotations

import errno
import importlib.util
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import sqlite3
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol

from jobs import room
from jobs.room import NO_ROOM
from jobs.settings import ray_host_port
from jobs.store import CANCELLED, FAILED, QUEUED, RUNNING, JobRecord, JobStore, StoredSolutionError
from jobs.worker import JobSpec, execute, record_outcome, run_stored_job

logger = logging.getLogger("cosolve.jobs")


class Executor(Protocol):
    """Runs stored jobs; their outcomes land in the store."""

    name: str

    def submit(self, job: JobRecord) -> None: ...

    def shutdown(self) -> None: ...


#: A job that never started goes to a new pool at most this often when pools keep breaking
#: (workers that cannot even start would otherwise be re-spawned for it forever).
MAX_RESUBMITS = 3


class LocalProcessExecutor:
    """A pool of worker processes on this machine (spawned, so no state leaks from the
    server into a worker, and a crashing solver cannot take the server down)."""

    name = "local"

    def __init__(self, store: JobStore, workers: int, ttl_s: float,
                 device: str = "cpu") -> None:
        self.store = store
        self.workers = workers
        self.ttl_s = ttl_s
        self.device = device
        self._lock = threading.Lock()
        self._closing = False  # set by shutdown: its own terminations are no worker deaths
        self._resubmitted: dict[str, int] = {}  # job id -> times re-submitted after a break
        self._waiting_room: set[str] = set()  # queued jobs waiting for disk space
        self._pool = self._new_pool()

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=self.workers,
                                   mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_init_worker, initargs=(os.getpid(),))

    def submit(self, job: JobRecord) -> None:
        with self._lock:
            try:
                future = self._pool.submit(run_stored_job, str(self.store.root), job.id,
                                           job.attempt, self.ttl_s, self.device)
            except BrokenProcessPool:
                self._pool = self._new_pool()
                future = self._pool.submit(run_stored_job, str(self.store.root), job.id,
                                           job.attempt, self.ttl_s, self.device)
            pool = self._pool
        future.add_done_callback(lambda f: self._done(job, f, pool))

    def _done(self, job: JobRecord, future: Future[str],
              pool: ProcessPoolExecutor | None = None) -> None:
        if future.cancelled():  # shut down before it started: re-queued on the next start
            return
        exc = future.exception()
        if exc is None:
            if future.result() == NO_ROOM:
                self._start_later(job)
            else:
                self._waiting_room.discard(job.id)
            return
        if self._closing:
            # shutdown terminated it: the job stays running in the store, so the next
            # server re-queues it (marking it failed here would lose what the user submitted)
            logger.info("job %s: interrupted by the shutdown, re-queued on the next start",
                        job.id)
            return
        if isinstance(exc, BrokenProcessPool):
            with self._lock:
                if pool is None or self._pool is pool:  # once per broken pool
                    self._pool = self._new_pool()
            current = self.store.get(job.id)
            retries = self._resubmitted.get(job.id, 0)
            if (current is not None and current.attempt == job.attempt
                    and retries < MAX_RESUBMITS):
                if current.state == QUEUED:
                    self._resubmitted[job.id] = retries + 1
                    # A broken pool fails every future it holds, also those of jobs that never
                    # started: they go to the new pool (they had all been marked failed)
                    logger.warning("job %s: its worker pool broke before it started; "
                                   "re-submitted", job.id)
                    self.submit(current)
                    return
                if current.state == RUNNING and _worker_alive(pool, current.worker_pid):
                    # Another job's worker died; the pool then stops every worker, this
                    # healthy one too (all running jobs would end failed). It solves
                    # again, from the start, under a new attempt.
                    again = self.store.requeue_running(
                        job.id, job.attempt, "re-queued: another job's worker died and the "
                        "pool stopped this one too", ttl_s=self.ttl_s)
                    if again is not None and again.state == QUEUED:
                        self._resubmitted[job.id] = retries + 1
                        logger.warning("job %s: stopped by another worker's death; re-queued",
                                       job.id)
                        self.submit(again)
                    return
        # The worker died (killed, out of memory) before it could record an outcome, or it
        # could not record it (a full disk: the database or the solution file refused it).
        logger.error("job %s: worker failed: %r", job.id, exc)
        if isinstance(exc, sqlite3.Error) or (isinstance(exc, OSError) and exc.errno in (
                errno.ENOSPC, errno.EDQUOT, errno.EROFS)):
            error = (f"the job's outcome could not be stored ({type(exc).__name__}: {exc}); "
                     "is the data directory's disk full?")
        else:
            error = f"the worker process died ({type(exc).__name__}: {exc})"
        self._record_failure(job, error, tries=FAILURE_RECORD_TRIES)

    def _start_later(self, job: JobRecord) -> None:
        """A job its worker could not start for lack of room stays queued and is submitted
        again every few seconds, until the disk takes it or it is cancelled."""
        if job.id not in self._waiting_room:
            self._waiting_room.add(job.id)
            logger.warning("job %s: the data directory is full; it stays queued and starts "
                           "when there is room", job.id)

        def again() -> None:
            current = self.store.get(job.id)
            if self._closing or current is None or current.state != QUEUED or (
                    current.attempt != job.attempt):
                self._waiting_room.discard(job.id)
                return
            self.submit(current)

        timer = threading.Timer(room.RETRY_S, again)
        timer.daemon = True
        timer.start()

    def _record_failure(self, job: JobRecord, error: str, tries: int) -> None:
        """Mark the job failed; while the store cannot take it (the disk that stopped the
        worker is still full), try again every few seconds rather than leave the job running
        for ever, uncancellable until a restart."""
        try:
            if self.store.cancel_requested(job.id):
                self._record_cancel(job)
            else:
                self.store.finish(job.id, job.attempt, state=FAILED, error=error,
                                  message="failed", ttl_s=self.ttl_s)
        except sqlite3.Error as exc:
            if tries <= 1 or self._closing:
                logger.error("job %s: could not record its failure (%r); the next server "
                             "re-queues it", job.id, exc)
                return
            timer = threading.Timer(FAILURE_RECORD_RETRY_S, self._record_failure,
                                    (job, error, tries - 1))
            timer.daemon = True
            timer.start()

    def _record_cancel(self, job: JobRecord) -> None:
        """A job whose cancel was asked for and whose worker then died (it did not stop in
        time and was killed) ends cancelled, as asked, not failed; a solution its worker had
        already stored for this attempt is kept."""
        try:
            payload = self.store.read_solution(job.id, job.attempt)
        except StoredSolutionError:
            payload = None
        if payload is not None and payload.get("cost") is not None:
            self.store.finish(job.id, job.attempt, state=CANCELLED, cost=payload["cost"],
                              feasible=payload.get("feasible"), partial=True,
                              message="cancelled; the best solution found so far is kept",
                              ttl_s=self.ttl_s)
            return
        self.store.finish(job.id, job.attempt, state=CANCELLED, ttl_s=self.ttl_s,
                          message="cancelled; its worker died before it could hand over its "
                          "best solution, so none was kept")

    def shutdown(self) -> None:
        """Stop now: running jobs are not waited for (they are re-queued on the next start),
        so their workers are terminated rather than left solving for nobody."""
        self._closing = True
        processes = list((self._pool._processes or {}).values())  # no public accessor
        self._pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            if process.is_alive():
                process.terminate()
        # let the pool's manager thread see its workers gone and close its pipes before the
        # interpreter's exit hook writes to them ("Exception ignored in _python_exit ... Bad
        # file descriptor" after a stop otherwise); bounded, never a hang
        manager = getattr(self._pool, "_executor_manager_thread", None)  # no public accessor
        if manager is not None:
            manager.join(timeout=5.0)


#: How often, and how many times, a job's failure is written again while the store refuses
#: writes (a full disk): an hour in all.
FAILURE_RECORD_RETRY_S = 5.0
FAILURE_RECORD_TRIES = 720


def _worker_alive(pool: ProcessPoolExecutor | None, pid: int | None) -> bool:
    """Whether the broken ``pool``'s worker ``pid`` is still alive. A pool that breaks
    fails its futures (running our callbacks) before it terminates the surviving workers,
    so at that moment only the worker that died is dead."""
    if pool is None or pid is None:
        return False
    process = (getattr(pool, "_processes", None) or {}).get(pid)  # no public accessor
    if process is None or process.exitcode is not None:
        return False
    # exitcode can still read None for a killed worker: its pipes close (which is how the
    # pool noticed) a moment before the kernel lets it be reaped. Its sentinel is certain:
    # readable once the process has let go of it, that is, when it is dying or dead.
    return not multiprocessing.connection.wait([process.sentinel], timeout=0)


def _init_worker(parent_pid: int) -> None:
    """Workers leave Ctrl-C to their parent (which cancels jobs through the store), and exit
    when the parent dies, even by SIGKILL: an orphan would otherwise idle (or solve a job that
    the next server re-queues) forever."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch_parent() -> None:
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch_parent, name="parent-watch", daemon=True).start()


class _Channel:
    """Ray actor between one Ray worker and the server: latest progress, the latest published
    files (the plan for ``/incumbent``, the cost series for ``/progress``), the cancel flag."""

    def __init__(self) -> None:
        self.latest: tuple[float, int, float | None, str] | None = None
        self.files: dict[str, tuple[int, Any]] = {}  # kind -> (version, payload)
        self.cancel = False

    def report(self, elapsed: float, iterations: int, best: float | None, message: str) -> None:
        self.latest = (elapsed, iterations, best, message)

    def publish(self, kind: str, payload: Any) -> None:
        version = self.files.get(kind, (0, None))[0] + 1
        self.files[kind] = (version, payload)

    def poll(self, seen: dict[str, int]) -> tuple[tuple[float, int, float | None, str] | None,
                                                  dict[str, tuple[int, Any]]]:
        """The latest progress, and the files newer than the versions in ``seen`` (a plan of
        100,000 nodes is not sent four times a second for nothing)."""
        fresh = {kind: entry for kind, entry in self.files.items()
                 if entry[0] != seen.get(kind)}
        return self.latest, fresh

    def request_cancel(self) -> None:
        self.cancel = True

    def cancelled(self) -> bool:
        return self.cancel


class _ChannelSink:
    """The worker side of a ``_Channel``; reading the flag is throttled by ``execute``."""

    def __init__(self, channel: Any) -> None:
        self.channel = channel

    def progress(self, event: Any) -> None:
        self.channel.report.remote(event.elapsed, event.iterations, event.best_cost,
                                   event.message)

    def incumbent(self, plan: dict[str, Any]) -> None:
        """The solver's latest plan (``execute`` throttles it to one a second)."""
        self.channel.publish.remote("incumbent", plan)

    def series(self, points: list[list[float]]) -> None:
        """The cost series so far (throttled by ``execute`` too)."""
        self.channel.publish.remote("series", points)

    def cancelled(self) -> bool:
        import ray

        return bool(ray.get(self.channel.cancelled.remote()))


def _ray_job(spec: JobSpec, data: bytes, channel: Any) -> Any:
    """Body of the Ray task (wrapped with ray.remote when the executor starts)."""
    return execute(spec, data, _ChannelSink(channel))


#: How long the start waits for a Ray address to accept a connection.
RAY_PROBE_S = 5.0


def ray_problem(address: str | None, probe_s: float = RAY_PROBE_S) -> str | None:
    """Why jobs could not run on Ray with ``address`` (None when they can start): Ray or its
    client missing, or nothing listening there (Ray's own connect to an address with no
    cluster hangs the start for minutes, after the warm-up)."""
    if importlib.util.find_spec("ray") is None:
        return "COSOLVE_EXECUTOR=ray needs Ray: pip install 'cosolve[ray]'"
    if address is None:
        return None  # a local Ray instance is started
    if address.strip().startswith("ray://") and importlib.util.find_spec("grpc") is None:
        return (f"COSOLVE_RAY_ADDRESS={address}: a ray:// address needs Ray Client: "
                "pip install 'cosolve[ray]'")
    target = ray_host_port(address)
    if target is None:
        return None  # auto: Ray looks for a cluster started on this machine
    try:
        with socket.create_connection(target, timeout=probe_s):
            pass
    except OSError as exc:
        return (f"COSOLVE_RAY_ADDRESS={address}: nothing answers at {target[0]}:{target[1]} "
                f"({exc.strerror or exc}); is the Ray head running?")
    return None


def _connect_ray(ray: Any, address: str | None) -> None:
    """``ray.init``, its refusal a RuntimeError naming the address (a ray:// address without
    Ray Client was a traceback). In the calling thread: Ray started from another thread
    never ran a task."""
    problem = ray_problem(address)
    if problem is not None:
        raise RuntimeError(problem)
    # ray.init replaces the process's SIGTERM handler with one raising SystemExit inside the
    # event loop (after a job, the server would ignore SIGTERM until killed 10 s later,
    # leaving Ray's agents behind); the server's own handlers are put back
    main = threading.current_thread() is threading.main_thread()
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)} if main else {}
    try:
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False,
                 include_dashboard=False, logging_level=logging.WARNING)
    except Exception as exc:
        where = f"COSOLVE_RAY_ADDRESS={address}" if address else "a local Ray instance"
        raise RuntimeError(f"{where}: {exc}") from exc
    finally:
        for signum, handler in saved.items():
            if handler is not None:
                signal.signal(signum, handler)


class RayExecutor:
    """Jobs as Ray tasks on a cluster (``address``) or a local Ray instance (``None``)."""

    name = "ray"

    def __init__(self, store: JobStore, address: str | None, ttl_s: float,
                 poll_s: float = 0.25, device: str = "cpu") -> None:
        import ray

        self.store = store
        self.ttl_s = ttl_s
        self.device = device
        self.poll_s = poll_s
        self._started_ray = not ray.is_initialized()
        if self._started_ray:
            _connect_ray(ray, address)
        self._ray = ray
        self._inflight: dict[str, Any] = {}
        self._task = ray.remote(num_cpus=1)(_ray_job)
        self._channel = ray.remote(num_cpus=0)(_Channel)
        self._stop = threading.Event()

    def submit(self, job: JobRecord) -> None:
        if not self.store.mark_running(job.id, job.attempt):
            return
        spec = JobSpec(job.id, job.problem, job.solver, job.time_limit, job.seed, job.filename,
                       self.device, job.max_solutions)
        data = self.store.input_path(job).read_bytes()
        channel = self._channel.remote()
        ref = self._task.remote(spec, data, channel)
        self._inflight[job.id] = ref
        threading.Thread(target=self._pump, args=(job, ref, channel), daemon=True,
                         name=f"ray-pump-{job.id}").start()

    def _pump(self, job: JobRecord, ref: Any, channel: Any) -> None:
        """Copy progress into the store and the store's cancel flag into the actor."""
        ray = self._ray
        cancel_sent = False
        seen: dict[str, int] = {}
        while not self._stop.is_set():
            ready, _ = ray.wait([ref], timeout=self.poll_s)
            latest, fresh = ray.get(channel.poll.remote(seen))
            if latest is not None:
                self.store.report_progress(job.id, job.attempt, *latest)
            if not ready:  # a finished job's outcome brings its own series and solution
                self._keep_files(job, fresh, seen)
            if ready:
                try:
                    outcome = ray.get(ref)
                except Exception as exc:
                    if self.store.cancel_requested(job.id):  # killed after a cancel: as asked
                        self.store.finish(job.id, job.attempt, state=CANCELLED,
                                          message="cancelled; its Ray task ended before it "
                                          "could hand over its best solution, so none was "
                                          "kept", ttl_s=self.ttl_s)
                    else:
                        self.store.finish(job.id, job.attempt, state=FAILED,
                                          error=f"Ray task failed: {exc}", ttl_s=self.ttl_s)
                else:
                    record_outcome(self.store, job.id, job.attempt, outcome, self.ttl_s)
                self._inflight.pop(job.id, None)
                ray.kill(channel)
                return
            if not cancel_sent and self.store.cancel_requested(job.id):
                channel.request_cancel.remote()
                cancel_sent = True

    def _keep_files(self, job: JobRecord, fresh: dict[str, tuple[int, Any]],
                    seen: dict[str, int]) -> None:
        """Store what the worker published since the last poll, as the local sink would."""
        writers = {"incumbent": self.store.write_incumbent, "series": self.store.write_progress}
        for kind, (version, payload) in fresh.items():
            seen[kind] = version
            write = writers.get(kind)
            if write is not None:
                room.skip_when_full(lambda w=write, p=payload: w(job.id, job.attempt, p),
                                    f"job {job.id}: {kind}")

    def shutdown(self) -> None:
        """Stop pumping and cancel in-flight tasks: their jobs are re-queued on the next
        start, so leaving them running would only solve them twice."""
        self._stop.set()
        for ref in list(self._inflight.values()):
            try:
                self._ray.cancel(ref, force=True)
            except Exception:
                logger.debug("could not cancel a Ray task", exc_info=True)
        self._inflight.clear()
        if self._started_ray:
            self._ray.shutdown()


def make_executor(kind: str, store: JobStore, *, workers: int, ttl_s: float,
                  ray_address: str | None = None, device: str = "cpu") -> Executor:
    """The executor named in settings: ``local`` or ``ray``; ``device`` is the torch device
    its jobs solve on."""
    if kind == "local":
        return LocalProcessExecutor(store, workers, ttl_s, device)
    if kind == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise RuntimeError(
                "COSOLVE_EXECUTOR=ray needs Ray: pip install 'cosolve[ray]'"
            ) from None
        return RayExecutor(store, ray_address, ttl_s, device=device)
    raise ValueError(f"unknown executor {kind!r}: use 'local' or 'ray'")
