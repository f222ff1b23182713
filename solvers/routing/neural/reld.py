"""The ``reld`` solver: ReLD's learned policy, decoded greedily from many starts over the
eight symmetries of the square, then on rotated views of the instance, then by sampling
while time remains.

Budgeting: a greedy pass is the unit of work. Its cost is estimated up front (a fixed cost per
decoding step plus trajectories × N per step, and N² per symmetry for the encoder) to size a
first pass of start nodes that fits half of the time limit; its measured time rescales the
estimate, and top-up greedy passes over further start nodes (spread so that every prefix
covers the instance) fill the time left; once every start is decoded, the same passes run on
views of the instance rotated by angles between the symmetries' multiples of π/2 (new inputs
to the model, so new greedy solutions), then sampling rounds run while the measured cost
still fits. The passes get 70% of the time on the TSP and 50% on CVRP; the rest goes to the
model's reconstruction of its best solution (``solvers.routing.neural.reconstruct``: stretches of
the tour re-decoded between their fixed ends, groups of neighbouring routes re-solved). On
100-node sets greedy starts beat sampling (32 TSP100 at 1 s: 7.837 against 7.872 with 12
starts and sampling; CVRP100 17.124 against 17.187). A TSP of INSERTION_NODES (400) or more,
or one whose single greedy trajectory would not fit the time, starts instead from random
insertion and gives all the time to the reconstruction (``insertion_start``: the model,
trained on 100 nodes, builds worse tours than that at 400 and more). Memory stays near the
size of one pass: symmetries run one at a time above 1,000 nodes, and the encoder's attention
uses PyTorch's fused kernel, which never materializes the N×N matrix. Every plan ends with a
classical descent (``descent``: 2-opt + Or-opt for the TSP, relocate/swap/2-opt* for CVRP),
and a CVRP fleet cap is kept by route elimination (``descent.fleet_repair``).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from models.polynet import PolyNetConfig, PolyNetModel
from models.reld import ReLDConfig, ReLDModel
from solvers.contract import Budget, Clock, ProgressCallback, ProgressEvent, no_progress
from solvers.errors import InstanceError
from solvers.routing.classical.construct import (
    nearest_neighbour_routes,
    nearest_neighbour_tour,
    random_insertion_tour,
)
from solvers.routing.classical.descent import (
    POLISH_SHARE,
    polish,
    polish_tour,
    tour_polish_keep,
)
from solvers.routing.classical.exact import exact_solution
from solvers.routing.classical.exact import warm_up as exact_warm_up
from solvers.routing.classical.fleet import REPAIR_SHARE, fleet_repair, over_fleet_error
from solvers.routing.classical.localsearch import two_opt
from solvers.routing.classical.warmup import warm_up as descent_warm_up
from solvers.routing.neural.checkpoints import CheckpointCache, missing_checkpoint
from solvers.routing.neural.env import (
    DecodeStoppedError,
    augment,
    cvrp_routes,
    fewest_over_fleet,
    model_demands,
    normalize_coords,
    normalized_coords,
    rollout_cvrp,
    rollout_tsp,
)
from solvers.routing.neural.reconstruct import path_lengths, reconstruct_routes, reconstruct_tour
from solvers.routing.problem import CVRPInstance, CVRPTWInstance, Instance, TSPInstance
from solvers.routing.solution import Solution, build_solution
from solvers.tuning import torch_threads
from solvers.weights import WEIGHTS_DIR

#: Intra-op threads for torch. One per solve: the service runs solves and jobs side by side,
#: and OpenMP threads fighting for cores made a pass 20× slower on the 2-core machine.
TORCH_THREADS = torch_threads()
MAX_STARTS = 100
#: A sampling round decodes at most SAMPLE_CAP first passes' worth of trajectories (larger
#: single passes overran the limit under load: 2.7 s of 2 s at 8), the last
#: one at least MIN_SAMPLES, or it is skipped.
SAMPLE_CAP = 2
MIN_SAMPLES = 16
#: A sampling round is fitted to the time left divided by this margin. The round's speed is
#: predicted from the passes before it, and a load change while it runs makes it slower: at
#: 1.2 (1.4 for the first round) a loaded run of a 2 s CVRPTW solve took 2.34 s, with three
#: processes on two cores single rounds ran 1.2-1.6 times their prediction. Only the last
#: round is smaller for it (the rounds before it are held to SAMPLE_CAP).
ROUND_MARGIN = 1.6
#: Longest a sampling round is planned to take: a cancel (an API job's DELETE, the CLI's
#: Ctrl-C) is seen between rounds, and one round fitted to a 60 s budget's time left ran on
#: 3-8 s after a Ctrl-C (QA sweep: 2,048 trajectories of X-n176-k26 in one round).
MAX_ROUND_SECONDS = 1.0
#: Views of the instance decoded greedily before sampling: the base one and rotations by
#: angles in (0, π/2) (``view_angles``), each on the eight symmetries. 32 TSP100 at equal
#: solutions: all 100 starts × 8 symmetries on 2 views 0.980 %, on 4 views 0.918 %, against
#: 1.089 % for the search with sampling at 4 s (1.094 % from one view alone).
MAX_VIEWS = 8
#: Share of the time limit kept for the model's reconstruction of its best solution
#: (solvers.routing.neural.reconstruct: stretches of a tour, groups of routes) after the passes.
#: 32 TSP100 at 1 s: 0.3 -> 7.8777, 0.15 -> 7.8786, 0 (rounds only in the time the passes
#: leave) -> 7.8980; 24 others: 0.3 and 0.5 alike (7.908), 0.7 starves the passes (8.059).
#: 24 CVRP100 at 1 s: 0.5 -> 16.5788 against 0.3 -> 16.6018 (better on 16, worse on 3) and
#: 0.15 -> 16.6734; 24 others: 0.7 worse than 0.5 on 17 (16.3059 against 16.1685).
RECONSTRUCT_SHARE = {"tsp": 0.3, "cvrp": 0.5, "cvrptw": 0.5}
MAX_NODES = {"tsp": 10_000, "cvrp": 10_000, "cvrptw": 2_000}
PROBLEMS = ("tsp", "cvrp", "cvrptw")
#: The cost model of a greedy pass (see ``pass_seconds``), fitted on one core of the 2-core
#: development machine (TSP100: 12 × 8 trajectories 0.28 s, 100 × 8 1.12 s); it sizes the
#: first pass, the measured time of each greedy pass rescales it for the next.
_STEP_COST = 1.7e-3
_DECODE_COST = 1.2e-7
_ENCODE_COST = 2.0e-8


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


def availability() -> str | None:
    """None when at least one checkpoint is shipped; else what is missing and how to train."""
    missing = [p for p in PROBLEMS if not weights_path(p).exists()]
    if len(missing) == len(PROBLEMS):
        return ("no trained weights: weights/reld_tsp.pt, reld_cvrp.pt and reld_cvrptw.pt are "
                "missing; train them with `python -m training.reld tsp|cvrp` and `python -m "
                "training.polynet cvrptw --single`")
    return None


def problem_availability(problem: str) -> str | None:
    """None when ``problem``'s checkpoint is shipped, else which file and how to train it
    (so a job for it is refused when submitted, not when it runs)."""
    path = weights_path(problem)
    return None if path.exists() else missing_checkpoint(path, ReLDSolver.train_command(problem))


class ReLDSolver:
    """Loads each problem's checkpoint once, on first use. PolyNet, built on ReLD's decoder,
    reuses this class and swaps the checkpoints and the search."""

    name = "reld"
    problems: tuple[str, ...] = PROBLEMS

    @staticmethod
    def train_command(problem: str) -> str:
        return ("python -m training.polynet cvrptw --single" if problem == "cvrptw"
                else f"python -m training.reld {problem}")

    def __init__(self) -> None:
        self._cache = CheckpointCache(self.name, self.weights_path, self.load,
                                      self.train_command)
        torch.set_num_threads(TORCH_THREADS)

    weights_path = staticmethod(weights_path)
    load = staticmethod(_load)

    def search(self, model: Any, instance: Instance, budget: Budget, clock: Clock,
               progress: ProgressCallback, device: str) -> tuple[list[list[int]], dict[str, Any]]:
        if isinstance(instance, CVRPTWInstance):
            # Windows, the fleet cap and its repair live in PolyNet's search; with one
            # strategy it is ReLD's: greedy multi-start (distinct forced first customers) over
            # the symmetries, then sampling, then reconstruction. (Imported here: polynet
            # builds on this module.)
            from solvers.routing.neural.polynet import _search as tw_search

            return tw_search(model, instance, budget, clock, progress, device, None,
                             trajectories=min(MAX_STARTS, instance.n - 1), solver=self.name)
        return _search(model, instance, budget, clock, progress, device)

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
        # optimum of 10-12-customer CVRPs by a few percent (stop 38's notes)
        exact = exact_solution(instance, self.name, clock, budget, progress)
        if exact is not None:
            return exact
        device = budget.device if budget.device == "cpu" or torch.cuda.is_available() else "cpu"
        model = self.model(instance.problem, device)
        with torch.inference_mode():
            routes, stats = self.search(model, instance, budget, clock, progress, device)
        if isinstance(instance, TSPInstance) and 0 in routes[0]:
            # the winning decoding starts wherever its forced first node was; a tour is
            # reported from node 0, as every other solver reports it (QA sweep)
            at = routes[0].index(0)
            routes = [routes[0][at:] + routes[0][:at]]
        if isinstance(instance, CVRPInstance) and instance.vehicles_over_fleet(routes):
            raise over_fleet_error(self.name, instance, routes, stats)
        stats["seed"] = budget.seed
        sol = build_solution(instance, routes, solver=self.name, wall_time=clock.elapsed,
                             stats=stats)
        progress(ProgressEvent(self.name, clock.elapsed, stats["passes"], sol.cost, "done"))
        return sol


def decode_steps(instance: Instance) -> float:
    """Decoding steps of one trajectory, as ``pass_seconds`` counts them: 1.15 N, which is
    a 15% margin for the TSP (N steps; the cost model was fitted on it) and covers CVRP's depot
    returns on uniform CVRP100 (about 10 routes); a CVRP trajectory returns to the depot at
    least once per ⌈Σ demand / capacity⌉ routes, so an instance with many routes counts
    N + that bound (31 nodes with one vehicle per customer: 61 steps; planned as 36, PolyNet's
    first pass took 1.5-1.8 s of a 1 s limit)."""
    n = instance.n
    if isinstance(instance, CVRPInstance):
        routes = math.ceil(float(np.sum(instance.demands)) / float(instance.capacity))
        return max(1.15 * n, float(n + routes))
    return 1.15 * n


def pass_seconds(n: int, trajectories: int, symmetries: int,
                 steps: float | None = None) -> float:
    """Predicted seconds of one greedy pass on the development machine: every decoding step
    pays a fixed overhead (Python and kernel launches) plus a share per trajectory and node,
    and the encoder runs once per symmetry. ``steps`` per trajectory default to 1.15 N
    (``decode_steps``). The measured time of each pass corrects the scale, not the shape."""
    if steps is None:
        steps = 1.15 * n
    return (steps * (_STEP_COST + _DECODE_COST * trajectories * symmetries * n)
            + _ENCODE_COST * symmetries * n * n)


def plan_passes(n: int, trajectories: int, seconds: float,
                steps: float | None = None) -> tuple[int, int]:
    """(trajectories, symmetries per pass) so that the first greedy pass fits in about half
    of ``seconds`` (what is left of the budget once the model is loaded). Trajectories are
    halved before symmetries: on 100-node sets the eight symmetries of a few starts beat many
    starts on one symmetry. PolyNet plans its strategies the same way."""
    together = 8 if n <= 200 else 4 if n <= 1000 else 1
    budget = 0.5 * seconds

    def worth_halving(m: int, t: int, m2: int, t2: int) -> bool:
        # over budget, and the smaller pass saves a real share of the time: where the fixed
        # cost per decoding step dominates, halving only throws solutions away (PolyNet at
        # 0.5 s on TSP100 planned 1 strategy on 1 symmetry, then ran 14 passes of 1-2
        # solutions, 0.8% behind ReLD)
        now = pass_seconds(n, m, t, steps)
        return now > budget and (now > seconds
                                 or pass_seconds(n, m2, t2, steps) < (1 - MIN_SAVING) * now)

    while trajectories > 1 and worth_halving(trajectories, together, trajectories // 2,
                                             together):
        trajectories //= 2
    while together > 1 and worth_halving(trajectories, together, trajectories, together // 2):
        together //= 2
    return max(1, trajectories), together


#: ``plan_passes`` halves a first pass only while that saves at least this share of its time.
MIN_SAVING = 0.15


#: TSPs of at least this many nodes start from random insertion, not from the model's greedy
#: passes: the model, trained on 100 nodes, builds worse tours at this size than random
#: insertion, and the reconstruction gets all the time. Measured (uniform, ReLD, random
#: insertion + reconstruction against passes + reconstruction, equal time, mean length):
#: 200 nodes at 2 s +3.2% (8 instances), 300 at 3 s +3.1% (6), 400 at 4 s −0.3% (6), 500 at
#: 5 s −1.2% (6), 500 at 10 s 0.0% (4), 700 at 7 s −2.2% (4), 1,000 at 10 s −3.4% (4).
INSERTION_NODES = 400


def insertion_start(n: int, seconds: float, coords: torch.Tensor,
                    seed: int) -> tuple[list[int], float, str] | None:
    """A random-insertion tour over ``coords`` (1, N, 2) with its length and a note for the
    stats, for a TSP of INSERTION_NODES or more, or when a single greedy trajectory of the
    model (N decoding steps) is predicted to take longer than ``seconds`` (a 5,000-node TSP
    at 8 s took 10.5 s for one greedy pass, 23% above the optimum's estimate, and left no
    time for reconstruction); else None (the greedy passes build the first tour)."""
    predicted = pass_seconds(n, 1, 1)
    if n < INSERTION_NODES and predicted <= seconds:
        return None
    xy = coords[0].detach().cpu().double().numpy()
    tour = random_insertion_tour(xy, seed)
    length = float(path_lengths(xy, np.append(tour, tour[0])))
    why = (f"{n} nodes, at least {INSERTION_NODES}" if n >= INSERTION_NODES else
           f"one greedy trajectory of {n} steps predicted at {predicted:.1f} s, more than "
           f"the {seconds:.1f} s for construction")
    return [int(v) for v in tour], length, f"random insertion ({why})"


def cancelled_start(instance: Instance, order: np.ndarray,
                    coords: torch.Tensor) -> tuple[list[int], float, int]:
    """The plan of a solve cancelled before its first greedy pass ended (QA sweep: a
    1,000-node CVRP cancelled at 1 s of 300 ran its 20 s first pass to the end): a greedy
    construction (nearest neighbour; for CVRPTW the soonest-service routes), as the model's
    sequence over ``order`` (model node j is instance node ``order[j]``; CVRP routes joined by
    the depot, 0), its length in the normalized ``coords`` (1, N, 2), and its routes beyond
    the fleet cap."""
    excess = 0
    if isinstance(instance, CVRPInstance):
        if isinstance(instance, CVRPTWInstance):
            from solvers.routing.classical.timewindows import time_window_routes

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


def after_cancel(budget: Budget, seconds: float) -> float:
    """A ``time.perf_counter()`` deadline ``seconds`` away, or now once the solve is
    cancelled: the repair and the polish end on their deadline, not on a cancel."""
    return time.perf_counter() + (0.0 if budget.cancelled() else seconds)


def fit_trajectories(n: int, symmetries: int, seconds: float, scale: float,
                     most: int, steps: float | None = None) -> int:
    """How many more greedy trajectories (up to ``most``) a pass may decode in ``seconds``,
    with the cost model rescaled to the passes measured so far; 0 when not even one fits."""
    lo, hi = 0, most
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if scale * pass_seconds(n, mid, symmetries, steps) <= seconds:
            lo = mid
        else:
            hi = mid - 1
    return lo


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


def _search(model: Any, instance: Instance, budget: Budget, clock: Clock,
            progress: ProgressCallback, device: str) -> tuple[list[list[int]], dict[str, Any]]:
    n = instance.n
    cvrp = isinstance(instance, CVRPInstance)
    coords = normalized_coords(instance.coords, device)
    order = np.arange(n)
    demand = None
    if cvrp:
        assert isinstance(instance, CVRPInstance)
        # The model expects the depot at node 0.
        order = np.concatenate(([instance.depot], np.delete(np.arange(n), instance.depot)))
        coords = coords[:, torch.as_tensor(order, device=device)]
        fractions, mask_capacity = model_demands(instance.demands[order], instance.capacity)
        demand = torch.as_tensor(fractions, dtype=torch.float32, device=device)[None]
        capacity = torch.tensor([mask_capacity], device=device)
    all_starts = min(MAX_STARTS, n - 1 if cvrp else n)
    steps = decode_steps(instance)
    tsp_order = spread_starts(n, all_starts) if not cvrp else []
    # the last part of the time goes to the model's reconstruction of its best solution
    reserve = RECONSTRUCT_SHARE[instance.problem] * clock.remaining

    def left() -> float:
        return max(0.0, clock.remaining - reserve)

    starts, together = plan_passes(n, all_starts, left(), steps)
    sample_size = starts * together  # the unit of a sampling round's size
    generator = torch.Generator(device=device).manual_seed(budget.seed)
    best_len, best_seq, best_excess = math.inf, None, 0
    # a fleet cap (CVRP): fewer routes beyond it first (none beats any), then length
    fleet = instance.max_vehicles if isinstance(instance, CVRPInstance) else None
    inserted = None if cvrp else insertion_start(n, left(), coords, budget.seed)
    if inserted is not None:
        best_seq, best_len, _ = inserted
    passes, samples, sampling_passes, used, largest_round = 0, 0, 0, 0, 0
    scale = sample_scale = 1.0
    # Greedy passes: a chunk of starts over all eight symmetries (in blocks of ``together``);
    # while time remains, more chunks of further starts (top-up passes, sized to the time
    # left), since on 100-node sets greedy starts beat sampling; once every start is decoded,
    # the same on rotated views of the instance (a new input, so new greedy solutions), which
    # beat sampling too; then sampling rounds.
    angles = view_angles(MAX_VIEWS)
    view, views_used = 0, 1
    view_coords, view_factor = coords, 1.0
    chunk = (0, starts)
    blocks = list(range(0, 8, together))
    queue: list[tuple[str, int, int, int]] = [("greedy", b, *chunk) for b in blocks]
    while inserted is None:  # an insertion start leaves all the time to reconstruction
        if not queue:
            rest = all_starts - (chunk[0] + chunk[1])
            seconds = left() / 1.4 / len(blocks)
            size = fit_trajectories(n, together, seconds, scale, rest, steps) if rest > 0 else 0
            if size == 0 and rest <= 0 and view + 1 < len(angles):
                # every start is done on this view: the next view, if a pass of at least
                # half of the starts fits (fewer starts on more views did worse)
                size = fit_trajectories(n, together, seconds, scale, all_starts,
                                        steps)
                if 2 * size >= all_starts:
                    view += 1
                    views_used = view + 1
                    view_coords, view_factor = rotated_view(coords, angles[view])
                    chunk = (0, 0)
                else:
                    size = 0
            if size > 0:
                chunk = (chunk[0] + chunk[1], size)
                queue = [("greedy", b, *chunk) for b in blocks]
            else:
                # a sampling round takes the time left (fewer, larger rounds pay the fixed
                # cost per decoding step once), at most SAMPLE_CAP first passes' worth
                seconds = min(left() / ROUND_MARGIN, MAX_ROUND_SECONDS)
                size = max(fit_trajectories(n, 1, seconds, sample_scale,
                                            SAMPLE_CAP * sample_size, steps),
                           min(sample_size, MIN_SAMPLES))
                queue = [("sample", 0, 0, size)]
        mode, first_sym, first, m = queue.pop(0)
        predicted = (sample_scale * pass_seconds(n, m, 1, steps) if mode == "sample"
                     else scale * pass_seconds(n, m, together, steps))
        if passes and (budget.cancelled() or left() < 1.2 * predicted):
            break
        t0 = clock.elapsed
        k = together if mode == "greedy" else 1
        aug = augment(view_coords, first_sym + k)[first_sym:] if mode == "greedy" else coords
        dem = demand.expand(aug.shape[0], -1) if demand is not None else None
        try:
            if cvrp:
                result = rollout_cvrp(model, aug, dem, m, decode=mode, generator=generator,
                                      capacity=capacity.expand(aug.shape[0]), first_rank=first,
                                      stop=budget.cancelled)
            else:
                if mode == "greedy":
                    start = torch.as_tensor(tsp_order[first:first + m], device=device)
                else:
                    start = torch.randint(0, n, (m,), generator=generator, device=device)
                result = rollout_tsp(model, aug, start[None].expand(aug.shape[0], m),
                                     decode=mode, generator=generator, stop=budget.cancelled)
        except DecodeStoppedError:
            # QA sweep: cancelled mid-pass; the partial pass is discarded
            break
        flat, excess = fewest_over_fleet(result.actions, result.lengths, fleet)
        if mode == "greedy" and view_factor != 1.0:
            flat = flat * view_factor  # back to the base view's units
        i = int(flat.argmin())
        if best_seq is None or (excess, float(flat[i])) < (best_excess, best_len):
            best_len, best_excess = float(flat[i]), excess
            b, mm = divmod(i, result.lengths.shape[1])
            best_seq = result.actions[b, mm].tolist()
        passes += 1
        took = clock.elapsed - t0
        if mode == "sample":
            samples += int(flat.numel())
            largest_round = max(largest_round, int(flat.numel()))
            sampling_passes += 1
            sample_scale = took / pass_seconds(n, m, 1, steps)
        else:
            used = max(used, first + m)
            scale = took / pass_seconds(n, m, together, steps)
            if not samples:
                sample_scale = scale
        progress(ProgressEvent("reld", clock.elapsed, passes, None,
                               f"{mode} pass {passes}: best normalized length {best_len:.4f}"))
    if best_seq is None:
        # QA sweep: cancelled before the first pass ended: a greedy construction instead
        best_seq, best_len, best_excess = cancelled_start(instance, order, coords)
    rebuilt: dict[str, Any] = {}
    polished: dict[str, Any] = {}
    if not cvrp:
        best_seq, best_len, rebuilt = reconstruct_tour(model, coords[0], best_seq, clock,
                                                       clock.remaining - tour_polish_keep(
                                                           n, clock.remaining),
                                                       budget.seed, progress=progress,
                                                       slowdown=max(scale, sample_scale))
        assert isinstance(instance, TSPInstance)
        polished = polish_tour(instance, best_seq, after_cancel(budget, clock.remaining))
        best_len *= polished.pop("factor")
        best_seq = polished.pop("tour")
    if cvrp:
        assert isinstance(instance, CVRPInstance)
        routes = [[int(order[v]) for v in r] for r in cvrp_routes(best_seq)]
        repair = None
        if best_excess > 0:
            # every decoded plan breaks the fleet cap, which reconstruction never mends
            repair = fleet_repair(instance, routes,
                                  after_cancel(budget, REPAIR_SHARE * clock.remaining),
                                  budget.seed)
            if repair["routes"] is not None:
                best_len *= instance.cost(repair["routes"]) / max(instance.cost(routes), 1e-12)
                routes = repair["routes"]
        before = instance.cost(routes)
        # a sliver of the time is kept for the classical polish below
        keep = POLISH_SHARE * clock.remaining
        routes, rebuilt = reconstruct_routes(model, instance, routes, clock,
                                             clock.remaining - keep, budget.seed,
                                             device=device, progress=progress,
                                             slowdown=max(scale, sample_scale))
        best_len *= instance.cost(routes) / before if before > 0 else 1.0
        polished = polish(instance, routes, after_cancel(budget, clock.remaining))
        best_len *= polished.pop("factor")
        routes = polished.pop("routes")
    else:
        routes = [[int(v) for v in best_seq]]
    stats = {"starts": used, "symmetries_per_pass": together, "views": views_used,
             "passes": passes,
             "sampled_solutions": samples, "sampling_passes": sampling_passes,
             "largest_sampling_round": largest_round,
             "device": device,
             "normalized_length": round(best_len, 6)}
    if rebuilt:
        stats["reconstruction"] = rebuilt
    stats["polish"] = polished
    if cvrp and repair is not None:
        stats["fleet_repair"] = {k: v for k, v in repair.items() if k != "routes"}
    if inserted is not None:
        stats["start"] = inserted[2]
    elif passes == 0:
        stats["start"] = "greedy construction (cancelled before the first pass ended)"
    return routes, stats

