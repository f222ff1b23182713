"""A solve's cost series (solvers/progress.py): never increasing, bounded, read back safely."""

from __future__ import annotations

import itertools

import pytest

from solvers.contract import ProgressEvent
from solvers.progress import CostSeries


def _non_increasing(points: list[tuple[float, float]] | list[list[float]]) -> bool:
    return all(b[1] <= a[1] and b[0] >= a[0] for a, b in itertools.pairwise(points))


def test_only_improvements_are_kept_and_the_end_repeats_the_best() -> None:
    series = CostSeries()
    for t, cost in [(0.0, None), (0.1, 100.0), (0.2, 120.0), (0.3, 90.0), (0.4, float("nan")),
                    (0.5, 90.0), (0.9, 95.0)]:
        series(ProgressEvent("s", t, 0, cost))
    assert series.points() == [(0.1, 100.0), (0.3, 90.0), (0.9, 90.0)]
    assert series.best == 90.0


def test_a_million_improvements_stay_bounded_keeping_first_and_last() -> None:
    series = CostSeries(max_points=1000)
    for i in range(100_000):
        series.add(i * 1e-3, 1e6 - i)
    points = series.points()
    assert len(points) <= 1000
    assert points[0] == (0.0, 1e6) and points[-1] == (pytest.approx(99.999), 1e6 - 99_999)
    assert _non_increasing(points)


def test_a_stored_series_that_increases_is_repaired_on_reading() -> None:
    read = CostSeries.from_points([[0, 10], [1, 12], [2, 8], [1.5, 7], [3, 8]])
    points = read.to_json()
    assert _non_increasing(points)
    assert points == [[0.0, 10.0], [2.0, 8.0], [2.0, 7.0], [3.0, 7.0]]


def test_time_never_goes_back() -> None:
    series = CostSeries()
    series.add(5.0, 10.0)
    series.add(1.0, 9.0)  # a clock that reports an earlier time is held at the last one
    assert series.points() == [(5.0, 10.0), (5.0, 9.0)]
    with pytest.raises(ValueError):
        CostSeries(max_points=2)
