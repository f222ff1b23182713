"""Per-client quotas and a fair share of the solving threads.

A client is a principal (``app.security``): an API key, or its address without keys. Each
may have ``COSOLVE_MAX_CLIENT_SOLVES`` in-request solves at once (running or waiting for its
turn), ``COSOLVE_MAX_CLIENT_JOBS`` jobs queued or running, and
``COSOLVE_MAX_CLIENT_SOLVER_S_PER_HOUR`` solver seconds in a sliding hour (in-request solves
timed here, jobs by their own elapsed time in the store), and ``COSOLVE_MAX_CLIENT_SESSIONS``
online scheduling sessions open; past each, a 429 with Retry-After.

Fair share: the in-request solves share ``SOLVE_THREADS`` threads and the machine's cores.
Before, they took threads first come, first served, so one client's 40 long solves ran at once
and a 0.2 s solve of another client took 18 s, waiting for a thread and then for the CPU (and
the GIL) those 40 held. Now one client runs at most ``COSOLVE_MAX_CLIENT_RUNNING_SOLVES``
(the cores' count) at once, its others waiting in order; a free turn goes to the waiting
client with the fewest running, so another client's solve starts at once and shares the CPU
with a few solves, not forty (benchmarks/fair_share.py measures it).
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections import defaultdict, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
from fastapi import Request

from app.errors import ApiError
from app.security import Principal, current_request, principal_of
from jobs.settings import Settings
from jobs.store import JobStore

#: The sliding window of the solver-seconds quota.
HOUR_S = 3600.0
#: Retry-After of a refused solve while the client's other solves run (their ends are not
#: known in advance).
SOLVES_RETRY_S = 5


@dataclass(eq=False)
class _Waiter:
    order: int
    event: anyio.Event = field(default_factory=anyio.Event)
    granted: bool = False


class FairUse:
    """The quotas' counts and the fair queue for solving threads, one per app."""

    def __init__(self, settings: Settings, threads: int) -> None:
        self.threads = threads
        self.max_solves = settings.max_client_solves
        self.max_running = settings.max_client_running_solves
        self.max_seconds = settings.max_client_solver_s_per_hour
        self._lock = threading.Lock()
        self._busy = 0  # threads handed out
        self._admitted: dict[str, int] = defaultdict(int)  # running or waiting, per owner
        self._running: dict[str, int] = defaultdict(int)
        self._waiting: dict[str, deque[_Waiter]] = defaultdict(deque)
        self._used: dict[str, deque[tuple[float, float]]] = defaultdict(deque)  # (end, s)
        self._order = itertools.count()

    # -- solver seconds ---------------------------------------------------------------------
    def charge(self, owner: str, seconds: float) -> None:
        """Count ``seconds`` of in-request solving against ``owner``'s hour."""
        with self._lock:
            self._used[owner].append((time.time(), seconds))

    def check_seconds(self, principal: Principal, store: JobStore | None) -> None:
        """429 when the principal used its solver seconds of the last hour (in-request solves
        and jobs), with Retry-After the wait until enough of them leave the window."""
        now = time.time()
        since = now - HOUR_S
        with self._lock:
            used = self._used[principal.owner]
            while used and used[0][0] < since:
                used.popleft()
            spent = list(used)
        if store is not None:
            # a running job counts its seconds so far and leaves the window only once ended
            spent += [(end if end is not None else now, s)
                      for end, s in store.solver_seconds(principal.owner, since)]
        total = sum(s for _, s in spent)
        if total < self.max_seconds:
            return
        wait = 60.0
        for end, seconds in sorted(spent):
            total -= seconds
            if total < self.max_seconds:
                wait = max(1.0, end + HOUR_S - now)
                break
        raise ApiError(429, f"this client used {sum(s for _, s in spent):,.0f} solver seconds "
                       f"in the last hour; the limit is {self.max_seconds:,.0f} "
                       "(COSOLVE_MAX_CLIENT_SOLVER_S_PER_HOUR)", kind="solver-time-quota",
                       title="Solver time used up", headers={"Retry-After": str(math.ceil(wait))},
                       extra={"limit": self.max_seconds})

    # -- solving threads --------------------------------------------------------------------
    async def acquire(self, owner: str) -> None:
        """A solving turn for ``owner``: at once when a thread is free and the owner runs
        fewer than ``max_running``, else in turn (fewest running first); 429 when the owner
        already has ``max_solves`` admitted."""
        with self._lock:
            if self._admitted[owner] >= self.max_solves:
                raise ApiError(
                    429, f"this client has {self._admitted[owner]} solves in progress; the "
                    f"limit is {self.max_solves} at once (COSOLVE_MAX_CLIENT_SOLVES): wait for "
                    "one to end, or submit long solves as jobs (POST /v1/jobs)",
                    kind="too-many-solves", title="Too many solves at once",
                    headers={"Retry-After": str(SOLVES_RETRY_S)},
                    extra={"active": self._admitted[owner], "limit": self.max_solves})
            self._admitted[owner] += 1
            if self._busy < self.threads and self._running[owner] < self.max_running \
                    and not self._waiting.get(owner):
                self._busy += 1
                self._running[owner] += 1
                return
            waiter = _Waiter(next(self._order))
            self._waiting[owner].append(waiter)
        try:
            await waiter.event.wait()
        except BaseException:  # cancelled while waiting (the client left): give the turn on
            with self._lock:
                if not waiter.granted:
                    self._waiting[owner].remove(waiter)
                    self._admitted[owner] -= 1
                    return_slot = False
                else:
                    return_slot = True
            if return_slot:
                self.release(owner)
            raise

    def release(self, owner: str) -> None:
        """Give ``owner``'s thread back; the next one goes to the fairest waiter."""
        with self._lock:
            self._running[owner] -= 1
            self._admitted[owner] -= 1
            self._busy -= 1
            for name in [n for n, c in self._admitted.items() if c == 0]:
                del self._admitted[name]  # (the dicts hold active clients only)
                self._running.pop(name, None)
            self._grant_next()

    def _grant_next(self) -> None:
        """Hand free threads to waiters below their running share: the owner with the fewest
        running, and among equals the longest waiting (the caller holds the lock)."""
        while self._busy < self.threads:
            queued = [(self._running[o], q[0].order, o) for o, q in self._waiting.items()
                      if q and self._running[o] < self.max_running]
            if not queued:
                return
            _, _, owner = min(queued)
            waiter = self._waiting[owner].popleft()
            if not self._waiting[owner]:
                del self._waiting[owner]
            waiter.granted = True
            self._busy += 1
            self._running[owner] += 1
            waiter.event.set()

    def snapshot(self) -> dict[str, int]:
        """Threads busy and solves waiting (for tests and metrics)."""
        with self._lock:
            return {"busy": self._busy,
                    "waiting": sum(len(q) for q in self._waiting.values())}


