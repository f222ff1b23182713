"""The one search of the ``reld`` and ``polynet`` solvers: decoding passes while the time for
them lasts, then the model's reconstruction of the best solution and a classical polish.

The pipeline (``Search.run``):

1. The instance as the model reads it (``model_input``): coordinates in the unit square, the
   depot first for CVRP, demands as fractions of the capacity, CVRPTW's windows as tensors.
2. A share of the time limit is kept for reconstruction (``SearchParams``); a large TSP, or
   one whose single greedy trajectory would not fit, starts from random insertion instead of
   the passes (``insertion_start``) and gives all the time to reconstruction.
3. Passes: each solver's ``Passes`` says which pass comes next and how it decodes (ReLD's
   greedy starts, top-ups and rotated views in ``reld``; PolyNet's strategies and its
   full-vehicle fallback in ``polynet``). The best solution is kept by fewest routes beyond
   the fleet cap, then length; the measured time of each pass rescales the cost model
   (``budget``) that sizes the next. A pass also keeps to the clock as it runs
   (``budget.Pace``): it stops before a step that would end past its time, or once its
   measured pace says it will not fit; a first pass stopped so is planned once more from
   that pace (``Search.replan``), else a greedy construction leaves the time to the finish.
4. A solve cancelled before its first pass ended starts from a greedy construction.
5. The finish: for the TSP, ``reconstruct_tour`` then 2-opt + Or-opt; for CVRP and CVRPTW,
   route elimination when every plan broke the fleet cap, ``reconstruct_routes`` (on the best
   few candidates of distinct strategies for CVRPTW) then the classical ``polish``.

``NeuralSolver`` is the solver both build on: it loads each problem's checkpoint once, answers
tiny instances exactly, and turns the search's routes into a checked Solution.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np
import torch

from solvers.contract import Budget, Clock, ProgressCallback, ProgressEvent, no_progress
from solvers.errors import InstanceError
from solvers.routing.classical.construct import (
    nearest_neighbour_routes,
    nearest_neighbour_tour,
    random_insertion_tour,
)
from solvers.routing.classical.descent import (
    POLISH_SHARE,
    POLISH_SHARE_TW,
    polish,
    polish_tour,
    tour_polish_keep,
)
from solvers.routing.classical.exact import exact_solution
from solvers.routing.classical.exact import warm_up as exact_warm_up
from solvers.routing.classical.fleet import REPAIR_SHARE, fleet_repair, over_fleet_error
from solvers.routing.classical.localsearch import two_opt
from solvers.routing.classical.timewindows import time_window_routes
from solvers.routing.classical.warmup import warm_up as descent_warm_up
from solvers.routing.neural.budget import Pace, after_cancel, decode_steps, pass_seconds
from solvers.routing.neural.checkpoints import CheckpointCache
from solvers.routing.neural.env import (
    Decode,
    DecodeStoppedError,
    Rollout,
    cvrp_routes,
    fewest_over_fleet,
    model_demands,
    normalized_coords,
)
from solvers.routing.neural.env_tw import TWBatch, tw_batch
from solvers.routing.neural.reconstruct import path_lengths, reconstruct_routes, reconstruct_tour
from solvers.routing.problem import CVRPInstance, CVRPTWInstance, Instance, TSPInstance
from solvers.routing.solution import Solution, build_solution
from solvers.tuning import torch_threads

#: Intra-op threads for torch. One per solve: the service runs solves and jobs side by side,
#: and OpenMP threads fighting for cores made a pass 20× slower on the 2-core machine.
TORCH_THREADS = torch_threads()


class _Running:
    """The neural solves running in this process. Each plans its passes with its share of
    the CPU: the cost model was fitted on a solve alone, and 20 solves at once each planned
    a first pass for the whole machine (0.3 s limits ended after 1.7 s; 2.9-3.0 s for 8)."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    @contextmanager
    def one(self) -> Iterator[None]:
        with self._lock:
            self.count += 1
        try:
            yield
        finally:
            with self._lock:
                self.count -= 1


RUNNING = _Running()


