"""The ``polynet`` solver: PolyNet's K learned strategies on the ReLD decoder, greedy per
strategy over the eight symmetries of the square, then sampling per strategy while time (or a
solution budget) remains.

A greedy pass decodes one trajectory per strategy on ``together`` symmetries at once. For the
TSP, strategy m starts at its own node, spread around the instance (the start of a cycle is
one more symmetry); for CVRP, strategy m also takes the m-th most likely first customer, as
ReLD's multi-start does, so the greedy pass never collapses onto a single solution while the
strategies are still close to each other. Unlike ``reld``, no greedy top-up passes over
further strategies follow: sampling with the strategies did better on all three problems (32
instances at 1 s: TSP100 7.812 against 7.820 with top-ups, CVRP100 17.099 against 17.114;
CVRPTW100 22.80 against 22.91 at 256 solutions). Top-ups that also take fresh start nodes were
a little better at 1 s (TSP100 7.957 against 7.962) and worse at 2 s (7.913 against 7.896),
and ReLD's rotated views in place of sampling were worse (TSP100 at 1 s 7.903 against 7.882),
so neither is used. Sampling rounds then take the time left (a
round's size is fitted to it from the measured speed, at most 2 first passes' worth; fewer,
larger rounds pay the fixed cost per decoding step once: 32 CVRPTW100 at 1 s, 22.62 -> 22.54,
better on 16, worse on none), strategies tiled cyclically, cycling through the symmetries,
with no forced first move (as PolyNet trains). Budgeting and memory follow the ``reld``
solver: the first pass is sized from a cost estimate, later passes run only while the
measured speed says they fit, and above 1,000 nodes one symmetry is decoded at a time.
Every solve ends with a classical descent on the final plan (``descent``: 2-opt + Or-opt for
the TSP, ``polish`` for CVRP and CVRPTW); a fleet cap is kept by route elimination.

The solution's stats say which strategy, symmetry and decoding mode found it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import torch

from models.polynet import PolyNetConfig, PolyNetModel, strategy_bits
from solvers.contract import Budget, Clock, ProgressCallback, ProgressEvent
from solvers.routing.classical.descent import (
    POLISH_SHARE,
    POLISH_SHARE_TW,
    polish,
    polish_tour,
    tour_polish_keep,
)
from solvers.routing.classical.fleet import REPAIR_SHARE, fleet_repair
from solvers.routing.neural.checkpoints import missing_checkpoint
from solvers.routing.neural.env import (
    Decode,
    DecodeStoppedError,
    augment,
    cvrp_routes,
    fewest_over_fleet,
    model_demands,
    normalized_coords,
    rollout_cvrp,
    rollout_tsp,
)
from solvers.routing.neural.env_tw import rollout_cvrptw, tw_batch
from solvers.routing.neural.reconstruct import reconstruct_routes, reconstruct_tour
from solvers.routing.neural.reld import (
    MAX_ROUND_SECONDS,
    MIN_SAMPLES,
    RECONSTRUCT_SHARE,
    ROUND_MARGIN,
    SAMPLE_CAP,
    WEIGHTS_DIR,
    ReLDSolver,
    after_cancel,
    cancelled_start,
    decode_steps,
    fit_trajectories,
    insertion_start,
    pass_seconds,
    plan_passes,
)
from solvers.routing.problem import CVRPInstance, CVRPTWInstance, Instance, TSPInstance

PROBLEMS = ("tsp", "cvrp", "cvrptw")
#: Share of CVRPTW trajectories decoded with full vehicles (``rollout_cvrptw(fill=...)``) once
#: every solution so far breaks the instance's fleet cap. The model's own depot returns are
#: better where windows are like its training data (16 generated CVRPTW100 at 1 s: 0.6 %
#: worse with half the trajectories filling), full vehicles where windows are wide (Solomon
#: C201 with the 118-minute CVRPTW weights: 17 routes -> 4, cost 12,032 -> 6,660), hence only
#: as a fallback.
FILL_SHARE = 0.5
#: CVRPTW keeps a float64 travel-time matrix per symmetry decoded at once.
MAX_NODES = {"tsp": 10_000, "cvrp": 10_000, "cvrptw": 2_000}


def weights_path(problem: str) -> Path:
    return WEIGHTS_DIR / f"polynet_{problem}.pt"


def availability() -> str | None:
    """None when at least one checkpoint is shipped; else what is missing and how to train."""
    if any(weights_path(p).exists() for p in PROBLEMS):
        return None  # a missing problem's checkpoint is reported when it is asked for
    return ("no trained weights: " + " and ".join(f"weights/{weights_path(p).name}"
                                                   for p in PROBLEMS)
            + " are missing; train them with `python -m training.polynet tsp|cvrp` (warm "
            "start from weights/reld_<problem>.pt)")


def problem_availability(problem: str) -> str | None:
    """None when ``problem``'s checkpoint is shipped, else which file and how to train it."""
    path = weights_path(problem)
    return (None if path.exists()
            else missing_checkpoint(path, f"{PolyNetSolver.train_command} {problem}"))


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


