"""The ``polynet`` solver: PolyNet's K learned strategies on the ReLD decoder, greedy per
strategy over the eight symmetries of the square, then sampling per strategy while time (or a
solution budget) remains.

The search is ``solvers.routing.neural.search``; what is PolyNet's is its passes
(``StrategyPasses``). A greedy pass decodes one trajectory per strategy on ``together``
symmetries at once. For the TSP, strategy m starts at its own node, spread around the instance
(the start of a cycle is one more symmetry); for CVRP, strategy m also takes the m-th most
likely first customer, as ReLD's multi-start does, so the greedy pass never collapses onto a
single solution while the strategies are still close to each other. Unlike ``reld``, no
greedy top-up passes over further strategies follow: sampling with the strategies did better
on all three problems (32 instances at 1 s: TSP100 7.812 against 7.820 with top-ups, CVRP100
17.099 against 17.114; CVRPTW100 22.80 against 22.91 at 256 solutions), and ReLD's rotated
views in place of sampling were worse (TSP100 at 1 s 7.903 against 7.882). Sampling rounds
then take the time left (a round's size is fitted to it from the measured speed, at most 2
first passes' worth; fewer, larger rounds pay the fixed cost per decoding step once: 32
CVRPTW100 at 1 s, 22.62 -> 22.54), strategies tiled cyclically, cycling through the
symmetries, with no forced first move (as PolyNet trains). On CVRPTW, when every solution so
far breaks the fleet cap, route elimination is tried and then passes with full vehicles.

The solution's stats say which strategy, symmetry and decoding mode found it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from models.polynet import PolyNetConfig, PolyNetModel, strategy_bits
from solvers.contract import Budget, Clock, ProgressCallback
from solvers.routing.neural.budget import fit_trajectories, pass_seconds, plan_passes
from solvers.routing.neural.env import Decode, Rollout, augment, rollout_cvrp, rollout_tsp
from solvers.routing.neural.env_tw import rollout_cvrptw
from solvers.routing.neural.search import (
    NeuralSolver,
    Pass,
    Search,
    SearchParams,
    model_input,
)
from solvers.routing.problem import Instance
from solvers.weights import WEIGHTS_DIR

PROBLEMS = ("tsp", "cvrp", "cvrptw")
#: CVRPTW keeps a float64 travel-time matrix per symmetry decoded at once.
MAX_NODES = {"tsp": 10_000, "cvrp": 10_000, "cvrptw": 2_000}


@dataclass(frozen=True)
class PolyNetParams(SearchParams):
    """PolyNet's tuning: the shared search's (its passes read ``fill_share``, ``growth`` and
    ``final_candidates`` there, as reld's one-strategy CVRPTW model does)."""


def weights_path(problem: str) -> Path:
    return WEIGHTS_DIR / f"polynet_{problem}.pt"


def load_model(path: Path, device: str = "cpu") -> PolyNetModel:
    """The PolyNet model stored in a checkpoint written by training.polynet."""
    ckpt = torch.load(path, map_location=device, weights_only=False)
    model = PolyNetModel(PolyNetConfig(**ckpt["config"]))
    model.load_state_dict(ckpt["model"])
    return model.to(device).eval()


def spread_share(count: int, share: float, device: str | torch.device) -> torch.Tensor:
    """(count,) bool with about ``share`` of the entries True, spread evenly."""
    k = torch.arange(count, device=device, dtype=torch.float64)
    return torch.floor((k + 1) * share) > torch.floor(k * share)


def tsp_starts(n: int, count: int, device: str | torch.device) -> torch.Tensor:
    """``count`` start nodes spread evenly over 0..n−1."""
    return torch.linspace(0, n - 1, count, device=device).round().long()


class PolyNetSolver(NeuralSolver):
    """PolyNet's checkpoints searched with ``StrategyPasses``.

    ``max_solutions`` (or ``Budget.max_solutions``) optionally caps the number of decoded
    solutions (a sampling budget, as PolyNet's paper compares methods): the search stops
    there, without the reconstruction phase (which decodes more); the time limit always
    holds."""

    name = "polynet"
    problems = PROBLEMS
    train_command = "python -m training.polynet"

    def __init__(self, max_solutions: int | None = None,
                 params: PolyNetParams = PolyNetParams()) -> None:
        self.max_solutions = max_solutions
        self.params = params
        super().__init__()

    weights_path = staticmethod(weights_path)
    load = staticmethod(load_model)

    def search(self, model: Any, instance: Instance, budget: Budget, clock: Clock,
               progress: ProgressCallback, device: str) -> tuple[list[list[int]], dict[str, Any]]:
        limit = self.max_solutions if self.max_solutions is not None else budget.max_solutions
        inp = model_input(instance, device)
        search = Search(model, inp, self.params, budget, clock, progress, self.name, limit)
        return search.run(StrategyPasses(self.params, model.config.strategies, device))


class StrategyPasses:
    """PolyNet's passes: one greedy pass per block of symmetries, then sampling rounds, with
    a fallback to full vehicles when every CVRPTW solution breaks the fleet cap.
    ``trajectories``: greedy trajectories per pass when not one per strategy (the ``reld``
    solver's one-strategy CVRPTW model: its start count)."""

    retry_seed = 1
    cautious = True

    def __init__(self, params: SearchParams, strategies: int, device: str,
                 trajectories: int | None = None) -> None:
        self.params = params
        self.strategies = strategies
        self.trajectories = trajectories
        self.codes = strategy_bits(strategies, device=device)

    def plan(self, s: Search) -> None:
        # Under a solution budget nothing the search decodes depends on the clock (only the
        # time limit may stop it first): the pass plan reads the nominal limit and sampling
        # rounds have a fixed size, so one seed gives one answer on a busy or slower machine
        # too (kroA100 at 1,600 solutions, seed 0, read 21,629 and 21,529 in one process).
        seconds = s.left() / s.load if s.max_solutions is None else s.budget.time_limit
        self.m, self.together = plan_passes(s.inp.n, self.trajectories or self.strategies,
                                            seconds, s.inp.steps)
        self.sample_size = self.m * self.together  # the unit of a sampling round's size
        self.greedy_passes: list[tuple[Decode, int]] = [
            ("greedy", b) for b in range(0, 8, self.together)]  # (mode, first symmetry)
        self.schedule = list(self.greedy_passes)
        self.rounds = self.fill_passes = self.step = 0
        self.filling = False  # True once every solution of the greedy passes broke the fleet

    def next(self, s: Search) -> Pass | None:
        limit, inp = s.max_solutions, s.inp
        while True:
            if self.step == len(self.schedule):
                self.schedule.append(("sample", self.rounds % 8))
                self.rounds += 1
            mode, sym = self.schedule[self.step]
            if (inp.tw is not None and inp.fleet is not None and not self.filling
                    and mode == "sample" and s.best_excess > 0):
                # the model's own depot returns all broke the fleet cap: decode again with
                # full vehicles, greedily, then sample with a share of the trajectories filling
                self.filling = True
                self.schedule[self.step:self.step] = self.greedy_passes
                mode, sym = self.schedule[self.step]
            self.step += 1
            greedy = mode == "greedy"
            k = self.together if greedy else 1
            count = self.m if greedy else self.round_size(s)
            predicted = (s.scale if greedy else s.sample_scale) * pass_seconds(
                inp.n, count, k, inp.steps)
            if s.passes and (s.left() < 1.2 * predicted or s.budget.cancelled()
                             or (limit is not None and s.solutions >= limit)):
                if not self.fall_back(s):
                    return None
                self.step -= 1
                continue
            if limit is not None:
                count = max(1, min(count, -(-(limit - s.solutions) // k)))
            return self.make_pass(s, mode, sym, k, count)

    def round_size(self, s: Search) -> int:
        """Trajectories of the next sampling round: under a solution budget a fixed size,
        else what the time left holds (up to a cap), so the fixed cost of a pass is paid once
        and the tail of the budget is not left unused."""
        params = self.params
        if s.max_solutions is not None:
            return max(self.sample_size, params.min_samples)
        seconds = min(s.left() / params.round_margin, params.max_round_seconds)
        cap = params.sample_cap * self.sample_size
        if s.largest_round:
            # the time model is extrapolated at most ``growth``-fold past the largest round
            cap = min(cap, max(params.growth * s.largest_round, self.sample_size))
        return max(fit_trajectories(s.inp.n, 1, seconds, s.sample_scale, cap, s.inp.steps),
                   min(self.sample_size, params.min_samples))

    def fall_back(self, s: Search) -> bool:
        """At the end of the time for passes, when every solution so far breaks the fleet cap
        (which reconstruction never mends: it keeps a group's vehicle count): first the
        classical route elimination (milliseconds on Solomon R101/RC101, one route over),
        then, if that fails, the time kept for reconstruction goes to more passes (with full
        vehicles on CVRPTW; Solomon C201: 17 routes for a fleet of 3 with the time split, 3
        without). True when more passes follow."""
        limit = s.max_solutions
        if not (s.reserve > 0 and s.best_excess > 0 and not s.budget.cancelled()
                and (limit is None or s.solutions < limit)):
            return False
        if s.repair is None:
            s.repair = s.repair_best(s.budget.seed)
            if s.repair["routes"] is not None:
                return False
        s.reserve = 0.0
        return True

    def make_pass(self, s: Search, mode: Decode, sym: int, k: int, count: int) -> Pass:
        greedy = mode == "greedy"
        # sampling rounds rotate through the strategies when a round holds fewer than K
        offset = 0 if greedy else s.sampled % self.strategies
        ids = (offset + torch.arange(count, device=s.inp.device)) % self.strategies
        fill = None
        if s.inp.tw is not None:
            share = (1.0 if greedy else self.params.fill_share) if self.filling else 0.0
            fill = spread_share(count, share, s.inp.device)
            self.fill_passes += int(share > 0)
        return Pass(mode, sym, k, count, ids=ids, codes=self.codes[ids], fill=fill)

    def decode(self, s: Search, p: Pass) -> Rollout:
        inp, greedy = s.inp, p.mode == "greedy"
        aug = augment(inp.coords, p.symmetry + p.k)[p.symmetry:]
        if inp.tw is not None:
            return rollout_cvrptw(s.model, inp.tw.repeat(p.k, aug), p.count, decode=p.mode,
                                  generator=s.generator, strategy=p.codes, multi_start=greedy,
                                  fill=p.fill, stop=s.stop)
        if inp.cvrp:
            assert inp.demand is not None and inp.capacity is not None
            return rollout_cvrp(s.model, aug, inp.demand.expand(p.k, -1), p.count,
                                decode=p.mode, generator=s.generator,
                                capacity=inp.capacity.expand(p.k), strategy=p.codes,
                                multi_start=greedy, stop=s.stop)
        start = (tsp_starts(inp.n, p.count, inp.device) if greedy
                 else torch.randint(0, inp.n, (p.count,), generator=s.generator,
                                    device=inp.device))
        return rollout_tsp(s.model, aug, start[None].expand(p.k, p.count), decode=p.mode,
                           generator=s.generator, strategy=p.codes, stop=s.stop)

    def stats(self, s: Search) -> dict[str, Any]:
        stats: dict[str, Any] = {
            "strategies": self.strategies, "strategies_per_pass": self.m,
            "symmetries_per_pass": self.together, "max_solutions": s.max_solutions,
            "passes": s.passes, "solutions": s.solutions, "sampled": s.sampled,
            "sampling_passes": s.sampling_passes, "largest_sampling_round": s.largest_round,
            "device": s.inp.device, "winner": s.best_info,
            "normalized_length": round(s.best_len, 6)}
        if s.inp.tw is not None:
            stats["fill_passes"] = self.fill_passes
        if self.trajectories is not None:
            # the one-strategy model (reld's CVRPTW): its greedy passes differ by their starts
            stats = {"starts": self.m, **{k: v for k, v in stats.items()
                                          if k not in ("strategies", "strategies_per_pass",
                                                       "max_solutions")}}
            stats["winner"] = {k: v for k, v in s.best_info.items() if k != "strategy"}
        if s.polished is not None:
            stats["polish"] = s.polished
        if s.repair is not None:
            stats["fleet_repair"] = {k: v for k, v in s.repair.items() if k != "routes"}
        if s.inserted is not None:
            stats["start"] = s.inserted[2]
        if s.rebuilt:
            stats["reconstruction"] = s.rebuilt
        return stats