def expected_slowdown() -> float:
    """How many times slower than alone (as the cost model was fitted) a solve starting now
    should expect to run: the neural solves in this process share its interpreter, and other
    processes the cores (the run queue per core over the last minute), whichever says more."""
    try:
        busy = os.getloadavg()[0] / max(1, len(os.sched_getaffinity(0)))
    except (OSError, AttributeError):  # no load average or affinity here (not Linux)
        busy = 1.0
    # a machine at most half again oversubscribed plans as if alone: the measured passes
    # correct that much, and the suite's own servers keep an idle machine's load near it
    return max(1.0, float(RUNNING.count), busy if busy >= 1.5 else 1.0)


@dataclass(frozen=True)
class SearchParams:
    """The tuning both neural solvers share; each default is the measured choice."""

    #: A sampling round decodes at most this many first passes' worth of trajectories
    #: (larger single rounds overran the limit under load: 2.7 s of 2 s at 8).
    sample_cap: int = 2
    #: The last sampling round decodes at least this many trajectories, or it is skipped.
    min_samples: int = 16
    #: A sampling round is fitted to the time left divided by this margin: its speed is
    #: predicted from the passes before it, and with three processes on two cores single
    #: rounds ran 1.2-1.6 times their prediction (only the last round is smaller for it).
    round_margin: float = 1.6
    #: Longest a sampling round is planned to take: a cancel (an API job's DELETE, the CLI's
    #: Ctrl-C) is heard between rounds; one round fitted to a 60 s budget's time left ran on
    #: 3-8 s after a Ctrl-C (2,048 trajectories of X-n176-k26 in one round).
    max_round_seconds: float = 1.0
    #: Share of the time limit kept for reconstruction on the TSP (32 TSP100 at 1 s: 0.3 ->
    #: 7.8777, 0.15 -> 7.8786, 0 -> 7.8980; 0.7 starves the passes).
    tsp_reconstruct_share: float = 0.3
    #: The same for CVRP (24 CVRP100 at 1 s: 0.5 -> 16.5788, 0.3 -> 16.6018, 0.15 -> 16.6734;
    #: 0.7 worse than 0.5 on 17 of 24 others).
    cvrp_reconstruct_share: float = 0.5
    #: The same for CVRPTW (as CVRP).
    cvrptw_reconstruct_share: float = 0.5
    #: TSPs of at least this many nodes start from random insertion, not from the greedy
    #: passes: the model, trained on 100 nodes, builds worse tours at this size (random
    #: insertion + reconstruction against passes + reconstruction, equal time: 200 nodes
    #: +3.2%, 400 −0.3%, 500 −1.2%, 1,000 −3.4%).
    insertion_nodes: int = 400
    #: Share of CVRPTW trajectories decoded with full vehicles once every solution so far
    #: breaks the fleet cap: the model's own depot returns are better on windows like its
    #: training data (0.6% worse with half filling), full vehicles on wide windows (Solomon
    #: C201: 17 routes -> 4), hence only as a fallback.
    fill_share: float = 0.5
    #: A sampling round holds at most this many times the largest round measured so far (on
    #: Solomon RC101 a 1,024-trajectory round predicted from a 16-trajectory one took 2.4
    #: times its prediction).
    growth: int = 4
    #: CVRPTW: the best decoded solutions of this many distinct strategies (distinct costs
    #: for a one-strategy model) each get an equal share of the time for reconstruction and
    #: polish (128 CVRPTW100 at 4 s: every reading leaned better, by 0.06-0.26%; 2 and 4 did
    #: no better than 3).
    final_candidates: int = 3

    def reconstruct_share(self, problem: str) -> float:
        """Share of the time limit kept for reconstruction on ``problem``."""
        return {"tsp": self.tsp_reconstruct_share, "cvrp": self.cvrp_reconstruct_share,
                "cvrptw": self.cvrptw_reconstruct_share}[problem]


