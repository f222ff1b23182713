"""Registers the min-cost-flow solvers. Importing this module is what makes them known."""

from __future__ import annotations

import importlib.util

from solvers.contract import SolverSpec
from solvers.device import torch_missing

#: This family's solvers, in the order listings show them; ``solvers.catalog`` registers them.
SPECS: list[SolverSpec] = []

PROBLEMS = ("mincostflow",)


def _oft_solver():  # type: ignore[no-untyped-def]
    # Imported on first use: torch takes a second or two to import.
    from solvers.flow.oft import OFTSinkhornSolver

    return OFTSinkhornSolver()


def _needs_package(module: str, pip_name: str) -> str | None:
    if importlib.util.find_spec(module) is None:
        return f"the Python package {pip_name!r} is not installed (pip install {pip_name})"
    return None


# The factories import the solver modules when a solver is built: they load SciPy, which
# listing the solvers must not wait for.
def _ortools_flow():  # type: ignore[no-untyped-def]
    from solvers.flow.baselines import ORToolsFlowSolver

    return ORToolsFlowSolver()


def _networkx_flow():  # type: ignore[no-untyped-def]
    from solvers.flow.baselines import NetworkXFlowSolver

    return NetworkXFlowSolver()


SPECS.append(
    SolverSpec(
        name="ortools_mcf",
        family="flow",
        problems=PROBLEMS,
        description=(
            "OR-Tools SimpleMinCostFlow (cost-scaling push-relabel, C++): the exact reference, "
            "about 1e5 arcs per second on hard NETGEN instances. Cannot be interrupted."
        ),
        factory=_ortools_flow,
        max_nodes={"mincostflow": 10_000_000},
        availability=lambda: _needs_package("ortools", "ortools"),
    )
)
SPECS.append(
    SolverSpec(
        name="networkx_simplex",
        family="flow",
        problems=PROBLEMS,
        description=(
            "networkx network_simplex (pure Python, exact): an independent oracle, 4–30× "
            "slower than OR-Tools on NETGEN networks, growing with their size (25–35× for the "
            "solves alone), more on random ones with negative costs (docs/flow.md). "
            "Cannot be interrupted, hence the size cap, and a time limit below "
            "3e-8·nodes·arcs s is refused."
        ),
        factory=_networkx_flow,
        max_nodes={"mincostflow": 50_000},
        availability=lambda: _needs_package("networkx", "networkx"),
    )
)
SPECS.append(
    SolverSpec(
        name="oft_sinkhorn",
        family="flow",
        problems=PROBLEMS,
        description=(
            "OFT-Sinkhorn (ICLR 2025): entropic optimal-flow-transport iterations in torch "
            "(log-domain, float64, ε-scaling, virtual self-flows, capacity truncation), then "
            "rounding, an OR-Tools repair of the imbalance on the residual network, a dual "
            "certificate from the Sinkhorn potentials and a price-and-resolve finish to a "
            "proven optimum. Stops iterating at 80% of the time limit."
        ),
        factory=_oft_solver,
        max_nodes={"mincostflow": 2_000_000},
        availability=lambda: (_needs_package("ortools", "ortools")
                              or torch_missing()),
    )
)
