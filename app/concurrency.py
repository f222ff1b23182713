"""Running CPU-bound work off the event loop, cancelled when its client goes away or the
server stops."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from fastapi import Request

from app.errors import ApiError
from app.quotas import solve_turn

T = TypeVar("T")

#: How often a running solve checks whether its client went away, in seconds.
DISCONNECT_POLL_S = 0.25
#: Threads for work that solves inside a request (solve, compare, simulate, flow, session
#: events), apart from anyio's default 40 that the probes (/healthz, /readyz), the job
#: endpoints and request parsing use: 40 long solves would make /healthz wait for one to
#: end. Solves past this many wait for a thread.
SOLVE_THREADS = 40


def solve_limiter(request: Request) -> anyio.CapacityLimiter | None:
    """The server's limiter for solving work (made at start-up; None outside a server)."""
    return getattr(request.app.state, "solve_limiter", None)


async def run_solving(request: Request, func: Callable[..., T], *args: Any) -> T:
    """``func(*args)`` on a solving thread (see ``SOLVE_THREADS``), in the principal's fair
    turn and within its quotas (``app.quotas``)."""
    async with solve_turn(request):
        return await anyio.to_thread.run_sync(functools.partial(func, *args),
                                              limiter=solve_limiter(request))


async def _watch(request: Request, cancel: threading.Event) -> None:
    """Set ``cancel`` when the client disconnects or the server starts stopping."""
    stopping = getattr(request.app.state, "stopping", None)
    while not cancel.is_set():
        if (stopping is not None and stopping.is_set()) or await request.is_disconnected():
            cancel.set()
            return
        await asyncio.sleep(DISCONNECT_POLL_S)


async def run_while_connected(request: Request, work: Callable[[threading.Event], T]) -> T:
    """Run ``work`` in a worker thread; set its cancel flag if the client disconnects or the
    server stops, so a solver nobody waits for stops at its next check instead of running out
    its budget. A solve cut short by a stop answers 503 (otherwise the client gets a bare 500
    after the 5 s grace and the process solved on, for nobody, to the end of the time limit:
    up to 300 s)."""
    cancel = threading.Event()
    watcher = asyncio.create_task(_watch(request, cancel))
    try:
        result = await run_solving(request, work, cancel)
    finally:
        cancel.set()  # also when this task is cancelled: the thread must not solve on
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    stopping = getattr(request.app.state, "stopping", None)
    if stopping is not None and stopping.is_set():
        raise ApiError(503, "the server is stopping, so this request was stopped before its "
                       "time limit; send it again once the server is back",
                       kind="server-stopping", title="Server stopping",
                       headers={"Retry-After": "10"})
    return result
