"""Batched TSP/CVRP construction in torch, shared by neural inference and training.

Everything is a tensor over (B instances, M trajectories per instance, N nodes): the masks
that keep a trajectory feasible (no node twice, never over capacity, no depot-to-depot
moves), the distances that feed the model's −log(distance) bias, and the tour lengths that
are the rewards. Coordinates are expected in [0, 1]; lengths are plain Euclidean in those
units (the service recomputes the real cost with the instance's own convention).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from models.reld import DecoderCache

Decode = Literal["greedy", "sample"]
_EPS_DIST = 1e-6

#: The eight symmetries of the unit square.
DIHEDRAL = (
    lambda x, y: (x, y), lambda x, y: (1 - x, y), lambda x, y: (x, 1 - y),
    lambda x, y: (1 - x, 1 - y), lambda x, y: (y, x), lambda x, y: (1 - y, x),
    lambda x, y: (y, 1 - x), lambda x, y: (1 - y, 1 - x),
)


def augment(coords: torch.Tensor, copies: int) -> torch.Tensor:
    """(B, N, 2) -> (copies·B, N, 2): the first ``copies`` dihedral transforms, stacked
    transform-major (rows k·B .. k·B+B−1 are transform k)."""
    x, y = coords[..., 0], coords[..., 1]
    out = [torch.stack(f(x, y), dim=-1) for f in DIHEDRAL[:copies]]
    return torch.cat(out, dim=0)


def normalize_coords(coords: torch.Tensor) -> torch.Tensor:
    """Scale each instance into [0, 1]² keeping its aspect ratio (the model's input range)."""
    low = coords.min(dim=1, keepdim=True).values
    span = (coords.max(dim=1, keepdim=True).values - low).amax(dim=-1, keepdim=True)
    return (coords - low) / span.clamp_min(1e-12)


#: Capacities up to this are shown to the model as exact fractions ``demand / capacity``,
#: with a mask tolerance of half a unit. Above it float32 loads drift by more than that
#: (capacity 1e8: routes 1 over capacity), so demands go on a grid of ``DEMAND_GRID`` per
#: vehicle, rounded up: a multiple of 2**-20 adds up exactly in float32, and rounding up can
#: only forbid a fit within about 1e-4 of a full vehicle, never allow an overload.
EXACT_CAPACITY = 2**16
DEMAND_GRID = 2**20


def mask_capacity(capacity: int) -> float:
    """The capacity ``rollout_cvrp`` is given for ``capacity``: its half unit is the mask's
    tolerance (the grid's, above ``EXACT_CAPACITY``)."""
    return float(capacity) if capacity <= EXACT_CAPACITY else float(DEMAND_GRID)


def model_demands(demands: np.ndarray, capacity: int) -> tuple[np.ndarray, float]:
    """(each demand as a fraction of the vehicle, ``mask_capacity(capacity)``), as
    ``rollout_cvrp`` takes them."""
    if capacity <= EXACT_CAPACITY:
        return np.asarray(demands, dtype=np.float64) / capacity, mask_capacity(capacity)
    # integer arithmetic: a demand equal to the capacity must stay exactly one vehicle
    cells = [-(-int(d) * DEMAND_GRID // int(capacity)) for d in np.asarray(demands).tolist()]
    return np.asarray(cells, dtype=np.float64) / DEMAND_GRID, mask_capacity(capacity)


def normalized_coords(xy: np.ndarray, device: str | torch.device = "cpu") -> torch.Tensor:
    """``normalize_coords`` of one instance's coordinates, done in float64 before the cast to
    the model's float32: points 1e9 from the origin and 1 apart collapsed into one when cast
    first."""
    return normalize_coords(torch.as_tensor(np.asarray(xy, dtype=np.float64))[None]).to(
        device=device, dtype=torch.float32)


#: A rollout's ``stop`` is asked every this many decoding steps (and at the first): a greedy
#: pass of a 1,000-node CVRP decodes for seconds, and a cancel seen only between passes took
#: 22.6 s to end a solve. Asking costs an Event and a clock read, not a kernel; every step,
#: since with many solves in threads one step waited up to 0.1 s for the interpreter lock.
STOP_EVERY = 1


class DecodeStoppedError(Exception):
    """A rollout's ``stop`` returned True mid-pass (a cancelled solve): the partial pass has no
    complete solution, so it is discarded and the caller keeps its best plan so far."""


def stopped(stop: Callable[[], bool] | None, step: int) -> bool:
    """Whether a rollout should end at ``step``: ``stop`` is asked every ``STOP_EVERY``."""
    return stop is not None and step % STOP_EVERY == 0 and stop()


@dataclass
class Rollout:
    """Result of decoding: node sequences, their lengths, and summed log-probabilities."""

    actions: torch.Tensor  # (B, M, T) long; CVRP sequences include depot visits (0)
    lengths: torch.Tensor  # (B, M)
    log_prob: torch.Tensor  # (B, M); zeros when not tracked


#: Up to this many entries (B·N², 32 MiB of float32 per table) the distances of a batch are
#: computed once before decoding and each step gathers its rows: a step of a 100-node
#: rollout then skips a distance computation and a logarithm over (B, M, N). Above it (a
#: few thousand nodes) each step computes its rows from the coordinates, in the same way.
TABLE_ENTRIES = 1 << 23


def _euclidean(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(B, P, N) distances from points a (B, P, 2) to b (B, N, 2), each one computed
    directly (not through a matrix product), so a table and its rows agree exactly."""
    return torch.cdist(a, b, compute_mode="donot_use_mm_for_euclid_dist")


def _distances_from(coords: torch.Tensor, current: torch.Tensor) -> torch.Tensor:
    """(B, M, N) Euclidean distances from each trajectory's current node to all nodes."""
    here = coords.gather(1, current[..., None].expand(*current.shape, 2))  # (B, M, 2)
    return _euclidean(here, coords)


class Distances:
    """Distances from the current nodes and their logarithms (the model's bias), from a
    table computed once per batch when it fits in ``TABLE_ENTRIES``."""

    def __init__(self, coords: torch.Tensor) -> None:
        B, N, _ = coords.shape
        self.coords = coords
        self.table = self.log_table = None
        if B * N * N <= TABLE_ENTRIES:
            self.table = _euclidean(coords, coords)
            self.log_table = torch.log(self.table.clamp_min(_EPS_DIST))
            self.rows_of = torch.arange(B, device=coords.device)[:, None]

    def rows(self, current: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(dist, log dist), each (B, M, N), from the nodes ``current`` (B, M)."""
        if self.table is None or self.log_table is None:
            dist = _distances_from(self.coords, current)
            return dist, torch.log(dist.clamp_min(_EPS_DIST))
        return self.table[self.rows_of, current], self.log_table[self.rows_of, current]


def _choose(logits: torch.Tensor, decode: Decode, track: bool,
            generator: torch.Generator | None) -> tuple[torch.Tensor, torch.Tensor | None]:
    if decode == "greedy":
        action = logits.argmax(dim=-1)
    else:
        probs = torch.softmax(logits.float(), dim=-1)
        flat = probs.reshape(-1, probs.shape[-1])
        action = torch.multinomial(flat, 1, generator=generator).view(probs.shape[:-1])
    if not track:
        return action, None
    log_p = torch.log_softmax(logits.float(), dim=-1).gather(-1, action[..., None])[..., 0]
    return action, log_p


def rollout_tsp(
    model: torch.nn.Module,
    coords: torch.Tensor,
    starts: torch.Tensor,
    decode: Decode = "greedy",
    track_log_prob: bool = False,
    cache: DecoderCache | None = None,
    generator: torch.Generator | None = None,
    strategy: torch.Tensor | None = None,
    stop: Callable[[], bool] | None = None,
) -> Rollout:
    """Build M tours per instance, trajectory m starting at node ``starts[:, m]``.

    ``strategy`` ((M, bits) or (B, M, bits)) conditions trajectory m of a PolyNet model; None
    leaves the model's step as it is. ``stop`` is asked every few steps; when it says True the
    pass ends with ``DecodeStoppedError`` (a cancel mid-pass)."""
    cond = {} if strategy is None else {"strategy": strategy}
    B, N, _ = coords.shape
    M = starts.shape[1]
    cache = cache or model.encode(coords)
    visited = torch.zeros(B, M, N, dtype=torch.bool, device=coords.device)
    visited.scatter_(2, starts[..., None], True)
    current = starts
    actions = [starts]
    lengths = torch.zeros(B, M, device=coords.device, dtype=coords.dtype)
    log_prob = torch.zeros(B, M, device=coords.device, dtype=torch.float32)
    distances = Distances(coords)
    for step in range(N - 1):
        if stopped(stop, step):
            raise DecodeStoppedError
        dist, log_dist = distances.rows(current)
        logits = model.step(cache, current, starts, ~visited, log_dist, **cond)
        action, log_p = _choose(logits, decode, track_log_prob, generator)
        if log_p is not None:
            log_prob = log_prob + log_p
        lengths = lengths + dist.gather(-1, action[..., None])[..., 0]
        visited.scatter_(2, action[..., None], True)
        current = action
        actions.append(action)
    back = distances.rows(current)[0].gather(-1, starts[..., None])[..., 0]
    return Rollout(torch.stack(actions, dim=-1), lengths + back, log_prob)


def rollout_path(
    model: torch.nn.Module,
    coords: torch.Tensor,
    source: torch.Tensor,
    target: torch.Tensor,
    decode: Decode = "greedy",
    generator: torch.Generator | None = None,
    strategy: torch.Tensor | None = None,
    stop: Callable[[], bool] | None = None,
) -> Rollout:
    """Paths from node ``source`` through every other node to node ``target``, decoded by a
    TSP model: ``target`` stands in the context as the node the tour returns to, so the model
    builds the cycle target → source → … → target, whose length is the path's plus the
    constant edge (target, source). ``source`` and ``target`` are (B,) for one path per
    instance or (B, M) for M paths of each instance on one encoding (``strategy``: (B, M,
    bits) or (M, bits) for PolyNet). Actions (B, M, N) run from source to target; lengths
    (B, M) are the paths'. ``stop``: as for ``rollout_tsp``."""
    cond = {} if strategy is None else {"strategy": strategy}
    B, N, _ = coords.shape
    if source.dim() == 1:
        source, target = source[:, None], target[:, None]
    cache = model.encode(coords)
    current, last = source, target
    M = current.shape[1]
    visited = torch.zeros(B, M, N, dtype=torch.bool, device=coords.device)
    visited.scatter_(2, current[..., None], True)
    visited.scatter_(2, last[..., None], True)
    distances = Distances(coords)
    lengths = torch.zeros(B, M, device=coords.device, dtype=coords.dtype)
    actions = [current]
    for step in range(N - 2):
        if stopped(stop, step):
            raise DecodeStoppedError
        dist, log_dist = distances.rows(current)
        logits = model.step(cache, current, last, ~visited, log_dist, **cond)
        action, _ = _choose(logits, decode, False, generator)
        lengths = lengths + dist.gather(-1, action[..., None])[..., 0]
        visited.scatter_(2, action[..., None], True)
        current = action
        actions.append(action)
    lengths = lengths + distances.rows(current)[0].gather(-1, last[..., None])[..., 0]
    actions.append(last)
    return Rollout(torch.stack(actions, dim=-1), lengths, torch.zeros_like(lengths))


def rollout_cvrp(
    model: torch.nn.Module,
    coords: torch.Tensor,
    demand: torch.Tensor,
    trajectories: int,
    decode: Decode = "greedy",
    track_log_prob: bool = False,
    cache: DecoderCache | None = None,
    generator: torch.Generator | None = None,
    capacity: torch.Tensor | None = None,
    strategy: torch.Tensor | None = None,
    multi_start: bool | None = None,
    first_rank: int = 0,
    pad: torch.Tensor | None = None,
    stop: Callable[[], bool] | None = None,
) -> Rollout:
    """Build ``trajectories`` solutions per instance, all from the depot (node 0).

    ``demand`` (B, N) is demand / capacity with 0 at the depot; ``capacity`` (B,) the integer
    capacities, which set the feasibility tolerance to half a demand unit, so float rounding
    of the normalized loads can neither forbid an exact fit nor allow an overload. With
    greedy decoding, the
    trajectories differ by their first customer: the top-M of the first step's distribution
    (ReLD's multi-start without a forced POMO node). With a ``strategy`` ((M, bits) or
    (B, M, bits), PolyNet) nothing is forced by default: trajectory m decodes under strategy
    m alone; ``multi_start`` (default: greedy without a strategy) forces the top-M first
    customers either way; ``first_rank`` skips the first ranks (a later multi-start pass
    continues where an earlier one stopped). ``pad`` (B, N) bool: filler nodes of instances
    batched with larger ones, never visited and hidden from the encoder. ``stop``: as for
    ``rollout_tsp`` (``DecodeStoppedError`` when it says True).
    """
    if multi_start is None:
        multi_start = decode == "greedy" and strategy is None
    cond = {} if strategy is None else {"strategy": strategy}
    B, N, _ = coords.shape
    M = trajectories
    device = coords.device
    if cache is None:
        cache = model.encode(coords, demand, pad=pad)
    visited = torch.zeros(B, M, N, dtype=torch.bool, device=device)
    if pad is not None:
        visited |= pad[:, None, :]
    load = torch.ones(B, M, device=device, dtype=coords.dtype)
    current = torch.zeros(B, M, dtype=torch.long, device=device)
    lengths = torch.zeros(B, M, device=device, dtype=coords.dtype)
    log_prob = torch.zeros(B, M, device=device, dtype=torch.float32)
    actions: list[torch.Tensor] = []
    demand_m = demand[:, None, :]
    tol = _tolerance(capacity, B, coords)[:, None, None]
    distances = Distances(coords)
    step = 0
    while True:
        finished = visited[..., 1:].all(dim=-1)  # (B, M)
        if bool(finished.all()) and bool((current == 0).all()):
            break
        if stopped(stop, step):
            raise DecodeStoppedError
        feasible = ~visited & (demand_m <= load[..., None] + tol)
        feasible[..., 0] = current != 0
        # Done trajectories wait at the depot; the only choice then is the depot.
        feasible = torch.where(finished[..., None], torch.zeros_like(feasible), feasible)
        feasible[..., 0] |= finished
        dist, log_dist = distances.rows(current)
        logits = model.step(cache, current, load, feasible, log_dist, **cond)
        if step == 0 and multi_start:
            ranked = logits[:, 0].topk(min(first_rank + M, N - 1), dim=-1).indices
            first = ranked[:, min(first_rank, ranked.shape[1] - 1):]  # (B, M')
            if first.shape[1] < M:  # fewer customers than trajectories: repeat
                first = first.repeat(1, -(-M // first.shape[1]))[:, :M]
            action = first
            log_p = (torch.log_softmax(logits.float(), -1).gather(-1, action[..., None])[..., 0]
                     if track_log_prob else None)
        else:
            action, log_p = _choose(logits, decode, track_log_prob, generator)
        if log_p is not None:
            log_prob = log_prob + torch.where(finished, torch.zeros_like(log_p), log_p)
        lengths = lengths + dist.gather(-1, action[..., None])[..., 0]
        at_depot = action == 0
        served = demand.gather(1, action)
        load = torch.where(at_depot, torch.ones_like(load), load - served)
        visited.scatter_(2, action[..., None], ~at_depot[..., None])
        visited[..., 0] = False
        current = action
        actions.append(action)
        step += 1
        if step > 2 * N + 2:  # cannot happen with valid demands; a guard against hangs
            raise RuntimeError("CVRP decoding did not terminate")
    return Rollout(torch.stack(actions, dim=-1), lengths, log_prob)


def _tolerance(capacity: torch.Tensor | None, batch: int, like: torch.Tensor) -> torch.Tensor:
    if capacity is None:
        return torch.full((batch,), 1e-6, dtype=like.dtype, device=like.device)
    return 0.5 / capacity.to(device=like.device, dtype=like.dtype).reshape(batch)


def fewest_over_fleet(actions: torch.Tensor, lengths: torch.Tensor,
                      fleet: int | None) -> tuple[torch.Tensor, int]:
    """Flattened ``lengths`` with every trajectory that uses more routes beyond ``fleet`` than
    the fewest any uses set to inf, and that fewest excess: under a fleet cap, fewer routes
    beyond it come first (none beats any), then length. ``actions``: (..., steps), the depot
    as 0, so a route ends where a customer is followed by 0."""
    flat = lengths.reshape(-1)
    if fleet is None:
        return flat, 0
    routes_used = ((actions[..., :-1] != 0) & (actions[..., 1:] == 0)).sum(-1).reshape(-1)
    over_by = (routes_used - fleet).clamp_min(0)
    excess = int(over_by.min())
    return torch.where(over_by == excess, flat, torch.full_like(flat, math.inf)), excess


def cvrp_routes(sequence: list[int]) -> list[list[int]]:
    """A decoded node sequence (depot = 0 between routes) as a list of customer routes."""
    routes: list[list[int]] = []
    route: list[int] = []
    for v in sequence:
        if v == 0:
            if route:
                routes.append(route)
            route = []
        else:
            route.append(v)
    if route:
        routes.append(route)
    return routes


# -- teacher forcing: the log-probability of given sequences, all steps in one model call ----
@dataclass
class ReplaySteps:
    """Every decoding step of a batch of sequences, flattened to Q = M·T queries."""

    last: torch.Tensor  # (B, Q)
    extra: torch.Tensor  # (B, Q): first node (TSP) or remaining load (CVRP)
    mask: torch.Tensor  # (B, Q, N)
    log_dist: torch.Tensor  # (B, Q, N)
    target: torch.Tensor  # (B, Q)
    shape: tuple[int, int]  # (M, T)


def replay_tsp(coords: torch.Tensor, tours: torch.Tensor) -> ReplaySteps:
    """Steps of tours (B, M, N): at step t the model saw the prefix tours[..., :t]."""
    B, M, N = tours.shape
    T = N - 1
    order = torch.arange(N, device=tours.device).expand(B, M, N)
    pos = torch.empty_like(tours).scatter_(2, tours, order)
    steps = torch.arange(1, N, device=coords.device)
    mask = pos[:, :, None, :] >= steps[None, None, :, None]  # (B, M, T, N): not yet visited
    last = tours[..., :-1]
    first = tours[..., :1].expand(B, M, T)
    target = tours[..., 1:]
    log_dist = Distances(coords).rows(last.reshape(B, M * T))[1]
    return ReplaySteps(last.reshape(B, -1), first.reshape(B, -1), mask.reshape(B, M * T, N),
                       log_dist, target.reshape(B, -1), (M, T))


def replay_cvrp(coords: torch.Tensor, demand: torch.Tensor, sequences: torch.Tensor,
                capacity: torch.Tensor | None = None) -> ReplaySteps:
    """Steps of depot-delimited sequences (B, M, T+1) starting at the depot and padded with
    depot visits at the end (padding steps have a single feasible choice, so they add 0)."""
    B, M, L = sequences.shape
    N = coords.shape[1]
    T = L - 1
    device = coords.device
    served = demand.gather(1, sequences.reshape(B, -1)).view(B, M, L)  # 0 at depot visits
    cum = served.cumsum(-1)
    index = torch.arange(L, device=device).expand(B, M, L)
    last_depot = torch.where(sequences == 0, index, torch.zeros_like(index)).cummax(-1).values
    used = cum - cum.gather(-1, last_depot)
    load = (1.0 - used)[..., :-1]  # remaining load before each step
    current = sequences[..., :-1]
    # Customer v is visited before step t iff its (only) visit index < t.
    big = torch.full((B, M, N), L + 1, dtype=torch.long, device=device)
    pos = big.scatter(2, sequences, index)
    pos[..., 0] = L + 1
    steps = torch.arange(1, L, device=device)
    visited = pos[:, :, None, :] < steps[None, None, :, None]  # (B, M, T, N)
    tol = _tolerance(capacity, B, coords)[:, None, None, None]
    feasible = ~visited & (demand[:, None, None, :] <= load[..., None] + tol)
    feasible[..., 0] = current != 0
    finished = visited[..., 1:].all(-1)
    feasible = torch.where(finished[..., None], torch.zeros_like(feasible), feasible)
    feasible[..., 0] |= finished
    log_dist = Distances(coords).rows(current.reshape(B, M * T))[1]
    return ReplaySteps(current.reshape(B, -1), load.reshape(B, -1),
                       feasible.reshape(B, M * T, N), log_dist,
                       sequences[..., 1:].reshape(B, -1), (M, T))


def sequence_log_prob(model: torch.nn.Module, cache: DecoderCache,
                      steps: ReplaySteps, strategy: torch.Tensor | None = None) -> torch.Tensor:
    """(B, M) summed log-probabilities of the replayed sequences, with gradients.

    ``strategy`` ((M, bits) or (B, M, bits)): the PolyNet strategy each sequence was decoded
    under, repeated over its steps."""
    cond = {}
    if strategy is not None:
        M, T = steps.shape
        z = strategy if strategy.dim() == 3 else strategy[None]
        cond["strategy"] = z[:, :, None].expand(z.shape[0], M, T, z.shape[-1]).reshape(
            z.shape[0], M * T, z.shape[-1])
    logits = model.step(cache, steps.last, steps.extra, steps.mask, steps.log_dist, **cond)
    log_p = torch.log_softmax(logits.float(), dim=-1).gather(-1, steps.target[..., None])[..., 0]
    # A step with a single feasible choice has log p = 0; −inf cannot occur for valid input.
    B = log_p.shape[0]
    return log_p.view(B, *steps.shape).sum(-1)
