"""A slow look-ahead teacher for GOODRL: one-step rollouts of HEFT over sampled futures.

HEFT-style earliest-finish assignment reaches each classic workflow's critical-path bound when
the workflow runs alone (but Montage, wider than the fastest VMs:
benchmarks/results/scheduling.md), so nearly everything a learned policy can
gain comes from workflows getting in each other's way: a task that has slack should not take
the fast VM a workflow arriving a minute later will need. Imitating HEFT cannot learn that; a
teacher that looks ahead can.

For one decision the teacher tries every distinct VM (same speed and same free time count
once), continues the active workflows plus a few sampled future arrivals (Poisson at the
stream's rate, templates uniform, the same samples for every candidate) with HEFT to the end,
and keeps the VM with the least total flowtime; ties keep HEFT's choice. At 8 samples × 3
arrivals it costs ~17 ms a decision on one core, far too slow to serve but cheap enough to label
tens of thousands of training states. Measured on the validation streams (100 workflows,
seed 1000): −0.2 % mean flowtime against HEFT on 6×4 at 5.4/h, −1.0 % at 9/h, −0.5 % on 5×5
at 9/h.

With ``threshold`` the teacher leaves HEFT only when the departure saves at least that many
seconds of Σ flowtime per sampled future. Measured 2026-12-01 (100 workflows, seed 1000,
8 × 3 futures): at 10 s it departs 12 times in 2,861 decisions on 6×4 at 9/h for −0.80 %
(−1.19 % with 274 departures at 0 s), 26 times on 5×5 at 9/h for −0.66 % (−0.40 % at 0 s): the
gain sits in a few large decisions (a long Sipht or Inspiral task with slack handed a slower
VM so the fast ones stay free), and the labels are far less noisy.

That pattern is now a rule of its own, ``heft_slack`` (solvers/scheduling/heuristics.py). With
``base="heft_slack"`` the teacher starts from the rule's choice and its rollouts follow the rule
(``slack_rollout``). Measured 2026-12-02 (100 workflows, seed 1000, 8 × 3 futures, against the
rule itself): at threshold 10 s −0.07 % on 6×4 at 9/h (5 departures in 2,861 decisions) and
−0.25 % on 5×5 at 9/h (7); at 0 s +0.10 % (245 departures) and −0.03 % (269). The rule takes
nearly everything this look-ahead finds.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

import numpy as np

from solvers.scheduling.heuristics import HEFT, SLACK_MIN_SECONDS, SLACK_STEPS, slack_choices
from solvers.scheduling.simulator import ASSIGNED, READY, ClusterState, Run
from solvers.scheduling.workflow import Workflow


class _Template:
    """A workflow as plain lists, for the rollout's inner loop."""

    def __init__(self, wf: Workflow) -> None:
        self.n = wf.n
        self.sizes: list[float] = wf.sizes.tolist()
        self.children: list[list[int]] = [list(c) for c in wf.children]
        self.n_parents: list[int] = wf.n_parents.tolist()
        self.rank: list[float] = (wf.sizes + wf.tail_path).tolist()
        self.tail: list[float] = wf.tail_path.tolist()
        self.roots: list[int] = [int(r) for r in wf.roots]


_ARRIVE, _FINISH = 0, 1


def _next_events(runs: dict[int, list], heap: list[tuple], ready: list[tuple[int, int]]
                 ) -> tuple[float, float]:
    """Handle every event at the earliest time (arrivals, finishes), appending the tasks they
    make ready; returns that time and the flowtimes of the workflows it completed. A run with a
    fifth entry (its queued tasks' finishes, ``slack_rollout``) forgets a finished task there."""
    now = heap[0][0]
    done = 0.0
    while heap and heap[0][0] == now:
        _, _, kind, key, t = heapq.heappop(heap)
        r = runs[key]
        if kind == _ARRIVE:
            ready.extend((key, c) for c in r[0].roots)
            continue
        if len(r) > 4:
            r[4].pop(t, None)
        r[3] -= 1
        if r[3] == 0:
            done += now - r[2]
        pending = r[1]
        for c in r[0].children[t]:
            pending[c] -= 1
            if pending[c] == 0:
                ready.append((key, c))
    return now, done


