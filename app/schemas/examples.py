"""Request examples for the OpenAPI document: /docs' "Try it out" sends them as they are, so
each one must succeed (tests/app/test_health_docs.py posts every one). The README's own
examples, kept small so that they answer in about a second."""

from __future__ import annotations

from typing import Any

SQUARE: dict[str, Any] = {"coords": [[0, 0], [3, 0], [3, 4], [0, 4], [1, 2]]}
SMALL_CVRP: dict[str, Any] = {
    "coords": [[0, 0], [1, 0], [0, 1], [1, 1], [2, 2]],
    "demands": [0, 3, 3, 2, 4],
    "capacity": 6,
}
SMALL_CVRPTW: dict[str, Any] = {
    "coords": [[0, 0], [10, 0], [0, 10], [20, 0]],
    "distance": "EUC_2D",
    "demands": [0, 3, 3, 3],
    "capacity": 9,
    "max_vehicles": 2,
    "time_windows": [[0, 50], [0, 15], [0, 50], [28, 30]],
    "service_times": [0, 5, 5, 0],
}
SMALL_NETWORK: dict[str, Any] = {
    "nodes": [1, 2, 3, 4],
    "supplies": [4, 0, 0, -4],
    "arcs": [
        {"tail": 1, "head": 2, "cost": 1, "capacity": 3},
        {"tail": 2, "head": 4, "cost": 1},
        {"tail": 1, "head": 3, "cost": 3},
        {"tail": 3, "head": 4, "cost": 1},
    ],
}


def examples(*bodies: dict[str, Any]) -> dict[str, Any]:
    """A model's ``json_schema_extra``: its examples."""
    return {"examples": list(bodies)}


TSP_SOLVE = examples({"instance": SQUARE, "solver": "ortools", "time_limit": 1, "seed": 0})
CVRP_SOLVE = examples({"instance": SMALL_CVRP, "solver": "pyvrp", "time_limit": 1})
CVRPTW_SOLVE = examples({"instance": SMALL_CVRPTW, "solver": "pyvrp", "time_limit": 1})
TSP_COMPARE = examples({"instance": SQUARE, "solvers": ["ortools", "pyvrp"], "time_limit": 1})
CVRP_COMPARE = examples({"instance": SMALL_CVRP, "solvers": ["ortools", "pyvrp"],
                         "time_limit": 1})
CVRPTW_COMPARE = examples({"instance": SMALL_CVRPTW, "solvers": ["ortools", "pyvrp"],
                           "time_limit": 1})
TSP_JOB = examples({"problem": "tsp", "instance": SQUARE, "solver": "ortools",
                    "time_limit": 1})
CVRP_JOB = examples({"problem": "cvrp", "instance": SMALL_CVRP, "solver": "pyvrp",
                     "time_limit": 1})
CVRPTW_JOB = examples({"problem": "cvrptw", "instance": SMALL_CVRPTW, "solver": "pyvrp",
                       "time_limit": 1})
FLOW_SOLVE = examples({"network": SMALL_NETWORK, "solver": "ortools_mcf"})
FLOW_COMPARE = examples({"network": SMALL_NETWORK,
                         "solvers": ["ortools_mcf", "networkx_simplex"]})
SIMULATE = examples({"pool": "6x4", "rates": [5.4, 9], "workflows_count": 20,
                     "policies": ["goodrl", "heft_slack", "heft", "eft"], "seed": 1})
SESSION = examples({"pool": "6x4", "policy": "goodrl"})
EVENTS = examples({"events": [{"type": "workflow_arrived", "time": 0, "workflow_id": "w1",
                               "shape": "montage"}]})
