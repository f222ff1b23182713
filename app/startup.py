"""The solvers' warm-up, in the background, and the gate that keeps solves out until it is done.

Warming (numba kernels compiled, neural weights loaded) takes about a minute on the first start
of a fresh install. Done before the port opened, a newcomer could not tell a server warming up
from one that had crashed; so the server listens at once and warms in a thread: ``/healthz``
answers, ``/readyz`` says what is still warming, and a request that solves inside the request
(solve, compare, simulate, session events) gets a 503 with ``Retry-After`` until the solvers
of its family are warm. Jobs and batches are accepted meanwhile: they run in worker processes,
which load their own solver (outside the job's clock) whatever the server has warmed.
"""

from __future__ import annotations

import ctypes
import json
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.errors import PROBLEM_JSON, problem_bytes
from solvers.catalog import get_solver
from solvers.contract import SolverSpec
from solvers.routing import isolation
from solvers.routing.auto import AUTO
from solvers.scheduling.registry import POLICIES, get_policy

logger = logging.getLogger("cosolve.api")

#: Seconds a client told "warming up" is asked to wait before it tries again.
RETRY_AFTER_S = 5

PENDING, WARMING, READY, FAILED = "pending", "warming", "ready", "failed"


class WarmUpCancelledError(BaseException):
    """Raised in the warm-up's thread to stop it (a BaseException: no item's ``except
    Exception`` keeps it)."""


@dataclass
class WarmItem:
    """One thing to warm: a solver of the catalogue or a scheduling policy's model."""

    name: str
    family: str  # routing, flow or scheduling: the requests that need it
    warm: Callable[[], None]
    state: str = PENDING
    began: float | None = None  # time.monotonic() when its warming began
    seconds: float | None = None  # how long it took, once warm (or failed)
    error: str | None = None