def heft_rollout(speeds: list[float], vm_free: list[float], now: float,
                 runs: dict[int, list], heap: list[tuple], ready: list[tuple[int, int]]
                 ) -> float:
    """Run HEFT to the end; ``runs[key] = [template, pending, arrival, tasks left]``, ``heap``
    holds pending finishes and arrivals, ``ready`` the tasks ready now. Returns Σ flowtimes of
    the workflows that complete (all of them)."""
    m = len(speeds)
    total = 0.0
    seq = 1 << 40
    while True:
        if ready:
            if len(ready) > 1:
                ready.sort(key=lambda kt: -runs[kt[0]][0].rank[kt[1]])
            for key, t in ready:
                size = runs[key][0].sizes[t]
                best, best_vm = math.inf, 0
                for v in range(m):
                    a = vm_free[v]
                    f = (a if a > now else now) + size / speeds[v]
                    if f < best - 1e-9:
                        best, best_vm = f, v
                vm_free[best_vm] = best
                seq += 1
                heapq.heappush(heap, (best, seq, _FINISH, key, t))
            ready = []
        if not heap:
            return total
        now, done = _next_events(runs, heap, ready)
        total += done


def slack_rollout(speeds: list[float], vm_free: list[float], now: float,
                  runs: dict[int, list], heap: list[tuple], ready: list[tuple[int, int]],
                  min_seconds: float = SLACK_MIN_SECONDS, steps: int = SLACK_STEPS) -> float:
    """``heft_rollout`` with the slack rule (heuristics.HEFTSlack) choosing the VMs;
    ``runs[key]`` also holds, fifth, a dict of its queued tasks' finish times."""
    m = len(speeds)
    vmax = max(speeds)
    kinds = sorted(set(speeds))
    total = 0.0
    seq = 1 << 40
    while True:
        if ready:
            if len(ready) > 1:
                ready.sort(key=lambda kt: -runs[kt[0]][0].rank[kt[1]])
            for i, (key, t) in enumerate(ready):
                r = runs[key]
                tpl = r[0]
                size = tpl.sizes[t]
                fin = [(a if a > now else now) + size / sp for a, sp in zip(vm_free, speeds,
                                                                           strict=True)]
                best = min(fin)
                eft = [v for v in range(m) if fin[v] <= best + 1e-6]
                choice = eft[0]
                if size / vmax >= min_seconds:
                    end = now
                    for k2, t2 in ready[i:]:
                        if k2 == key:
                            end = max(end, now + tpl.rank[t2] / vmax)
                    for t2, f2 in r[4].items():
                        end = max(end, f2 + tpl.tail[t2] / vmax)
                    lf = end - tpl.tail[t] / vmax
                    fastest = max(speeds[v] for v in eft)
                    floor = kinds[max(0, kinds.index(fastest) - steps)]
                    ok = [v for v in range(m) if fin[v] <= lf + 1e-6 and speeds[v] >= floor]
                    if ok:
                        slow = min(speeds[v] for v in ok)
                        choice = min((v for v in ok if speeds[v] <= slow + 1e-9),
                                     key=lambda v: fin[v])
                vm_free[choice] = fin[choice]
                r[4][t] = fin[choice]
                seq += 1
                heapq.heappush(heap, (fin[choice], seq, _FINISH, key, t))
            ready = []
        if not heap:
            return total
        now, done = _next_events(runs, heap, ready)
        total += done


def equivalent_vms(state: ClusterState, vm: int) -> np.ndarray:
    """VMs indistinguishable from ``vm`` right now (same speed, same start time)."""
    avail = state.available()
    return ((state.vm_speed == state.vm_speed[vm])
            & (np.abs(avail - avail[vm]) <= 1e-6))


