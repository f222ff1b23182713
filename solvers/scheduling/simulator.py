"""Discrete-event simulator of dynamic workflow scheduling on a fixed pool of cloud VMs.

The model is GOODRL's (see ../shared/research/goodrl.md §1): workflows arrive by a Poisson
process, each task's work is ``runtime × 16`` vCPU-seconds and runs in ``work / vcpu`` seconds
on one VM, each VM serves its own FIFO queue one task at a time, and a task is ready when all
its parents have finished. The only decision is which VM a ready task joins; the objective is
the mean flowtime (last task's finish − arrival). Data transfer is not modelled, as in the
paper's code.

``ClusterState`` is the state both the simulator and the online sessions drive, and that every
policy reads: ``now``, the VMs' speeds and the time each becomes free (``vm_free`` may lie in
the past for an idle VM: ``max(now, vm_free)`` is when it can start new work, and policies that
forget the ``max`` are the published stale-time baselines). ``simulate`` runs a stream with a
policy, deterministically under a seed, at a few microseconds per event.
"""

from __future__ import annotations

import contextlib
import heapq
import math
import re
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from solvers.errors import CheckFailedError, InstanceError
from solvers.scheduling.workflow import Workflow

#: vCPUs of the VM types, after EC2 m5 (GOODRL's list); a pool "6x4" takes the first 6 types.
VM_TYPES = (8, 16, 32, 48, 64, 96)
MAX_VMS = 1_000
#: Bounds on a VM's vCPUs and on arrival rates (workflows per hour) that keep every time the
#: simulator computes finite (a rate of 1e-320 or 1e308 vCPUs overflowed or underflowed).
VCPU_RANGE = (1e-2, 1e6)
RATE_RANGE = (1e-6, 1e9)

#: Seconds over which a VM's recent utilization is averaged.
UTIL_HORIZON = 3600.0

# task status
WAITING, READY, ASSIGNED, DONE = 0, 1, 2, 3


@dataclass(frozen=True)
class VMPool:
    """The VM speeds (vCPUs), one entry per VM, grouped by type."""

    speeds: tuple[float, ...]
    label: str = ""

    @property
    def size(self) -> int:
        return len(self.speeds)

    def describe(self) -> dict[str, Any]:
        return {"pool": self.label, "vms": self.size, "vcpus": list(self.speeds)}


def parse_pool(text: str, field_name: str = "pool") -> VMPool:
    """``"6x4"`` (the first 6 VM types, 4 of each), or explicit vCPUs ``"8,16,16,96"``."""
    spec = text.strip().lower().replace("×", "x")
    m = re.fullmatch(r"(\d+)\s*x\s*(\d+)", spec)
    if m:
        # a count past every limit is not converted: int() refuses more than 4,300 digits
        types_text, each_text = (g.lstrip("0") or "0" for g in m.groups())
        types = int(types_text) if len(types_text) <= 9 else 10**9
        each = int(each_text) if len(each_text) <= 9 else 10**9
        if not 1 <= types <= len(VM_TYPES):
            raise InstanceError(field_name, f"{_cut(types_text)} VM types asked for; there are "
                                f"{len(VM_TYPES)} ({', '.join(map(str, VM_TYPES))} vCPUs)")
        if not each >= 1 or types * each > MAX_VMS:
            raise InstanceError(field_name, f"{_cut(each_text)} VMs per type: the pool must "
                                f"hold 1 to {MAX_VMS} VMs")
        speeds = tuple(float(v) for v in VM_TYPES[:types] for _ in range(each))
        return VMPool(speeds, f"{types}x{each}")
    try:
        speeds = tuple(float(s) for s in spec.split(",") if s.strip())
    except ValueError:
        raise InstanceError(field_name, f"{text!r} is neither TYPESxEACH (e.g. 6x4) nor a list "
                            "of vCPU counts (e.g. 8,16,96)") from None
    if not speeds or len(speeds) > MAX_VMS:
        raise InstanceError(field_name, f"the pool must hold 1 to {MAX_VMS} VMs")
    lo, hi = VCPU_RANGE
    if any(not (math.isfinite(s) and lo <= s <= hi) for s in speeds):
        raise InstanceError(field_name, f"every VM needs a vCPU count in [{lo:g}, {hi:g}]")
    return VMPool(speeds, ",".join(f"{s:g}" for s in speeds))


