"""Neural local reconstruction: the model itself re-solves small parts of its best solution,
and every part that comes out better replaces the old one. No classical move is involved.

TSP (``reconstruct_tour``): each round cuts the tour, from a random offset, into disjoint
stretches of one random length L; a stretch keeps its two end nodes and the model re-decodes
the path between them over the stretch's own nodes (``env.rollout_path``: each stretch is
scaled into the unit square as a small instance of its own, greedily on two of its
symmetries, all stretches of a round in one batch). This is the reconstruction step of
LEHD's RRC and SIL's parallel local reconstruction, done with ReLD's encoder–light-decoder
model.
Short stretches did best on 100-node sets (16 TSP100, 0.3 of 1 s given to rounds:
L in 10–25 −0.81%, 10–40 −0.67%, 20–60 −0.55% against the same second spent on construction);
on larger tours longer ones do better, so the lengths grow with n up to 40–100 at 400 nodes
(``stretch_lengths``).
Each stretch is decoded from both of its ends (32 TSP100 at 1 s: better on 19, worse on 4
than one direction; PolyNet 18/5), both on one encoding of the stretch, on two of its
symmetries (``SYMMETRIES``); two more sampled decodings per symmetry cost more rounds than
they gained (11/13), so there are none. PolyNet gives each decoding of a stretch its own
strategy; more strategies per stretch in place of symmetries did not pay either (48 TSP100 at
1 s against ReLD: 2 symmetries × 2 decodings 23 better / 22 worse, 2 × 4 18/27, 1 × 4 17/27).

CVRP and CVRPTW (``reconstruct_routes``): each round splits the routes into disjoint groups of
neighbours (consecutive by the angle of their centroids around the depot, 20–40 customers a
group) and the model re-solves every group as an instance of its own (depot plus the group's
customers, with their windows), greedy multi-start on the eight symmetries, all groups in one
batch padded with filler nodes that the encoder does not see and the decoder never visits. A
group's new routes replace the old ones when they cost less under the instance's own
distances, use no more vehicles where the fleet is capped, and (CVRPTW) pass the checker.
Measured (ad hoc, 0.3 of 1 s given to rounds against the same second spent on construction):
ReLD CVRP100 −1.15% (8 of 8 better), PolyNet CVRPTW100 −1.13% (11 of 12). A round that no
longer fits the time left is made smaller (fewer starts, then fewer symmetries) rather than
skipped, and the first round starts from the speed the solver's passes measured: 24 instances
each at 1 s, PolyNet CVRP100 −0.39% [−0.71, −0.14], ReLD CVRP100 −0.17% [−0.39, +0.04], PolyNet
CVRPTW100 +0.02% [−0.27, +0.35], with more of the second used (mean wall 0.76–0.83 → 0.85–0.92 s).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from solvers.contract import Clock, ProgressCallback, ProgressEvent, no_progress
from solvers.routing.check import check_cvrptw
from solvers.routing.neural.budget import Pace
from solvers.routing.neural.env import (
    DecodeStoppedError,
    augment,
    cvrp_routes,
    mask_capacity,
    model_demands,
    normalize_coords,
    rollout_cvrp,
    rollout_path,
)
from solvers.routing.neural.env_tw import TWBatch, rollout_cvrptw
from solvers.routing.problem import CVRPInstance, CVRPTWInstance

#: Stretch lengths drawn per round (nodes, end nodes included).
SHORTEST, LONGEST = 10, 25
#: ... on 100 nodes; they grow with the tour, by n / 100 up to this factor. Measured (ReLD,
#: uniform, equal time, better / worse instances): 200 nodes at 2 s 20–50 against 10–25 6/2;
#: 300 at 3 s 20–50 against 10–25 7/1, 30–75 against 20–50 6/2; 500 at 5 s 40–100 against
#: 10–25 6/0 (−1.7%); 1,000 at 10 s 40–100 against 10–25 4/0 (−2.3%), against 70–170 3/1.
LENGTH_GROWTH = 4.0
#: At most this many small instances per round (stretches × symmetries × copies).
MAX_BATCH = 4096
#: Greedy decodings of each stretch per symmetry: 2 is forward and backward (from either end).
COPIES = 2
#: Symmetries of each stretch (each one encoded once, its copies decoded on that encoding).
#: Encoding is most of a round's time, and rounds are what the time buys: 48 TSP100 at 1 s
#: (ReLD), 2 symmetries against 8: better on 20, worse on 4 (7.875 against 7.887); 4: 17/3;
#: 1 against 2: 8/10 on another 48.
SYMMETRIES = 2
#: Predicted seconds per decoding step and per small instance and node (the measured rounds
#: rescale it), used to fit rounds in the time left.
_STEP_COST = 1.0e-3
_NODE_COST = 2.5e-7


def path_lengths(xy: np.ndarray, paths: np.ndarray) -> np.ndarray:
    """(..., L) node paths over points xy (N, 2) -> (...) float64 path lengths."""
    p = xy[paths]
    return np.sqrt(((p[..., 1:, :] - p[..., :-1, :]) ** 2).sum(-1)).sum(-1)


def past(clock: Clock, steps: float | None = None) -> Callable[[], bool]:
    """A rollout's ``stop`` for a reconstruction round of ``steps`` decoding steps: true on a
    cancel, once the next step would end past the budget, or once the round's measured pace
    says it will not end within it (``budget.Pace``). Rounds are sized from the speed
    measured so far, and under load one ran 0.2-0.4 s past a 0.3 s limit; a round that only
    overruns its share (the polish's time) finishes."""
    return Pace(lambda: clock.remaining, clock.budget.cancelled, steps)


def _round_seconds(length: int, instances: int) -> float:
    return length * (_STEP_COST + _NODE_COST * instances * length)


def stretch_lengths(n: int) -> tuple[int, int]:
    """(shortest, longest) stretch of a round on an ``n``-node tour."""
    growth = min(LENGTH_GROWTH, max(1.0, n / 100))
    return min(round(SHORTEST * growth), n), min(round(LONGEST * growth), n)


def reconstruct_tour(model: Any, coords: torch.Tensor, tour: list[int], clock: Clock,
                     seconds: float, seed: int, strategies: torch.Tensor | None = None,
                     copies: int | None = None, progress: ProgressCallback = no_progress,
                     solver: str = "reld", slowdown: float = 1.0,
                     ) -> tuple[list[int], float, dict[str, Any]]:
    """Improve ``tour`` over ``coords`` (N, 2, the model's normalized input) for about
    ``seconds`` (never past the clock's budget). Returns the tour, its length over
    ``coords`` and statistics.

    ``strategies`` (S, bits): PolyNet strategies, one of its own for every decoding of a
    stretch (None: the plain decoder). ``copies``: decodings per symmetry on one encoding,
    alternately from either end: 1 forward only, 2 (the default) from both ends, more only
    with strategies. ``progress`` hears of every round, as ``solver``. ``slowdown``: measured
    over predicted time of the solver's passes before, the first round's prediction (later
    rounds use their own measurements)."""
    xy = coords.detach().cpu().double().numpy()
    order = np.asarray(tour)
    n = len(order)
    rng = np.random.default_rng(seed)
    start_length = float(path_lengths(xy, np.append(order, order[0])))
    rounds = improved = 0
    scale = max(1.0, slowdown)
    deadline = clock.elapsed + seconds
    shortest, longest = stretch_lengths(n)
    if n < 6:
        return [int(v) for v in order], start_length, {"rounds": 0, "improved_stretches": 0,
                                                       "gain_percent": 0.0}
    copies = COPIES if copies is None else copies
    if strategies is None:
        copies = min(2, copies)  # the plain decoder has no more than two greedy decodings
    while True:
        length = int(rng.integers(shortest, longest + 1))
        count = n // length
        syms = max(1, min(SYMMETRIES, MAX_BATCH // count))
        reps = max(1, min(copies, MAX_BATCH // (count * syms)))
        size = reps * syms * count
        predicted = scale * _round_seconds(length, size)
        left = min(deadline - clock.elapsed, clock.remaining)
        if left < 1.2 * predicted or clock.budget.cancelled():
            break
        t0 = clock.elapsed
        rolled = np.roll(order, -int(rng.integers(n)))
        stretches = rolled[:count * length].reshape(count, length)
        small = normalize_coords(coords[torch.as_tensor(stretches, device=coords.device)])
        # (syms·count, L, 2), symmetry-major, each encoded once and decoded ``reps`` times:
        # even copies from the stretch's first node, odd ones backward from its last
        batch = augment(small, syms)
        backward = torch.arange(reps, device=coords.device) % 2 == 1
        first = torch.where(backward, length - 1, 0).expand(syms * count, reps)
        z = None
        if strategies is not None:
            # a stretch's decodings (symmetries × copies) take distinct strategies, and the
            # strategies move on from round to round
            sym_of = torch.arange(syms, device=coords.device)[:, None, None]
            stretch_of = torch.arange(count, device=coords.device)[None, :, None]
            copy_of = torch.arange(reps, device=coords.device)[None, None, :]
            pick = (sym_of * reps + copy_of + stretch_of * reps * syms + rounds * 31)
            z = strategies[pick.reshape(syms * count, reps) % len(strategies)]
        try:
            result = rollout_path(model, batch, first, length - 1 - first, strategy=z,
                                  stop=past(clock, length - 2))
        except DecodeStoppedError:
            break  # out of time mid-round (a CPU busier than measured): the round is dropped
        local = result.actions.cpu().numpy()  # (syms·count, reps, L)
        back = backward.cpu().numpy()
        local[:, back] = local[:, back, ::-1]  # every path from the stretch's first node on
        local = local.reshape(syms, count, reps, length).transpose(0, 2, 1, 3)
        local = local.reshape(syms * reps, count, length)
        candidates = np.take_along_axis(stretches[None].repeat(reps * syms, 0), local, axis=2)
        new_lengths = path_lengths(xy, candidates)  # (reps·syms, count)
        best = new_lengths.argmin(0)
        old_lengths = path_lengths(xy, stretches)
        better = new_lengths[best, np.arange(count)] < old_lengths - 1e-9
        if better.any():
            stretches[better] = candidates[best[better], np.flatnonzero(better)]
            rolled[:count * length] = stretches.reshape(-1)
            order = rolled
            improved += int(better.sum())
        rounds += 1
        progress(ProgressEvent(solver, clock.elapsed, rounds, None,
                               f"reconstruction round {rounds}: {improved} stretches improved"))
        scale = (clock.elapsed - t0) / _round_seconds(length, size)
    final = float(path_lengths(xy, np.append(order, order[0])))
    gain = 100.0 * (start_length - final) / start_length if start_length > 0 else 0.0
    return [int(v) for v in order], final, {"rounds": rounds, "improved_stretches": improved,
                                            "gain_percent": round(gain, 4)}


# -- routes (CVRP, CVRPTW) ------------------------------------------------------------------
#: Customers per group of neighbouring routes re-decoded together (drawn per round).
GROUP_SMALLEST, GROUP_LARGEST = 20, 40
#: Greedy starts (the top first customers, as ReLD's multi-start) per group and symmetry.
GROUP_STARTS = 8
#: Symmetries each group is decoded on.
GROUP_SYMMETRIES = 8
#: Time margin of a smaller round in the tail of the time (a full round's is 1.2).
SMALL_ROUND_MARGIN = 1.4


#: The cost model of a round of groups, relative to the greedy passes' (``reld.pass_seconds``):
#: with the passes' measured slowdown applied, first rounds still took 1.5-2.3 times the
#: stretch model's prediction (CVRP100 and CVRPTW100 at 1 s), hence 1.6 times its constants.
#: A round also pays a fixed cost (batching the groups, checking and costing the new routes):
#: the smallest tail rounds took up to 1.6 times a prediction without it.
_GROUP_STEP_COST = 1.6 * _STEP_COST
_GROUP_NODE_COST = 1.6 * _NODE_COST
_GROUP_ROUND_COST = 0.02


def _group_seconds(steps: int, trajectories: int, nodes: int) -> float:
    return _GROUP_ROUND_COST + steps * (_GROUP_STEP_COST + _GROUP_NODE_COST * trajectories * nodes)


def route_groups(coords: np.ndarray, depot: int, routes: list[list[int]], size: int,
                 offset: int) -> list[list[int]]:
    """Disjoint groups of route indices, neighbours by the polar angle of their centroids
    around the depot, each with at least ``size`` customers (or what is left), from the
    ``offset``-th route on."""
    centre = coords[depot]
    angles = [math.atan2(*(coords[r].mean(0) - centre)[::-1]) for r in routes]
    ring = list(np.roll(np.argsort(angles), -offset))
    groups: list[list[int]] = []
    group: list[int] = []
    customers = 0
    for k in ring:
        group.append(int(k))
        customers += len(routes[k])
        if customers >= size:
            groups.append(group)
            group, customers = [], 0
    if group:
        groups.append(group)
    return groups


def _group_batch(instance: CVRPInstance, groups: list[list[int]], nodes: list[np.ndarray],
                 device: str | torch.device, matrix: np.ndarray | None = None,
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor,
                            TWBatch | None]:
    """Small instances (depot first, filler nodes at the depot after the customers), scaled
    into the unit square as ``env_tw.tw_batch`` scales a whole instance: coords, demand /
    capacity, capacity, the filler mask and, for CVRPTW (``matrix``: the instance's travel
    times), the time data."""
    size = max(len(v) for v in nodes)
    G = len(groups)
    coords = np.zeros((G, size, 2))
    demand = np.zeros((G, size))
    pad = np.zeros((G, size), dtype=bool)
    tw = isinstance(instance, CVRPTWInstance)
    times = np.zeros((G, size, 3))
    travel = np.zeros((G, size, size))
    for g, idx in enumerate(nodes):
        full = np.concatenate([idx, np.full(size - len(idx), instance.depot)])
        xy = instance.coords[full]
        real = instance.coords[idx]
        low = real.min(0)
        span = max(float((real.max(0) - low).max()), 1e-12)
        coords[g] = (xy - low) / span
        demand[g, :len(idx)] = model_demands(instance.demands[idx], instance.capacity)[0]
        pad[g, len(idx):] = True
        if tw:
            assert isinstance(instance, CVRPTWInstance) and matrix is not None
            times[g, :, :2] = instance.time_windows[full] / span
            times[g, :, 2] = instance.service_times[full] / span
            times[g, len(idx):, 2] = 0.0
            travel[g] = matrix[np.ix_(full, full)] / span
    t = torch.as_tensor
    xy_t = t(coords, dtype=torch.float32, device=device)
    dem_t = t(demand, dtype=torch.float32, device=device)
    cap_t = torch.full((G,), mask_capacity(instance.capacity), device=device)
    pad_t = t(pad, device=device)
    data = None
    if tw:
        f64 = t(times, dtype=torch.float64, device=device)
        data = TWBatch(xy_t, dem_t, cap_t, f64.float(), t(travel, dtype=torch.float64,
                                                           device=device),
                       f64[..., 0], f64[..., 1], f64[..., 2], pad_t)
    return xy_t, dem_t, cap_t, pad_t, data


def reconstruct_routes(model: Any, instance: CVRPInstance, routes: list[list[int]],
                       clock: Clock, seconds: float, seed: int,
                       strategies: torch.Tensor | None = None,
                       device: str | torch.device = "cpu",
                       progress: ProgressCallback = no_progress, solver: str = "reld",
                       slowdown: float = 1.0) -> tuple[list[list[int]], dict[str, Any]]:
    """Improve a CVRP or CVRPTW solution (routes of customer ids) for about ``seconds``:
    each round splits the routes into disjoint groups of neighbours (by angle around the
    depot) and the model re-solves every group as a small instance of its own (greedy
    multi-start on the eight symmetries, all groups in one padded batch); a group's new
    routes replace the old ones when they cost less under the instance's own distances, use
    no more vehicles where the fleet is capped, and (CVRPTW) pass the independent checker.
    ``strategies`` (S, bits): PolyNet strategies for the starts (None: the plain decoder);
    ``progress`` hears of every round, with the cost so far, as ``solver``. ``slowdown``:
    measured over predicted time of the solver's passes before, which the first round's
    prediction starts from (predicted at the cost model's own speed, first rounds beside a
    trainer took 1.5-3.6 times their prediction and overran 1 s limits)."""
    tw = isinstance(instance, CVRPTWInstance)
    routes = [list(r) for r in routes if r]
    rng = np.random.default_rng(seed)
    generator = torch.Generator(device=device).manual_seed(seed)
    start_cost = instance.cost(routes)
    rounds = improved = smaller = 0
    scale = max(1.0, slowdown)
    deadline = clock.elapsed + seconds
    capped = instance.max_vehicles is not None
    matrix = instance.dense_matrix() if tw else None  # once, not per round
    while len(routes) >= 1:
        size = int(rng.integers(GROUP_SMALLEST, GROUP_LARGEST + 1))
        groups = route_groups(instance.coords, instance.depot, routes, size,
                              int(rng.integers(len(routes))))
        nodes = [np.concatenate([[instance.depot]] + [routes[k] for k in g]).astype(np.int64)
                 for g in groups]
        customers = min(len(v) for v in nodes) - 1
        longest = max(len(v) for v in nodes)
        steps = int(1.15 * longest) + 2
        left = min(deadline - clock.elapsed, clock.remaining)
        # the full round, or in the tail of the time a smaller one (fewer starts, then fewer
        # symmetries) rather than none; a smaller round's fixed cost per step weighs more than
        # in the full rounds that measured the scale, hence the wider margin
        full = syms, starts = GROUP_SYMMETRIES, max(1, min(GROUP_STARTS, customers))
        margin = 1.2
        while (left < margin * scale * _group_seconds(steps, syms * len(groups) * starts,
                                                      longest) and syms * starts > 1):
            margin = SMALL_ROUND_MARGIN
            if starts >= syms:
                starts //= 2
            else:
                syms //= 2
        predicted = scale * _group_seconds(steps, syms * len(groups) * starts, longest)
        if left < margin * predicted or clock.budget.cancelled():
            break
        smaller += int((syms, starts) != full)
        t0 = clock.elapsed
        xy, dem, cap, pad, data = _group_batch(instance, groups, nodes, device, matrix)
        aug = augment(xy, syms)
        z = None
        if strategies is not None:
            z = strategies[(rounds * starts + torch.arange(starts, device=device))
                           % len(strategies)]
        try:
            if data is not None:
                result = rollout_cvrptw(model, data.repeat(syms, aug), starts, strategy=z,
                                        multi_start=True, generator=generator,
                                        stop=past(clock, steps))
            else:
                result = rollout_cvrp(model, aug, dem.repeat(syms, 1), starts,
                                      capacity=cap.repeat(syms), strategy=z, multi_start=True,
                                      generator=generator, pad=pad.repeat(syms, 1),
                                      stop=past(clock, steps))
        except DecodeStoppedError:
            break  # out of time mid-round: the round is dropped
        lengths = result.lengths.reshape(syms, len(groups), starts).permute(1, 0, 2)
        actions = result.actions.reshape(syms, len(groups), starts, -1).permute(1, 0, 2, 3)
        rebuilt: list[list[int]] = []
        for g, group in enumerate(groups):
            old = [routes[k] for k in group]
            pick = int(lengths[g].reshape(-1).argmin())
            seq = actions[g].reshape(syms * starts, -1)[pick].tolist()
            new = [[int(nodes[g][v]) for v in r] for r in cvrp_routes(seq)]
            better = ((not capped or len(new) <= len(old))
                      and instance.cost(new) < instance.cost(old) - 1e-9)
            if better and tw:  # the groups are disjoint and windows are per route
                rest = [routes[k] for k in range(len(routes)) if k not in set(group)]
                better = not check_cvrptw(instance, rest + new)  # type: ignore[arg-type]
            rebuilt += new if better else old
            improved += int(better)
        routes = rebuilt
        rounds += 1
        progress(ProgressEvent(solver, clock.elapsed, rounds, instance.cost(routes),
                               f"reconstruction round {rounds}: {improved} groups improved"))
        took = clock.elapsed - t0
        scale = took / _group_seconds(steps, syms * len(groups) * starts, longest)
    final = instance.cost(routes)
    gain = 100.0 * (start_cost - final) / start_cost if start_cost > 0 else 0.0
    return routes, {"rounds": rounds, "smaller_rounds": smaller, "improved_groups": improved,
                    "gain_percent": round(gain, 4)}
