"""Exact min-cost-flow calls that cannot be interrupted, held to a deadline anyway.

OR-Tools' SimpleMinCostFlow and networkx's network simplex run to the end once started. Their
running time is estimated from the network's size, but the estimates come from NETGEN-style
networks with positive costs, and negative costs on long paths took them 10-150 times longer
(a 100,000-arc chain at 1 s answered after 8.2 s; networkx at its minimum of 1.8 s
ran 17.6 s; oft_sinkhorn's repair, the same OR-Tools call, 8 s for an estimated 0.6 s).

So the call runs in a child process forked from the caller, and the caller stops waiting at
its deadline (or a cancel), kills the child and raises ``DeadlinePassedError``. A fork, not a
spawn or a forkserver: those re-import the caller's main module in every child (a second of
torch for the CLI) and need its ``if __name__ == "__main__"`` guard. The child only runs the
C++ or pure-Python solve on arrays it already holds and sends the flows back; the modules it
needs are imported before the fork, so no import lock another thread holds can stop it (and a
child stopped by anything else is still killed at the deadline). Small networks, which finish
in milliseconds whatever their costs, are solved in the calling process.

The rules of when a call runs in place (``in_place``) and when it is stopped (``stop_at``:
just past the time limit) are here too, so every caller (the exact baselines, oft_sinkhorn's
repair) holds its uninterruptible step to the same clock.
"""

from __future__ import annotations

import importlib
import multiprocessing
import threading
import time
from collections.abc import Callable
from typing import Any

#: Work (arcs for OR-Tools, nodes × arcs for networkx) below which the call runs in place.
INLINE_ARCS = 2_000
INLINE_NODE_ARCS = 200_000
#: The worst the size estimates were seen to be off (networks with negative costs:
#: 10-150×). A call whose estimate times this still fits in the time left runs in
#: place too: a child costs about 10 ms, five times OR-Tools' own time on a 16,000-arc
#: NETGEN network, and a generous time limit needs no guard.
PESSIMISM = 150.0


def in_place(estimate_s: float, time_left_s: float, small: bool) -> bool:
    """Whether a call estimated at ``estimate_s`` runs in the calling process: when it is
    small, or when even ``PESSIMISM`` times the estimate fits in ``time_left_s``."""
    return small or PESSIMISM * estimate_s < time_left_s


#: The earliest an exact solve is stopped, whatever its time limit: below 0.5 s the estimates
#: ask for nothing, and a network they expect to finish in milliseconds is not refused or
#: stopped for a time limit of 0.01 s (it then runs a little past it).
FLOOR_S = 0.5
#: Past the time limit, what a bounded solve may still take before it is stopped: 10 % (the
#: overshoot every routing solver keeps to) and 0.3 s for the child's start on a loaded
#: machine. A solve that would end just past the limit is not thrown away (CI: oft_sinkhorn's
#: repair at 0.5 s, started after 0.4 s of iterations, was stopped at 0.5 s).
OVERSHOOT = 0.1
GRACE_S = 0.3


def stop_at(started: float, time_limit: float) -> float:
    """When a bounded exact solve started at ``started`` is stopped (``perf_counter``)."""
    return started + max(time_limit, FLOOR_S) * (1 + OVERSHOOT) + GRACE_S


#: Modules imported before the first fork, so a child never imports anything.
PRELOAD = ("ortools.graph.python.min_cost_flow", "networkx")

_LOCK = threading.Lock()
_CONTEXT: Any = None


class DeadlinePassedError(Exception):
    """The call was still running at its deadline (or was cancelled) and has been stopped."""

    def __init__(self, elapsed: float, cancelled: bool) -> None:
        super().__init__(f"stopped after {elapsed:.2f} s")
        self.elapsed = elapsed
        self.cancelled = cancelled


def _context() -> Any:
    """The fork context, with PRELOAD imported first (once per process)."""
    global _CONTEXT
    with _LOCK:
        if _CONTEXT is None:
            for name in PRELOAD:
                importlib.import_module(name)
            _CONTEXT = multiprocessing.get_context("fork")
        return _CONTEXT


def can_fork() -> bool:
    """False in a daemonic process (a pool worker of some other program), which may not have
    children: there the call runs in place and only the size estimates guard the time."""
    return not multiprocessing.current_process().daemon


def warm_up() -> None:
    """Import what a child needs and fork one now, not inside a request's time limit."""
    if can_fork():
        run_bounded(_echo, (1,), deadline=time.perf_counter() + 60.0, inline=False)


def _echo(value: int) -> int:
    return value


def _child(conn: Any, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    try:
        conn.send((True, fn(*args)))
    except BaseException as exc:  # handed to the parent, which raises it there
        conn.send((False, exc))
    finally:
        conn.close()


def run_bounded(fn: Callable[..., Any], args: tuple[Any, ...], deadline: float,
                cancelled: Callable[[], bool] | None = None, inline: bool = False) -> Any:
    """``fn(*args)`` (a module-level function, its arguments picklable), stopped at
    ``deadline`` (``time.perf_counter()``) or when ``cancelled()`` says so: then
    ``DeadlinePassedError``. ``inline`` (or a daemonic process) runs it in place, unbounded."""
    if inline or not can_fork():
        return fn(*args)
    started = time.perf_counter()
    ctx = _context()
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(send, fn, args), daemon=True)
    child.start()
    send.close()
    try:
        while True:
            now = time.perf_counter()
            stop = cancelled is not None and cancelled()
            if stop or now >= deadline:
                raise DeadlinePassedError(now - started, stop)
            if receive.poll(min(0.02, deadline - now)):
                try:
                    ok, value = receive.recv()
                except EOFError:  # the child died without answering (killed, out of memory)
                    raise RuntimeError("the min-cost-flow child process died without an "
                                       f"answer (exit code {child.exitcode})") from None
                if not ok:
                    raise value
                return value
    finally:
        if child.is_alive():
            child.kill()
        child.join(timeout=5)
        receive.close()