def _cut(digits: str) -> str:
    """A number for an error message, its middle elided when it is long."""
    return digits if len(digits) <= 12 else f"{digits[:6]}…{digits[-3:]} ({len(digits)} digits)"


# -- the state policies read ---------------------------------------------------------------------
@dataclass(eq=False)
class Run:
    """One workflow in the system: its template, arrival, and per-task progress."""

    uid: int
    wf: Workflow
    arrival: float
    label: str = ""
    pending: np.ndarray = field(init=False)  # unfinished parents per task
    status: np.ndarray = field(init=False)
    vm: np.ndarray = field(init=False)
    start: np.ndarray = field(init=False)
    finish: np.ndarray = field(init=False)
    left: int = field(init=False)
    done_at: float = math.nan

    def __post_init__(self) -> None:
        n = self.wf.n
        self.pending = self.wf.n_parents.copy()
        self.status = np.zeros(n, np.int8)
        self.vm = np.full(n, -1, np.int64)
        self.start = np.full(n, math.nan)
        self.finish = np.full(n, math.nan)
        self.left = n

    @property
    def flowtime(self) -> float:
        return self.done_at - self.arrival


class ClusterState:
    """VMs, their FIFO queues and the workflows in the system at time ``now``."""

    def __init__(self, pool: VMPool, keep_completed: bool = True) -> None:
        """``keep_completed=False`` (sessions): finished workflows are not kept in
        ``completed``; a session that runs for days keeps only their statistics."""
        self.pool = pool
        self.keep_completed = keep_completed
        self.vm_speed = np.asarray(pool.speeds, dtype=np.float64)
        self.mean_speed = float(self.vm_speed.mean())
        self.max_speed = float(self.vm_speed.max())
        self.m = pool.size
        self.vm_free = np.zeros(self.m)  # finish of the last task queued (may be in the past)
        self.vm_busy = np.zeros(self.m)  # seconds of work assigned so far
        self.vm_recent = np.zeros(self.m)  # busy fraction, decaying over UTIL_HORIZON s ...
        self.vm_mark = np.zeros(self.m)  # ... as of this time
        self.vm_queue: list[deque[tuple[Run, int]]] = [deque() for _ in range(self.m)]
        self.now = 0.0
        self.active: dict[int, Run] = {}
        self.completed: list[Run] = []
        self.area = 0.0  # ∫ (workflows in the system) dt: its final value is Σ flowtimes
        self._area_t = 0.0

    # time
    def advance(self, t: float) -> None:
        if t > self.now:
            self.area += len(self.active) * (t - self._area_t)
            self._area_t = t
            self.now = t

    def available(self) -> np.ndarray:
        """When each VM can start new work: never before now (the correct idle time)."""
        return np.maximum(self.vm_free, self.now)

    def exec_times(self, run: Run, task: int) -> np.ndarray:
        return run.wf.sizes[task] / self.vm_speed

    def utilization(self) -> np.ndarray:
        """Each VM's recent busy fraction (an exponential average over about UTIL_HORIZON
        seconds): relative to now, so it means the same at hour 1 and at hour 1000.

        A VM is busy from any moment until its ``vm_free`` (queues run back to back) and
        ``vm_free`` only grows, so the average is exact if folded forward before each change:
        the busy stretch [mark, min(vm_free, now)] adds e^-(now−end)/H − e^-(now−mark)/H.
        """
        now = self.now
        end = np.clip(self.vm_free, self.vm_mark, now)
        old = np.exp(-(now - self.vm_mark) / UTIL_HORIZON)
        self.vm_recent = self.vm_recent * old + np.exp(-(now - end) / UTIL_HORIZON) - old
        self.vm_mark[:] = now
        return self.vm_recent

    def _fold(self, vm: int) -> None:
        now, mark = self.now, float(self.vm_mark[vm])
        if now > mark:
            end = min(max(float(self.vm_free[vm]), mark), now)
            old = math.exp(-(now - mark) / UTIL_HORIZON)
            self.vm_recent[vm] = (self.vm_recent[vm] * old
                                  + math.exp(-(now - end) / UTIL_HORIZON) - old)
            self.vm_mark[vm] = now

    # changes
    def add(self, run: Run) -> list[int]:
        """A workflow arrives at ``now``; its root tasks become ready."""
        self.active[run.uid] = run
        roots = list(run.wf.roots)
        run.status[roots] = READY
        return roots

    def assign(self, run: Run, task: int, vm: int) -> tuple[float, float]:
        """Queue the task on the VM; returns its projected (start, finish)."""
        self._fold(vm)
        start = max(self.now, float(self.vm_free[vm]))
        dur = float(run.wf.sizes[task] / self.vm_speed[vm])
        finish = start + dur
        self.vm_free[vm] = finish
        self.vm_busy[vm] += dur
        self.vm_queue[vm].append((run, task))
        run.status[task] = ASSIGNED
        run.vm[task] = vm
        run.start[task] = start
        run.finish[task] = finish
        return start, finish

    def finish(self, run: Run, task: int) -> list[int]:
        """The task finished at ``now``; returns the children that became ready."""
        vm = int(run.vm[task])
        queue = self.vm_queue[vm]
        if queue and queue[0][0] is run and queue[0][1] == task:
            queue.popleft()
        else:  # reported out of FIFO order (sessions): drop it wherever it is
            with contextlib.suppress(ValueError):
                queue.remove((run, task))
        run.status[task] = DONE
        run.finish[task] = self.now
        run.left -= 1
        ready: list[int] = []
        for c in run.wf.children[task]:
            run.pending[c] -= 1
            if run.pending[c] == 0:
                run.status[c] = READY
                ready.append(c)
        if run.left == 0:
            run.done_at = self.now
            del self.active[run.uid]
            if self.keep_completed:
                self.completed.append(run)
        return ready


