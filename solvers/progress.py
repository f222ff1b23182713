"""A solve's cost over time: the (elapsed seconds, best cost) points a plot draws.

Jobs store one per attempt and a comparison keeps one per solver. The series only ever records
an improvement, so the best cost never increases along it, and it stays bounded: past
``max_points`` every other interior point goes (the first and the last always stay), so a
solver that improves a million times still stores a few kilobytes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from solvers.contract import ProgressEvent

#: The most points a series keeps: enough for a smooth plot, small enough to store each time.
MAX_POINTS = 1000


class CostSeries:
    """The running best cost of one solve, as (elapsed s, best cost) pairs.

    Feed it progress events (``series(event)`` is a progress callback) or points; a point
    whose cost is not below the best so far only moves the end of the series forward in time
    (``end``), so the series says how long the solve ran without repeating the cost."""

    def __init__(self, max_points: int = MAX_POINTS) -> None:
        if max_points < 3:
            raise ValueError("max_points must be at least 3 (the first, the last and one more)")
        self.max_points = max_points
        self._points: list[tuple[float, float]] = []
        self.end: float = 0.0

    def __call__(self, event: ProgressEvent) -> None:
        self.add(event.elapsed, event.best_cost)

    def add(self, elapsed: float, cost: float | None) -> bool:
        """Record ``cost`` at ``elapsed`` if it improves on the best so far; True if it did.
        Costs that are None, NaN or infinite (no plan yet) and times that go back are
        ignored for the curve."""
        if not math.isfinite(elapsed):
            return False
        elapsed = max(float(elapsed), self._points[-1][0] if self._points else 0.0)
        self.end = max(self.end, elapsed)
        if cost is None or not math.isfinite(cost):
            return False
        if self._points and not cost < self._points[-1][1]:
            return False
        self._points.append((elapsed, float(cost)))
        if len(self._points) > self.max_points:
            self._thin()
        return True

    def _thin(self) -> None:
        """Drop every other interior point: the first and the last stay, so the curve keeps
        its start, its final value and its shape."""
        first, *middle, last = self._points
        self._points = [first, *middle[1::2], last]

    @property
    def best(self) -> float | None:
        return self._points[-1][1] if self._points else None

    def points(self) -> list[tuple[float, float]]:
        """The improvements, plus the last best again at ``end`` when the solve ran on
        after its last improvement (so a plot's step line reaches the end of the run)."""
        out = list(self._points)
        if out and self.end > out[-1][0]:
            if len(out) >= self.max_points:
                out.pop(-2 if len(out) > 2 else -1)
            out.append((self.end, out[-1][1]))
        return out

    def to_json(self) -> list[list[float]]:
        """``[[elapsed, best], ...]`` rounded for storage (ms and 10 significant digits)."""
        return [[round(t, 3), float(f"{c:.10g}")] for t, c in self.points()]

    @classmethod
    def from_points(cls, points: Iterable[Iterable[float]],
                    max_points: int = MAX_POINTS) -> CostSeries:
        """A series from stored pairs; anything not an improvement is dropped again, so a
        series read back never increases whatever the file held."""
        series = cls(max_points)
        for t, c in points:
            series.add(float(t), float(c))
        return series
