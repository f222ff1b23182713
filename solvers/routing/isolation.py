"""Warm child processes for solvers that hold the interpreter lock for their whole search.

OR-Tools' routing binding never releases the lock while it searches; it lets go only for the
few bytecodes of our Python callbacks. In the server, where every in-request solve is a
thread of one process, one OR-Tools solve therefore slowed every other thread: two of them
beside three 0.5 s ``reld`` solves made those end after 1.8 s, six after 4.5 s, and the
event loop answered probes as late. The server starts a few children (``start``), and
``solvers.routing.solve`` hands such a solver's instance to an idle one (``run``) while the
request's thread only waits on a pipe: the lock is free for everyone else. The progress
events come back over the pipe and the cancel goes out through shared memory, so a caller
sees the same solver, progress and cancel as in-process. Without ``start`` (the CLI, job
workers, tests) nothing changes.
"""

from __future__ import annotations

import importlib
import logging
import multiprocessing
import multiprocessing.connection
import queue
import threading
from collections.abc import Sequence
from typing import Any

from solvers.contract import Budget, ProgressCallback, no_progress
from solvers.errors import CosolveError
from solvers.routing.problem import Instance
from solvers.routing.solution import Solution

logger = logging.getLogger("cosolve.isolation")

#: How often a waiting request thread passes on its caller's cancel, in seconds.
POLL_S = 0.02
#: Seconds a child has to start and warm its solvers.
START_TIMEOUT_S = 120.0


class ChildDiedError(CosolveError):
    """A child process ended in the middle of a solve (killed, or out of memory)."""

    status = 500
    kind = "solver-process-died"
    title = "Solver process died"


class _Flag:
    """The child's side of a cancel: ``Budget.cancel`` reads it like a threading.Event."""

    def __init__(self, flags: Any, slot: int) -> None:
        self.flags, self.slot = flags, slot

    def is_set(self) -> bool:
        return bool(self.flags[self.slot])


def _error_state(exc: BaseException) -> tuple[str, str, tuple[Any, ...], dict[str, Any]]:
    """An exception as plain data: our errors' constructors take other arguments than
    their ``args``, so pickle could not rebuild them."""
    cls = type(exc)
    return cls.__module__, cls.__qualname__, exc.args, dict(vars(exc))


def _rebuilt_error(module: str, name: str, args: tuple[Any, ...],
                   state: dict[str, Any]) -> BaseException:
    try:
        cls = getattr(importlib.import_module(module), name)
        if not (isinstance(cls, type) and issubclass(cls, Exception)):
            raise TypeError(name)
        exc = cls.__new__(cls)
        exc.args = args
        exc.__dict__.update(state)
        return exc
    except Exception:  # a class that cannot be rebuilt: its words survive
        return RuntimeError(f"{name}: {args[0] if args else ''}")


def _child(conn: multiprocessing.connection.Connection, flags: Any, slot: int,
           classes: Sequence[tuple[str, str, str]]) -> None:
    """A child's life: build and warm the solvers of ``classes`` (name, module, class), then
    solve what the parent sends until it closes. The classes come by name, not through the
    catalogue, which imports the solvers that import this module."""
    solvers = {}
    for name, module, qualname in classes:
        solver = getattr(importlib.import_module(module), qualname)()
        warm = getattr(solver, "warm_up", None)
        if warm is not None:
            warm()
        solvers[name] = solver
    conn.send(("ready", None))
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):  # the parent went away
            return
        name, instance, budget_fields = task
        budget = Budget(**budget_fields, cancel=_Flag(flags, slot))

        def progress(event: Any) -> None:
            conn.send(("progress", event))

        try:
            conn.send(("done", solvers[name].solve(instance, budget, progress)))
        except Exception as exc:  # every failure goes back to the caller
            conn.send(("error", _error_state(exc)))


class _Worker:
    def __init__(self, ctx: Any, flags: Any, slot: int,
                 classes: Sequence[tuple[str, str, str]]) -> None:
        self.slot = slot
        self.conn, child_conn = ctx.Pipe()
        self.process = ctx.Process(target=_child, args=(child_conn, flags, slot,
                                                        tuple(classes)),
                                   name=f"cosolve-solver-{slot}", daemon=True)
        self.process.start()
        child_conn.close()

    def wait_ready(self, timeout: float) -> None:
        try:
            if self.conn.poll(timeout) and self.conn.recv()[0] == "ready":
                return
        except (EOFError, OSError):
            pass
        self.stop()
        raise RuntimeError(f"solver process {self.slot} did not start within {timeout:g} s "
                           f"(exit code {self.process.exitcode})")

    def stop(self) -> None:
        self.conn.close()
        self.process.join(timeout=2)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=2)


