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
Each stretch is decoded from both of its ends (32 TSP100 at 1 s: better on 19, worse on 4
than one direction; PolyNet 18/5); two more sampled copies per symmetry cost more rounds
than they gained (11/13).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from solvers.base import Clock
from solvers.routing.env import augment, normalize_coords, rollout_path

#: Stretch lengths drawn per round (nodes, end nodes included).
SHORTEST, LONGEST = 10, 25
#: At most this many small instances per round (stretches × symmetries × copies).
MAX_BATCH = 4096
#: Decodings of each stretch per symmetry: forward and backward (from either end), then
#: sampled ones (PolyNet: further strategies, greedily).
COPIES = 2
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
                     copies: int | None = None) -> tuple[list[int], float, dict[str, Any]]:
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
    generator = torch.Generator(device=coords.device).manual_seed(seed)
    copies = COPIES if copies is None else copies
    while True:
        length = int(rng.integers(shortest, longest + 1))
        count = n // length
        syms = max(1, min(8, MAX_BATCH // count))
        reps = max(1, min(copies, MAX_BATCH // (count * syms)))
        size = reps * syms * count
        predicted = scale * _round_seconds(length, size)
        left = min(deadline - clock.elapsed, clock.remaining)
        if left < 1.2 * predicted or clock.budget.cancelled():
            break
        t0 = clock.elapsed
        rolled = np.roll(order, -int(rng.integers(n)))
        stretches = rolled[:count * length].reshape(count, length)
        small = normalize_coords(coords[torch.as_tensor(stretches, device=coords.device)])
        # (reps·syms·count, L, 2), copy-major then symmetry-major; odd copies run backward
        batch = augment(small, syms).repeat(reps, 1, 1)
        copy = torch.arange(size, device=coords.device) // (syms * count)
        backward = copy % 2 == 1
        first = torch.where(backward, length - 1, 0)
        z = sample = None
        if strategies is not None:
            z = strategies[torch.arange(size, device=coords.device) % len(strategies)][:, None]
        elif reps > 2:
            sample = copy >= 2
        result = rollout_path(model, batch, first, length - 1 - first, strategy=z,
                              generator=generator, sample_rows=sample)
        local = result.actions[:, 0].cpu().numpy()
        back = backward.cpu().numpy()
        local[back] = local[back, ::-1]  # every path from the stretch's first node to its last
        local = local.reshape(reps * syms, count, length)
        candidates = np.take_along_axis(stretches[None].repeat(reps * syms, 0), local, axis=2)
        new_lengths = path_lengths(xy, candidates)  # (reps·syms, count)
        best = new_lengths.argmin(0)
        old_lengths = path_lengths(xy, stretches)
        better = new_lengths[best, np.arange(count)] < old_lengths - 1e-9
        if better.any():
            stretches[better] = candidates[best[better], np.flatnonzero(better)]
            rolled[:count * length] = stretches.reshape(-1)
            order = rolled
            improved += int(better.sum())
        rounds += 1
        scale = (clock.elapsed - t0) / _round_seconds(length, size)
    final = float(path_lengths(xy, np.append(order, order[0])))
    gain = 100.0 * (start_length - final) / start_length if start_length > 0 else 0.0
    return [int(v) for v in order], final, {"rounds": rounds, "improved_stretches": improved,
                                            "gain_percent": round(gain, 4)}