class Lookahead(HEFT):
    """The teacher policy (HEFT task order, look-ahead VM choice)."""

    name = "lookahead"

    def __init__(self, templates: Sequence[Workflow], rate_per_hour: float, samples: int = 8,
                 arrivals: int = 3, seed: int = 0, threshold: float = 0.0,
                 base: str = "heft") -> None:
        super().__init__()
        if base not in ("heft", "heft_slack"):
            raise ValueError(f"base must be heft or heft_slack, not {base!r}")
        self.base = base  # the rule whose choice comes first and that the rollouts follow
        self.by_id = {id(w): _Template(w) for w in templates}
        self.mix = [self.by_id[id(w)] for w in templates]
        self.rate = rate_per_hour / 3600.0
        self.samples, self.arrivals = samples, arrivals
        self.future_rng = np.random.default_rng(seed)
        self.threshold = threshold  # s of Σ flowtime per future a departure must save
        self.decisions = 0
        self.deviations = 0  # decisions where the teacher left HEFT's choice

    def _template(self, wf: Workflow) -> _Template:
        tpl = self.by_id.get(id(wf))
        if tpl is None:
            tpl = self.by_id[id(wf)] = _Template(wf)
        return tpl

    def choose(self, state: ClusterState, run: Run, task: int) -> int:
        self.decisions += 1
        now = state.now
        speeds = state.vm_speed.tolist()
        avail = state.available()
        finish = avail + run.wf.sizes[task] / state.vm_speed
        distinct: dict[tuple[float, float], int] = {}
        for v in np.argsort(finish, kind="stable").tolist():
            distinct.setdefault((speeds[v], round(float(avail[v]), 6)), v)
        candidates = list(distinct.values())  # HEFT's choice first
        if self.base == "heft_slack":
            first = int(np.flatnonzero(slack_choices(state, run, task))[0])
            key = (speeds[first], round(float(avail[first]), 6))
            candidates.remove(distinct[key])
            candidates.insert(0, first)
        rollout = slack_rollout if self.base == "heft_slack" else heft_rollout
        if len(candidates) == 1:
            return candidates[0]
        base: dict[int, tuple] = {}
        events: list[tuple] = []
        ready: list[tuple[int, int]] = []
        for uid, r in state.active.items():
            queued = {t: float(r.finish[t]) for t in np.flatnonzero(r.status == ASSIGNED)
                      .tolist()}
            base[uid] = (self._template(r.wf), r.pending.tolist(), r.arrival, r.left, queued)
            for t, f in queued.items():
                events.append((f, 0, _FINISH, uid, t))
            for t in np.flatnonzero(r.status == READY).tolist():
                if not (r is run and t == task):
                    ready.append((uid, t))
        futures = []
        for _ in range(self.samples):
            gaps = self.future_rng.exponential(1.0, self.arrivals) / self.rate
            kinds = self.future_rng.integers(0, len(self.mix), self.arrivals)
            futures.append(list(zip((now + np.cumsum(gaps)).tolist(), kinds.tolist(),
                                    strict=True)))
        size = float(run.wf.sizes[task])
        costs = []
        for v in candidates:
            cost = 0.0
            for future in futures:
                runs = {k: [b[0], list(b[1]), b[2], b[3], dict(b[4])] for k, b in base.items()}
                heap = list(events)
                vm_free = state.vm_free.tolist()
                done = max(now, vm_free[v]) + size / speeds[v]
                vm_free[v] = done
                heap.append((done, 0, _FINISH, run.uid, task))
                runs[run.uid][4][task] = done
                for j, (t_arr, k) in enumerate(future):
                    tpl = self.mix[k]
                    runs[-1 - j] = [tpl, list(tpl.n_parents), t_arr, tpl.n, {}]
                    heap.append((t_arr, j, _ARRIVE, -1 - j, -1))
                heapq.heapify(heap)
                cost += rollout(speeds, vm_free, now, runs, heap, list(ready))
            costs.append(cost)
        best = int(np.argmin(costs))
        if costs[0] <= costs[best] + max(1e-6, self.threshold * self.samples):
            return candidates[0]
        self.deviations += 1
        return candidates[best]
