"""A Solution as a REPL or a notebook prints it: one readable line (its equality and JSON
are the fields', unchanged)."""

from __future__ import annotations

from solvers.routing.problem import CVRPInstance, TSPInstance
from solvers.routing.solution import build_solution, format_number


def _cvrp() -> CVRPInstance:
    return CVRPInstance(name="six", coords=[[0, 0], [1, 5], [2, 5], [5, 1], [5, 2], [9, 9]],
                        demands=[0, 1, 1, 1, 1, 1], capacity=2)


def test_a_solution_prints_in_one_readable_line() -> None:
    instance = _cvrp()
    good = build_solution(instance, [[1, 2], [3, 4], [5]], solver="ils", wall_time=0.25)
    text = repr(good)
    assert text.startswith("<Solution CVRP six by ils: cost ")
    assert f"cost {good.cost:.4f}".rstrip("0").rstrip(".") in text
    assert "3 routes, feasible, 0.25 s>" in text
    over = build_solution(instance, [[1, 2, 3], [4, 5]], solver="ils", wall_time=0)
    assert not over.feasible and f"INFEASIBLE: {over.violations[0]}" in repr(over)
    tour = build_solution(TSPInstance(name="big", coords=[[0, 0], [0, 3e6], [4e6, 0]]),
                          [[0, 1, 2]], solver="nn", wall_time=0)
    assert "cost 12000000 (exact), 3-node tour" in repr(tour)  # no 1.2e+07
    assert good == build_solution(instance, [[1, 2], [3, 4], [5]], solver="ils",
                                  wall_time=0.25)  # equality is the fields', as before


def test_numbers_read_in_full() -> None:
    assert format_number(5828660.0) == "5828660"
    assert format_number(426.50) == "426.5"
    assert format_number(float("nan")) == "n/a"