@dataclass
class ModelInput:
    """An instance as the model reads it: model node j is instance node ``order[j]``."""

    instance: Instance
    device: str
    coords: torch.Tensor  # (1, N, 2) in [0, 1]², the depot first for CVRP
    order: np.ndarray
    demand: torch.Tensor | None  # (1, N) fractions of the capacity (CVRP)
    capacity: torch.Tensor | None  # (1,) the capacity the mask holds to (CVRP)
    tw: TWBatch | None  # CVRPTW's windows and travel times
    fleet: int | None  # the fleet cap, if any
    steps: float  # decoding steps of one trajectory (``budget.decode_steps``)

    @property
    def n(self) -> int:
        return self.instance.n

    @property
    def cvrp(self) -> bool:
        return isinstance(self.instance, CVRPInstance)

    def routes(self, seq: list[int]) -> list[list[int]]:
        """A decoded CVRP sequence (the depot as 0) as routes of instance nodes."""
        return [[int(self.order[v]) for v in r] for r in cvrp_routes(seq)]


def model_input(instance: Instance, device: str) -> ModelInput:
    n = instance.n
    tw = tw_batch([instance], device) if isinstance(instance, CVRPTWInstance) else None
    coords = normalized_coords(instance.coords, device)
    order = np.arange(n)
    demand = capacity = None
    fleet = None
    if isinstance(instance, CVRPInstance):
        fleet = instance.max_vehicles
        # the model expects the depot at node 0
        order = np.concatenate(([instance.depot], np.delete(np.arange(n), instance.depot)))
        coords = coords[:, torch.as_tensor(order, device=device)]
        fractions, mask_capacity = model_demands(instance.demands[order], instance.capacity)
        demand = torch.as_tensor(fractions, dtype=torch.float32, device=device)[None]
        capacity = torch.tensor([mask_capacity], device=device)
    if tw is not None:
        coords = tw.coords
    return ModelInput(instance, device, coords, order, demand, capacity, tw, fleet,
                      decode_steps(instance))


def insertion_start(n: int, seconds: float, coords: torch.Tensor, seed: int,
                    insertion_nodes: int) -> tuple[list[int], float, str] | None:
    """A random-insertion tour over ``coords`` (1, N, 2) with its length and a note for the
    stats, for a TSP of ``insertion_nodes`` or more, or when a single greedy trajectory of the
    model (N decoding steps) is predicted to take longer than ``seconds`` (a 5,000-node TSP
    at 8 s took 10.5 s for one greedy pass, 23% above the optimum's estimate, and left no
    time for reconstruction); else None (the greedy passes build the first tour)."""
    predicted = pass_seconds(n, 1, 1)
    if n < insertion_nodes and predicted <= seconds:
        return None
    xy = coords[0].detach().cpu().double().numpy()
    tour = random_insertion_tour(xy, seed)
    length = float(path_lengths(xy, np.append(tour, tour[0])))
    why = (f"{n} nodes, at least {insertion_nodes}" if n >= insertion_nodes else
           f"one greedy trajectory of {n} steps predicted at {predicted:.1f} s, more than "
           f"the {seconds:.1f} s for construction")
    return [int(v) for v in tour], length, f"random insertion ({why})"


def cancelled_start(instance: Instance, order: np.ndarray,
                    coords: torch.Tensor) -> tuple[list[int], float, int]:
    """The plan of a solve cancelled before its first greedy pass ended (a 1,000-node CVRP
    cancelled at 1 s of 300 would otherwise run its 20 s first pass to the end): a greedy
    construction (nearest neighbour; for CVRPTW the soonest-service routes), as the model's
    sequence over ``order`` (model node j is instance node ``order[j]``; CVRP routes joined by
    the depot, 0), its length in the normalized ``coords`` (1, N, 2), and its routes beyond
    the fleet cap."""
    excess = 0
    if isinstance(instance, CVRPInstance):
        if isinstance(instance, CVRPTWInstance):
            routes = time_window_routes(instance)
        else:
            routes = nearest_neighbour_routes(instance)
        at = np.empty(instance.n, dtype=int)
        at[order] = np.arange(instance.n)
        seq = [0]
        for route in routes:
            seq += [int(at[v]) for v in route] + [0]
        if instance.max_vehicles is not None:
            excess = max(0, sum(1 for r in routes if r) - instance.max_vehicles)
        closed = seq
    else:
        assert isinstance(instance, TSPInstance)
        seq = [int(order[v]) for v in nearest_neighbour_tour(instance)]
        closed = seq + seq[:1]
    xy = coords[0].detach().cpu().double().numpy()[closed]
    return seq, float(np.linalg.norm(np.diff(xy, axis=0), axis=1).sum()), excess


