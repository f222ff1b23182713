"""Neural local reconstruction of a TSP tour: the model itself re-decodes short stretches of
its best tour and every stretch that comes out shorter replaces the old one.

Each round cuts the tour, from a random offset, into disjoint stretches of one random length
L; a stretch keeps its two end nodes and the model re-decodes the path between them over the
stretch's own nodes (``env.rollout_path``: each stretch is scaled into the unit square as a
small instance of its own, greedily on its eight symmetries, all stretches of a round in one
batch). This is the reconstruction step of LEHD's RRC and SIL's parallel local
reconstruction, done with ReLD's encoder–light-decoder model: no classical move is involved.
Short stretches did best on 100-node sets (16 TSP100, 0.3 of 1 s given to rounds:
L in 10–25 −0.81%, 10–40 −0.67%, 20–60 −0.55% against the same second spent on construction).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from solvers.base import Clock
from solvers.routing.env import augment, normalize_coords, rollout_path

#: Stretch lengths drawn per round (nodes, end nodes included).
SHORTEST, LONGEST = 10, 25
#: At most this many small instances per round (stretches × symmetries).
MAX_BATCH = 4096
#: Predicted seconds per decoding step and per small instance and node (the measured rounds
#: rescale it), used to fit rounds in the time left.
_STEP_COST = 1.0e-3
_NODE_COST = 2.5e-7


def path_lengths(xy: np.ndarray, paths: np.ndarray) -> np.ndarray:
    """(..., L) node paths over points xy (N, 2) -> (...) float64 path lengths."""
    p = xy[paths]
    return np.sqrt(((p[..., 1:, :] - p[..., :-1, :]) ** 2).sum(-1)).sum(-1)


def _round_seconds(length: int, instances: int) -> float:
    return length * (_STEP_COST + _NODE_COST * instances * length)


def reconstruct_tour(model: Any, coords: torch.Tensor, tour: list[int], clock: Clock,
                     seconds: float, seed: int, strategies: torch.Tensor | None = None,
                     ) -> tuple[list[int], float, dict[str, Any]]:
    """Improve ``tour`` over ``coords`` (N, 2, the model's normalized input) for about
    ``seconds`` (never past the clock's budget). Returns the tour, its length over
    ``coords`` and statistics.

    ``strategies`` (S, bits): PolyNet strategies, taken in turn by the small instances of a
    round (None: the plain decoder)."""
    xy = coords.detach().cpu().double().numpy()
    order = np.asarray(tour)
    n = len(order)
    rng = np.random.default_rng(seed)
    start_length = float(path_lengths(xy, np.append(order, order[0])))
    rounds = improved = 0
    scale = 1.0
    deadline = clock.elapsed + seconds
    shortest, longest = min(SHORTEST, n), min(LONGEST, n)
    if n < 6:
        return [int(v) for v in order], start_length, {"rounds": 0, "improved_stretches": 0,
                                                       "gain_percent": 0.0}
    while True:
        length = int(rng.integers(shortest, longest + 1))
        count = n // length
        syms = max(1, min(8, MAX_BATCH // count))
        predicted = scale * _round_seconds(length, count * syms)
        left = min(deadline - clock.elapsed, clock.remaining)
        if left < 1.2 * predicted or clock.budget.cancelled():
            break
        t0 = clock.elapsed
        rolled = np.roll(order, -int(rng.integers(n)))
        stretches = rolled[:count * length].reshape(count, length)
        small = normalize_coords(coords[torch.as_tensor(stretches, device=coords.device)])
        batch = augment(small, syms)  # (syms·count, L, 2), symmetry-major
        ends = torch.full((syms * count,), length - 1, device=coords.device)
        z = None
        if strategies is not None:
            z = strategies[torch.arange(syms * count, device=coords.device)
                           % len(strategies)][:, None]
        result = rollout_path(model, batch, torch.zeros_like(ends), ends, strategy=z)
        local = result.actions[:, 0].cpu().numpy().reshape(syms, count, length)
        candidates = np.take_along_axis(stretches[None].repeat(syms, 0), local, axis=2)
        new_lengths = path_lengths(xy, candidates)  # (syms, count)
        best = new_lengths.argmin(0)
        old_lengths = path_lengths(xy, stretches)
        better = new_lengths[best, np.arange(count)] < old_lengths - 1e-9
        if better.any():
            stretches[better] = candidates[best[better], np.flatnonzero(better)]
            rolled[:count * length] = stretches.reshape(-1)
            order = rolled
            improved += int(better.sum())
        rounds += 1
        scale = (clock.elapsed - t0) / _round_seconds(length, count * syms)
    final = float(path_lengths(xy, np.append(order, order[0])))
    gain = 100.0 * (start_length - final) / start_length if start_length > 0 else 0.0
    return [int(v) for v in order], final, {"rounds": rounds, "improved_stretches": improved,
                                            "gain_percent": round(gain, 4)}
