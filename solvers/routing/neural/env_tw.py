"""Batched CVRPTW construction in torch (PolyNet's time-window environment).

Kept apart from ``env.py`` (TSP/CVRP, shared with ReLD) because its state carries a clock.
Times are in the unit of the normalized coordinates: the instance's own distance matrix (its
rounding convention included) divided by the same span that maps the coordinates into
[0, 1]², so travel time = distance as in Solomon's definition, and the schedule the masks
allow is the one the independent checker simulates. Clocks and travel times are float64, so
the masks agree with the checker up to a 1e-9 relative tolerance.

A trajectory may visit customer j when it is unvisited, fits the remaining load, can start
service by j's latest (arriving early means waiting), and can still be back at the depot by
the horizon's end afterwards. Returning to the depot starts a new vehicle at the depot's
opening time with a full load.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from models.reld import DecoderCache
from solvers.routing.neural.env import (
    _EPS_DIST,
    Decode,
    DecodeStoppedError,
    ReplaySteps,
    Rollout,
    _choose,
    _tolerance,
    model_demands,
    normalize_coords,
    stopped,
)
from solvers.routing.problem import CVRPTWInstance


@dataclass
class TWBatch:
    """Instances of one size as tensors; node 0 is the depot."""

    coords: torch.Tensor  # (B, N, 2) float32 in [0, 1]
    demand: torch.Tensor  # (B, N) demand / capacity
    capacity: torch.Tensor  # (B,)
    times: torch.Tensor  # (B, N, 3) float32: earliest, latest, service (model features)
    travel: torch.Tensor  # (B, N, N) float64 travel times
    earliest: torch.Tensor  # (B, N) float64
    latest: torch.Tensor  # (B, N) float64
    service: torch.Tensor  # (B, N) float64
    #: (B, N) bool filler nodes of instances batched with larger ones (never visited, hidden
    #: from the encoder); None when every instance has N nodes
    pad: torch.Tensor | None = None

    def repeat(self, copies: int, coords: torch.Tensor) -> TWBatch:
        """The batch ``copies`` times (transform-major, as ``env.augment`` stacks them) with
        the given (augmented) coordinates; distances and times are unchanged."""
        def rep(t: torch.Tensor) -> torch.Tensor:
            return t.repeat(copies, *([1] * (t.dim() - 1)))

        return TWBatch(coords, rep(self.demand), rep(self.capacity), rep(self.times),
                       rep(self.travel), rep(self.earliest), rep(self.latest),
                       rep(self.service), None if self.pad is None else rep(self.pad))


def tw_batch(instances: Sequence[CVRPTWInstance], device: str | torch.device = "cpu",
             order: Sequence[np.ndarray] | None = None) -> TWBatch:
    """Tensors for instances of equal size, each reordered by ``order`` (depot first; default:
    the depot moved to node 0)."""
    coords, demand, caps, times, travel, windows, service = [], [], [], [], [], [], []
    for k, inst in enumerate(instances):
        if order is not None:
            idx = np.asarray(order[k])
        else:
            idx = np.concatenate(([inst.depot], np.delete(np.arange(inst.n), inst.depot)))
        xy = torch.as_tensor(inst.coords[idx], dtype=torch.float64)
        span = float((xy.max(0).values - xy.min(0).values).max().clamp_min(1e-12))
        coords.append(normalize_coords(xy[None]).float()[0])
        fractions, mask_capacity = model_demands(inst.demands[idx], inst.capacity)
        demand.append(fractions)
        caps.append(mask_capacity)
        tw = inst.time_windows[idx] / span
        s = inst.service_times[idx] / span
        windows.append(tw)
        service.append(s)
        times.append(np.concatenate([tw, s[:, None]], axis=1))
        travel.append(inst.dense_matrix()[np.ix_(idx, idx)] / span)

    def f64(x: list[np.ndarray]) -> torch.Tensor:
        return torch.as_tensor(np.stack(x), dtype=torch.float64, device=device)

    w = f64(windows)
    return TWBatch(torch.stack(coords).to(device), f64(demand).float(),
                   torch.tensor(caps, device=device), f64(times).float(), f64(travel),
                   w[..., 0], w[..., 1], f64(service))


class _State:
    """Visited set, load, clock and position of (B, M) trajectories."""

    def __init__(self, data: TWBatch, M: int, fill: bool | torch.Tensor = False) -> None:
        B, N = data.demand.shape
        self.fill = torch.as_tensor(fill, device=data.coords.device).expand(B, M)
        device = data.coords.device
        self.data = data
        self.visited = torch.zeros(B, M, N, dtype=torch.bool, device=device)
        if data.pad is not None:
            self.visited |= data.pad[:, None, :]
        self.load = torch.ones(B, M, device=device)
        self.clock = data.earliest[:, :1].expand(B, M).clone()
        self.current = torch.zeros(B, M, dtype=torch.long, device=device)
        self.cap_tol = _tolerance(data.capacity, B, data.coords)[:, None, None]
        self.time_tol = 1e-9 * data.latest[:, 0].abs().clamp_min(1.0)[:, None, None]
        self.rows_of = torch.arange(B, device=device)[:, None]
        # the model's −log(distance) bias, as a table: a step gathers rows of it
        self.log_travel = torch.log(data.travel.float().clamp_min(_EPS_DIST))

    def travel_from_current(self) -> torch.Tensor:
        """(B, M, N) float64 travel times from each trajectory's node."""
        return self.data.travel[self.rows_of, self.current]

    def log_travel_from_current(self) -> torch.Tensor:
        """(B, M, N) float32 log travel times (the model's bias) from each trajectory's node."""
        return self.log_travel[self.rows_of, self.current]

    def feasible(self, travel: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(mask (B, M, N), finished (B, M))."""
        d = self.data
        finished = self.visited[..., 1:].all(dim=-1)
        arrive = self.clock[..., None] + travel
        begin = torch.maximum(arrive, d.earliest[:, None, :])
        back = begin + d.service[:, None, :] + d.travel[:, :, 0][:, None, :]
        in_time = ((arrive <= d.latest[:, None, :] + self.time_tol)
                   & (back <= d.latest[:, None, :1] + self.time_tol))
        customers = ~self.visited & (d.demand[:, None, :] <= self.load[..., None] + self.cap_tol)
        mask = customers & in_time
        # At the depot with nothing reachable in time (only float rounding against a window
        # the instance guarantees can do this), serve anyway; the checker will report it.
        stuck = (self.current == 0) & ~mask[..., 1:].any(-1) & ~finished
        mask = torch.where(stuck[..., None], customers, mask)
        mask[..., 0] = self.current != 0
        # A filling vehicle goes home only when no customer is left that it can serve.
        mask[..., 0] &= ~(self.fill & mask[..., 1:].any(-1))
        mask = torch.where(finished[..., None], torch.zeros_like(mask), mask)
        mask[..., 0] |= finished
        return mask, finished

    def extra(self) -> torch.Tensor:
        """(B, M, 2) model context: remaining load and current time."""
        return torch.stack([self.load, self.clock.float()], dim=-1)

    def advance(self, action: torch.Tensor, travel: torch.Tensor) -> torch.Tensor:
        """Move to ``action``; returns the distance travelled (B, M) float64."""
        d = self.data
        leg = travel.gather(-1, action[..., None])[..., 0]
        at_depot = action == 0
        begin = torch.maximum(self.clock + leg, d.earliest.gather(1, action))
        self.clock = torch.where(at_depot, d.earliest[:, :1].expand_as(self.clock),
                                 begin + d.service.gather(1, action))
        served = d.demand.gather(1, action)
        self.load = torch.where(at_depot, torch.ones_like(self.load), self.load - served)
        self.visited.scatter_(2, action[..., None], ~at_depot[..., None])
        self.visited[..., 0] = False
        self.current = action
        return leg


def encode_tw(model: torch.nn.Module, data: TWBatch) -> DecoderCache:
    return model.encode(data.coords, data.demand, data.times, pad=data.pad)


def rollout_cvrptw(
    model: torch.nn.Module,
    data: TWBatch,
    trajectories: int,
    decode: Decode = "greedy",
    track_log_prob: bool = False,
    cache: DecoderCache | None = None,
    generator: torch.Generator | None = None,
    strategy: torch.Tensor | None = None,
    multi_start: bool = False,
    fill: bool | torch.Tensor = False,
    stop: Callable[[], bool] | None = None,
) -> Rollout:
    """``trajectories`` solutions per instance from the depot; ``multi_start`` forces the
    top-M first customers (ReLD's greedy multi-start), otherwise nothing is forced.

    ``fill`` (for all trajectories, or per trajectory as an (M,) or (B, M) bool tensor) keeps
    each vehicle out until no unvisited customer fits its load and windows: fewer vehicles
    than the model's own choice of when to return, and often a shorter plan on wide-window
    instances unlike those it was trained on (Solomon C2). ``stop``: as for
    ``env.rollout_tsp`` (``DecodeStoppedError`` when it says True mid-pass)."""
    B, N, _ = data.coords.shape
    M = trajectories
    cache = cache or encode_tw(model, data)
    cond = {} if strategy is None else {"strategy": strategy}
    state = _State(data, M, fill)
    lengths = torch.zeros(B, M, dtype=torch.float64, device=data.coords.device)
    log_prob = torch.zeros(B, M, device=data.coords.device)
    actions: list[torch.Tensor] = []
    step = 0
    while True:
        travel = state.travel_from_current()
        mask, finished = state.feasible(travel)
        if bool(finished.all()) and bool((state.current == 0).all()):
            break
        if stopped(stop, step):
            raise DecodeStoppedError
        logits = model.step(cache, state.current, state.extra(), mask,
                            state.log_travel_from_current(), **cond)
        if step == 0 and multi_start:
            first = logits[:, 0].topk(min(M, N - 1), dim=-1).indices
            if first.shape[1] < M:
                first = first.repeat(1, -(-M // first.shape[1]))[:, :M]
            action = first
            log_p = (torch.log_softmax(logits.float(), -1).gather(-1, action[..., None])[..., 0]
                     if track_log_prob else None)
        else:
            action, log_p = _choose(logits, decode, track_log_prob, generator)
        if log_p is not None:
            log_prob = log_prob + torch.where(finished, torch.zeros_like(log_p), log_p)
        lengths = lengths + state.advance(action, travel)
        actions.append(action)
        step += 1
        if step > 2 * N + 2:
            raise RuntimeError("CVRPTW decoding did not terminate")
    return Rollout(torch.stack(actions, dim=-1), lengths, log_prob)


def replay_cvrptw(data: TWBatch, sequences: torch.Tensor) -> ReplaySteps:
    """Steps of depot-delimited sequences (B, M, T+1) from the depot, padded with depot
    visits, for teacher forcing (the clock is simulated step by step)."""
    B, M, L = sequences.shape
    state = _State(data, M)
    last, extra, masks, log_dist = [], [], [], []
    for t in range(L - 1):
        travel = state.travel_from_current()
        mask, _ = state.feasible(travel)
        last.append(state.current)
        extra.append(state.extra())
        masks.append(mask)
        log_dist.append(state.log_travel_from_current())
        state.advance(sequences[..., t + 1], travel)
    N = data.coords.shape[1]
    T = L - 1
    return ReplaySteps(torch.stack(last, 2).reshape(B, M * T),
                       torch.stack(extra, 2).reshape(B, M * T, 2),
                       torch.stack(masks, 2).reshape(B, M * T, N),
                       torch.stack(log_dist, 2).reshape(B, M * T, N),
                       sequences[..., 1:].reshape(B, M * T), (M, T))