def bad_choice(policy: str, vm: Any, m: int) -> CheckFailedError | None:
    """The error for a policy's VM choice that is not an index of the pool, else None: an
    index taken unchecked would let -1 silently mean the last VM."""
    if isinstance(vm, (int, np.integer)) and not isinstance(vm, bool) and 0 <= vm < m:
        return None
    return CheckFailedError(f"policy {policy!r} chose a VM that is not in the pool",
                            [f"VM index {vm!r} out of range [0, {m - 1}]"])


class Policy(Protocol):
    """Chooses the VM for a ready task. ``order`` (optional) sorts simultaneous ready tasks."""

    name: str

    def reset(self, state: ClusterState, seed: int) -> None: ...

    def choose(self, state: ClusterState, run: Run, task: int) -> int: ...


# -- arrivals ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Arrivals:
    """A Poisson stream of ``count`` workflows; ``rates`` (workflows per hour) split the
    stream into equal consecutive segments, so ``[5.4, 9.0]`` changes the rate mid-stream."""

    count: int
    rates: tuple[float, ...] = (5.4,)

    def __post_init__(self) -> None:
        if self.count < 1:
            raise InstanceError("workflows_count", f"must be at least 1, got {self.count}")
        lo, hi = RATE_RANGE
        if not self.rates:
            raise InstanceError("rates", "at least one arrival rate is needed")
        for i, r in enumerate(self.rates):
            if not (math.isfinite(r) and lo <= r <= hi):
                raise InstanceError(f"rates[{i}]", f"arrival rates must be in [{lo:g}, {hi:g}] "
                                    f"workflows per hour, got {r!r}")
        if len(self.rates) > self.count:
            # each rate is a segment of at least one workflow (5 rates over 2 workflows would
            # run rates 1 and 3 only, while the answer echoed all five)
            raise InstanceError("rates", f"{len(self.rates)} rates for {self.count} "
                                f"workflow{'s' if self.count != 1 else ''}: each rate is a "
                                "segment of the stream, so give at most one rate per workflow")

    def times(self, rng: np.random.Generator) -> np.ndarray:
        seg = np.minimum(np.arange(self.count) * len(self.rates) // self.count,
                         len(self.rates) - 1)
        rate_s = np.asarray(self.rates)[seg] / 3600.0
        gaps = rng.exponential(1.0, self.count) / rate_s
        gaps[0] = 0.0  # the first workflow arrives at 0
        return np.cumsum(gaps)


