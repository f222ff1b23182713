"""app.concurrency: a solve stops when its client leaves or the server stops."""

from __future__ import annotations

import asyncio
import threading
import time
from types import SimpleNamespace

import pytest

from app.concurrency import run_while_connected
from app.errors import ApiError


class _Request:
    def __init__(self) -> None:
        self.app = SimpleNamespace(state=SimpleNamespace(stopping=threading.Event()))

    async def is_disconnected(self) -> bool:
        return False


def test_a_stop_cancels_the_solve_and_answers_503() -> None:
    """Regression: a SIGINT during a 20 s solve gave the client a bare 500 after the 5 s grace
    and the process solved on, for nobody, for 20 s. The stop now sets the solve's cancel
    flag at once, and the answer is a 503 to send again."""
    request = _Request()

    def work(cancel: threading.Event) -> str:
        cancel.wait(20.0)  # a solver that runs until its cancel flag
        return "partial plan"

    async def main() -> float:
        started = time.perf_counter()
        asyncio.get_running_loop().call_later(0.3, request.app.state.stopping.set)
        with pytest.raises(ApiError) as info:
            await run_while_connected(request, work)  # type: ignore[arg-type]
        assert info.value.status == 503 and info.value.headers["Retry-After"]
        return time.perf_counter() - started

    assert asyncio.run(main()) < 2.0


def test_a_cancelled_request_task_leaves_no_solver_running() -> None:
    """When the request's task itself is cancelled (the server's grace ran out), the worker
    thread's cancel flag is set, so it does not solve on to its time limit."""
    request = _Request()
    flags: list[threading.Event] = []

    def work(cancel: threading.Event) -> None:
        flags.append(cancel)
        cancel.wait(20.0)

    async def main() -> None:
        task = asyncio.create_task(run_while_connected(request, work))  # type: ignore[arg-type]
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert flags and flags[0].is_set()


def test_solves_run_on_threads_of_their_own_not_the_probes() -> None:
    """Regression: solves, /healthz and /readyz shared anyio's 40 default threads, so 40 long
    solves made a liveness probe wait for one to end. Solving work now borrows from the
    server's own limiter and leaves the default one (the probes') untouched."""
    import anyio
    import anyio.to_thread

    from app.concurrency import run_solving

    seen: list[int] = []

    async def main() -> None:
        request = _Request()
        request.app.state.solve_limiter = anyio.CapacityLimiter(2)
        default = anyio.to_thread.current_default_thread_limiter()

        def work() -> None:
            time.sleep(0.2)
            seen.append(int(default.borrowed_tokens))

        async with anyio.create_task_group() as tg:
            for _ in range(2):
                tg.start_soon(run_solving, request, work)
        assert request.app.state.solve_limiter.borrowed_tokens == 0

    anyio.run(main)
    assert seen == [0, 0]