@dataclass
class Pass:
    """One decoding pass: ``count`` trajectories on each of ``k`` symmetries from
    ``symmetry`` on (greedy), or ``count`` sampled trajectories (``k`` = 1)."""

    mode: Decode
    symmetry: int
    k: int
    count: int
    first: int = 0  # ReLD: the rank of the first start decoded (top-ups go on from it)
    factor: float = 1.0  # lengths in the decoded view -> lengths in the base view
    ids: torch.Tensor | None = None  # PolyNet: each trajectory's strategy
    codes: torch.Tensor | None = None  # PolyNet: the strategies' bit vectors
    fill: torch.Tensor | None = None  # CVRPTW: the trajectories decoded with full vehicles


class Passes(Protocol):
    """What a solver's decoding passes tell the shared search."""

    #: Strategy codes for reconstruction (None: a model without strategies).
    codes: torch.Tensor | None
    #: Strategies of the model (1 for ReLD), for keeping CVRPTW candidates per strategy.
    strategies: int
    #: Added to the seed of the fleet repair after the passes.
    retry_seed: int
    #: Whether a sampling round much smaller than the largest may only raise the prediction.
    cautious: bool

    def plan(self, search: Search) -> None:
        """Size the first pass (after the time for reconstruction is set aside)."""

    def next(self, search: Search) -> Pass | None:
        """The next pass, or None when the time for passes is over."""

    def decode(self, search: Search, p: Pass) -> Rollout:
        """Decode ``p``."""

    def stats(self, search: Search) -> dict[str, Any]:
        """The solution's statistics."""


