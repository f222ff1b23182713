"""Running CPU-bound work off the event loop, cancelled when its client goes away."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

from fastapi import Request
from starlette.concurrency import run_in_threadpool

T = TypeVar("T")

#: How often a running solve checks whether its client went away, in seconds.
DISCONNECT_POLL_S = 0.25


async def _watch_disconnect(request: Request, cancel: threading.Event) -> None:
    while not cancel.is_set():
        if await request.is_disconnected():
            cancel.set()
            return
        await asyncio.sleep(DISCONNECT_POLL_S)


async def run_while_connected(request: Request, work: Callable[[threading.Event], T]) -> T:
    """Run ``work`` in a worker thread; set its cancel flag if the client disconnects, so a
    solver nobody waits for stops at its next check instead of running out its budget."""
    cancel = threading.Event()
    watcher = asyncio.create_task(_watch_disconnect(request, cancel))
    try:
        return await run_in_threadpool(work, cancel)
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