class WarmUp:
    """What has been warmed and what is left; read by the probes, the gate and /metrics."""

    def __init__(self, items: list[WarmItem]) -> None:
        self.items = items
        self.started = time.monotonic()
        self.finished: float | None = None
        self._lock = threading.Lock()
        self._done = threading.Event()
        self.thread: threading.Thread | None = None

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def elapsed(self) -> float:
        end = self.finished if self.finished is not None else time.monotonic()
        return end - self.started

    def left(self, family: str | None = None) -> list[WarmItem]:
        """Items not yet warm (pending or warming), of ``family`` when given."""
        with self._lock:
            return [i for i in self.items if i.state in (PENDING, WARMING)
                    and (family is None or i.family == family)]

    def failed(self) -> list[WarmItem]:
        with self._lock:
            return [i for i in self.items if i.state == FAILED]

    def waiting_for(self, names: list[str], family: str) -> list[WarmItem]:
        """The items among ``names`` not yet warm; a name "auto" (it may pick any of the
        family) waits for the family. Names the plan does not hold (unknown, unavailable)
        wait for nothing: the request's route refuses them."""
        if AUTO in names:
            return self.left(family)
        return [i for i in self.left(family) if i.name in names]

    def family_ready(self, family: str) -> bool:
        """Whether every item the family's requests need is warm (or failed: a solver whose
        warm-up failed answers its own error, it does not hold the others back)."""
        return self.done or not self.left(family)

    def describe_left(self, family: str | None = None) -> str:
        """``warming reld (3.1 s); still to warm: polynet, oft_sinkhorn``, for problems."""
        left = self.left(family)
        now = time.monotonic()
        warming = [f"{i.name} ({now - (i.began or now):.1f} s)" for i in left
                   if i.state == WARMING]
        pending = [i.name for i in left if i.state == PENDING]
        parts = [f"warming {', '.join(warming)}"] if warming else []
        if pending:
            parts.append(f"still to warm: {', '.join(pending)}")
        return "; ".join(parts) or "finishing"

    def run(self) -> None:
        """Warm every item in turn, logging each; a failure is logged and kept, the rest
        still warm."""
        try:
            for item in self.items:
                with self._lock:
                    item.state, item.began = WARMING, time.monotonic()
                began = time.perf_counter()
                try:
                    item.warm()
                except Exception as exc:
                    logger.exception("cosolve: warming %s failed", item.name)
                    with self._lock:
                        item.state, item.error = FAILED, f"{type(exc).__name__}: {exc}"
                        item.seconds = time.perf_counter() - began
                    continue
                with self._lock:
                    item.state, item.seconds = READY, time.perf_counter() - began
                if item.seconds >= 0.1:
                    logger.info("cosolve: %s warmed up in %.1f s", item.name, item.seconds)
        finally:
            self.finished = time.monotonic()
            self._done.set()
        failed = self.failed()
        logger.info("cosolve warmed up in %.1f s%s", self.elapsed(),
                    f"; failed: {', '.join(i.name for i in failed)}" if failed else "")

    def start(self, after: Callable[[], None] | None = None) -> None:
        """Run the warm-up (then ``after``) in a daemon thread: a server stopped while it
        warms does not wait for a kernel to finish compiling."""
        def body() -> None:
            try:
                self.run()
            except WarmUpCancelledError:
                logger.info("cosolve: warm-up stopped with the server")
                return
            if after is not None:
                try:
                    after()
                except Exception:
                    logger.exception("cosolve: after the warm-up")

        self.thread = threading.Thread(target=body, name="warm-up", daemon=True)
        self.thread.start()

    def cancel(self, join_s: float = 5.0) -> None:
        """Stop a warm-up still running, as the server stops: an exception raised in its
        thread (at its next Python step: numba's compiler is Python) unwinds it, and the
        child process that compiles kernels beside it (solvers.compiling) is stopped on the
        way out; left running, that child compiled on for minutes after the server had gone
        (a Ctrl-C reached it when the warm-up ran before the port opened)."""
        thread = self.thread
        if thread is None or not thread.is_alive() or thread.ident is None:
            return
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident),
                                                   ctypes.py_object(WarmUpCancelledError))
        thread.join(join_s)

    def snapshot(self) -> dict[str, Any]:
        """The state of each item, for /readyz and tests."""
        with self._lock:
            return {"done": self.done, "seconds": round(self.elapsed(), 3),
                    "items": [{"name": i.name, "family": i.family, "state": i.state,
                               "error": i.error} for i in self.items]}


#: Solvers whose in-request solves run in child processes (``solvers.routing.isolation``):
#: their search holds the interpreter lock throughout.
ISOLATED = ("ortools",)


def _solver_warmer(spec: SolverSpec, device: str, processes: int) -> Callable[[], None]:
    def warm() -> None:
        solver = get_solver(spec.name)  # builds it: its imports happen here
        warm_up = getattr(solver, "warm_up", None)
        if warm_up is not None:
            warm_up()
        on_device = getattr(solver, "warm_up_device", None)
        if device != "cpu" and on_device is not None:
            on_device(device)  # else the first GPU request pays for the copy
        if spec.name in ISOLATED:
            isolation.start(processes, [solver])
    return warm


def _goodrl_warmer() -> None:
    """The scheduling policy's model (torch and its checkpoint), else loaded by the first
    simulation or session that asks for goodrl."""
    if POLICIES["goodrl"].available:
        get_policy("goodrl")


def warm_up_plan(specs: list[SolverSpec], device: str, solver_processes: int = 0) -> WarmUp:
    """Every available solver and the scheduling policy model, the quick families first:
    flow and scheduling warm in seconds, routing's kernels compile for minutes on a fresh
    install, so flow and simulations are served that much sooner. ``ISOLATED`` solvers are
    warm once their ``solver_processes`` children are."""
    items = [WarmItem(spec.name, spec.family, _solver_warmer(spec, device, solver_processes))
             for spec in specs if spec.available]
    items.append(WarmItem("goodrl", "scheduling", _goodrl_warmer))
    return WarmUp(sorted(items, key=lambda item: item.family == "routing"))