def make_stream(templates: Sequence[Workflow], arrivals: Arrivals, seed: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """(arrival times, template index per workflow), a pure function of the seed."""
    if not templates:
        raise InstanceError("workflows", "give at least one workflow")
    rng = np.random.default_rng(seed)
    kinds = rng.integers(0, len(templates), arrivals.count)
    return arrivals.times(rng), kinds


# -- results -------------------------------------------------------------------------------------
@dataclass
class SimResult:
    """What one policy achieved on one stream."""

    policy: str
    flowtimes: np.ndarray
    makespan: float
    utilization: float
    decisions: int
    wall_time: float
    latencies: np.ndarray | None = None  # seconds per decision, when measured
    schedule: list[tuple[int, int, int, float, float, float]] | None = None
    # (workflow uid, task, vm, ready, start, finish) when recorded
    workflows: list[tuple[int, int, float, float]] | None = None
    # (workflow uid, template index, arrival, finish) when recorded

    def schedule_table(self, templates: Sequence[Workflow]) -> dict[str, list[dict[str, Any]]]:
        """The recorded schedule as plain records, tasks named by their ids: enough to
        replay it, check it (parents first, one task at a time per VM) and recompute every
        flowtime."""
        if self.schedule is None or self.workflows is None:
            raise ValueError("the schedule was not recorded (simulate(..., record=True))")
        kind = {uid: k for uid, k, _, _ in self.workflows}
        return {
            "workflows": [{"workflow": uid, "template": templates[k].name,
                           "template_index": k, "arrival": arrival,
                           "finish": finish, "flowtime": finish - arrival}
                          for uid, k, arrival, finish in self.workflows],
            "tasks": [{"workflow": uid, "task": templates[kind[uid]].ids[task], "vm": vm,
                       "ready": ready, "start": start, "finish": finish}
                      for uid, task, vm, ready, start, finish in self.schedule],
        }

    @property
    def mean_flowtime(self) -> float:
        return float(self.flowtimes.mean()) if len(self.flowtimes) else math.nan

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "policy": self.policy, "mean_flowtime": self.mean_flowtime,
            "median_flowtime": float(np.median(self.flowtimes)),
            "p95_flowtime": float(np.percentile(self.flowtimes, 95)),
            "makespan": self.makespan, "utilization": self.utilization,
            "workflows": len(self.flowtimes), "decisions": self.decisions,
            "wall_time": self.wall_time}
        if self.latencies is not None and len(self.latencies):
            out["latency_p50_ms"] = float(np.percentile(self.latencies, 50) * 1e3)
            out["latency_p95_ms"] = float(np.percentile(self.latencies, 95) * 1e3)
        return out


_ARRIVE, _FINISH = 0, 1


def _stop(deadline: float | None, cancel: Callable[[], bool] | None) -> bool:
    return ((deadline is not None and time.perf_counter() > deadline)
            or (cancel is not None and cancel()))


