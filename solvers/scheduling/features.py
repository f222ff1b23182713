"""GOODRL observations: the graph of unfinished tasks and the per-VM view of the candidate.

All times are relative to ``now`` and log-scaled (``log1p(seconds / 10)``), never absolute
clock values: GOODRL's own features used the absolute finish time divided by 50,000, which
drifts out of range on a long stream (research note §2). Every VM-facing time uses the correct
idle time ``max(now, vm_free)``.

An ``Obs`` is plain numpy so that rollouts can be stored cheaply; ``collate`` batches several
into the tensors ``models.goodrl`` reads (graphs concatenated, VMs padded to the widest pool).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from solvers.scheduling.heuristics import latest_finish, slack_choices
from solvers.scheduling.simulator import ASSIGNED, DONE, READY, ClusterState, Run

NODE_FEATURES = 13
VM_FEATURES = 12
GLOBAL_FEATURES = 5
#: Largest graph a decision looks at (the candidate's workflow first, then the newest others).
MAX_NODES = 320
MAX_NEIGHBOURS = 32
_T = 10.0  # seconds: the unit of the log-scaled time features


def _lt(x: np.ndarray | float) -> np.ndarray:
    return np.log1p(np.maximum(x, 0.0) / _T)


@dataclass
class Obs:
    """One decision's state: nodes, edges, the candidate, and one row per VM."""

    x: np.ndarray  # [N, NODE_FEATURES] float32
    edges: np.ndarray  # [2, E] int64, both directions and self-loops
    cand: int
    nbr: np.ndarray  # [K] candidate's DAG neighbours (node indices)
    vm_x: np.ndarray  # [M, VM_FEATURES] float32
    vm_last: np.ndarray  # [M] node index of the last task queued on the VM, or -1
    g: np.ndarray  # [GLOBAL_FEATURES] float32
    regret: np.ndarray  # [M] seconds the VM's finish lies behind the earliest finish
    rule: np.ndarray  # [M] 1 where the slack rule (heuristics.heft_slack) would put the task


def _estimated_finish(state: ClusterState, run: Run) -> np.ndarray:
    """Actual or projected finish per task; unassigned ones by a forward pass at mean speed."""
    wf = run.wf
    est = run.finish.copy()
    now = state.now
    sizes = wf.sizes / state.mean_speed
    for i in wf.order.tolist():
        if run.status[i] < ASSIGNED:
            t = now
            for p in wf.parents[i]:
                if est[p] > t:
                    t = est[p]
            est[i] = t + sizes[i]
    return est