class PolyNetSolver(ReLDSolver):
    """ReLD's solver with PolyNet's checkpoints and search.

    ``max_solutions`` (or ``Budget.max_solutions``) optionally caps the number of decoded
    solutions (a sampling budget, as PolyNet's paper compares methods): the search stops
    there, without the reconstruction phase (which decodes more); the time limit always
    holds."""

    name = "polynet"
    problems = PROBLEMS
    train_command = "python -m training.polynet"

    def __init__(self, max_solutions: int | None = None,
                 fill_share: float = FILL_SHARE) -> None:
        self.max_solutions = max_solutions
        self.fill_share = fill_share
        super().__init__()

    weights_path = staticmethod(weights_path)
    load = staticmethod(load_model)

    def search(self, model: Any, instance: Instance, budget: Budget, clock: Clock,
               progress: ProgressCallback, device: str) -> tuple[list[list[int]], dict[str, Any]]:
        limit = self.max_solutions if self.max_solutions is not None else budget.max_solutions
        return _search(model, instance, budget, clock, progress, device, limit,
                       self.fill_share)


def plan(n: int, strategies: int, seconds: float,
         steps: float | None = None) -> tuple[int, int]:
    """(strategies per pass, symmetries per pass), planned as ReLD plans its starts; the
    strategies left out of the greedy pass come back in the sampling rounds."""
    return plan_passes(n, strategies, seconds, steps)


#: A sampling round holds at most this many times the largest round measured so far.
GROWTH = 4

#: CVRPTW under a time limit: the best decoded solutions of this many distinct strategies
#: (distinct costs for reld's one-strategy model) each get an equal share of the time left
#: for reconstruction and polish, and the best result is kept. PolyNet's strategies are
#: complementary, and reconstructing only the single best decoded solution threw that away.
#: Measured on the first 128 generated CVRPTW100 at 4 s on a quiet machine (2026-12-04),
#: against one run of the code before, same instances: two runs read polynet -0.26%
#: [-0.41, -0.11] and -0.06% [-0.21, +0.08], reld -0.08% and -0.06% (the same code moves by
#: about 0.2% from run to run); every reading leaned this way, none proves PolyNet ahead of
#: reld (docs/neural-solvers.md). k = 2 and 4 did no better than 3 in screening runs.
FINAL_CANDIDATES = 3


def _repair(instance: Instance, seq: list[int] | None, order: np.ndarray, clock: Clock,
            seed: int) -> dict[str, Any]:
    """``descent.fleet_repair`` on a decoded sequence (in the model's node order)."""
    assert isinstance(instance, CVRPInstance) and seq is not None
    routes = [[int(order[v]) for v in r] for r in cvrp_routes(seq)]
    deadline = after_cancel(clock.budget, REPAIR_SHARE * clock.remaining)
    return fleet_repair(instance, routes, deadline, seed)


