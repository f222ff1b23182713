"""The confirmation step of the checkpoint protocol: a checkpoint that beats the shipped one on
the fixed validation set replaces it only if it also beats it, paired, on fresh instances.

Why: every evaluation during training is on the same validation instances, and a checkpoint is
kept when one of them is the best so far, so the best is partly luck. Measured on PolyNet TSP:
1.898% -> 1.860% on the validation set was -0.03% [-0.14, +0.08] on 128 fresh TSP100
(``python -m training.compare_checkpoints``). ``training.polynet`` and ``training.reld`` both
use this gate; the instances depend only on the problem and the seed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from solvers.routing.generate import (
    SOLOMON_FAMILIES,
    random_cvrp,
    random_cvrptw,
    random_tsp,
    solomon_like_cvrptw,
)

#: Fresh instances per confirmation (per-instance differences of a few tenths of a percent
#: need about this many to be told from noise).
CONFIRM_COUNT = 128
#: The problems in the order that seeds their streams (PolyNet's, which came first).
PROBLEMS = ("tsp", "cvrp", "cvrptw")


def confirmation_data(problem: str, seed: int, count: int = CONFIRM_COUNT,
                      n: int = 100) -> dict[str, Any]:
    """``count`` fresh ``n``-node instances, no references (the comparison is paired);
    CVRPTW: half random_cvrptw, half drawn like Solomon's six families."""
    rng = np.random.default_rng([seed, PROBLEMS.index(problem)])
    if problem == "cvrptw":
        instances = [random_cvrptw(rng, n)[0] if i % 2 == 0 else
                     solomon_like_cvrptw(rng, n, SOLOMON_FAMILIES[(i // 2) % len(SOLOMON_FAMILIES)])
                     for i in range(count)]
        return {"coords": np.stack([i.coords for i in instances]),
                "demands": np.stack([i.demands for i in instances]),
                "capacities": np.asarray([i.capacity for i in instances]),
                "time_windows": np.stack([i.time_windows for i in instances]),
                "service_times": np.stack([i.service_times for i in instances])}
    if problem == "tsp":
        return {"coords": np.stack([random_tsp(rng, n) for _ in range(count)])}
    drawn = [random_cvrp(rng, n) for _ in range(count)]
    return {"coords": np.stack([d[0] for d in drawn]), "demands": np.stack([d[1] for d in drawn]),
            "capacities": np.asarray([d[2] for d in drawn])}


def paired_change(candidate: np.ndarray, incumbent: np.ndarray) -> float:
    """Mean per-instance change (%) of the candidate's lengths against the incumbent's."""
    return float(np.mean(candidate / incumbent - 1) * 100)


class Gate:
    """Confirms validation candidates against the checkpoint at ``path`` (the one a candidate
    would replace) on ``data``; after a confirmed replacement the candidate is the incumbent.

    ``lengths(model)``: each instance's best length under the trainer's validation decoding;
    ``load(path)``: the model stored at ``path``; ``description``: the set, for the manifest.
    """

    def __init__(self, data: dict[str, Any], path: Path,
                 lengths: Callable[[Any], np.ndarray], load: Callable[[Path], Any],
                 description: str) -> None:
        self.data, self.path, self.lengths, self.load = data, path, lengths, load
        self.description = description
        self.incumbent: np.ndarray | None = None

    @classmethod
    def on_fresh(cls, problem: str, seed: int, count: int, n: int, path: Path,
                 lengths: Callable[[Any, dict[str, Any]], np.ndarray],
                 load: Callable[[Path], Any]) -> Gate:
        """The gate of a route trainer: ``count`` fresh ``n``-node instances
        (``confirmation_data``); ``lengths(model, data)`` decodes them."""
        data = confirmation_data(problem, seed, count, n)
        return cls(data, path, lambda model: lengths(model, data), load,
                   f"{count} fresh {problem.upper()}{n} instances "
                   f"(training.confirm.confirmation_data, seed {seed})")

    def check(self, model: Any) -> dict[str, Any] | None:
        """The manifest's ``confirmation`` record when ``model`` is better than the incumbent
        on the fresh instances (always, when there is no incumbent file yet), else None."""
        if not self.path.exists():
            return {}
        if self.incumbent is None:  # measured once, then replaced by each confirmed candidate
            self.incumbent = self.lengths(self.load(self.path))
        lengths = self.lengths(model)
        change = paired_change(lengths, self.incumbent)
        print(f"  confirmation on {len(lengths)} fresh instances against {self.path.name}: "
              f"{change:+.3f}% ({'confirmed' if change < 0 else 'not confirmed: kept'})",
              flush=True)
        if change >= 0:
            return None
        self.incumbent = lengths
        return {"set": self.description, "change_percent_vs_replaced": round(change, 3)}