class ChildPool:
    """``size`` spawned children, each with its own warm copy of ``solvers``; a solve takes
    an idle one or runs on its caller's thread. As many children as CPUs: more solves at
    once than that only share the cores."""

    def __init__(self, size: int, solvers: Sequence[Any]) -> None:
        self.ctx = multiprocessing.get_context("spawn")  # the server has threads: no fork
        self.flags = self.ctx.RawArray("b", size)
        self.classes = tuple((s.name, type(s).__module__, type(s).__qualname__)
                             for s in solvers)
        self.solvers = frozenset(s.name for s in solvers)
        self.idle: queue.Queue[_Worker] = queue.Queue()
        self.workers: list[_Worker] = []
        try:
            for slot in range(size):
                self.workers.append(_Worker(self.ctx, self.flags, slot, self.classes))
            for worker in self.workers:
                worker.wait_ready(START_TIMEOUT_S)
                self.idle.put(worker)
        except BaseException:
            # a server stopped mid-start unwinds the warm-up thread here (``WarmUp.cancel``):
            # the children started so far go with it rather than wait for the exit
            self.close()
            raise
        self.lock = threading.Lock()

    def run(self, name: str, instance: Instance, budget: Budget,
            progress: ProgressCallback = no_progress) -> Solution | None:
        """``name``'s solve of ``instance`` in an idle child, as if here: same progress, same
        cancel. None when every child is busy: the caller solves on its own thread, as
        before the children, rather than wait (one client's long solves holding every child
        would make another client's short one wait for them, which ``app.quotas``' fair
        turns exist to prevent)."""
        try:
            worker = self.idle.get_nowait()
        except queue.Empty:
            return None
        try:
            fields = {"time_limit": budget.time_limit, "seed": budget.seed,
                      "device": budget.device, "max_solutions": budget.max_solutions}
            self.flags[worker.slot] = 0  # here, not in the child: a cancel may come first
            worker.conn.send((name, instance, fields))
            kind, payload = self._follow(worker, budget, progress)
        except BaseException:
            self._replace(worker)  # a child left mid-solve is not trusted with another
            raise
        self.idle.put(worker)
        if kind == "error":  # the solver's own refusal: the child is as good as before
            raise _rebuilt_error(*payload)
        return payload

    def _follow(self, worker: _Worker, budget: Budget,
                progress: ProgressCallback) -> tuple[str, Any]:
        """Pass progress on and the cancel out until the child answers ("done" with the
        solution or "error" with the solver's exception)."""
        while True:
            if budget.cancelled():
                self.flags[worker.slot] = 1
            if worker.conn.poll(POLL_S):
                try:
                    kind, payload = worker.conn.recv()
                except (EOFError, OSError) as exc:
                    raise self._died(worker) from exc
                if kind != "progress":
                    return kind, payload
                progress(payload)
            elif not worker.process.is_alive():
                raise self._died(worker)

    def _died(self, worker: _Worker) -> ChildDiedError:
        worker.process.join(timeout=2)  # its pipe closes a moment before it is reaped
        code = worker.process.exitcode
        logger.error("cosolve: solver process %d died (exit code %s)", worker.slot, code)
        return ChildDiedError(f"the solver's process ended in the middle of the solve (exit "
                              f"code {code}); the server started another, send it again")

    def _replace(self, worker: _Worker) -> None:
        worker.stop()
        fresh = _Worker(self.ctx, self.flags, worker.slot, self.classes)
        with self.lock:
            self.workers[self.workers.index(worker)] = fresh

        def ready() -> None:
            try:
                fresh.wait_ready(START_TIMEOUT_S)
            except RuntimeError:
                logger.exception("cosolve: a replacement solver process did not start")
                return
            self.idle.put(fresh)

        threading.Thread(target=ready, daemon=True).start()

    def close(self) -> None:
        for worker in self.workers:
            worker.stop()


_POOL: ChildPool | None = None


def start(size: int, solvers: Sequence[Any]) -> None:
    """Start ``size`` children, each with its own copy of ``solvers`` (solver objects whose
    class builds without arguments), at the server's start-up; a second call is a no-op.
    Those solvers' solves go there from now on."""
    global _POOL
    if _POOL is None and size > 0:
        _POOL = ChildPool(size, solvers)


def stop() -> None:
    global _POOL
    pool, _POOL = _POOL, None
    if pool is not None:
        pool.close()


def pool_for(name: str) -> ChildPool | None:
    """The pool that runs ``name``'s solves, None where it runs in the calling thread (no
    pool started, or inside a child itself)."""
    pool = _POOL
    return pool if pool is not None and name in pool.solvers else None
