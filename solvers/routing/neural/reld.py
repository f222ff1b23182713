"""The ``reld`` solver: ReLD's learned policy, decoded greedily from many starts over the
eight symmetries of the square, then on rotated views of the instance, then by sampling
while time remains.

The search is ``solvers.routing.neural.search``; what is ReLD's is its passes
(``ViewPasses``): a first greedy pass of start nodes sized to half of the time for passes
(``budget.plan_passes``), then top-up greedy passes over further start nodes (spread so that
every prefix covers the instance) while they fit; once every start is decoded, the same passes
on views of the instance rotated by angles between the symmetries' multiples of π/2 (new
inputs to the model, so new greedy solutions), then sampling rounds while the measured cost
still fits. On 100-node sets greedy starts beat sampling (32 TSP100 at 1 s: 7.837 against
7.872 with 12 starts and sampling; CVRP100 17.124 against 17.187). Memory stays near the size
of one pass: symmetries run one at a time above 1,000 nodes, and the encoder's attention uses
PyTorch's fused kernel, which never materializes the N×N matrix.

CVRPTW has no ReLD model: its checkpoint is a one-strategy PolyNet (``training.polynet
--single``), decoded by PolyNet's passes with the starts as its trajectories.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from models.polynet import PolyNetConfig, PolyNetModel
from models.reld import ReLDConfig, ReLDModel
from solvers.contract import Budget, Clock, ProgressCallback
from solvers.routing.neural.budget import fit_trajectories, pass_seconds, plan_passes
from solvers.routing.neural.env import (
    Decode,
    Rollout,
    augment,
    normalize_coords,
    rollout_cvrp,
    rollout_tsp,
)
from solvers.routing.neural.polynet import StrategyPasses
from solvers.routing.neural.search import (
    NeuralSolver,
    Pass,
    Search,
    SearchParams,
    model_input,
)
from solvers.routing.problem import CVRPTWInstance, Instance
from solvers.weights import WEIGHTS_DIR

MAX_NODES = {"tsp": 10_000, "cvrp": 10_000, "cvrptw": 2_000}
PROBLEMS = ("tsp", "cvrp", "cvrptw")


@dataclass(frozen=True)
class ReLDParams(SearchParams):
    """ReLD's tuning: the shared search's, and how many starts and views its passes take."""

    #: Start nodes decoded greedily (distinct forced first nodes or first customers).
    max_starts: int = 100
    #: Views of the instance decoded greedily before sampling: the base one and rotations by
    #: angles in (0, π/2), each on the eight symmetries (32 TSP100 at equal solutions: all
    #: starts on 2 views 0.980 %, on 4 views 0.918 %, against 1.089 % with sampling).
    max_views: int = 8


def weights_path(problem: str) -> Path:
    return WEIGHTS_DIR / f"reld_{problem}.pt"


def read_checkpoint(path: Path, device: str = "cpu") -> tuple[ReLDModel, dict[str, Any]]:
    """A checkpoint's model and its whole dict (``{"config", "model", "optimizer", "train"}``
    as training.reld writes it). The one reader of the format: serving uses it without
    importing training/, and training resumes through it. The CVRPTW model
    (``training.polynet --single``) is a one-strategy PolyNet: ReLD has no time windows."""
    ckpt = torch.load(path, map_location=device, weights_only=False)
    config = ckpt["config"]
    model = (PolyNetModel(PolyNetConfig(**config)) if "strategies" in config
             else ReLDModel(ReLDConfig(**config)))
    model.load_state_dict(ckpt["model"])
    return model.to(device), ckpt


def _load(path: Path, device: str) -> ReLDModel:
    return read_checkpoint(path, device)[0]


class ReLDSolver(NeuralSolver):
    """Loads each problem's checkpoint once, on first use, and searches with ``ViewPasses``
    (PolyNet's passes for the one-strategy CVRPTW model)."""

    name = "reld"
    problems: tuple[str, ...] = PROBLEMS

    @staticmethod
    def train_command(problem: str) -> str:
        return ("python -m training.polynet cvrptw --single" if problem == "cvrptw"
                else f"python -m training.reld {problem}")

    def __init__(self, params: ReLDParams = ReLDParams()) -> None:
        self.params = params
        super().__init__()

    weights_path = staticmethod(weights_path)
    load = staticmethod(_load)

    def search(self, model: Any, instance: Instance, budget: Budget, clock: Clock,
               progress: ProgressCallback, device: str) -> tuple[list[list[int]], dict[str, Any]]:
        passes: ViewPasses | StrategyPasses
        if isinstance(instance, CVRPTWInstance):
            # windows, the fleet cap and its fallback are PolyNet's passes; with one strategy
            # they are ReLD's greedy multi-start (distinct forced first customers) over the
            # symmetries, then sampling
            passes = StrategyPasses(self.params, 1, device,
                                    trajectories=min(self.params.max_starts, instance.n - 1))
        else:
            passes = ViewPasses(self.params)
        inp = model_input(instance, device)
        return Search(model, inp, self.params, budget, clock, progress, self.name).run(passes)


class ViewPasses:
    """ReLD's passes: a chunk of starts over all eight symmetries (in blocks of ``together``);
    while time remains, more chunks of further starts (top-up passes, sized to the time left);
    once every start is decoded, the same on rotated views of the instance; then sampling
    rounds of the time left."""

    codes = None
    strategies = 1
    retry_seed = 0
    cautious = False

    def __init__(self, params: ReLDParams) -> None:
        self.params = params
        self.queue: list[tuple[Decode, int, int, int]] = []

    def plan(self, s: Search) -> None:
        inp = s.inp
        self.all_starts = min(self.params.max_starts, inp.n - 1 if inp.cvrp else inp.n)
        self.tsp_order = spread_starts(inp.n, self.all_starts) if not inp.cvrp else []
        starts, self.together = plan_passes(inp.n, self.all_starts, s.left() / s.load,
                                              inp.steps)
        self.sample_size = starts * self.together  # the unit of a sampling round's size
        self.angles = view_angles(self.params.max_views)
        self.view = 0
        self.view_coords, self.view_factor = inp.coords, 1.0
        self.chunk = (0, starts)
        self.blocks = list(range(0, 8, self.together))
        self.queue = [("greedy", b, *self.chunk) for b in self.blocks]

    def next(self, s: Search) -> Pass | None:
        if not self.queue:
            self.queue = self.more(s)
        mode, first_sym, first, m = self.queue.pop(0)
        n, steps = s.inp.n, s.inp.steps
        predicted = (s.sample_scale * pass_seconds(n, m, 1, steps) if mode == "sample"
                     else s.scale * pass_seconds(n, m, self.together, steps))
        if s.passes and (s.budget.cancelled() or s.left() < 1.2 * predicted):
            return None
        greedy = mode == "greedy"
        return Pass(mode, first_sym, self.together if greedy else 1, m, first,
                    factor=self.view_factor if greedy else 1.0)

    def more(self, s: Search) -> list[tuple[Decode, int, int, int]]:
        """Top-up passes over further starts, else the same on the next view, else a
        sampling round."""
        n, steps, together, params = s.inp.n, s.inp.steps, self.together, self.params
        rest = self.all_starts - (self.chunk[0] + self.chunk[1])
        seconds = s.left() / 1.4 / len(self.blocks)
        size = fit_trajectories(n, together, seconds, s.scale, rest, steps) if rest > 0 else 0
        if size == 0 and rest <= 0 and self.view + 1 < len(self.angles):
            # every start is done on this view: the next view, if a pass of at least half of
            # the starts fits (fewer starts on more views did worse)
            size = fit_trajectories(n, together, seconds, s.scale, self.all_starts, steps)
            if 2 * size >= self.all_starts:
                self.view += 1
                self.view_coords, self.view_factor = rotated_view(s.inp.coords,
                                                                  self.angles[self.view])
                self.chunk = (0, 0)
            else:
                size = 0
        if size > 0:
            self.chunk = (self.chunk[0] + self.chunk[1], size)
            return [("greedy", b, *self.chunk) for b in self.blocks]
        # a sampling round takes the time left (fewer, larger rounds pay the fixed cost per
        # decoding step once), at most ``sample_cap`` first passes' worth
        seconds = min(s.left() / params.round_margin, params.max_round_seconds)
        size = max(fit_trajectories(n, 1, seconds, s.sample_scale,
                                    params.sample_cap * self.sample_size, steps),
                   min(self.sample_size, params.min_samples))
        return [("sample", 0, 0, size)]

    def decode(self, s: Search, p: Pass) -> Rollout:
        inp = s.inp
        greedy = p.mode == "greedy"
        aug = augment(self.view_coords, p.symmetry + p.k)[p.symmetry:] if greedy else inp.coords
        if inp.cvrp:
            assert inp.demand is not None and inp.capacity is not None
            return rollout_cvrp(s.model, aug, inp.demand.expand(aug.shape[0], -1), p.count,
                                decode=p.mode, generator=s.generator,
                                capacity=inp.capacity.expand(aug.shape[0]), first_rank=p.first,
                                stop=s.stop)
        if greedy:
            start = torch.as_tensor(self.tsp_order[p.first:p.first + p.count], device=inp.device)
        else:
            start = torch.randint(0, inp.n, (p.count,), generator=s.generator, device=inp.device)
        return rollout_tsp(s.model, aug, start[None].expand(aug.shape[0], p.count),
                           decode=p.mode, generator=s.generator, stop=s.stop)

    def stats(self, s: Search) -> dict[str, Any]:
        stats: dict[str, Any] = {
            "starts": s.starts, "symmetries_per_pass": self.together, "views": self.view + 1,
            "passes": s.passes, "sampled_solutions": s.sampled,
            "sampling_passes": s.sampling_passes, "largest_sampling_round": s.largest_round,
            "device": s.inp.device, "normalized_length": round(s.best_len, 6)}
        if s.rebuilt:
            stats["reconstruction"] = s.rebuilt
        stats["polish"] = s.polished if s.polished is not None else {}
        if s.repair is not None:
            stats["fleet_repair"] = {k: v for k, v in s.repair.items() if k != "routes"}
        if s.inserted is not None:
            stats["start"] = s.inserted[2]
        elif s.passes == 0:
            stats["start"] = "greedy construction (cancelled before the first pass ended)"
        return stats


def van_der_corput(i: int) -> float:
    """The i-th point of the base-2 van der Corput sequence in [0, 1) (0, 1/2, 1/4, 3/4, …):
    every prefix of it is spread evenly."""
    x, f = 0.0, 0.5
    while i:
        x += f * (i & 1)
        i >>= 1
        f /= 2
    return x


def spread_starts(n: int, count: int) -> list[int]:
    """``count`` start nodes spread evenly over 0..n-1, ordered so that every prefix is spread
    too (van der Corput order): the first greedy pass takes a prefix, top-up passes the rest."""
    nodes = np.unique(np.linspace(0, n - 1, count).round().astype(int))
    order: list[int] = []
    seen: set[int] = set()
    i = 0
    while len(order) < len(nodes):
        j = int(van_der_corput(i) * len(nodes))
        if j not in seen:
            seen.add(j)
            order.append(int(nodes[j]))
        i += 1
    return order


def view_angles(count: int) -> list[float]:
    """``count`` rotation angles in [0, π/2) in van der Corput order (0, π/4, π/8, 3π/8, …):
    the eight symmetries already cover the multiples of π/2, and every prefix is spread."""
    return [van_der_corput(i) * math.pi / 2 for i in range(count)]


def rotated_view(coords: torch.Tensor, angle: float) -> tuple[torch.Tensor, float]:
    """``coords`` (1, N, 2) in [0, 1]² rotated by ``angle`` about the square's centre and
    scaled back into [0, 1]², with the factor that turns lengths in the view into lengths in
    ``coords`` (rotation keeps distances; the rescaling divides them by the new extent)."""
    if angle == 0.0:
        return coords, 1.0
    c, s = math.cos(angle), math.sin(angle)
    xy = coords - 0.5
    turned = torch.stack((c * xy[..., 0] - s * xy[..., 1], s * xy[..., 0] + c * xy[..., 1]), -1)
    extent = float((turned.amax(dim=1) - turned.amin(dim=1)).amax())
    return normalize_coords(turned), extent