def observe(state: ClusterState, run: Run, task: int, max_nodes: int = MAX_NODES) -> Obs:
    """The observation for deciding where ``task`` of ``run`` goes."""
    now = state.now
    vmax = state.max_speed
    others = sorted((r for r in state.active.values() if r is not run), key=lambda r: -r.arrival)
    runs = [run, *others]
    blocks: list[np.ndarray] = []
    index: dict[int, np.ndarray] = {}  # run uid -> task -> node index (-1 if not a node)
    src: list[np.ndarray] = []
    offset = 0
    for r in runs:
        live = np.flatnonzero(r.status != DONE)
        if offset and offset + len(live) > max_nodes:
            break
        wf = r.wf
        pos = np.full(wf.n, -1, np.int64)
        pos[live] = np.arange(offset, offset + len(live))
        index[r.uid] = pos
        est = _estimated_finish(state, r)
        st = r.status[live]
        f = np.zeros((len(live), NODE_FEATURES), np.float32)
        started = (st == ASSIGNED) & (r.start[live] <= now)
        f[:, 0] = st < READY
        f[:, 1] = st == READY
        f[:, 3] = (st == ASSIGNED) & ~started
        f[:, 4] = started
        f[:, 5] = _lt(wf.sizes[live] / vmax)
        f[:, 6] = _lt(wf.tail_path[live] / vmax)
        f[:, 7] = _lt(wf.descendant_work[live] / vmax)
        f[:, 8] = _lt(est[live] - now)
        vms = r.vm[live]
        f[:, 9] = np.where(vms >= 0, state.vm_speed[np.maximum(vms, 0)] / vmax, 0.0)
        f[:, 10] = r is run
        f[:, 11] = _lt(now - r.arrival)
        f[:, 12] = np.where(st == ASSIGNED, _lt(np.nan_to_num(r.start[live] - now)), 0.0)
        blocks.append(f)
        for i in live.tolist():
            for p in wf.parents[i]:
                if pos[p] >= 0:
                    src.append(np.array([pos[p], pos[i]]))
        offset += len(live)
    x = np.concatenate(blocks)
    cpos = int(index[run.uid][task])
    x[cpos, 1] = 0.0
    x[cpos, 2] = 1.0
    # VM queue chains: running task -> queued 1 -> queued 2 ...
    vm_last = np.full(state.m, -1, np.int64)
    for m, queue in enumerate(state.vm_queue):
        prev = -1
        for r, t in queue:
            pos = index.get(r.uid)
            node = int(pos[t]) if pos is not None else -1
            if node >= 0:
                if prev >= 0:
                    src.append(np.array([prev, node]))
                prev = node
        vm_last[m] = prev
    n = len(x)
    pairs = np.stack(src, 1) if src else np.zeros((2, 0), np.int64)
    loops = np.arange(n)
    edges = np.concatenate([pairs, pairs[::-1], np.stack([loops, loops])], 1).astype(np.int64)
    wf = run.wf
    pos = index[run.uid]
    nb = [int(pos[p]) for p in wf.parents[task] if pos[p] >= 0]
    nb += [int(pos[c]) for c in wf.children[task]]
    nbr = np.array(nb[:MAX_NEIGHBOURS], np.int64)
    # the candidate seen from each VM
    avail = state.available()
    exec_m = wf.sizes[task] / state.vm_speed
    finish = avail + exec_m
    regret = finish - finish.min()
    qlen = np.array([len(q) for q in state.vm_queue], np.float64)
    v = np.zeros((state.m, VM_FEATURES), np.float32)
    v[:, 0] = _lt(exec_m)
    v[:, 1] = _lt(avail - now)
    v[:, 2] = _lt(finish - now)
    v[:, 3] = _lt(regret)
    v[:, 4] = state.vm_speed / vmax
    v[:, 5] = np.minimum(qlen, 20) / 5.0
    v[:, 6] = state.utilization()
    v[:, 7] = regret <= 1e-9
    v[:, 8] = _lt(finish - now + wf.tail_path[task] / vmax)
    # slack: how much earlier than the latest finish that keeps the workflow's projected
    # completion (heuristics.latest_finish) the task would finish on each VM
    slack = latest_finish(state, run, task) - finish
    v[:, 9] = np.sign(slack) * _lt(np.abs(slack))
    v[:, 10] = slack >= -1e-6
    rule = slack_choices(state, run, task)
    v[:, 11] = rule
    backlog = avail - now
    g = np.array([math.log1p(len(state.active)), float(_lt(backlog.mean())),
                  float((backlog <= 0).mean()), float(_lt(wf.tail_path[task] / vmax)),
                  math.log1p(float(qlen.sum()))], np.float32)
    return Obs(x, edges, cpos, nbr, v, vm_last, g, regret.astype(np.float32),
               rule.astype(np.float32))


def collate(batch: list[Obs]) -> dict[str, torch.Tensor]:
    """Concatenate graphs (offsetting node indices) and pad VMs to the widest pool."""
    b = len(batch)
    m = max(o.vm_x.shape[0] for o in batch)
    k = max(1, max(len(o.nbr) for o in batch))
    xs, es, gid = [], [], []
    cand = np.zeros(b, np.int64)
    nbr = np.full((b, k), -1, np.int64)
    vm_x = np.zeros((b, m, VM_FEATURES), np.float32)
    vm_last = np.full((b, m), -1, np.int64)
    vm_mask = np.zeros((b, m), bool)
    regret = np.zeros((b, m), np.float32)
    rule = np.zeros((b, m), np.float32)
    g = np.stack([o.g for o in batch])
    off = 0
    for i, o in enumerate(batch):
        n = len(o.x)
        xs.append(o.x)
        es.append(o.edges + off)
        gid.append(np.full(n, i, np.int64))
        cand[i] = o.cand + off
        nbr[i, :len(o.nbr)] = o.nbr + off
        mi = o.vm_x.shape[0]
        vm_x[i, :mi] = o.vm_x
        vm_last[i, :mi] = np.where(o.vm_last >= 0, o.vm_last + off, -1)
        vm_mask[i, :mi] = True
        regret[i, :mi] = o.regret
        rule[i, :mi] = o.rule
        off += n
    return {
        "x": torch.from_numpy(np.concatenate(xs)),
        "edges": torch.from_numpy(np.concatenate(es, 1)),
        "graph": torch.from_numpy(np.concatenate(gid)),
        "cand": torch.from_numpy(cand),
        "nbr": torch.from_numpy(nbr),
        "vm_x": torch.from_numpy(vm_x),
        "vm_last": torch.from_numpy(vm_last),
        "vm_mask": torch.from_numpy(vm_mask),
        "regret": torch.from_numpy(regret),
        "rule": torch.from_numpy(rule),
        "g": torch.from_numpy(g),
    }