def _keep_candidates(pool: dict[Any, tuple[int, float, list[int]]], flat: torch.Tensor,
                     excess: int, actions: torch.Tensor, ids: torch.Tensor, width: int,
                     multi_strategy: bool) -> None:
    """Keep the best decoded solution of each strategy (of each distinct cost for a
    one-strategy model), at most ``FINAL_CANDIDATES`` of them, as (fleet excess, normalized
    length, sequence); ``flat`` holds a pass's lengths, ``width`` trajectories a block."""
    for flat_index in torch.argsort(flat)[: 8 * FINAL_CANDIDATES].tolist():
        length = float(flat[flat_index])
        if not math.isfinite(length):
            break
        block, trajectory = divmod(flat_index, width)
        key = int(ids[trajectory]) if multi_strategy else round(length, 6)
        if key in pool and pool[key][:2] <= (excess, length):
            continue
        pool[key] = (excess, length, actions[block, trajectory].tolist())
    for key in sorted(pool, key=lambda q: pool[q][:2])[FINAL_CANDIDATES:]:
        del pool[key]


def _distinct(instance: CVRPInstance, plans: list[list[list[int]]]) -> list[list[list[int]]]:
    """The plans in order of cost, each cost once (the best decoded plan heads the pool and
    is the search's own best)."""
    seen: set[float] = set()
    out = []
    for plan_ in sorted(plans, key=instance.cost):
        cost = round(instance.cost(plan_), 9)
        if cost not in seen:
            seen.add(cost)
            out.append(plan_)
    return out


def _rebuild_each(model: PolyNetModel, instance: CVRPInstance,
                  candidates: list[list[list[int]]], clock: Clock, seed: int, device: str,
                  progress: ProgressCallback, solver: str, strategies: int, slowdown: float
                  ) -> tuple[list[list[int]], dict[str, Any], dict[str, Any]]:
    """Reconstruction and polish of each candidate on an equal share of the time left; the
    cheapest result with its polish and reconstruction statistics."""
    results = []
    for j, plan_ in enumerate(candidates):
        share = clock.remaining / (len(candidates) - j)
        share_end = clock.elapsed + share
        rebuilt_plan, rebuilt = reconstruct_routes(
            model, instance, plan_, clock, share * (1 - POLISH_SHARE_TW), seed + j,
            device=device, strategies=strategy_bits(strategies, device=device),
            progress=progress, solver=solver, slowdown=slowdown)
        polished = polish(instance, rebuilt_plan, after_cancel(
            clock.budget, max(0.0, min(share_end - clock.elapsed, clock.remaining))))
        results.append((instance.cost(polished["routes"]), j, polished, rebuilt))
    _, chosen, polished, rebuilt = min(results, key=lambda r: r[:2])
    routes = polished.pop("routes")
    polished.pop("factor")
    return routes, polished, {**rebuilt, "candidates": len(candidates), "chosen": chosen}