def simulate(templates: Sequence[Workflow], pool: VMPool, arrivals: Arrivals, policy: Policy,
             seed: int = 0, *, record: bool = False, measure_latency: bool = False,
             on_decision: Callable[[ClusterState, Run, int, int], None] | None = None,
             deadline: float | None = None, cancel: Callable[[], bool] | None = None,
             on_progress: Callable[[int], None] | None = None) -> SimResult:
    """Run the stream ``make_stream(templates, arrivals, seed)`` under ``policy``.

    Events at the same time are handled together: first every finish and arrival, then the
    tasks they made ready are dispatched in order (the policy's ``order`` if it has one, else
    arrival/successor order). ``on_decision(state, run, task, vm)`` sees every decision (for
    training); ``deadline`` (perf_counter time) or ``cancel`` stop a run early with a
    TimeoutError. A choice that is not a VM index of the pool is a CheckFailedError.
    ``on_progress(workflows finished)`` is called now and then (a job's progress).
    """
    times, kinds = make_stream(templates, arrivals, seed)
    state = ClusterState(pool)
    policy.reset(state, seed)
    order_fn = getattr(policy, "order", None)
    heap: list[tuple[float, int, int, Any, int]] = []
    seq = 0
    for uid, (t, k) in enumerate(zip(times.tolist(), kinds.tolist(), strict=True)):
        heap.append((t, seq, _ARRIVE, (uid, k), -1))
        seq += 1
    heapq.heapify(heap)
    schedule: list[tuple[int, int, int, float, float, float]] | None = [] if record else None
    kind_of: dict[int, int] = {}
    latencies: list[float] = []
    decisions = 0
    loops = 0
    started = time.perf_counter()
    choose = policy.choose
    assign = state.assign
    while heap:
        now = heap[0][0]
        state.advance(now)
        ready: list[tuple[Run, int]] = []
        while heap and heap[0][0] == now:
            _, _, kind, payload, task = heapq.heappop(heap)
            if kind == _ARRIVE:
                uid, k = payload
                if record:
                    kind_of[uid] = k
                run = Run(uid, templates[k], now, templates[k].name)
                ready.extend((run, c) for c in state.add(run))
            else:
                ready.extend((payload, c) for c in state.finish(payload, task))
        if order_fn is not None and len(ready) > 1:
            ready = order_fn(state, ready)
        for run, task in ready:
            if measure_latency:
                t0 = time.perf_counter()
                vm = choose(state, run, task)
                latencies.append(time.perf_counter() - t0)
            else:
                vm = choose(state, run, task)
            if not (type(vm) is int and 0 <= vm < state.m):  # the usual case, cheaply
                bad = bad_choice(policy.name, vm, state.m)
                if bad is not None:
                    raise bad
            if on_decision is not None:
                on_decision(state, run, task, vm)
            start, finish = assign(run, task, vm)
            if record:
                schedule.append((run.uid, task, vm, now, start, finish))  # type: ignore[union-attr]
            heapq.heappush(heap, (finish, seq, _FINISH, run, task))
            seq += 1
            decisions += 1
            # checked per decision as well: one GOODRL decision on a dense DAG can take
            # seconds, and a burst of ready tasks is decided within one event (checked per
            # event only, a request ran 5 minutes past its client's timeout)
            if (decisions & 15) == 0 and _stop(deadline, cancel):
                raise TimeoutError("the simulation ran out of time")
        loops += 1
        if (loops & 1023) == 0:
            if _stop(deadline, cancel):
                raise TimeoutError("the simulation ran out of time")
            if on_progress is not None:
                on_progress(len(state.completed))
    flow = np.array([r.flowtime for r in sorted(state.completed, key=lambda r: r.uid)])
    makespan = max((r.done_at for r in state.completed), default=0.0)
    util = float(state.vm_busy.sum() / (state.m * makespan)) if makespan > 0 else 0.0
    workflows = ([(r.uid, kind_of[r.uid], r.arrival, r.done_at)
                  for r in sorted(state.completed, key=lambda r: r.uid)] if record else None)
    return SimResult(policy.name, flow, makespan, util, decisions,
                     time.perf_counter() - started,
                     np.asarray(latencies) if measure_latency else None, schedule, workflows)