class Search:
    """The state of one search and its steps (see the module's docstring)."""

    def __init__(self, model: Any, inp: ModelInput, params: SearchParams, budget: Budget,
                 clock: Clock, progress: ProgressCallback, solver: str,
                 max_solutions: int | None = None) -> None:
        self.model, self.inp, self.params = model, inp, params
        self.budget, self.clock, self.progress, self.solver = budget, clock, progress, solver
        self.max_solutions = max_solutions
        # the last part of the time goes to the model's reconstruction of its best solution
        # (none under a solution budget: it would decode more)
        self.reconstruct = max_solutions is None
        self.reserve = (params.reconstruct_share(inp.instance.problem) * clock.remaining
                        if self.reconstruct else 0.0)
        self.generator = torch.Generator(device=inp.device)
        # the best so far: fewer routes beyond the fleet cap first (none beats any), then length
        self.best_len, self.best_excess = math.inf, math.inf
        self.best_seq: list[int] | None = None
        self.best_info: dict[str, Any] = {}
        self.passes = self.solutions = 0
        #: How much slower than alone this solve expects to run (``expected_slowdown``):
        #: the plan and predictions before the first measured pass (measurements take over).
        self.load = expected_slowdown()
        self.scale = self.load  # measured / predicted time of the greedy passes so far
        self.sample_scale = self.scale  # the same for sampling rounds (greedy's until one ran)
        self.sampled = self.sampling_passes = self.largest_round = 0
        self.starts = 0  # greedy trajectories per symmetry decoded (ReLD's starts)
        self.inserted: tuple[list[int], float, str] | None = None
        self.pace: Pace | None = None  # the stop test of the pass decoded last
        self.repair: dict[str, Any] | None = None  # the fleet repair's result, once tried
        self.polished: dict[str, Any] | None = None  # the final classical descent
        self.rebuilt: dict[str, Any] = {}  # the reconstruction's statistics
        # strategy (or cost) -> (excess, length, sequence): the final candidates (CVRPTW)
        self.pool: dict[Any, tuple[int, float, list[int]]] = {}

    def left(self) -> float:
        """Seconds left for the passes."""
        return max(0.0, self.clock.remaining - self.reserve)

    def pass_deadline(self) -> float:
        """Seconds a pass may still decode: the time for passes, and for a first pass, which
        has no plan to fall back on but a greedy construction, the whole time left."""
        return self.left() if self.best_seq is not None else self.clock.remaining

    @property
    def stop(self) -> Pace:
        """The stop test of the pass about to be decoded, asked between its decoding steps
        (``budget.Pace``): on a cancel, once the next step would end past
        ``pass_deadline`` (a pass planned from a speed the CPU no longer gives, under load,
        ran on for seconds past the limit), or once its measured pace says the pass as a
        whole will not fit (then ``decode_passes`` may plan the first pass again)."""
        # (under a solution budget the passes do not follow the clock: one seed, one answer)
        steps = (None if self.max_solutions is not None
                 else self.inp.steps if self.inp.cvrp else float(self.inp.n - 1))
        self.pace = Pace(self.pass_deadline, self.budget.cancelled, steps)
        return self.pace

    def run(self, passes: Passes) -> tuple[list[list[int]], dict[str, Any]]:
        inp = self.inp
        passes.plan(self)
        self.generator.manual_seed(self.budget.seed)
        if not inp.cvrp and self.reconstruct:
            self.inserted = insertion_start(inp.n, self.left() / self.load, inp.coords,
                                            self.budget.seed, self.params.insertion_nodes)
        if self.inserted is not None:
            self.best_seq, self.best_len, _ = self.inserted
            self.best_excess, self.best_info = 0, {"start": "random insertion"}
        else:  # an insertion start leaves all the time to reconstruction
            self.decode_passes(passes)
        if self.best_seq is None:
            # cancelled before the first pass ended: a greedy construction instead
            self.best_seq, self.best_len, self.best_excess = cancelled_start(
                inp.instance, inp.order, inp.coords)
            self.best_info = {"start": "greedy construction (cancelled before the first "
                              "pass ended, or out of time)"}
        routes = self.finish_routes(passes) if inp.cvrp else self.finish_tour(passes)
        return routes, passes.stats(self)

    def decode_passes(self, passes: Passes) -> None:
        replanned = False
        while True:
            p = passes.next(self)
            if p is None:
                break
            if replanned and self.passes == 0 and self.predicted(p) > self.clock.remaining:
                break  # not even the smaller first pass fits: a greedy construction instead
            t0 = self.clock.elapsed
            try:
                result = passes.decode(self, p)
            except DecodeStoppedError:
                # cancelled, out of time or too slow mid-pass: the partial pass is discarded
                if self.replan(passes, p, replanned):
                    replanned = True
                    continue
                break
            flat, excess = fewest_over_fleet(result.actions, result.lengths, self.inp.fleet)
            if p.factor != 1.0:
                flat = flat * p.factor  # back to the base view's units
            self.offer(p, result, flat, excess)
            if self.inp.tw is not None and self.reconstruct and p.ids is not None:
                keep_candidates(self.pool, flat, excess, result.actions, p.ids,
                                result.lengths.shape[1], passes.strategies > 1,
                                self.params.final_candidates)
            self.passes += 1
            self.solutions += int(flat.numel())
            self.measured(p, self.clock.elapsed - t0, passes.cautious)
            self.progress(ProgressEvent(
                self.solver, self.clock.elapsed, self.passes, None,
                f"{p.mode} pass {self.passes}: best normalized length {self.best_len:.4f}"))

    def predicted(self, p: Pass) -> float:
        """Seconds ``p`` is predicted to take at the speed measured so far."""
        inp = self.inp
        if p.mode == "greedy":
            return self.scale * pass_seconds(inp.n, p.count, p.k, inp.steps)
        return self.sample_scale * pass_seconds(inp.n, p.count, 1, inp.steps)

    def replan(self, passes: Passes, p: Pass, replanned: bool) -> bool:
        """After a first pass stopped for its pace (``Pace.slow``): plan the passes again
        with the slowdown its steps measured, once. A solve that started before its
        neighbours (or a busy thread beside it) planned that pass for a free CPU; stopped at
        the limit, it left no time for anything but a greedy construction and the finish,
        which ran on past the limit."""
        pace = self.pace
        if (replanned or self.passes or pace is None or not pace.slow
                or self.budget.cancelled()):
            return False
        inp = self.inp
        k = p.k if p.mode == "greedy" else 1
        per_step = pass_seconds(inp.n, p.count, k, 1.0) - pass_seconds(inp.n, p.count, k, 0.0)
        self.load = max(self.load, pace.step_seconds() / per_step, expected_slowdown())
        self.scale = self.sample_scale = self.load
        passes.plan(self)
        return True

    def offer(self, p: Pass, result: Rollout, flat: torch.Tensor, excess: int) -> None:
        """Keep the pass's best trajectory if it beats the best so far."""
        i = int(flat.argmin())
        if (excess, float(flat[i])) < (self.best_excess, self.best_len):
            self.best_len, self.best_excess = float(flat[i]), excess
            b, m = divmod(i, result.lengths.shape[1])
            self.best_seq = result.actions[b, m].tolist()
            info: dict[str, Any] = {} if p.ids is None else {"strategy": int(p.ids[m])}
            self.best_info = {**info, "symmetry": p.symmetry + b, "mode": p.mode}
            if p.fill is not None:
                self.best_info["fill"] = bool(p.fill[m])

    def measured(self, p: Pass, took: float, cautious: bool) -> None:
        """Rescale the cost model to a pass's measured time."""
        inp = self.inp
        if p.mode == "greedy":
            self.starts = max(self.starts, p.first + p.count)
            self.scale = took / pass_seconds(inp.n, p.count, p.k, inp.steps)
            if not self.sampled:
                self.sample_scale = self.scale
            return
        self.sampled += p.count
        self.sampling_passes += 1
        measured = took / pass_seconds(inp.n, p.count, 1, inp.steps)
        # a round much smaller than the largest so far says little about large ones (fixed
        # costs): it may only make the prediction more cautious
        small = cautious and 2 * p.count < self.largest_round
        self.sample_scale = max(self.sample_scale, measured) if small else measured
        self.largest_round = max(self.largest_round, p.count)

    def repair_best(self, seed: int) -> dict[str, Any]:
        """``fleet_repair`` on the best decoded sequence, in ``REPAIR_SHARE`` of the time."""
        assert isinstance(self.inp.instance, CVRPInstance) and self.best_seq is not None
        routes = self.inp.routes(self.best_seq)
        deadline = after_cancel(self.budget, REPAIR_SHARE * self.clock.remaining)
        return fleet_repair(self.inp.instance, routes, deadline, seed)

    @property
    def slowdown(self) -> float:
        return max(self.scale, self.sample_scale)

    def finish_tour(self, passes: Passes) -> list[list[int]]:
        """Reconstruction of the best tour, then 2-opt + Or-opt (none under a solution
        budget)."""
        assert self.best_seq is not None
        clock, inp = self.clock, self.inp
        if self.reconstruct:
            self.best_seq, self.best_len, self.rebuilt = reconstruct_tour(
                self.model, inp.coords[0], self.best_seq, clock,
                clock.remaining - tour_polish_keep(inp.n, clock.remaining), self.budget.seed,
                strategies=passes.codes, progress=self.progress, solver=self.solver,
                slowdown=self.slowdown)
            assert isinstance(inp.instance, TSPInstance)
            self.polished = polish_tour(inp.instance, self.best_seq,
                                        after_cancel(self.budget, clock.remaining))
            self.best_len *= self.polished.pop("factor")
            self.best_seq = self.polished.pop("tour")
        return [[int(v) for v in self.best_seq]]

    def finish_routes(self, passes: Passes) -> list[list[int]]:
        """Route elimination if every plan broke the fleet cap, then reconstruction of the
        best plan (or of the best few candidates) and the classical polish."""
        instance, clock = self.inp.instance, self.clock
        assert isinstance(instance, CVRPInstance) and self.best_seq is not None
        routes = self.inp.routes(self.best_seq)
        if self.best_excess > 0 and (self.repair is None or self.repair["routes"] is None):
            # still over the fleet (reconstruction never mends it: it keeps a group's vehicle
            # count); the repair on the final best solution
            self.repair = self.repair_best(self.budget.seed + passes.retry_seed)
        if self.repair is not None and self.repair["routes"] is not None:
            self.best_len *= (instance.cost(self.repair["routes"])
                              / max(instance.cost(routes), 1e-12))
            routes = self.repair["routes"]
        # (only plans within the fleet cap: the costs compared below do not see the fleet)
        candidates = ([routes] + [self.inp.routes(seq) for excess, _, seq in self.pool.values()
                                  if excess == 0]
                      if self.reconstruct and self.best_excess == 0 and self.repair is None
                      else [])
        candidates = distinct(instance, candidates)[:self.params.final_candidates]
        if len(candidates) > 1:
            before = instance.cost(routes)
            routes, self.polished, self.rebuilt = self.rebuild_each(candidates, passes)
            self.best_len *= instance.cost(routes) / before if before > 0 else 1.0
        elif self.reconstruct:
            before = instance.cost(routes)
            # a sliver of the time is kept for the classical polish below
            share = POLISH_SHARE_TW if self.inp.tw is not None else POLISH_SHARE
            keep = share * clock.remaining
            routes, self.rebuilt = reconstruct_routes(
                self.model, instance, routes, clock, clock.remaining - keep, self.budget.seed,
                device=self.inp.device, strategies=passes.codes, progress=self.progress,
                solver=self.solver, slowdown=self.slowdown)
            self.best_len *= instance.cost(routes) / before if before > 0 else 1.0
            self.polished = polish(instance, routes, after_cancel(self.budget, clock.remaining))
            self.best_len *= self.polished.pop("factor")
            routes = self.polished.pop("routes")
        return routes

    def rebuild_each(self, candidates: list[list[list[int]]], passes: Passes
                     ) -> tuple[list[list[int]], dict[str, Any], dict[str, Any]]:
        """Reconstruction and polish of each candidate on an equal share of the time left;
        the cheapest result with its polish and reconstruction statistics."""
        instance, clock, seed = self.inp.instance, self.clock, self.budget.seed
        assert isinstance(instance, CVRPInstance)
        results = []
        for j, plan in enumerate(candidates):
            share = clock.remaining / (len(candidates) - j)
            share_end = clock.elapsed + share
            rebuilt_plan, rebuilt = reconstruct_routes(
                self.model, instance, plan, clock, share * (1 - POLISH_SHARE_TW), seed + j,
                device=self.inp.device, strategies=passes.codes, progress=self.progress,
                solver=self.solver, slowdown=self.slowdown)
            polished = polish(instance, rebuilt_plan, after_cancel(
                self.budget, max(0.0, min(share_end - clock.elapsed, clock.remaining))))
            results.append((instance.cost(polished["routes"]), j, polished, rebuilt))
        _, chosen, polished, rebuilt = min(results, key=lambda r: r[:2])
        routes = polished.pop("routes")
        polished.pop("factor")
        return routes, polished, {**rebuilt, "candidates": len(candidates), "chosen": chosen}