#: Requests that solve inside the request: POST under a family's prefix, except the job
#: submissions (``/v1/scheduling/simulate/jobs``), which are queued at once.
_SOLVING = re.compile(r"^/v1/(routing|flow|scheduling)/(?!.*/jobs$)")


def solving_family(method: str, path: str) -> str | None:
    """The family whose solvers a request needs warm, or None for any other request."""
    if method != "POST":
        return None
    match = _SOLVING.match(path)
    return match.group(1) if match else None


#: JSON bodies up to this size are read by the gate for the solvers they name, so a request
#: for a solver that is already warm is served while others still warm (larger bodies and
#: uploads wait for their whole family: the gate does not hold big bodies).
PEEK_BYTES = 64 * 1024
#: How long the gate waits for such a body (the slow-client read deadline sits inside it).
PEEK_TIMEOUT_S = 10.0
#: Families whose requests name their solvers in ``solver``/``solvers`` (scheduling's
#: policies warm in a second, first; VROOM documents go by the routing family).
_PEEKED = re.compile(r"^/v1/(routing/(tsp|cvrp|cvrptw)|flow)/")


def named_solvers(body: bytes) -> list[str] | None:
    """The solvers a JSON request names (``solver`` or ``solvers``), None when it names
    none (the route's default applies) or is not a JSON object."""
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    if isinstance(doc.get("solver"), str):
        return [doc["solver"]]
    names = doc.get("solvers")
    if isinstance(names, list) and names and all(isinstance(n, str) for n in names):
        return names
    return None


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return None


async def _small_json_body(scope: Scope, receive: Receive) -> bytes | None:
    """The whole body of a small JSON request (by its Content-Length); None with nothing
    read for any other; empty when the client went away or was too slow."""
    if not (_header(scope, b"content-type") or "").startswith("application/json"):
        return None
    try:
        length = int(_header(scope, b"content-length") or "")
    except ValueError:
        return None
    if not 0 < length <= PEEK_BYTES:
        return None
    chunks: list[bytes] = []
    with anyio.move_on_after(PEEK_TIMEOUT_S):
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b""  # gone: nothing to hand on, the 503 goes nowhere
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                return b"".join(chunks)
    return b""  # too slow: refused as warming, and the connection closed


class WarmingGateMiddleware:
    """Answer 503 ``warming-up`` (with ``Retry-After``) to a solving request while the
    solvers it needs are still warming (those a small JSON body names, else its whole
    family); a no-op once the warm-up is done."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        warm: WarmUp | None = None
        if scope["type"] == "http":
            state = getattr(scope.get("app"), "state", None)
            warm = getattr(state, "warm_up", None)
        if warm is None or warm.done:
            await self.app(scope, receive, send)
            return
        family = solving_family(scope["method"], scope["path"])
        if family is None or warm.family_ready(family):
            await self.app(scope, receive, send)
            return
        body = await _small_json_body(scope, receive) if _PEEKED.match(scope["path"]) else None
        names = named_solvers(body) if body else None
        waiting = warm.left(family) if names is None else warm.waiting_for(names, family)
        if body and not waiting:  # it names its solvers, and they are warm
            await self.app(scope, _replay(body, receive), send)
            return
        what = (f"its {family} solvers ({warm.describe_left(family)})" if names is None else
                f"{', '.join(i.name for i in waiting)}, which this request names")
        problem = problem_bytes(
            status=503, path=scope["path"], kind="warming-up", title="Warming up",
            detail=f"the server is warming up {what}; {warm.elapsed():.0f} s so far; send the "
                   f"request again in {RETRY_AFTER_S} s. Jobs (POST /v1/jobs) are accepted "
                   "meanwhile.",
            extra={"warming": [i.name for i in waiting],
                   "warming_seconds": round(warm.elapsed(), 1)})
        headers = [(b"content-type", PROBLEM_JSON.encode()),
                   (b"content-length", str(len(problem)).encode()),
                   (b"retry-after", str(RETRY_AFTER_S).encode())]
        if not body:  # the body is not (wholly) read: the connection cannot carry another
            headers.append((b"connection", b"close"))
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": problem})


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app the body the gate read, then the server's own."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
