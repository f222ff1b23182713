"""The ``sil`` solver: SIL's parallel local reconstruction (PRC) from a start tour.

The start is the model's own greedy tour (k-nearest candidates per step) where it fits in a
quarter of the budget (TSP1K: ~1.2 s), else random insertion. PRC only rebuilds segments of
at most ``max_segment`` nodes, so it cannot undo a start's long-range detours: the greedy
start ends 0.5 (``sil``) to 1.5 (``sil_ls``) points of gap lower on TSP1K at 10-60 s.

Each round cuts the current tour into disjoint segments of one random length ω (random
offset and direction), rebuilds every segment from its fixed start to its fixed end with the
model in one batch, and keeps each rebuilt segment only where it is shorter: the tour never
gets worse and stays a tour. Rounds run until the time limit; the cost of a round is
predicted from the measured cost per candidate token, so the last round still fits.

Each segment is decoded on its own coordinates rescaled to the unit box: the model only ever
sees a local open-path problem, whatever the instance's size or units, so one checkpoint
trained on small instances serves 1K to 100K nodes.

``sil_ls`` adds classical 2-opt + Or-opt (solvers/routing/classical/localsearch.py) to the
start and after every round, then as long again of ``ils``'s annealed kicks; the two are
registered apart, and ``ils`` is the classical part alone, so users and benchmarks can see
which part earns which gain.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from models.sil import SILModel
from solvers.contract import Budget, Clock, ProgressCallback, ProgressEvent, no_progress
from solvers.errors import InstanceError
from solvers.routing.classical.construct import random_insertion_tour
from solvers.routing.classical.exact import exact_solution
from solvers.routing.classical.exact import warm_up as exact_warm_up
from solvers.routing.classical.ils import iterate
from solvers.routing.classical.localsearch import (
    kick_stats,
    nearest_neighbours,
    perturb,
    tour_length,
    two_opt,
)
from solvers.routing.classical.warmup import warm_up as descent_warm_up
from solvers.routing.neural.checkpoints import CheckpointCache
from solvers.routing.neural.sil.cvrp import solve_cvrp
from solvers.routing.neural.sil.model import (
    GREEDY_CANDIDATES,
    TORCH_THREADS,
    RoundHeartbeat,
    greedy_tour,
    load_model,
    model_coords,
    per_token_prior,
    phase_heartbeat,
    prc_round,
    weights_path,
)
from solvers.routing.problem import CVRPInstance, Instance
from solvers.routing.solution import Solution, build_solution


@dataclass(frozen=True)
class SILParams:
    """The tuning of ``sil`` and ``sil_ls``; each default is the measured choice."""

    #: Longest segment rebuilt. The paper uses 1,000 on a GPU; on CPU cores a round costs
    #: ~n·ω/2 token evaluations, so shorter segments buy many more rounds per minute.
    max_segment: int = 100
    #: Candidates per step of the greedy start (SIL's optional kNN cap).
    greedy_candidates: int = GREEDY_CANDIDATES
    #: Seconds per greedy construction step (one batch-1 forward over ~100 candidates:
    #: 1.1-1.2 ms on one loaded core at 1K nodes), to predict the start's time.
    greedy_step_prior: float = 1.2e-3
    #: Share of the budget the greedy start may be predicted to take (it may run to twice it).
    greedy_budget_share: float = 0.25
    #: Above this many nodes the start is random insertion (the greedy start is too slow).
    greedy_max_nodes: int = 20_000
    #: sil_ls: the share of the search time given to classical kicks (``classical.ils``)
    #: between PRC rounds; the rest goes to the neural reconstruction.
    ils_share: float = 0.5
    #: sil_ls's TSP kicks keep longer tours too, annealed as ``ils`` anneals them (20 s, seed
    #: 0, against keeping only shorter tours: pr1002 0.65% -> 0.17% above the optimum,
    #: pr2392 0.85% -> 0.69%).
    anneal_kicks: bool = True
    #: sil_ls on CVRP: share of the time left after the start that the first descent may take.
    start_descent_share: float = 0.5


class SILSolver:
    """Loads each problem's checkpoint once and runs PRC rounds until the time limit."""

    def __init__(self, polish: bool = False, start: str = "auto",
                 params: SILParams = SILParams()) -> None:
        if start not in ("auto", "greedy", "random_insertion"):
            raise ValueError(f"start must be auto, greedy or random_insertion, not {start!r}")
        self.start = start
        self.polish = polish
        self.name = "sil_ls" if polish else "sil"
        self.params = params
        self._cache = CheckpointCache(self.name, weights_path,
                                      lambda path, device: load_model(path, device)[0],
                                      "python -m training.sit")
        torch.set_num_threads(TORCH_THREADS)

    def warm_up(self) -> None:
        """Load the weights, compile the numba kernels and run one tiny reconstruction, so
        no request pays for first-call costs (about 1–3 s on the development machine)."""
        exact_warm_up()
        descent_warm_up()  # sil_ls's CVRP descent and kicks, and the CVRP start's split
        if not weights_path("tsp").exists():
            return
        model = self.model("tsp")
        xy = np.random.default_rng(0).random((40, 2))
        tour, _ = two_opt(xy, random_insertion_tour(xy, 0))
        perturb(xy, tour, 0.01)  # sil_ls's kicks
        with torch.inference_mode():
            prc_round(model, xy, model_coords(xy), tour, 10,
                      np.random.default_rng(0))

    @property
    def max_segment(self) -> int:
        return self.params.max_segment

    def model(self, problem: str) -> SILModel:
        return self._cache.get(problem)

    def solve(self, instance: Instance, budget: Budget,
              progress: ProgressCallback = no_progress) -> Solution:
        clock = Clock(budget)
        if instance.coords is None:
            raise InstanceError("coords", f"the {self.name} solver needs node coordinates; "
                                "this instance has only a distance matrix")
        exact = exact_solution(instance, self.name, clock, budget, progress)
        if exact is not None:
            return exact
        if isinstance(instance, CVRPInstance):

            routes, stats = solve_cvrp(self, instance, budget, clock, progress)
        else:
            routes, stats = self._solve_tsp(instance, budget, clock, progress)
        stats["seed"] = budget.seed
        sol = build_solution(instance, routes, solver=self.name, wall_time=clock.elapsed,
                             stats=stats)
        progress(ProgressEvent(self.name, clock.elapsed, stats["rounds"], sol.cost, "done"))
        return sol

    def start_tour(self, model: SILModel, xy: np.ndarray, seed: int, clock: Clock,
                    first: int = 0, progress: ProgressCallback = no_progress,
                    ) -> tuple[np.ndarray, dict[str, Any]]:
        """The model's own greedy tour where it fits in a share of the budget (a better start
        than random insertion: 8 TSP1K at 10 s, 5.0 -> 4.0 % after PRC), else random
        insertion; a construction that overruns its share falls back to random insertion.
        ``progress`` hears a heartbeat every ``HEARTBEAT_S`` while the model builds."""
        n, params = xy.shape[0], self.params
        t0 = time.perf_counter()
        use_greedy = self.start == "greedy" or (
            self.start == "auto" and n <= params.greedy_max_nodes
            and n * params.greedy_step_prior <= params.greedy_budget_share * clock.remaining)
        tour = None
        if use_greedy:
            share = clock.remaining if self.start == "greedy" else (
                2 * params.greedy_budget_share * clock.remaining)
            with torch.inference_mode():
                tour = greedy_tour(model, xy, k=params.greedy_candidates, start=first,
                                   deadline=t0 + share,
                                   stop=phase_heartbeat(self.name, clock, progress,
                                                        "start: the model's greedy tour"))
        stats: dict[str, Any] = {"start": f"greedy (k={params.greedy_candidates})"}
        if tour is None:
            stats["start"] = "random insertion" + (" (greedy overran its share)"
                                                   if use_greedy else "")
            tour = random_insertion_tour(xy, seed, start=first)
        stats["start_seconds"] = round(time.perf_counter() - t0, 3)
        stats["start_length"] = tour_length(xy, tour)
        return tour, stats

    def _solve_tsp(self, instance: Instance, budget: Budget, clock: Clock,
                   progress: ProgressCallback) -> tuple[list[list[int]], dict[str, Any]]:
        assert instance.coords is not None
        model = self.model("tsp")
        xy = np.ascontiguousarray(instance.coords, dtype=np.float64)
        rng = np.random.default_rng(budget.seed)
        tour, stats = self.start_tour(model, xy, budget.seed, clock, progress=progress)
        stats["max_segment"] = self.max_segment
        neighbours = nearest_neighbours(xy, 10) if self.polish and xy.shape[0] >= 5 else None
        kick_totals = kick_stats()
        if self.polish:
            tour, _ = two_opt(xy, tour, neighbours)
            stats["polished_start_length"] = tour_length(xy, tour)
        heartbeat = RoundHeartbeat(self.name, clock, progress, instance.cost([tour.tolist()]))
        progress(ProgressEvent(self.name, clock.elapsed, 0, heartbeat.best, "start"))
        coords = model_coords(xy)
        rounds, improved = 0, 0
        per_token = per_token_prior(model)
        n = tour.size
        top = min(self.max_segment, n)
        history: list[tuple[float, float]] = []
        with torch.inference_mode():
            while top >= 4 and not clock.expired():
                w = int(rng.integers(4, top + 1))
                # A round costs ~ (n/w)·w²/2 token evaluations; shrink ω to fit.
                fit = 2 * clock.remaining / (per_token * n)
                if fit < 4:
                    break
                w = min(w, int(fit))
                t0 = time.perf_counter()
                deadline = t0 + clock.remaining
                heartbeat.start_round(rounds)
                tour, better = prc_round(model, xy, coords, tour, w, rng, deadline,
                                         heartbeat.check(budget.cancelled), heartbeat)
                rebuilt = time.perf_counter() - t0
                if self.polish:
                    # 2-opt/Or-opt after every round: the rebuilt segments' seams are where
                    # new improving moves appear (0.2 s at 100K, a few % of a round); then
                    # as long again of classical kicks (solvers.routing.classical.ils), which go on
                    # where the reconstruction stalls and vice versa.
                    tour, _ = two_opt(xy, tour, neighbours)
                    share = self.params.ils_share
                    if neighbours is not None and share > 0:
                        kick_seconds = rebuilt * share / (1 - share)
                        tour, kicks = iterate(xy, tour, clock, budget.seed + rounds, neighbours,
                                              seconds=kick_seconds, anneal=self.params.anneal_kicks,
                                              on_slice=lambda _: heartbeat.tick())
                        for key in kick_totals:
                            kick_totals[key] += kicks[key]
                spent = time.perf_counter() - t0
                tokens = (n // w) * w * (w - 2) / 2
                rate = rebuilt / max(tokens, 1.0)
                per_token = rate if rounds == 0 else 0.7 * per_token + 0.3 * rate
                rounds += 1
                improved += better
                if rounds % 5 == 0 or spent > 1.0 or clock.remaining < 2 * spent:
                    length = heartbeat.best = instance.cost([tour.tolist()])
                    history.append((round(clock.elapsed, 3), length))
                    progress(ProgressEvent(self.name, clock.elapsed, rounds, length,
                                           f"round {rounds}, segment {w}"))
        stats["reconstructed_length"] = tour_length(xy, tour)
        if self.polish:
            tour, _ = two_opt(xy, tour, neighbours)
            stats["final_polish_length"] = tour_length(xy, tour)
            stats.update(kick_totals)
        stats.update(rounds=rounds, segments_improved=improved,
                     length_history=history[-50:])
        start = int(np.flatnonzero(tour == 0)[0])
        return [np.roll(tour, -start).tolist()], stats