def keep_candidates(pool: dict[Any, tuple[int, float, list[int]]], flat: torch.Tensor,
                    excess: int, actions: torch.Tensor, ids: torch.Tensor, width: int,
                    multi_strategy: bool, most: int) -> None:
    """Keep the best decoded solution of each strategy (of each distinct cost for a
    one-strategy model), at most ``most`` of them, as (fleet excess, normalized length,
    sequence); ``flat`` holds a pass's lengths, ``width`` trajectories a block."""
    for flat_index in torch.argsort(flat)[: 8 * most].tolist():
        length = float(flat[flat_index])
        if not math.isfinite(length):
            break
        block, trajectory = divmod(flat_index, width)
        key = int(ids[trajectory]) if multi_strategy else round(length, 6)
        if key in pool and pool[key][:2] <= (excess, length):
            continue
        pool[key] = (excess, length, actions[block, trajectory].tolist())
    for key in sorted(pool, key=lambda q: pool[q][:2])[most:]:
        del pool[key]


def distinct(instance: CVRPInstance, plans: list[list[list[int]]]) -> list[list[list[int]]]:
    """The plans in order of cost, each cost once (the best decoded plan heads the pool and
    is the search's own best)."""
    seen: set[float] = set()
    out = []
    for plan in sorted(plans, key=instance.cost):
        cost = round(instance.cost(plan), 9)
        if cost not in seen:
            seen.add(cost)
            out.append(plan)
    return out


