"""Independent checks of workflow schedules, apart from the simulator on purpose.

The simulator keeps its rules (parents first, one task at a time per VM in FIFO order,
``runtime × 16 / vCPUs`` seconds a task) only because it is built that way, and its reported
mean flowtime, makespan and utilization come from its own bookkeeping. This module reads only
the workflow templates' definitions (task runtimes and parents), the VMs' vCPUs and a recorded
schedule, and recomputes everything from them; it imports nothing of the simulator, so a bug
there cannot hide here. Each check returns human-readable violations; none means the schedule
is valid and the reported numbers are its own.

* ``check_schedule``: a simulated stream's whole schedule (``simulate(..., record=True)``),
  optionally against the arrival stream recomputed from its seed (``expected_stream``).
* ``AssignmentLedger``: an online session's answers, one assignment at a time, against the
  arrivals and finishes the caller reported.

Times are compared with a relative tolerance of 1e-12 (plus 1e-9 s): the simulator's times are
sums of one or two float64 operations, a few ulps apart at most; aggregates (mean flowtime,
utilization) with 1e-9.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from solvers.scheduling.workflow import SIZE_FACTOR, Workflow

REL_TOL = 1e-12
ABS_TOL = 1e-9
#: Relative tolerance on the reported aggregates (summed in another order than recomputed).
AGG_TOL = 1e-9
_MAX_LISTED = 5


def _tol(t: np.ndarray | float) -> np.ndarray | float:
    return ABS_TOL + REL_TOL * np.abs(t)


def _listed(items: Sequence[str], total: int) -> str:
    more = "" if total <= len(items) else f" and {total - len(items)} more"
    return ", ".join(items) + more


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


@dataclass(frozen=True)
class ScheduleCheck:
    """What the checker found and recomputed; ``ok`` when nothing is wrong."""

    violations: list[str]
    workflows: int
    tasks: int
    mean_flowtime: float
    makespan: float
    utilization: float

    @property
    def ok(self) -> bool:
        return not self.violations


def expected_stream(n_templates: int, count: int, rates: Sequence[float], seed: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(arrival times, template index per workflow) of the stream a seed defines, from the
    model's definition: templates drawn uniformly, then Poisson arrivals (exponential gaps at
    the rate of the stream's equal consecutive segment, workflows per hour), the first at 0.
    Written apart from ``simulator.make_stream`` so that a stream it changed is noticed."""
    rng = np.random.default_rng(seed)
    kinds = rng.integers(0, n_templates, count)
    segment = np.minimum(np.arange(count) * len(rates) // count, len(rates) - 1)
    gaps = rng.exponential(1.0, count) / (np.asarray(rates, dtype=np.float64)[segment] / 3600.0)
    gaps[0] = 0.0
    return np.cumsum(gaps), kinds


def _as_table(rows: Sequence[Sequence[float]], width: int) -> np.ndarray:
    """Records as a float64 (n, width) array, built without a Python loop per value."""
    flat = np.fromiter(itertools.chain.from_iterable(rows), np.float64, count=width * len(rows))
    return flat.reshape(len(rows), width)


def _integral(col: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Where a column holds an integer in [lo, hi)."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(col) & (col == np.floor(col)) & (col >= lo) & (col < hi)


def check_schedule(templates: Sequence[Workflow], vcpus: Sequence[float],
                   workflows: Sequence[Sequence[float]], tasks: Sequence[Sequence[float]], *,
                   reported: Mapping[str, Any] | None = None,
                   stream: tuple[np.ndarray, np.ndarray] | None = None) -> ScheduleCheck:
    """Check a recorded schedule and recompute its statistics.

    ``workflows``: (workflow uid, template index, arrival, finish) per finished workflow;
    ``tasks``: (workflow uid, task index, vm, ready, start, finish) per decision, in decision
    order (the simulator's record). ``stream``: the arrivals and templates the stream should
    have had (``expected_stream``), so that a workflow missing from the record is noticed;
    without it the recorded workflows are the ones that arrived. ``reported``: the numbers
    the simulator reported (``mean_flowtime``, ``makespan``, ``utilization``, ``workflows``),
    compared with the recomputed ones.
    """
    problems: list[str] = []
    speeds = np.asarray(vcpus, dtype=np.float64)
    m = len(speeds)
    W = _as_table(workflows, 4) if len(workflows) else np.zeros((0, 4))
    T = _as_table(tasks, 6) if len(tasks) else np.zeros((0, 6))
    rec = _check_workflows(templates, W, stream, problems)
    T, g, vm = _check_task_rows(rec, T, m, problems)
    ready = np.full(rec.total, math.nan)
    start = np.full(rec.total, math.nan)
    finish = np.full(rec.total, math.nan)
    ready[g], start[g], finish[g] = T[:, 3], T[:, 4], T[:, 5]
    duration = _check_durations(rec, T, g, speeds[vm], problems)
    due = _check_precedence(rec, ready, start, finish, problems)
    _check_queues(rec, g, vm, T, due, problems)

    # -- flowtimes, makespan, utilization, recomputed ---------------------------------------
    last = (np.fmax.reduceat(finish, rec.offset[:-1]) if rec.total else np.zeros(0))
    wrong_finish = np.flatnonzero(~(np.abs(rec.finish - last) <= _tol(last)))
    if wrong_finish.size:
        problems.append(f"{_count(wrong_finish.size, 'workflow')} whose recorded finish is not "
                        "its last task's: " + _listed(
                            [f"{rec.uids[w]}: {rec.finish[w]:g} s, not {last[w]:g} s"
                             for w in wrong_finish[:_MAX_LISTED]], wrong_finish.size))
    flow = last - rec.arrival
    mean_flowtime = float(flow.mean()) if len(flow) else math.nan
    makespan = float(np.nanmax(last)) if len(last) else 0.0
    busy = float(duration.sum())
    utilization = busy / (m * makespan) if makespan > 0 else 0.0
    if reported is not None:
        _compare(problems, reported, len(rec.uids), mean_flowtime, makespan, utilization)
    return ScheduleCheck(problems, len(rec.uids), len(T), mean_flowtime, makespan, utilization)


@dataclass(frozen=True, eq=False)
class _Recorded:
    """The recorded workflows sorted by uid, and a global index for each of their tasks:
    ``offset[w] + task``."""

    templates: Sequence[Workflow]
    uids: np.ndarray
    kinds: np.ndarray
    arrival: np.ndarray
    finish: np.ndarray
    #: tasks per recorded workflow, and where each workflow's tasks start in the global index
    n_w: np.ndarray
    offset: np.ndarray
    total: int
    wrow_of_g: np.ndarray

    def name(self, g: int) -> str:
        w = int(self.wrow_of_g[g])
        task = self.templates[self.kinds[w]].ids[g - self.offset[w]]
        return f"{task!r} of workflow {self.uids[w]}"


def _check_workflows(templates: Sequence[Workflow], W: np.ndarray,
                     stream: tuple[np.ndarray, np.ndarray] | None,
                     problems: list[str]) -> _Recorded:
    """The workflow records: known templates, each workflow once, and the stream's arrivals."""
    w_ok = _integral(W[:, 0], 0, 2**53) & _integral(W[:, 1], 0, len(templates))
    if not w_ok.all():
        bad = np.flatnonzero(~w_ok)
        problems.append(f"{_count(bad.size, 'workflow record')} with an unknown uid or template: "
                        + _listed([str(W[i, :2].tolist()) for i in bad[:_MAX_LISTED]], bad.size))
        W = W[w_ok]
    uids = W[:, 0].astype(np.int64)
    kinds = W[:, 1].astype(np.int64)
    arrival = W[:, 2]
    order = np.argsort(uids, kind="stable")
    uids, kinds, arrival, w_finish = uids[order], kinds[order], arrival[order], W[order, 3]
    repeated = uids[1:][uids[1:] == uids[:-1]]
    if repeated.size:
        problems.append(f"{_count(repeated.size, 'workflow')} recorded more than once: "
                        + _listed([str(u) for u in repeated[:_MAX_LISTED]], repeated.size))
    if stream is not None:
        _check_stream(uids, kinds, arrival, stream, problems)
    ns = np.array([w.n for w in templates], dtype=np.int64)
    n_w = ns[kinds]
    offset = np.concatenate([[0], np.cumsum(n_w)])
    return _Recorded(templates=templates, uids=uids, kinds=kinds, arrival=arrival,
                     finish=w_finish, n_w=n_w, offset=offset, total=int(offset[-1]),
                     wrow_of_g=np.repeat(np.arange(len(uids)), n_w))


def _check_stream(uids: np.ndarray, kinds: np.ndarray, arrival: np.ndarray,
                  stream: tuple[np.ndarray, np.ndarray], problems: list[str]) -> None:
    """Every workflow of the stream recorded, none other, each of its template and arrival."""
    times, stream_kinds = stream
    count = len(times)
    missing = np.setdiff1d(np.arange(count), uids)
    if missing.size:
        problems.append(f"{_count(missing.size, 'workflow')} arrived but not in the schedule "
                        "(never finished): " + _listed(
                            [str(u) for u in missing[:_MAX_LISTED]], missing.size))
    inside = uids < count
    if not inside.all():
        extra = uids[~inside]
        problems.append(f"{_count(extra.size, 'workflow')} in the schedule never arrived: "
                        + _listed([str(u) for u in extra[:_MAX_LISTED]], extra.size))
    at = uids[inside]
    wrong_kind = at[kinds[inside] != stream_kinds[at]]
    if wrong_kind.size:
        problems.append(f"{_count(wrong_kind.size, 'workflow')} of another template than "
                        "the stream's: " + _listed(
                            [str(u) for u in wrong_kind[:_MAX_LISTED]], wrong_kind.size))
    off = np.abs(arrival[inside] - times[at]) > _tol(times[at])
    if off.any():
        shown = [f"{u} at {a:g} s, not {times[u]:g} s"
                 for u, a in zip(at[off][:_MAX_LISTED].tolist(),
                                 arrival[inside][off][:_MAX_LISTED].tolist(), strict=True)]
        problems.append(f"{_count(int(off.sum()), 'workflow')} recorded with another "
                        "arrival than the stream's: " + _listed(shown, int(off.sum())))


def _check_task_rows(rec: _Recorded, T: np.ndarray, m: int, problems: list[str]
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The task rows: each of a recorded workflow's task, on a VM of the pool, and every task
    exactly once. (rows that name a task and a VM, their global task index, their VM)."""
    uids, n_w, offset = rec.uids, rec.n_w, rec.offset
    pos = np.minimum(np.searchsorted(uids, T[:, 0]), max(len(uids) - 1, 0))
    known = (_integral(T[:, 0], 0, 2**53) & (uids[pos] == T[:, 0]) if len(uids)
             else np.zeros(len(T), bool))
    known &= _integral(T[:, 1], 0, 2**31)
    known[known] &= T[known, 1] < n_w[pos[known]]
    if not known.all():
        bad = np.flatnonzero(~known)
        problems.append(f"{_count(bad.size, 'scheduled task')} of no recorded workflow "
                        "(unknown workflow or task index): " + _listed(
                            [f"row {i}: {T[i, :2].tolist()}" for i in bad[:_MAX_LISTED]],
                            bad.size))
    vm_ok = _integral(T[:, 2], 0, m)
    if not vm_ok.all():
        bad = np.flatnonzero(~vm_ok)
        problems.append(f"{_count(bad.size, 'task')} on a VM index out of range [0, {m - 1}]: "
                        + _listed([f"row {i}: vm {T[i, 2]:g}" for i in bad[:_MAX_LISTED]],
                                  bad.size))
    g_known = offset[pos[known]] + T[known, 1].astype(np.int64)
    counts = np.bincount(g_known, minlength=rec.total)
    for what, idx in (("never scheduled", np.flatnonzero(counts == 0)),
                      ("scheduled more than once", np.flatnonzero(counts > 1))):
        if idx.size:
            problems.append(f"{_count(idx.size, 'task')} {what}: "
                            + _listed([rec.name(int(i)) for i in idx[:_MAX_LISTED]], idx.size))
    good = known & vm_ok
    if not good.all():  # the rest is timed on the rows that name a task and a VM
        T, pos = T[good], pos[good]
    g = offset[pos] + T[:, 1].astype(np.int64)
    return T, g, T[:, 2].astype(np.int64)


def _check_durations(rec: _Recorded, T: np.ndarray, g: np.ndarray, speed: np.ndarray,
                     problems: list[str]) -> np.ndarray:
    """Each task's finish − start against runtime × 16 / vCPUs of its VM (``speed`` per row);
    the durations, per row."""
    runtime_g = (np.concatenate([rec.templates[k].runtimes for k in rec.kinds])
                 if len(rec.kinds) else np.zeros(0))
    duration = runtime_g[g] * SIZE_FACTOR / speed
    took = T[:, 5] - T[:, 4]
    off = ~(np.abs(took - duration) <= _tol(T[:, 5]))
    if off.any():
        shown = [f"{rec.name(int(j))} took {t:g} s, not {d:g} s" for j, t, d in zip(
            g[off][:_MAX_LISTED], took[off][:_MAX_LISTED], duration[off][:_MAX_LISTED],
            strict=True)]
        problems.append(f"{_count(int(off.sum()), 'task')} whose finish − start is not runtime "
                        "× 16 / vCPUs of its VM: " + _listed(shown, int(off.sum())))
    return duration


def _check_precedence(rec: _Recorded, ready: np.ndarray, start: np.ndarray,
                      finish: np.ndarray, problems: list[str]) -> np.ndarray:
    """No task before its workflow arrives, none before its parents finish, and each ready
    time the last parent's finish; the time each task was due (per global task index)."""
    name = rec.name
    arrival_g = np.repeat(rec.arrival, rec.n_w)
    early = np.flatnonzero(start < arrival_g - _tol(arrival_g))
    if early.size:
        problems.append(f"{_count(early.size, 'task')} started before its workflow arrived: "
                        + _listed([f"{name(int(j))} at {start[j]:g} s < {arrival_g[j]:g} s"
                                   for j in early[:_MAX_LISTED]], early.size))
    parent, child = _edges(rec.templates, rec.kinds, rec.offset)
    before = start[child] < finish[parent] - _tol(finish[parent])
    if before.any():
        idx = np.flatnonzero(before)
        problems.append(f"{_count(idx.size, 'task')} started before a parent finished: "
                        + _listed([f"{name(int(child[e]))} at {start[child[e]]:g} s, its "
                                   f"parent {name(int(parent[e]))} finished at "
                                   f"{finish[parent[e]]:g} s" for e in idx[:_MAX_LISTED]],
                                  idx.size))
    # ready: when the last parent finished (the arrival for a root), the decision's time
    due = arrival_g.copy()
    with np.errstate(invalid="ignore"):  # a missing parent's nan (reported above) spreads
        np.maximum.at(due, child, finish[parent])
    late_ready = np.flatnonzero(np.abs(ready - due) > _tol(due))
    if late_ready.size:
        problems.append(f"{_count(late_ready.size, 'task')} whose recorded ready time is not "
                        "its last parent's finish (its arrival for a root): " + _listed(
                            [f"{name(int(j))} {ready[j]:g} s, not {due[j]:g} s"
                             for j in late_ready[:_MAX_LISTED]], late_ready.size))
    return due


def _check_queues(rec: _Recorded, g: np.ndarray, vm: np.ndarray, T: np.ndarray,
                  due: np.ndarray, problems: list[str]) -> None:
    """Each VM: its FIFO queue in decision order, one task at a time, no idle wait."""
    name = rec.name
    by_vm = np.argsort(vm, kind="stable")  # decision order within each VM
    q_g, q_vm, q_start, q_finish = g[by_vm], vm[by_vm], T[by_vm, 4], T[by_vm, 5]
    same = q_vm[1:] == q_vm[:-1]
    prev_finish = np.where(same, q_finish[:-1], -np.inf)
    overlap = same & (q_start[1:] < prev_finish - _tol(prev_finish))
    if overlap.any():
        idx = np.flatnonzero(overlap)
        problems.append(f"{_count(idx.size, 'task')} started on a VM before the task queued "
                        "ahead of it finished (two at once, or out of FIFO order): " + _listed(
                            [f"{name(int(q_g[i + 1]))} at {q_start[i + 1]:g} s on VM "
                             f"{q_vm[i + 1]}, behind {name(int(q_g[i]))} until "
                             f"{q_finish[i]:g} s" for i in idx[:_MAX_LISTED]], idx.size))
    can_start = np.maximum(due[q_g], np.concatenate([[-np.inf], prev_finish]))
    idle = np.flatnonzero(q_start > can_start + _tol(can_start))
    if idle.size:
        problems.append(f"{_count(idle.size, 'task')} started later than its VM and parents "
                        "allowed (the VM idled while it waited): " + _listed(
                            [f"{name(int(q_g[i]))} at {q_start[i]:g} s, could at "
                             f"{can_start[i]:g} s" for i in idle[:_MAX_LISTED]], idle.size))


def _edges(templates: Sequence[Workflow], kinds: np.ndarray, offset: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray]:
    """(parent, child) global task indices of every dependency of every recorded workflow,
    from the templates' ``parents`` lists (the definition, not the derived children)."""
    parents: list[np.ndarray] = [np.zeros(0, np.int64)]
    children: list[np.ndarray] = [np.zeros(0, np.int64)]
    for k, wf in enumerate(templates):
        at = offset[:-1][kinds == k]
        if not at.size:
            continue
        p = np.array([p for c in range(wf.n) for p in wf.parents[c]], dtype=np.int64)
        c = np.array([c for c in range(wf.n) for _ in wf.parents[c]], dtype=np.int64)
        parents.append((at[:, None] + p[None, :]).ravel())
        children.append((at[:, None] + c[None, :]).ravel())
    return np.concatenate(parents), np.concatenate(children)


def _compare(problems: list[str], reported: Mapping[str, Any], workflows: int,
             mean_flowtime: float, makespan: float, utilization: float) -> None:
    """The simulator's numbers against the recomputed ones."""
    if "workflows" in reported and reported["workflows"] != workflows:
        problems.append(f"reported {reported['workflows']} finished workflows; the schedule "
                        f"holds {workflows}")
    for key, mine in (("mean_flowtime", mean_flowtime), ("makespan", makespan),
                      ("utilization", utilization)):
        if key not in reported:
            continue
        theirs = reported[key]
        same = (theirs is not None and ((math.isnan(theirs) and math.isnan(mine))
                                        or abs(theirs - mine) <= AGG_TOL * max(1.0, abs(mine))))
        if not same:
            problems.append(f"reported {key.replace('_', ' ')} {theirs!r}; recomputed from the "
                            f"schedule {mine!r}")


class RecordedResult(Protocol):
    """What ``check_result`` reads of a simulation's result (``simulator.SimResult``)."""

    schedule: list[tuple[int, int, int, float, float, float]] | None
    workflows: list[tuple[int, int, float, float]] | None

    def summary(self) -> dict[str, Any]: ...


def check_result(templates: Sequence[Workflow], vcpus: Sequence[float], result: RecordedResult,
                 stream: tuple[np.ndarray, np.ndarray] | None = None) -> ScheduleCheck:
    """``check_schedule`` on a recorded simulation, its reported numbers compared."""
    if result.schedule is None or result.workflows is None:
        raise ValueError("the schedule was not recorded (simulate(..., record=True))")
    summary = result.summary()
    reported = {k: summary[k] for k in ("mean_flowtime", "makespan", "utilization",
                                        "workflows")}
    return check_schedule(templates, vcpus, result.workflows, result.schedule,
                          reported=reported, stream=stream)


# -- online sessions -----------------------------------------------------------------------------
@dataclass(eq=False)
class _Arrival:
    wf: Workflow
    time: float
    # Python lists, not arrays: read one item per answer, they are several times faster
    runtimes: list[float] = field(init=False)
    finished: list[float] = field(init=False)  # finish time reported per task (nan: not yet)
    answered: bytearray = field(init=False)  # an assignment was answered for the task
    left: int = field(init=False)

    def __post_init__(self) -> None:
        self.runtimes = self.wf.runtimes.tolist()
        self.finished = [math.nan] * self.wf.n
        self.answered = bytearray(self.wf.n)
        self.left = self.wf.n


class AssignmentLedger:
    """A session's answers checked against what its caller reported, apart from the session's
    own state: each answered assignment names an arrived, unfinished workflow's task that was
    not assigned before and whose parents were all reported finished, a VM of the pool with
    its vCPUs, and a projected finish − start of runtime × 16 / vCPUs, starting no earlier
    than the event that made it ready. A workflow is forgotten once all its tasks finished."""

    def __init__(self, vcpus: Sequence[float]) -> None:
        self.vcpus = [float(v) for v in vcpus]
        self.runs: dict[str, _Arrival] = {}
        self.checked = 0  # assignments checked so far

    def arrived(self, workflow_id: str, wf: Workflow, time: float) -> None:
        self.runs[workflow_id] = _Arrival(wf, time)

    def finished(self, workflow_id: str, task: int, time: float) -> list[str]:
        """Record a reported finish; a finish of a task never answered is a violation."""
        run = self.runs.get(workflow_id)
        if run is None or not run.answered[task] or not math.isnan(run.finished[task]):
            return [f"task {task} of workflow {workflow_id!r} finished, but it was not an "
                    "assigned, unfinished task"]
        run.finished[task] = time
        run.left -= 1
        if run.left == 0:
            del self.runs[workflow_id]
        return []

    def check(self, workflow_id: str, task: int, task_id: str, vm: Any, vcpus: float,
              start: float, finish: float, now: float) -> list[str]:
        """The violations of one answered assignment (none: it is recorded as answered)."""
        self.checked += 1
        def what() -> str:  # built only for a violation: this runs on every answer
            return f"assignment of task {task_id!r} of workflow {workflow_id!r}"

        run = self.runs.get(workflow_id)
        if run is None:
            return [f"{what()}: no such unfinished workflow arrived"]
        wf = run.wf
        if not 0 <= task < wf.n or wf.ids[task] != task_id:
            return [f"{what()}: the workflow has no such task"]
        problems: list[str] = []
        if run.answered[task]:
            problems.append(f"{what()}: the task was assigned before")
        waiting = [wf.ids[p] for p in wf.parents[task] if math.isnan(run.finished[p])]
        if waiting:
            problems.append(f"{what()}: not ready, parents {waiting[:_MAX_LISTED]} have not "
                            "finished")
        if not (isinstance(vm, (int, np.integer)) and 0 <= vm < len(self.vcpus)):
            problems.append(f"{what()}: VM index {vm!r} out of range [0, {len(self.vcpus) - 1}]")
            return problems
        speed = self.vcpus[vm]
        if vcpus != speed:
            problems.append(f"{what()}: VM {vm} has {speed:g} vCPUs, the answer says {vcpus:g}")
        duration = run.runtimes[task] * SIZE_FACTOR / speed
        if not abs((finish - start) - duration) <= ABS_TOL + REL_TOL * abs(finish):
            problems.append(f"{what()}: projected to take {finish - start:g} s on VM {vm}, not "
                            f"runtime × 16 / vCPUs = {duration:g} s")
        earliest = max([run.time, now, *(run.finished[p] for p in wf.parents[task])])
        if not start >= earliest - ABS_TOL - REL_TOL * abs(earliest):
            problems.append(f"{what()}: projected to start at {start:g} s, before {earliest:g} s "
                            "(now, its arrival or a parent's finish)")
        if not problems:
            run.answered[task] = 1
        return problems
