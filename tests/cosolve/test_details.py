"""The public face gives a solved plan's route details, as the answers carry them."""

from __future__ import annotations

from cosolve import Budget, CVRPTWInstance, solution_details, solve


def test_solution_details_from_the_public_face() -> None:
    instance = CVRPTWInstance(
        coords=[[0, 0], [10, 0], [0, 10], [20, 0], [10, 10]], distance="EUC_2D",
        demands=[0, 3, 3, 3, 2], capacity=9,
        time_windows=[[0, 100], [0, 15], [0, 50], [28, 40], [40, 60]],
        service_times=[0, 5, 5, 2, 3])
    solution = solve(instance, "nearest_neighbor", Budget(time_limit=0.5))
    details = solution_details(instance, solution.routes)
    assert details is not None and solution.feasible
    assert details["summary"]["total_distance"] == solution.cost
    for route, detail in zip(solution.routes, details["route_details"], strict=True):
        assert [stop["node"] for stop in detail["schedule"]] == route
        # every stop starts within its window, never before the vehicle arrives
        for stop in detail["schedule"]:
            early, late = instance.time_windows[stop["node"]]
            assert stop["arrival"] <= stop["start"] and early <= stop["start"] <= late