class NeuralSolver:
    """A learned constructive solver over ``Search``: loads each problem's checkpoint once,
    on first use; subclasses name their checkpoints and build their passes (``search``)."""

    name: ClassVar[str]
    problems: ClassVar[tuple[str, ...]]
    weights_path: Any  # problem -> Path, a staticmethod in each subclass
    load: Any  # (Path, device) -> model
    train_command: Any  # str, or problem -> str

    def __init__(self) -> None:
        self._cache = CheckpointCache(self.name, self.weights_path, self.load,
                                      self.train_command)
        torch.set_num_threads(TORCH_THREADS)

    def search(self, model: Any, instance: Instance, budget: Budget, clock: Clock,
               progress: ProgressCallback, device: str) -> tuple[list[list[int]], dict[str, Any]]:
        raise NotImplementedError

    def warm_up(self) -> None:
        """Load every shipped checkpoint and compile the polish's numba kernels now, so no
        request pays for them."""
        for problem in self.problems:
            if self.weights_path(problem).exists():
                self.model(problem, "cpu")
        xy = np.random.default_rng(0).random((40, 2))
        two_opt(xy, np.arange(40))
        descent_warm_up()
        exact_warm_up()

    def warm_up_device(self, device: str) -> None:
        """Copy every shipped checkpoint to ``device`` now (the service's COSOLVE_DEVICE), so
        the first request on a GPU does not pay for the CUDA context and the copy."""
        for problem in self.problems:
            if self.weights_path(problem).exists():
                self.model(problem, device)

    def model(self, problem: str, device: str) -> Any:
        return self._cache.get(problem, device)

    def solve(self, instance: Instance, budget: Budget,
              progress: ProgressCallback = no_progress) -> Solution:
        clock = Clock(budget)
        if instance.coords is None:
            raise InstanceError("coords", f"the {self.name} solver needs node coordinates (it "
                                "reads the geometry); this instance has only a distance matrix")
        # a tiny TSP or CVRP gets its proven optimum, as from ils and sil: sampling missed the
        # optimum of 10-12-customer CVRPs by a few percent
        exact = exact_solution(instance, self.name, clock, budget, progress)
        if exact is not None:
            return exact
        device = budget.device if budget.device == "cpu" or torch.cuda.is_available() else "cpu"
        model = self.model(instance.problem, device)
        with torch.inference_mode(), RUNNING.one():
            routes, stats = self.search(model, instance, budget, clock, progress, device)
        if isinstance(instance, TSPInstance) and 0 in routes[0]:
            # the winning decoding starts wherever its forced first node was; a tour is
            # reported from node 0, as every other solver reports it
            at = routes[0].index(0)
            routes = [routes[0][at:] + routes[0][:at]]
        if isinstance(instance, CVRPInstance) and instance.vehicles_over_fleet(routes):
            raise over_fleet_error(self.name, instance, routes, stats)
        stats["seed"] = budget.seed
        sol = build_solution(instance, routes, solver=self.name, wall_time=clock.elapsed,
                             stats=stats)
        progress(ProgressEvent(self.name, clock.elapsed, stats["passes"], sol.cost, "done"))
        return sol