def fair_use(request: Request) -> FairUse | None:
    return getattr(request.app.state, "fair_use", None)


def _store(request: Request) -> JobStore | None:
    service = getattr(request.app.state, "jobs", None)
    return getattr(service, "store", None)


@asynccontextmanager
async def solve_turn(request: Request) -> AsyncIterator[None]:
    """Hold a fair solving turn for the request's principal while the body runs, and charge
    its seconds to the principal's hour. Without the app's quotas (a bare app), nothing."""
    quotas = fair_use(request)
    if quotas is None:
        yield
        return
    principal = principal_of(request)
    quotas.check_seconds(principal, _store(request))
    await quotas.acquire(principal.owner)
    started = time.perf_counter()
    try:
        yield
    finally:
        quotas.charge(principal.owner, time.perf_counter() - started)
        quotas.release(principal.owner)


def check_sessions(settings: Settings, principal: Principal, idle: list[float],
                   idle_limit_s: float) -> None:
    """Before a scheduling session opens: 429 when the principal already has
    ``COSOLVE_MAX_CLIENT_SESSIONS`` open (``idle``: each open one's seconds since its last
    request), with Retry-After the wait until its idlest expires. Without it one client could
    fill the server's whole session table and lock every other client out for an hour."""
    limit = settings.max_client_sessions
    if len(idle) < limit:
        return
    wait = max(1, math.ceil(idle_limit_s - max(idle)))
    raise ApiError(429, f"this client has {len(idle)} scheduling sessions open; the limit is "
                   f"{limit} (COSOLVE_MAX_CLIENT_SESSIONS): DELETE finished ones (its idlest "
                   f"expires in {wait} s)", kind="too-many-sessions", title="Too many sessions",
                   headers={"Retry-After": str(wait)},
                   extra={"active": len(idle), "limit": limit})


def check_job_quota(request: Request) -> None:
    """Before a job is accepted: 429 when its principal's solver seconds are used up."""
    quotas = fair_use(request)
    if quotas is not None:
        quotas.check_seconds(principal_of(request), _store(request))


def job_owner() -> str | None:
    """For a job (or batch) about to be accepted in the current request: 429 when its
    principal's solver seconds are used up, else the owner to record (None outside a
    request: the CLI, a test's store)."""
    request = current_request.get()
    if request is None:
        return None
    check_job_quota(request)
    return principal_of(request).owner