def _search(model: PolyNetModel, instance: Instance, budget: Budget, clock: Clock,
            progress: ProgressCallback, device: str,
            max_solutions: int | None,
            fill_share: float = FILL_SHARE, trajectories: int | None = None,
            solver: str = "polynet") -> tuple[list[list[int]], dict[str, Any]]:
    """The search above; ``trajectories``: greedy trajectories per pass when not one per
    strategy (the ``reld`` solver's one-strategy CVRPTW model: its start count)."""
    n = instance.n
    K = model.config.strategies
    cvrp = isinstance(instance, CVRPInstance)
    tw = tw_batch([instance], device) if isinstance(instance, CVRPTWInstance) else None
    fleet = instance.max_vehicles if cvrp else None  # type: ignore[union-attr]
    coords = normalized_coords(instance.coords, device)
    order = np.arange(n)
    demand = capacity = None
    if cvrp:
        assert isinstance(instance, CVRPInstance)
        order = np.concatenate(([instance.depot], np.delete(np.arange(n), instance.depot)))
        coords = coords[:, torch.as_tensor(order, device=device)]
        fractions, mask_capacity = model_demands(instance.demands[order], instance.capacity)
        demand = torch.as_tensor(fractions, dtype=torch.float32, device=device)[None]
        capacity = torch.tensor([mask_capacity], device=device)
    if tw is not None:
        coords = tw.coords
    # the last part of the time goes to the model's reconstruction of its best solution
    # (none under a solution budget: it would decode more)
    reconstruct = max_solutions is None
    reserve = RECONSTRUCT_SHARE[instance.problem] * clock.remaining if reconstruct else 0.0
    # strategy (or cost) -> (excess, length, sequence): the final candidates (CVRPTW)
    pool: dict[Any, tuple[int, float, list[int]]] = {}

    def left() -> float:
        return max(0.0, clock.remaining - reserve)

    steps = decode_steps(instance)
    # Under a solution budget nothing the search decodes depends on the clock (only the time
    # limit may stop it first): the pass plan reads the nominal limit and sampling rounds have
    # a fixed size, so one seed gives one answer on a busy or slower machine too (QA sweep:
    # kroA100 at 1,600 solutions, seed 0, read 21,629 and 21,529 in one process).
    m, together = plan(n, trajectories or K,
                       left() if max_solutions is None else budget.time_limit, steps)
    sample_size = m * together  # the unit of a sampling round's size
    generator = torch.Generator(device=device).manual_seed(budget.seed)
    best_len, best_seq, best_info, best_excess = math.inf, None, {}, math.inf
    inserted = (None if cvrp or not reconstruct
                else insertion_start(n, left(), coords, budget.seed))
    if inserted is not None:
        best_seq, best_len, _ = inserted
        best_excess, best_info = 0, {"start": "random insertion"}
    passes = solutions = 0
    scale = 1.0  # measured / predicted time of the greedy passes so far
    sample_scale = 1.0  # the same for sampling rounds (greedy's until one has run)
    sampled = sampling_passes = largest_round = 0
    blocks = list(range(0, 8, together))
    greedy_passes: list[tuple[Decode, int]] = [("greedy", b) for b in blocks]  # (mode, symmetry)
    schedule = list(greedy_passes)
    rounds = 0
    fill_passes = 0
    filling = False  # becomes True when every solution of the greedy passes breaks the fleet
    step = 0
    repair: dict[str, Any] | None = None  # the fleet repair's result, once tried
    polished: dict[str, Any] | None = None  # CVRP, CVRPTW: the final classical descent
    while inserted is None:  # an insertion start leaves all the time to reconstruction
        if step == len(schedule):
            schedule.append(("sample", rounds % 8))
            rounds += 1
        mode, sym = schedule[step]
        if (tw is not None and fleet is not None and not filling and mode == "sample"
                and best_excess > 0):
            # The model's own depot returns all broke the fleet cap: decode again with full
            # vehicles, greedily, then sample with half of the trajectories filling.
            filling = True
            schedule[step:step] = greedy_passes
            mode, sym = schedule[step]
        step += 1
        greedy = mode == "greedy"
        k = together if greedy else 1
        count = m
        if not greedy and max_solutions is not None:
            count = max(sample_size, MIN_SAMPLES)
        elif not greedy:
            # one sampling round takes what time is left (up to a cap), so the fixed cost of
            # a pass is paid once and the tail of the budget is not left unused
            # (with a margin for a slowdown while it runs)
            seconds = min(left() / ROUND_MARGIN, MAX_ROUND_SECONDS)
            cap = SAMPLE_CAP * sample_size
            if largest_round:
                # the time model is extrapolated at most GROWTH-fold past the largest round
                # measured (CVRPTW on Solomon RC101: a 1,024-trajectory round predicted from a
                # 16-trajectory one took 2.4 times its 1.0 s prediction)
                cap = min(cap, max(GROWTH * largest_round, sample_size))
            count = max(fit_trajectories(n, 1, seconds, sample_scale, cap, steps),
                        min(sample_size, MIN_SAMPLES))
        predicted = (scale if greedy else sample_scale) * pass_seconds(n, count, k, steps)
        if passes and (left() < 1.2 * predicted or budget.cancelled()
                       or (max_solutions is not None and solutions >= max_solutions)):
            if reserve > 0 and best_excess > 0 and not budget.cancelled() and (
                    max_solutions is None or solutions < max_solutions):
                # every solution so far breaks the fleet cap, which reconstruction never
                # mends (it keeps a group's vehicle count): first the classical route
                # elimination (milliseconds on Solomon R101/RC101, one route over), then, if
                # that fails, the time kept for reconstruction goes to passes with full
                # vehicles (Solomon C201: 17 routes for a fleet of 3 with the time split, 3
                # without)
                if repair is None:
                    repair = _repair(instance, best_seq, order, clock, budget.seed)
                    if repair["routes"] is not None:
                        break
                reserve = 0.0
                step -= 1
                continue
            break
        t0 = clock.elapsed
        aug = augment(coords, sym + k)[sym:]
        if max_solutions is not None:
            count = max(1, min(count, -(-(max_solutions - solutions) // k)))
        # Sampling rounds rotate through the strategies when a round holds fewer than K.
        offset = 0 if greedy else sampled % K
        ids = (offset + torch.arange(count, device=device)) % K
        z = strategy_bits(K, device=device)[ids]
        try:
            if tw is not None:
                share = (1.0 if greedy else fill_share) if filling else 0.0
                fill = spread_share(count, share, device)
                fill_passes += int(share > 0)
                result = rollout_cvrptw(model, tw.repeat(k, aug), count, decode=mode,
                                        generator=generator, strategy=z, multi_start=greedy,
                                        fill=fill, stop=budget.cancelled)
            elif cvrp:
                assert demand is not None and capacity is not None
                result = rollout_cvrp(model, aug, demand.expand(k, -1), count,
                                      decode=mode, generator=generator,
                                      capacity=capacity.expand(k), strategy=z,
                                      multi_start=greedy, stop=budget.cancelled)
            else:
                start = (tsp_starts(n, count, device) if greedy
                         else torch.randint(0, n, (count,), generator=generator,
                                            device=device))
                result = rollout_tsp(model, aug, start[None].expand(k, count),
                                     decode=mode, generator=generator,
                                     strategy=z, stop=budget.cancelled)
        except DecodeStoppedError:
            # QA sweep: cancelled mid-pass; the partial pass is discarded
            break
        flat, excess = fewest_over_fleet(result.actions, result.lengths, fleet)
        i = int(flat.argmin())
        if (excess, float(flat[i])) < (best_excess, best_len):
            best_len, best_excess = float(flat[i]), excess
            b, mm = divmod(i, result.lengths.shape[1])
            best_seq = result.actions[b, mm].tolist()
            best_info = {"strategy": int(ids[mm]), "symmetry": sym + b, "mode": mode}
            if tw is not None:
                best_info["fill"] = bool(fill[mm])
        if tw is not None and reconstruct:
            _keep_candidates(pool, flat, excess, result.actions, ids,
                             result.lengths.shape[1], multi_strategy=K > 1)
        passes += 1
        solutions += int(flat.numel())
        took = clock.elapsed - t0
        if greedy:
            scale = took / pass_seconds(n, count, k, steps)
            if not sampled:
                sample_scale = scale
        else:
            sampled += count
            sampling_passes += 1
            measured = took / pass_seconds(n, count, 1, steps)
            # a round much smaller than the largest so far says little about large ones
            # (fixed costs): it may only make the prediction more cautious
            small = 2 * count < largest_round
            sample_scale = max(sample_scale, measured) if small else measured
            largest_round = max(largest_round, count)
        progress(ProgressEvent(solver, clock.elapsed, passes, None,
                               f"{mode} pass {passes}: best normalized length {best_len:.4f}"))
    if best_seq is None:
        # QA sweep: cancelled before the first pass ended: a greedy construction instead
        best_seq, best_len, best_excess = cancelled_start(instance, order, coords)
        best_info = {"start": "greedy construction (cancelled before the first pass ended)"}
    rebuilt: dict[str, Any] = {}
    if not cvrp and reconstruct:
        best_seq, best_len, rebuilt = reconstruct_tour(model, coords[0], best_seq, clock,
                                                       clock.remaining - tour_polish_keep(
                                                           n, clock.remaining),
                                                       budget.seed,
                                                       strategies=strategy_bits(K, device=device),
                                                       progress=progress, solver=solver,
                                                       slowdown=max(scale, sample_scale))
        assert isinstance(instance, TSPInstance)
        polished = polish_tour(instance, best_seq, after_cancel(budget, clock.remaining))
        best_len *= polished.pop("factor")
        best_seq = polished.pop("tour")
    if cvrp:
        assert isinstance(instance, CVRPInstance)
        routes = [[int(order[v]) for v in r] for r in cvrp_routes(best_seq)]
        if best_excess > 0 and (repair is None or repair["routes"] is None):
            # still over the fleet after the fallback passes: the repair once more, on the
            # final best solution, with other random choices (the routes may be the same)
            repair = _repair(instance, best_seq, order, clock, budget.seed + 1)
        if repair is not None and repair["routes"] is not None:
            best_len *= instance.cost(repair["routes"]) / max(instance.cost(routes), 1e-12)
            routes = repair["routes"]
        # (only plans within the fleet cap: the costs compared below do not see the fleet)
        candidates = ([routes] + [[[int(order[v]) for v in r] for r in cvrp_routes(seq)]
                                  for excess_, _, seq in pool.values()
                                  if excess_ == 0]
                      if reconstruct and best_excess == 0 and repair is None else [])
        candidates = _distinct(instance, candidates)[:FINAL_CANDIDATES]
        if len(candidates) > 1:
            before = instance.cost(routes)
            routes, polished, rebuilt = _rebuild_each(
                model, instance, candidates, clock, budget.seed, device, progress, solver,
                K, slowdown=max(scale, sample_scale))
            best_len *= instance.cost(routes) / before if before > 0 else 1.0
        elif reconstruct:
            before = instance.cost(routes)
            # a sliver of the time is kept for the classical polish below
            keep = (POLISH_SHARE_TW if tw is not None else POLISH_SHARE) * clock.remaining
            routes, rebuilt = reconstruct_routes(model, instance, routes, clock,
                                                 clock.remaining - keep, budget.seed,
                                                 device=device,
                                                 strategies=strategy_bits(K, device=device),
                                                 progress=progress, solver=solver,
                                                 slowdown=max(scale, sample_scale))
            best_len *= instance.cost(routes) / before if before > 0 else 1.0
            polished = polish(instance, routes, after_cancel(budget, clock.remaining))
            best_len *= polished.pop("factor")
            routes = polished.pop("routes")
    else:
        routes = [[int(v) for v in best_seq]]
    stats = {"strategies": K, "strategies_per_pass": m, "symmetries_per_pass": together,
             "max_solutions": max_solutions,
             "passes": passes,
             "solutions": solutions, "sampled": sampled, "sampling_passes": sampling_passes,
             "largest_sampling_round": largest_round,
             "device": device,
             "winner": best_info, "normalized_length": round(best_len, 6)}
    if tw is not None:
        stats["fill_passes"] = fill_passes
    if trajectories is not None:
        # the one-strategy model (reld's CVRPTW): its greedy passes differ by their starts
        stats = {"starts": m, **{k: v for k, v in stats.items()
                                 if k not in ("strategies", "strategies_per_pass",
                                              "max_solutions")}}
        stats["winner"] = {k: v for k, v in best_info.items() if k != "strategy"}
    if polished is not None:
        stats["polish"] = polished
    if repair is not None:
        stats["fleet_repair"] = {k: v for k, v in repair.items() if k != "routes"}
    if inserted is not None:
        stats["start"] = inserted[2]
    if rebuilt:
        stats["reconstruction"] = rebuilt
    return routes, stats
