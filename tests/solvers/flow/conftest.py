"""Shared pieces of the min-cost-flow tests: hand-checked networks and the NETGEN files."""

from __future__ import annotations

from typing import Any

import pytest

from solvers.flow.io import network_from_dict
from solvers.flow.problem import FlowNetwork
from tests.conftest import DATA

#: The two DIMACS NETGEN files (LEMON suite, via pdegenhardt/MinCostFlow) and their optima.
NETGEN_OPTIMA = {"netgen_8_08a": 142_274_536, "netgen_8_10a": 369_269_289}


def netgen_path(name: str) -> Any:
    return DATA / f"{name}.min.gz"


#: Small networks whose optimum was worked out by hand (see each comment).
HAND_CHECKED: dict[str, tuple[dict[str, Any], int, list[int] | None]] = {
    # 4 units from 1 to 4: the cheap path 1→2→4 (cost 2) holds 3, the rest goes 1→3→4 (4).
    "two_paths": ({"nodes": [1, 2, 3, 4], "supplies": [4, 0, 0, -4], "arcs": [
        {"tail": 1, "head": 2, "cost": 1, "capacity": 3}, {"tail": 2, "head": 4, "cost": 1},
        {"tail": 1, "head": 3, "cost": 3}, {"tail": 3, "head": 4, "cost": 1}]},
        3 * 2 + 1 * 4, [3, 3, 1, 1]),
    # Transportation: a→c 5 (5), b→c 1 (3), b→d 4 (8).
    "transport": ({"nodes": [10, 11, 20, 21], "supplies": [5, 5, -6, -4], "arcs": [
        {"tail": 10, "head": 20, "cost": 1}, {"tail": 10, "head": 21, "cost": 4},
        {"tail": 11, "head": 20, "cost": 3}, {"tail": 11, "head": 21, "cost": 2}]},
        5 + 3 + 8, [5, 0, 1, 4]),
    # Node 2 lets only 2 units through: 2 × (1 + 1) + 3 × (5 + 5).
    "node_capacity": ({"nodes": [1, 2, 3, 4], "supplies": [5, 0, 0, -5],
                       "node_capacities": [None, 2, None, None], "arcs": [
        {"tail": 1, "head": 2, "cost": 1}, {"tail": 2, "head": 4, "cost": 1},
        {"tail": 1, "head": 3, "cost": 5}, {"tail": 3, "head": 4, "cost": 5}]},
        2 * 2 + 3 * 10, [2, 2, 3, 3]),
    # The detour 1→3→2 must carry at least 2 (2 × 10); the third unit goes direct (1).
    "lower_bound": ({"nodes": 3, "supplies": [3, -3, 0], "arcs": [
        {"tail": 1, "head": 2, "cost": 1, "capacity": 10},
        {"tail": 1, "head": 3, "cost": 5, "capacity": 5, "lower": 2},
        {"tail": 3, "head": 2, "cost": 5}]},
        1 + 2 * 10, [1, 2, 2]),
    # No supplies, but the cycle 1→2→3→1 costs −5 + 2 + 1 = −2 per unit, 4 units at most.
    "negative_cycle": ({"nodes": 3, "supplies": [0, 0, 0], "arcs": [
        {"tail": 1, "head": 2, "cost": -5, "capacity": 4},
        {"tail": 2, "head": 3, "cost": 2, "capacity": 10}, {"tail": 3, "head": 1, "cost": 1}]},
        -8, [4, 4, 4]),
    # Parallel arcs: 2 units at cost 1, then 2 at cost 3; node 3 is isolated (virtual flow).
    "parallel_isolated": ({"nodes": [1, 2, 3], "supplies": [4, -4, 0], "arcs": [
        {"tail": 1, "head": 2, "cost": 3, "capacity": 5},
        {"tail": 1, "head": 2, "cost": 1, "capacity": 2}]},
        2 * 1 + 2 * 3, [2, 2]),
}


@pytest.fixture(params=sorted(HAND_CHECKED))
def hand_checked(request: pytest.FixtureRequest) -> tuple[FlowNetwork, int, list[int] | None]:
    obj, optimum, flow = HAND_CHECKED[request.param]
    return network_from_dict({"name": request.param, **obj}), optimum, flow
