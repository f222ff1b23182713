"""Heuristic VM-selection rules, correctly timed, plus the published stale-time variants.

Correct rules take a VM's start time as ``max(now, vm_free)``. The ``*_stale`` rules reproduce
the GOODRL/DWS-Testbed baselines, whose "VM latest time" of an idle VM is its last finish time
(in the past): they prefer VMs that have been idle longest, even slow ones, which is why the
published "HEFT" is ~40 % worse than a correct earliest-finish-time rule (research note §4c).

* ``est``: earliest start (available) time.        ``est_stale``: the published EST.
* ``eft``: earliest finish time.                    ``eft_stale``: the published "HEFT".
* ``peft``: finish time + the critical path after the task at that VM's speed (an optimistic
  look-ahead, the published PEFT's rule).           ``peft_stale``: the published PEFT.
* ``heft``: HEFT-style: ready tasks at the same instant go in descending upward rank, each to
  its earliest-finish VM (no insertion: queues are FIFO).
* ``round_robin``, ``random``.

Ties go to a seeded random choice among the tied VMs, as in the original code.
"""

from __future__ import annotations

import numpy as np

from solvers.scheduling.simulator import ClusterState, Run


class _Rule:
    name = "rule"
    description = ""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)

    def reset(self, state: ClusterState, seed: int) -> None:
        self.rng = np.random.default_rng(seed + 7919)

    def _argmin(self, score: np.ndarray) -> int:
        best = score.min()
        tied = np.flatnonzero(score <= best + 1e-6)  # seconds: ties do not depend on the clock
        if len(tied) == 1:
            return int(tied[0])
        return int(tied[self.rng.integers(len(tied))])


class EST(_Rule):
    name = "est"
    description = "Earliest start time: the VM that can start the task soonest."
    stale = False

    def choose(self, state: ClusterState, run: Run, task: int) -> int:
        return self._argmin(state.vm_free if self.stale else state.available())


class ESTStale(EST):
    name = "est_stale"
    description = "Published EST: an idle VM's start time is its last finish (in the past)."
    stale = True


class EFT(_Rule):
    name = "eft"
    description = "Earliest finish time: max(now, VM free) + run time on the VM."
    stale = False

    def finish_times(self, state: ClusterState, run: Run, task: int) -> np.ndarray:
        start = state.vm_free if self.stale else state.available()
        return start + run.wf.sizes[task] / state.vm_speed

    def choose(self, state: ClusterState, run: Run, task: int) -> int:
        return self._argmin(self.finish_times(state, run, task))


class EFTStale(EFT):
    name = "eft_stale"
    description = ("Published 'HEFT' of GOODRL/DWS-Testbed: EFT with an idle VM's stale "
                   "last-finish time instead of now.")
    stale = True


class PEFT(EFT):
    name = "peft"
    description = "EFT plus the critical path after the task at that VM's speed."

    def choose(self, state: ClusterState, run: Run, task: int) -> int:
        return self._argmin(self.finish_times(state, run, task)
                            + run.wf.tail_path[task] / state.vm_speed)


class PEFTStale(PEFT):
    name = "peft_stale"
    description = "Published PEFT: the PEFT rule with the stale idle time."
    stale = True


class HEFT(EFT):
    name = "heft"
    description = ("HEFT-style: simultaneously ready tasks in descending upward rank, each to "
                   "its earliest-finish VM.")

    def order(self, state: ClusterState, ready: list[tuple[Run, int]]) -> list[tuple[Run, int]]:
        return sorted(ready, key=lambda rt: -(rt[0].wf.sizes[rt[1]] + rt[0].wf.tail_path[rt[1]]))


class RoundRobin(_Rule):
    name = "round_robin"
    description = "VMs in turn, whatever their speed or queue."

    def reset(self, state: ClusterState, seed: int) -> None:
        super().reset(state, seed)
        self.next = 0

    def choose(self, state: ClusterState, run: Run, task: int) -> int:
        vm = self.next % state.m
        self.next = vm + 1
        return vm


class RandomVM(_Rule):
    name = "random"
    description = "A uniformly random VM (seeded)."

    def choose(self, state: ClusterState, run: Run, task: int) -> int:
        return int(self.rng.integers(state.m))


HEURISTICS: dict[str, type[_Rule]] = {
    cls.name: cls for cls in (EST, EFT, PEFT, HEFT, RoundRobin, RandomVM, ESTStale, EFTStale,
                              PEFTStale)}
#: The correctly timed rules a learned policy has to beat.
CORRECT_HEURISTICS = ("est", "eft", "peft", "heft", "round_robin", "random")
STALE_HEURISTICS = ("est_stale", "eft_stale", "peft_stale")
