"""Online scheduling sessions: the service schedules a real cloud, event by event.

The caller reports what happens (a workflow arrived, a task finished, each with its time) and
gets back the assignments to carry out (task → VM, with the projected start and finish). The
session keeps the same ``ClusterState`` the simulator drives, but finish times come from the
caller, so a task that runs long or short moves its VM's queue accordingly.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from solvers.errors import CheckFailedError, InstanceError
from solvers.scheduling.check import AssignmentLedger
from solvers.scheduling.simulator import (
    ASSIGNED,
    DONE,
    ClusterState,
    Policy,
    Run,
    VMPool,
    bad_choice,
)
from solvers.scheduling.workflow import Workflow

#: Workflows a session may hold unfinished at once.
MAX_ACTIVE_WORKFLOWS = 1_000
#: Unfinished tasks a session may hold at once (about 480 bytes each: 1,000 workflows of
#: 2,000 tasks would hold about 1 GB).
MAX_LIVE_TASKS = 100_000
#: Finished workflows the state lists (the latest); the older ones count in the statistics.
MAX_FINISHED_LISTED = 100
#: The latest time an event may report (seconds); an arrival whose tasks could be projected
#: to finish later is refused, as their finishes could never be reported.
MAX_EVENT_TIME = 1e12


@dataclass(frozen=True)
class Assignment:
    """Run ``task`` of ``workflow`` on VM ``vm``; it should start and finish about then."""

    workflow: str
    task: str
    vm: int
    vcpus: float
    expected_start: float
    expected_finish: float

    def to_dict(self) -> dict[str, Any]:
        return {"workflow": self.workflow, "task": self.task, "vm": self.vm,
                "vcpus": self.vcpus, "expected_start": self.expected_start,
                "expected_finish": self.expected_finish}


@dataclass(frozen=True)
class Arrived:
    """A workflow arrived at ``time``. ``workflow`` may be a function that reads it when its
    turn comes, so that a bad one is refused in order, after the events before it."""

    time: float
    workflow: Workflow | Callable[[], Workflow]
    workflow_id: str | None = None


@dataclass(frozen=True)
class Finished:
    """Task ``task_id`` of workflow ``workflow_id`` finished at ``time``."""

    time: float
    workflow_id: str
    task_id: str


class EventError(Exception):
    """Event ``index`` of a batch was refused (``cause``); the events before it stay applied
    and their answers are here, or the caller would never learn of tasks it must run."""

    def __init__(self, index: int, cause: Exception, workflow_ids: list[str],
                 assignments: list[Assignment]) -> None:
        super().__init__(f"event {index}: {cause}")
        self.index = index
        self.cause = cause
        self.workflow_ids = workflow_ids
        self.assignments = assignments


class Session:
    """One pool, one policy, the events so far."""

    def __init__(self, pool: VMPool, policy: Policy, seed: int = 0) -> None:
        """A finished workflow leaves ``runs`` (the unfinished ones by id): only its summary
        stays, in ``finished`` (the latest MAX_FINISHED_LISTED) and in the count and
        flowtime sum, so that memory and the state's answer do not grow with every workflow
        ever seen."""
        self.state = ClusterState(pool, keep_completed=False)
        self.policy = policy
        self.seed = seed  # reported in the snapshot: the random policy and ties depend on it
        policy.reset(self.state, seed)
        self.runs: dict[str, Run] = {}
        self.finished: deque[dict[str, Any]] = deque(maxlen=MAX_FINISHED_LISTED)
        self.finished_count = 0
        self.flowtime_sum = 0.0
        self.live_tasks = 0  # unfinished tasks of the unfinished workflows
        self._unassigned_work = 0.0  # vCPU-seconds of their tasks not assigned yet
        self.events = 0
        self.decisions = 0
        self._arrived = 0  # workflows so far: the next one's uid (its arrival order)
        self._next_auto = 1  # automatic ids count up from here and are never given twice
        # every answered assignment is checked against the reported events, apart from state
        self.ledger = AssignmentLedger(pool.speeds)

    def _check_time(self, t: float, field: str) -> None:
        if not math.isfinite(t) or t < 0:
            raise InstanceError(field, f"must be a finite time ≥ 0, got {t}")
        if t < self.state.now:
            raise InstanceError(field, f"time {t:g} is before the session's current time "
                                f"{self.state.now:g}; report events in time order")

    def _advance(self, t: float, field: str) -> None:
        """Move the clock to ``t``; callers check the whole event first, so that a refused
        event changes nothing (a refused arrival that moved the clock would have the next
        correct finish refused as being in the past)."""
        self._check_time(t, field)
        self.state.advance(t)
        # A VM whose queue was projected to be done but is not (no finish reported yet): its
        # first task is overdue and runs on until at least now, and the tasks behind it
        # (which cannot have started) are projected again from now. Moving only the VM's free
        # time to now would forget them and project a new task to start before them.
        st = self.state
        for m, queue in enumerate(st.vm_queue):
            if queue and st.vm_free[m] < t:
                self._requeue(m, head_running=True)

    def dispatch(self, ready: list[tuple[Run, int]], out: list[Assignment] | None = None
                 ) -> list[Assignment]:
        """Assign ready tasks in the policy's order (HEFT's upward rank). Events reported
        with ``dispatch=False`` hand theirs here all together per instant, as the simulator
        decides them (decided one by one, two finishes at the same time would change HEFT's
        plan with their order in the request, and disagree with simulate).

        Each answer is appended to ``out`` once the independent ledger passed it; a policy's
        VM index out of range, or an answer the ledger refuses, is a CheckFailedError (the
        answers before it stay in ``out``, to carry out)."""
        order = getattr(self.policy, "order", None)
        if order is not None and len(ready) > 1:
            ready = order(self.state, ready)
        out = [] if out is None else out
        st = self.state
        for run, task in ready:
            vm = self.policy.choose(st, run, task)
            bad = bad_choice(self.policy.name, vm, st.m)
            if bad is not None:
                raise bad
            vm = int(vm)
            start, finish = st.assign(run, task, vm)
            self._unassigned_work -= float(run.wf.sizes[task])
            self.decisions += 1
            answer = Assignment(run.label, run.wf.ids[task], vm, float(st.vm_speed[vm]), start,
                                finish)
            problems = self.ledger.check(run.label, task, answer.task, answer.vm, answer.vcpus,
                                         start, finish, st.now)
            if problems:
                raise CheckFailedError("an assignment failed its independent check", problems)
            out.append(answer)
        return out

    def apply(self, events: Sequence[Arrived | Finished]
              ) -> tuple[list[str], list[Assignment]]:
        """Apply a batch of events in order: (the arrived workflows' ids, the assignments).
        The tasks an instant's events make ready are decided together, after all of them,
        as the simulator decides them (HEFT orders them by upward rank); an automatic id
        never takes one a later arrival of the batch names."""
        named = {ev.workflow_id for ev in events if isinstance(ev, Arrived) and ev.workflow_id}
        out: list[Assignment] = []
        ids: list[str] = []
        ready: list[tuple[Run, int]] = []
        instant = -1.0

        def decide(applied: int) -> None:
            if ready:
                batch = list(ready)
                ready.clear()
                try:
                    self.dispatch(batch, out)
                except CheckFailedError as exc:  # the answers checked so far are in out
                    raise EventError(applied, exc, ids, out) from exc

        for i, ev in enumerate(events):
            if ready and (ev.time != instant or (
                    isinstance(ev, Finished)
                    and any(run.label == ev.workflow_id and run.wf.ids[t] == ev.task_id
                            for run, t in ready))):
                # a later instant, or the finish of a task this instant released (a
                # zero-length task): what is ready is decided first
                decide(i)
            try:
                if isinstance(ev, Arrived):
                    wf = ev.workflow if isinstance(ev.workflow, Workflow) else ev.workflow()
                    wid, got = self.workflow_arrived(wf, ev.time, ev.workflow_id,
                                                     dispatch=False, avoid=named)
                    ids.append(wid)
                else:
                    got = self.task_finished(ev.workflow_id, ev.task_id, ev.time,
                                             dispatch=False)
            except Exception as exc:
                decide(i)
                raise EventError(i, exc, ids, out) from exc
            ready.extend(got)  # type: ignore[arg-type]
            instant = self.state.now
        decide(len(events))
        return ids, out

    def live_peak(self, changes: Sequence[int | tuple[str, str]]) -> int:
        """The most unfinished tasks the session would hold while applying a request, from
        its events in order: an arrival's task count, or a finish (workflow id, task id).
        Only the finish of a task assigned now counts (once); anything else is refused in
        its turn or released by the request, so the peak is never underestimated."""
        live = peak = self.live_tasks
        seen: set[tuple[str, str]] = set()
        for change in changes:
            if isinstance(change, int):
                live += change
                peak = max(peak, live)
                continue
            run = self.runs.get(change[0])
            if run is None or change in seen or change[1] not in run.wf.ids:
                continue
            if run.status[run.wf.ids.index(change[1])] == ASSIGNED:
                seen.add(change)
                live -= 1
        return peak

    def released_by(self, finishes: list[tuple[str, str]]) -> dict[str, int]:
        """How many tasks of each workflow the given finishes (workflow id, task id) would
        make ready, without applying them: the work a request brings, sized before it runs.
        Unknown or repeated finishes count nothing (they are refused in their turn)."""
        pending: dict[tuple[str, int], int] = {}
        seen: set[tuple[str, int]] = set()
        released: dict[str, int] = {}
        for wid, tid in finishes:
            run = self.runs.get(wid)
            if run is None or tid not in run.wf.ids:
                continue
            task = run.wf.ids.index(tid)
            if (wid, task) in seen or run.status[task] != ASSIGNED:
                continue
            seen.add((wid, task))
            for child in run.wf.children[task]:
                left = pending.get((wid, child), int(run.pending[child])) - 1
                pending[(wid, child)] = left
                if left == 0:
                    released[wid] = released.get(wid, 0) + 1
        return released

    def workflow_arrived(self, workflow: Workflow, time: float, workflow_id: str | None = None,
                         field: str = "time", dispatch: bool = True,
                         avoid: set[str] | frozenset[str] = frozenset()
                         ) -> tuple[str, list[Assignment] | list[tuple[Run, int]]]:
        """Add a workflow; its root tasks are assigned at once (``dispatch=False``: returned
        as ready, for ``dispatch`` with the other events of the same instant). Without an id
        it gets the first ``wfN`` not in use (a client may have chosen ``wf2`` itself), not in
        ``avoid`` and not given automatically before. An id is in use while its workflow is
        unfinished or listed among the finished ones."""
        self._check_time(time, field)
        if len(self.state.active) >= MAX_ACTIVE_WORKFLOWS:
            raise InstanceError("workflow", f"the session already holds {MAX_ACTIVE_WORKFLOWS} "
                                "unfinished workflows; report finished tasks first")
        if self.live_tasks + workflow.n > MAX_LIVE_TASKS:
            # the workflow cap alone would let a session hold 2M tasks (about 1 GB)
            raise InstanceError("workflow", f"the session holds {self.live_tasks} unfinished "
                                f"tasks; this workflow's {workflow.n} would pass the "
                                f"{MAX_LIVE_TASKS:,} a session may hold: report finished "
                                "tasks first")
        self._check_reportable(workflow, time)
        if workflow_id is not None and self._in_use(workflow_id):
            raise InstanceError("workflow_id", f"workflow id {workflow_id!r} is already in use")
        wid = workflow_id
        if wid is None:
            # the first number not given yet moves up only, so wf1 is taken while it is free
            # (not wf17 after 16 client-named workflows)
            k = self._next_auto
            while self._in_use(f"wf{k}") or f"wf{k}" in avoid:  # avoid: a later arrival's
                k += 1
            wid = f"wf{k}"
            self._next_auto = k + 1
        self._advance(time, field)
        run = Run(self._arrived, workflow, self.state.now, wid)
        self._arrived += 1
        self.runs[wid] = run
        self.live_tasks += workflow.n
        self._unassigned_work += float(workflow.sizes.sum())
        self.events += 1
        self.ledger.arrived(wid, workflow, self.state.now)
        ready = [(run, t) for t in self.state.add(run)]
        return wid, (self.dispatch(ready) if dispatch else ready)

    def task_finished(self, workflow_id: str, task_id: str, time: float, dispatch: bool = True
                      ) -> list[Assignment] | list[tuple[Run, int]]:
        """Record a finish; the children it releases are assigned (or returned as ready,
        ``dispatch=False``)."""
        run = self.runs.get(workflow_id)
        if run is None:
            if any(f["id"] == workflow_id for f in self.finished):
                # its tasks are forgotten; every one was reported, so the task is at fault
                raise InstanceError("task_id", f"workflow {workflow_id!r} has finished: every "
                                    f"task of it was reported finished, so {task_id!r} cannot "
                                    "finish now")
            raise InstanceError("workflow_id", f"no unfinished workflow {workflow_id!r} in this "
                                "session")
        try:
            task = run.wf.ids.index(task_id)
        except ValueError:
            raise InstanceError("task_id", f"workflow {workflow_id!r} has no task "
                                f"{task_id!r}") from None
        if run.status[task] == DONE:
            raise InstanceError("task_id", f"task {task_id!r} was already reported finished")
        if run.status[task] != ASSIGNED:
            raise InstanceError("task_id", f"task {task_id!r} was never assigned: its parents "
                                "have not all finished")
        self._advance(time, "time")
        vm = int(run.vm[task])
        queue = self.state.vm_queue[vm]
        # A finish reported out of FIFO order (the task was queued behind another) is taken as
        # reported; the task ahead of it is still running and keeps its start.
        head_running = bool(queue) and not (queue[0][0] is run and queue[0][1] == task)
        self.events += 1
        released = self.state.finish(run, task)
        problems = self.ledger.finished(workflow_id, task, self.state.now)
        if problems:
            raise CheckFailedError("a finish disagrees with the independent ledger", problems)
        self.live_tasks -= 1
        if run.left == 0:
            self._forget(run)
        if self.live_tasks == 0:
            self._unassigned_work = 0.0  # no rounding left over from the running sum
        self._requeue(vm, head_running)
        ready = [(run, c) for c in released]
        return self.dispatch(ready) if dispatch else ready

    def _check_reportable(self, workflow: Workflow, time: float) -> None:
        """Refuse an arrival whose tasks could be projected to finish after MAX_EVENT_TIME,
        the latest finish a caller can report (a 1e9 s task on a 0.01-vCPU pool would be
        assigned to finish at 1.6e12, and its finish then always refused). The bound holds
        whatever the policy does: every VM's queue as it will stand at ``time``, plus all
        work not assigned yet (this workflow's too) on the slowest VM. Assigning a task never
        raises it, so every arrival accepted keeps every projection reportable, unless
        finishes are reported later than projected (the queues then move with the clock)."""
        st = self.state
        free = max((self._free_after(m, time) for m in range(st.m)), default=time)
        work = max(self._unassigned_work, 0.0) + float(workflow.sizes.sum())
        latest = free + work / float(st.vm_speed.min())
        if latest > MAX_EVENT_TIME:
            raise InstanceError("workflow", f"its tasks could be projected to finish as late "
                                f"as {latest:.4g} s (the queued and unassigned work, this "
                                f"workflow's included, on the slowest VM); a finish can be "
                                f"reported up to {MAX_EVENT_TIME:g} s, so theirs might never be")

    def _free_after(self, vm: int, t: float) -> float:
        """When the VM's queue would end once the clock moved to ``t`` (as ``_advance``
        re-projects an overdue queue), without changing anything."""
        st = self.state
        if st.vm_queue[vm] and st.vm_free[vm] < t:
            end = t
            for projected in self._queue_times(vm, t, head_running=True):
                end = projected[3]
            return end
        return max(float(st.vm_free[vm]), t)

    def _queue_times(self, vm: int, t: float, head_running: bool
                     ) -> Iterator[tuple[Run, int, float, float, bool]]:
        """The VM's queued tasks (run, task, start, end, moved) projected from ``t``. A
        running head (``head_running``, started by ``t``) is not moved: it keeps its start
        and projected finish, and the VM is busy with it until then or, if that has passed,
        until ``t``."""
        for k, (run, task) in enumerate(self.state.vm_queue[vm]):
            if k == 0 and head_running and run.start[task] <= t:
                t = max(float(run.finish[task]), t)
                yield run, task, float(run.start[task]), t, False
                continue
            start = t
            t += float(run.wf.sizes[task] / self.state.vm_speed[vm])
            yield run, task, start, t, True

    def _in_use(self, workflow_id: str) -> bool:
        """Unfinished, or finished and still listed in the state (so no list shows an id
        twice); an older finished workflow's id is free again."""
        return workflow_id in self.runs or any(f["id"] == workflow_id for f in self.finished)

    def _forget(self, run: Run) -> None:
        """Keep only a finished workflow's summary and its share of the statistics."""
        del self.runs[run.label]
        self.finished_count += 1
        self.flowtime_sum += run.flowtime
        self.finished.append(self._describe(run))

    @staticmethod
    def _describe(run: Run) -> dict[str, Any]:
        return {"uid": run.uid, "id": run.label, "name": run.wf.name, "arrival": run.arrival,
                "tasks": run.wf.n, "finished_tasks": run.wf.n - run.left,
                "flowtime": run.flowtime if run.left == 0 else None}

    def _requeue(self, vm: int, head_running: bool = False) -> None:
        """Re-project the VM's FIFO queue from now: the next task starts when this one really
        finished, not when it was projected to (``head_running``: the first task of the queue
        has started and runs on, to its projected finish or, if that has passed, from now)."""
        t = self.state.now
        self.state._fold(vm)
        for run, task, start, end, moved in list(self._queue_times(vm, t, head_running)):
            if moved:
                run.start[task] = start
                run.finish[task] = end
            t = end
        self.state.vm_free[vm] = t

    def snapshot(self) -> dict[str, Any]:
        """What the session knows now: time, VM queues, the unfinished workflows and the
        latest finished ones (in arrival order), the finished count and mean flowtime."""
        st = self.state
        listed = sorted([*self.finished, *map(self._describe, self.runs.values())],
                        key=lambda w: w["uid"])
        return {
            "now": st.now, "policy": self.policy.name, "seed": self.seed, "events": self.events,
            "decisions": self.decisions,
            "vms": [{"vm": m, "vcpus": float(st.vm_speed[m]),
                     "free_at": float(max(st.vm_free[m], st.now)),
                     "queue": [f"{r.label}/{r.wf.ids[t]}" for r, t in st.vm_queue[m]]}
                    for m in range(st.m)],
            "workflows": [{k: v for k, v in w.items() if k != "uid"} for w in listed],
            "finished_workflows": self.finished_count,
            "unfinished_tasks": self.live_tasks,
            "mean_flowtime": (self.flowtime_sum / self.finished_count
                              if self.finished_count else None),
        }
