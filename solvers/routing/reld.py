"""The ``reld`` solver: ReLD's learned policy, decoded greedily from many starts over the
eight symmetries of the square, then by sampling while time remains.

Budgeting: a greedy pass over one symmetry is the unit of work. Its cost is estimated up front
(trajectories × N² for decoding plus N² for the encoder) to pick how many start trajectories
fit the time limit, measured after the first pass, and further passes (symmetries, then
sampling rounds) run only while the measured cost still fits. Memory stays near the size of
one pass: symmetries run one at a time above 1,000 nodes, and the encoder's attention uses
PyTorch's fused kernel, which never materializes the N×N matrix.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from models.reld import ReLDConfig, ReLDModel
from solvers.base import Budget, Clock, ProgressCallback, ProgressEvent, no_progress
from solvers.errors import InstanceError
from solvers.routing.checkpoints import CheckpointCache
from solvers.routing.env import (
    augment,
    cvrp_routes,
    normalize_coords,
    rollout_cvrp,
    rollout_tsp,
)
from solvers.routing.problem import CVRPInstance, Instance, Solution, build_solution

WEIGHTS_DIR = Path(__file__).resolve().parents[2] / "weights"
#: Intra-op threads for torch. One per solve: the service runs solves and jobs side by side,
#: and OpenMP threads fighting for cores made a pass 20× slower on the 2-core machine.
TORCH_THREADS = int(os.environ.get("COSOLVE_TORCH_THREADS", "1"))
MAX_STARTS = 100
MAX_NODES = {"tsp": 10_000, "cvrp": 10_000}
#: Seconds per (trajectory × node²) of greedy decoding on one CPU core, measured on the
#: 2-core development machine; only used for the first pass, later passes are timed.
_DECODE_COST = 2.5e-7
_ENCODE_COST = 2.0e-8


def weights_path(problem: str) -> Path:
    return WEIGHTS_DIR / f"reld_{problem}.pt"


def read_checkpoint(path: Path, device: str = "cpu") -> tuple[ReLDModel, dict[str, Any]]:
    """A checkpoint's model and its whole dict (``{"config", "model", "optimizer", "train"}``
    as training.reld writes it). The one reader of the format: serving uses it without
    importing training/, and training resumes through it."""
    ckpt = torch.load(path, map_location=device, weights_only=False)
    model = ReLDModel(ReLDConfig(**ckpt["config"]))
    model.load_state_dict(ckpt["model"])
    return model.to(device), ckpt


def _load(path: Path, device: str) -> ReLDModel:
    return read_checkpoint(path, device)[0]


def availability() -> str | None:
    """None when at least one checkpoint is shipped; else what is missing and how to train."""
    missing = [p for p in ("tsp", "cvrp") if not weights_path(p).exists()]
    if len(missing) == 2:
        return ("no trained weights: weights/reld_tsp.pt and weights/reld_cvrp.pt are missing; "
                "train them with `python -m training.reld tsp|cvrp`")
    return None


class ReLDSolver:
    """Loads each problem's checkpoint once, on first use. PolyNet, built on ReLD's decoder,
    reuses this class and swaps the checkpoints and the search."""

    name = "reld"
    problems: tuple[str, ...] = ("tsp", "cvrp")
    train_command = "python -m training.reld"

    def __init__(self) -> None:
        self._cache = CheckpointCache(self.name, self.weights_path, self.load,
                                      self.train_command)
        torch.set_num_threads(TORCH_THREADS)

    weights_path = staticmethod(weights_path)
    load = staticmethod(_load)

    def search(self, model: Any, instance: Instance, budget: Budget, clock: Clock,
               progress: ProgressCallback, device: str) -> tuple[list[list[int]], dict[str, Any]]:
        return _search(model, instance, budget, clock, progress, device)

    def warm_up(self) -> None:
        """Load every shipped checkpoint now, so no request pays for it."""
        for problem in self.problems:
            if self.weights_path(problem).exists():
                self.model(problem, "cpu")

    def model(self, problem: str, device: str) -> Any:
        return self._cache.get(problem, device)

    def solve(self, instance: Instance, budget: Budget,
              progress: ProgressCallback = no_progress) -> Solution:
        clock = Clock(budget)
        if instance.coords is None:
            raise InstanceError("coords", f"the {self.name} solver needs node coordinates (it "
                                "reads the geometry); this instance has only a distance matrix")
        device = budget.device if budget.device == "cpu" or torch.cuda.is_available() else "cpu"
        model = self.model(instance.problem, device)
        with torch.inference_mode():
            routes, stats = self.search(model, instance, budget, clock, progress, device)
        stats["seed"] = budget.seed
        sol = build_solution(instance, routes, solver=self.name, wall_time=clock.elapsed,
                             stats=stats)
        progress(ProgressEvent(self.name, clock.elapsed, stats["passes"], sol.cost, "done"))
        return sol


def plan_passes(n: int, trajectories: int, seconds: float) -> tuple[int, int]:
    """(trajectories, symmetries per pass) so that the first greedy pass fits in about half
    of ``seconds`` (what is left of the budget once the model is loaded). Trajectories are
    halved before symmetries: on 100-node sets the eight symmetries of a few starts beat many
    starts on one symmetry. PolyNet plans its strategies the same way."""
    together = 8 if n <= 200 else 4 if n <= 1000 else 1
    budget = 0.5 * seconds - _ENCODE_COST * together * n * n

    def cost(m: int, k: int) -> float:
        return _DECODE_COST * m * k * n * n

    while trajectories > 1 and cost(trajectories, together) > budget:
        trajectories //= 2
    while together > 1 and cost(trajectories, together) > budget:
        together //= 2
    return max(1, trajectories), together


def _search(model: Any, instance: Instance, budget: Budget, clock: Clock,
            progress: ProgressCallback, device: str) -> tuple[list[list[int]], dict[str, Any]]:
    n = instance.n
    cvrp = isinstance(instance, CVRPInstance)
    coords = normalize_coords(torch.as_tensor(instance.coords, dtype=torch.float32,
                                              device=device)[None])
    order = np.arange(n)
    demand = None
    if cvrp:
        assert isinstance(instance, CVRPInstance)
        # The model expects the depot at node 0.
        order = np.concatenate(([instance.depot], np.delete(np.arange(n), instance.depot)))
        coords = coords[:, torch.as_tensor(order, device=device)]
        demand = torch.as_tensor(instance.demands[order] / instance.capacity,
                                 dtype=torch.float32, device=device)[None]
        capacity = torch.tensor([float(instance.capacity)], device=device)
    starts, together = plan_passes(n, min(MAX_STARTS, n), clock.remaining)
    # A sampling round decodes as many trajectories as a greedy pass, so the measured pass
    # time predicts it and the time limit holds.
    sample_size = starts * together
    generator = torch.Generator(device=device).manual_seed(budget.seed)
    best_len, best_seq = math.inf, None
    passes, samples = 0, 0
    pass_time: float | None = None
    plan: list[tuple[str, int]] = [("greedy", k) for k in range(0, 8, together)]
    # (symmetries come in powers of two, so the passes tile all eight)
    plan += [("sample", 0)] * 10_000
    for mode, first_sym in plan:
        if passes and (pass_time is None or clock.remaining < 1.2 * pass_time
                       or budget.cancelled()):
            break
        t0 = clock.elapsed
        k = together if mode == "greedy" else 1
        aug = augment(coords, first_sym + k)[first_sym:] if mode == "greedy" else coords
        dem = demand.expand(aug.shape[0], -1) if demand is not None else None
        if cvrp:
            result = rollout_cvrp(model, aug, dem, starts if mode == "greedy" else sample_size,
                                  decode=mode, generator=generator,
                                  capacity=capacity.expand(aug.shape[0]))
        else:
            m = starts if mode == "greedy" else sample_size
            if mode == "greedy":
                start = torch.linspace(0, n - 1, m, device=device).round().long()
            else:
                start = torch.randint(0, n, (m,), generator=generator, device=device)
            result = rollout_tsp(model, aug, start[None].expand(aug.shape[0], m), decode=mode,
                                 generator=generator)
        flat = result.lengths.reshape(-1)
        i = int(flat.argmin())
        if float(flat[i]) < best_len:
            best_len = float(flat[i])
            b, mm = divmod(i, result.lengths.shape[1])
            best_seq = result.actions[b, mm].tolist()
        passes += 1
        samples += int(flat.numel()) if mode == "sample" else 0
        took = clock.elapsed - t0
        pass_time = took if pass_time is None else max(took, 0.5 * pass_time + 0.5 * took)
        progress(ProgressEvent("reld", clock.elapsed, passes, None,
                               f"{mode} pass {passes}: best normalized length {best_len:.4f}"))
    assert best_seq is not None
    if cvrp:
        routes = [[int(order[v]) for v in r] for r in cvrp_routes(best_seq)]
    else:
        routes = [[int(v) for v in best_seq]]
    stats = {"starts": starts, "symmetries_per_pass": together, "passes": passes,
             "sampled_solutions": samples, "device": device,
             "normalized_length": round(best_len, 6)}
    return routes, stats

